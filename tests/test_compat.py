"""pytest-dependency and pytest-order suites, unedited: their documented examples, serially and
on ``-n 2``, give the outcomes those plugins document -- and dependents declared first now wait.

Runs without pytest-dependency pass ``-p no:dependency`` (it may be installed in this venv);
runs that need it installed skip when it is not.
"""

from __future__ import annotations

import importlib.util
import json

import pytest

from .helpers import names, passed_order

#: records every report (controller or serial process) and every call's start and end (any
#: process), so outcomes and order can be checked on xdist too
RECORDER = """
import json, os, time
import pytest

_where = {}

def pytest_configure(config):
    _where["dir"] = str(config.rootpath)

def _append(name, record):
    line = (json.dumps(record) + "\\n").encode()
    fd = os.open(os.path.join(_where["dir"], name), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)

def pytest_runtest_logreport(report):
    _append("reports.jsonl", {"nodeid": report.nodeid, "when": report.when,
                              "outcome": report.outcome, "xfail": hasattr(report, "wasxfail")})

@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    start = time.monotonic()
    try:
        return (yield)
    finally:
        _append("calls.jsonl", {"nodeid": item.nodeid, "start": start, "end": time.monotonic()})
"""

NO_DEPENDENCY = ("-p", "no:dependency")
HAS_DEPENDENCY = importlib.util.find_spec("pytest_dependency") is not None


def outcomes(pytester: pytest.Pytester) -> dict[str, str]:
    """Node id -> passed, failed, error, skipped or xfailed, from the recorder's reports."""
    folded: dict[str, str] = {}
    path = pytester.path / "reports.jsonl"
    for line in path.read_text().splitlines() if path.exists() else ():
        report = json.loads(line)
        current = folded.setdefault(report["nodeid"], "passed")
        if report["outcome"] == "failed":
            folded[report["nodeid"]] = "failed" if report["when"] == "call" else "error"
        elif report["outcome"] == "skipped" and current == "passed":
            folded[report["nodeid"]] = "xfailed" if report["xfail"] else "skipped"
    return folded


def calls(pytester: pytest.Pytester) -> dict[str, tuple[float, float]]:
    """Node id -> (start, end) of its call, on whichever process ran it."""
    path = pytester.path / "calls.jsonl"
    found = {}
    for line in path.read_text().splitlines() if path.exists() else ():
        call = json.loads(line)
        found[call["nodeid"]] = (call["start"], call["end"])
    return found


def run(pytester: pytest.Pytester, mode: str, *args: str) -> pytest.RunResult:
    """Run the suite in ``pytester`` serially (in-process) or on two xdist workers."""
    pytester.makeconftest(RECORDER)
    for name in ("reports.jsonl", "calls.jsonl"):
        (pytester.path / name).unlink(missing_ok=True)
    if mode == "serial":
        return pytester.runpytest("-v", "-rs", "-p", "no:randomly", *args)
    return pytester.runpytest("-n", "2", "-p", "xdist", "-v", "-rs", *args)


def expect(pytester: pytest.Pytester, expected: dict[str, str]) -> None:
    got = outcomes(pytester)
    assert {nodeid: got.get(nodeid, "not run") for nodeid in expected} == expected


MODES = pytest.mark.parametrize("mode", ["serial", "xdist"])

# pytest-dependency's documented examples (doc/examples), with their documented outcomes

BASIC = """
import pytest

@pytest.mark.dependency()
@pytest.mark.xfail(reason="deliberate fail")
def test_a():
    assert False

@pytest.mark.dependency()
def test_b():
    pass

@pytest.mark.dependency(depends=["test_a"])
def test_c():
    pass

@pytest.mark.dependency(depends=["test_b"])
def test_d():
    pass

@pytest.mark.dependency(depends=["test_b", "test_c"])
def test_e():
    pass
"""

NAMED = """
import pytest

@pytest.mark.dependency(name="a")
@pytest.mark.xfail(reason="deliberate fail")
def test_a():
    assert False

@pytest.mark.dependency(name="b")
def test_b():
    pass

@pytest.mark.dependency(name="c", depends=["a"])
def test_c():
    pass

@pytest.mark.dependency(name="d", depends=["b"])
def test_d():
    pass

@pytest.mark.dependency(name="e", depends=["b", "c"])
def test_e():
    pass
"""

TESTCLASS = """
import pytest

class TestClass(object):

    @pytest.mark.dependency()
    @pytest.mark.xfail(reason="deliberate fail")
    def test_a(self):
        assert False

    @pytest.mark.dependency()
    def test_b(self):
        pass

    @pytest.mark.dependency(depends=["TestClass::test_a"])
    def test_c(self):
        pass

    @pytest.mark.dependency(depends=["TestClass::test_b"])
    def test_d(self):
        pass

    @pytest.mark.dependency(depends=["TestClass::test_b", "TestClass::test_c"])
    def test_e(self):
        pass
"""

MARK_CLASS = """
import pytest

@pytest.mark.dependency()
@pytest.mark.xfail(reason="deliberate fail")
def test_f():
    assert False

@pytest.mark.dependency(depends=["test_f"])
class TestClass(object):

    def test_a(self):
        pass

    @pytest.mark.dependency()
    def test_b(self):
        pass

    def test_c(self):
        pass
"""

PARAMETRIZED = """
import pytest

@pytest.mark.parametrize("x,y", [
    pytest.param(0, 0, marks=pytest.mark.dependency(name="a1")),
    pytest.param(0, 1, marks=[pytest.mark.dependency(name="a2"),
                              pytest.mark.xfail]),
    pytest.param(1, 0, marks=pytest.mark.dependency(name="a3")),
    pytest.param(1, 1, marks=pytest.mark.dependency(name="a4"))
])
def test_a(x,y):
    assert y <= x

@pytest.mark.parametrize("u,v", [
    pytest.param(1, 2, marks=pytest.mark.dependency(name="b1", depends=["a1", "a2"])),
    pytest.param(1, 3, marks=pytest.mark.dependency(name="b2", depends=["a1", "a3"])),
    pytest.param(1, 4, marks=pytest.mark.dependency(name="b3", depends=["a1", "a4"])),
    pytest.param(2, 3, marks=pytest.mark.dependency(name="b4", depends=["a2", "a3"])),
    pytest.param(2, 4, marks=pytest.mark.dependency(name="b5", depends=["a2", "a4"])),
    pytest.param(3, 4, marks=pytest.mark.dependency(name="b6", depends=["a3", "a4"]))
])
def test_b(u,v):
    pass

@pytest.mark.parametrize("w", [
    pytest.param(1, marks=pytest.mark.dependency(name="c1", depends=["b1", "b2", "b6"])),
    pytest.param(2, marks=pytest.mark.dependency(name="c2", depends=["b2", "b3", "b6"])),
    pytest.param(3, marks=pytest.mark.dependency(name="c3", depends=["b2", "b4", "b6"]))
])
def test_c(w):
    pass
"""

SESSION_01 = """
import pytest

@pytest.mark.dependency()
def test_a():
    pass

@pytest.mark.dependency()
@pytest.mark.xfail(reason="deliberate fail")
def test_b():
    assert False

@pytest.mark.dependency(depends=["test_a"])
def test_c():
    pass


class TestClass(object):

    @pytest.mark.dependency()
    def test_b(self):
        pass
"""

SESSION_02 = """
import pytest

@pytest.mark.dependency()
@pytest.mark.xfail(reason="deliberate fail")
def test_a():
    assert False

@pytest.mark.dependency(
    depends=["tests/test_mod_01.py::test_a", "tests/test_mod_01.py::test_c"],
    scope='session'
)
def test_e():
    pass

@pytest.mark.dependency(
    depends=["tests/test_mod_01.py::test_b", "tests/test_mod_02.py::test_e"],
    scope='session'
)
def test_f():
    pass

@pytest.mark.dependency(
    depends=["tests/test_mod_01.py::TestClass::test_b"],
    scope='session'
)
def test_g():
    pass
"""

SCOPE_CLASS = """
import pytest

@pytest.mark.dependency()
@pytest.mark.xfail(reason="deliberate fail")
def test_a():
    assert False


class TestClass1(object):

    @pytest.mark.dependency()
    def test_b(self):
        pass


class TestClass2(object):

    @pytest.mark.dependency()
    def test_a(self):
        pass

    @pytest.mark.dependency(depends=["test_a"])
    def test_c(self):
        pass

    @pytest.mark.dependency(depends=["test_a"], scope='class')
    def test_d(self):
        pass

    @pytest.mark.dependency(depends=["test_b"], scope='class')
    def test_e(self):
        pass
"""

# a dependent written above its dependency: pytest-dependency skips it, depgraph runs it after
DECLARED_FIRST = """
import pytest

@pytest.mark.dependency(depends=["test_create"])
def test_use():
    pass

@pytest.mark.order(after="test_create")
def test_read():
    pass

@pytest.mark.dependency()
def test_create():
    pass
"""


def _dependency_suite(pytester: pytest.Pytester) -> dict[str, str]:
    pytester.makepyfile(
        test_basic=BASIC, test_named=NAMED, test_testclass=TESTCLASS,
        test_markclass=MARK_CLASS, test_param=PARAMETRIZED, test_first=DECLARED_FIRST,
    )
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "test_mod_01.py").write_text(SESSION_01)
    (pytester.path / "tests" / "test_mod_02.py").write_text(SESSION_02)
    expected = {}
    for module in ("test_basic", "test_named"):
        expected.update({
            f"{module}.py::test_a": "xfailed", f"{module}.py::test_b": "passed",
            f"{module}.py::test_c": "skipped", f"{module}.py::test_d": "passed",
            f"{module}.py::test_e": "skipped",
        })
    for name, outcome in zip("abcde", ["xfailed", "passed", "skipped", "passed", "skipped"]):
        expected[f"test_testclass.py::TestClass::test_{name}"] = outcome
    expected.update({
        "test_markclass.py::test_f": "xfailed",
        "test_markclass.py::TestClass::test_a": "skipped",
        "test_markclass.py::TestClass::test_b": "passed",
        "test_markclass.py::TestClass::test_c": "skipped",
    })
    params = {
        "test_a[0-0]": "passed", "test_a[0-1]": "xfailed", "test_a[1-0]": "passed",
        "test_a[1-1]": "passed", "test_b[1-2]": "skipped", "test_b[1-3]": "passed",
        "test_b[1-4]": "passed", "test_b[2-3]": "skipped", "test_b[2-4]": "skipped",
        "test_b[3-4]": "passed", "test_c[1]": "skipped", "test_c[2]": "passed",
        "test_c[3]": "skipped",
    }
    expected.update({f"test_param.py::{k}": v for k, v in params.items()})
    expected.update({
        "tests/test_mod_01.py::test_a": "passed", "tests/test_mod_01.py::test_b": "xfailed",
        "tests/test_mod_01.py::test_c": "passed", "tests/test_mod_01.py::TestClass::test_b":
        "passed", "tests/test_mod_02.py::test_a": "xfailed",
        "tests/test_mod_02.py::test_e": "passed", "tests/test_mod_02.py::test_f": "skipped",
        "tests/test_mod_02.py::test_g": "passed",
    })
    expected.update({f"test_first.py::test_{n}": "passed" for n in ("use", "read", "create")})
    # package scope: names are full node ids, looked up among the tests of the same package
    package = pytester.path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "test_p1.py").write_text(
        "import pytest\n"
        "@pytest.mark.dependency(depends=['pkg/test_p2.py::test_b'], scope='package')\n"
        "def test_a(): pass\n"
        "@pytest.mark.dependency(depends=['pkg/test_p2.py::test_fail'], scope='package')\n"
        "def test_c(): pass\n"
    )
    (package / "test_p2.py").write_text(
        "import pytest\n"
        "@pytest.mark.dependency()\n"
        "def test_b(): pass\n"
        "@pytest.mark.dependency()\n"
        "@pytest.mark.xfail(reason='deliberate fail')\n"
        "def test_fail(): assert False\n"
    )
    expected.update({
        "pkg/test_p1.py::test_a": "passed", "pkg/test_p1.py::test_c": "skipped",
        "pkg/test_p2.py::test_b": "passed", "pkg/test_p2.py::test_fail": "xfailed",
    })
    return expected


@MODES
def test_dependency_documented_examples(pytester: pytest.Pytester, mode: str) -> None:
    """On -n 2 the suite of globals that raise (test_globals_that_raise_...) shares the run, in
    a folder of its own: one command line, one run on two workers."""
    expected = _dependency_suite(pytester)
    shared = mode == "xdist" and HAS_FLASK
    if shared:
        _raising_globals_suite(pytester, FLASK_FOLDER)
    result = run(pytester, mode, *NO_DEPENDENCY)
    if shared:
        _check_raising_globals(pytester, result, FLASK_FOLDER)
    expect(pytester, expected)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*from pytest-dependency/pytest-order markers*"])
    started = calls(pytester)
    # what pytest-dependency and pytest-order never did: the dependent written first waits
    for dependent in ("test_use", "test_read"):
        assert started[f"test_first.py::{dependent}"][0] >= started["test_first.py::test_create"][1]
    if mode == "serial":
        first = [n for n in passed_order(result) if n.startswith("test_first.py")]
        assert first == [f"test_first.py::test_{n}" for n in ("create", "use", "read")]
        result.stdout.fnmatch_lines(["*depgraph: upstream test_basic.py::test_a xfailed*"])


def test_dependency_documented_class_scope_unknown_name(pytester: pytest.Pytester) -> None:
    """scope_class.py: pytest-dependency skips test_e (test_b is in another class); depgraph
    does the same with a warning at the marker, and --depgraph-strict makes it an error."""
    pytester.makepyfile(test_scope_class=SCOPE_CLASS)
    result = run(pytester, "serial", *NO_DEPENDENCY)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines([
        "*test_scope_class.py:30: PytestWarning: depgraph: @pytest.mark.dependency: 'test_b' "
        "names no test known to pytest-dependency in class scope (declared for "
        "test_scope_class.py::TestClass2::test_e).",
        "    The test is skipped, as pytest-dependency skips it (--depgraph-strict makes this "
        "an error).",
        "SKIPPED ?1? test_scope_class.py:30: test_e depends on test_b",
    ])
    expect(pytester, {
        "test_scope_class.py::test_a": "xfailed",
        "test_scope_class.py::TestClass1::test_b": "passed",
        "test_scope_class.py::TestClass2::test_a": "passed",
        "test_scope_class.py::TestClass2::test_c": "skipped",
        "test_scope_class.py::TestClass2::test_d": "passed",
        "test_scope_class.py::TestClass2::test_e": "skipped",
    })
    result = run(pytester, "serial", *NO_DEPENDENCY, "--depgraph-strict")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines([
        "*test_scope_class.py:30: @pytest.mark.dependency: 'test_b' "
        "names no test known to pytest-dependency in class scope (declared for "
        "test_scope_class.py::TestClass2::test_e)*",
    ])
    run(pytester, "serial", *NO_DEPENDENCY, "--depgraph-strict",
        "--continue-on-collection-errors")
    assert outcomes(pytester)["test_scope_class.py::TestClass2::test_e"] == "error"


def test_dependency_unknown_names_say_what_to_do(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_bad="""
        import pytest

        def test_plain():
            pass

        @pytest.mark.dependency(name="h")
        def test_h():
            pass

        @pytest.mark.dependency()
        @pytest.mark.parametrize("c", [1, 2])
        def test_colors(c):
            pass

        @pytest.mark.dependency(depends=["test_plain"])
        def test_needs_plain():
            pass

        @pytest.mark.dependency(depends=["test_h"])
        def test_needs_h():
            pass

        @pytest.mark.dependency(depends=["test_colors"])
        def test_needs_colors():
            pass
        """
    )
    result = run(pytester, "serial", *NO_DEPENDENCY, "--depgraph-strict")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines([
        "*test_bad.py:15: @pytest.mark.dependency: 'test_plain' names no "
        "test known to pytest-dependency in module scope (declared for "
        "test_bad.py::test_needs_plain).",
        "  test_bad.py::test_plain has no @pytest.mark.dependency: add "
        "@pytest.mark.dependency() to it.",
        "  A test can be depended on only if it carries @pytest.mark.dependency*",
    ])
    result.stdout.fnmatch_lines(["  test_bad.py::test_h is known as 'h' (its name=)."])
    result.stdout.fnmatch_lines(["  'test_colors' is parametrized: name its instances, e.g. "
                                 "'test_colors[1]'."])
    assert outcomes(pytester) == {}


# pytest-order's relative-ordering examples

ORDER_SUITE = """
import pytest

@pytest.mark.order(after="test_second")
def test_third():
    assert True

def test_second():
    assert True

@pytest.mark.order(before="test_second")
def test_first():
    assert True


class TestA:
    @pytest.mark.order(after="TestB::test_b")
    def test_a(self):
        pass


class TestB:
    def test_b(self):
        pass


@pytest.mark.order(after=["sub/test_other.py::test_x", "test_boom"])
def test_after_other_module():
    pass


@pytest.mark.order(before="test_boom")
@pytest.mark.parametrize("n", [1, 2])
def test_param(n):
    pass


def test_boom():
    raise AssertionError("after edges run their dependents anyway")
"""


@MODES
def test_order_after_and_before(pytester: pytest.Pytester, mode: str) -> None:
    pytester.makepyfile(test_rel=ORDER_SUITE)
    (pytester.path / "sub").mkdir()
    (pytester.path / "sub" / "test_other.py").write_text("def test_x():\n    pass\n")
    result = run(pytester, mode, "-p", "no:pytest_order")
    result.assert_outcomes(passed=9, failed=1)
    timing = calls(pytester)

    def before(first: str, then: str) -> None:
        assert timing[f"test_rel.py::{then}"][0] >= timing[first if "/" in first
                                                           else f"test_rel.py::{first}"][1]

    before("test_second", "test_third")
    before("test_first", "test_second")
    before("TestB::test_b", "TestA::test_a")
    before("sub/test_other.py::test_x", "test_after_other_module")
    before("test_boom", "test_after_other_module")
    before("test_param[1]", "test_boom")
    before("test_param[2]", "test_boom")
    if mode == "serial":
        assert names(result)[:3] == ["test_x", "test_first", "test_second"]


STALE = """
import pytest

def test_second():
    pass

@pytest.mark.order(after="test_secnd")
def test_third():
    pass

@pytest.mark.dependency()
def test_known():
    pass

@pytest.mark.dependency(depends=["test_knwn"])
def test_use():
    pass

@pytest.mark.dependency(depends=["test_use"])
def test_after_use():
    pass
"""


@pytest.mark.parametrize("installed", [False, True])
def test_stale_names_warn_and_get_their_plugins_treatment(
    pytester: pytest.Pytester, installed: bool
) -> None:
    """A renamed test left in an order(after=) or a dependency(depends=) marker: pytest-order
    ignores the name, pytest-dependency skips the dependent ("X depends on Y"); both warn at
    the marker. The run goes on -- serially and on -n 2."""
    if installed and not HAS_DEPENDENCY:
        pytest.skip("pytest-dependency is not installed")
    pytester.makepyfile(test_typo=STALE)
    plugin = ("-p", "dependency") if installed else NO_DEPENDENCY
    expected = {
        "test_typo.py::test_second": "passed", "test_typo.py::test_third": "passed",
        "test_typo.py::test_known": "passed", "test_typo.py::test_use": "skipped",
        "test_typo.py::test_after_use": "skipped",
    }
    warned = [
        "*test_typo.py:6: PytestWarning: depgraph: @pytest.mark.order(after='test_secnd'): "
        "'test_secnd' matches no collected test (declared for test_typo.py::test_third).",
        "    The name is ignored, as pytest-order ignores it (--depgraph-strict makes this an "
        "error).",
        "    Did you mean 'test_second'*",
        "*test_typo.py:14: PytestWarning: depgraph: @pytest.mark.dependency: 'test_knwn' names "
        "no test known to pytest-dependency in module scope (declared for "
        "test_typo.py::test_use).",
        "    The test is skipped, as pytest-dependency skips it (--depgraph-strict makes this "
        "an error).",
        "    Did you mean 'test_known'?",
    ]
    for mode in ("serial", "xdist"):
        result = run(pytester, mode, *plugin)
        assert result.ret == pytest.ExitCode.OK, mode
        result.stdout.fnmatch_lines([*warned, "*SKIPPED ?1? test_typo.py:14: test_use depends "
                                     "on test_knwn"])
        expect(pytester, expected)
        if installed:
            break  # the skip is pytest-dependency's own on workers too: one run is enough
    # --depgraph-strict (or depgraph_strict = true): errors, as for depends_on targets
    pytester.makeini("[pytest]\ndepgraph_strict = true\n")
    result = run(pytester, "serial", *plugin)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines([
        "*test_typo.py:6: @pytest.mark.order(after='test_secnd'): "
        "'test_secnd' matches no collected test (declared for test_typo.py::test_third).",
        "  Did you mean 'test_second'*",
        "*'test_knwn' names no test known to pytest-dependency*",
        "*2 errors*",
    ])


def test_stale_name_warning_made_an_error_by_w_error(pytester: pytest.Pytester) -> None:
    """-W error turns the warning into the collection error, not a traceback from the
    plugin."""
    pytester.makepyfile(test_typo=STALE)
    result = run(pytester, "serial", *NO_DEPENDENCY, "-W", "error::pytest.PytestWarning")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*'test_secnd' matches no collected test*"])
    result.stdout.no_fnmatch_line("*Traceback*")


def test_markers_registered_without_the_plugins(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(DECLARED_FIRST)
    result = pytester.runpytest("--strict-markers", *NO_DEPENDENCY, "-p", "no:pytest_order")
    result.assert_outcomes(passed=3)


def test_order_index_kept_where_no_edge_contradicts(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.order("last")
        def test_end():
            pass

        def test_middle():
            pass

        @pytest.mark.order(2)
        def test_two():
            pass

        @pytest.mark.order(1)
        def test_one():
            pass

        @pytest.mark.order("first")
        @pytest.mark.depends_on("test_middle")
        def test_zero():
            pass
        """
    )
    result = run(pytester, "serial", "-p", "no:pytest_order")
    # "first" yields to the edge: test_zero waits for test_middle, nothing moves up
    assert names(result) == ["test_one", "test_two", "test_middle", "test_zero", "test_end"]


# pytest-dependency installed: its own skip logic sees dependencies run on other workers

RUNTIME = """
import time
import pytest
from pytest_dependency import depends

@pytest.mark.dependency()
def test_a():
    time.sleep(0.2)

@pytest.mark.dependency()
@pytest.mark.xfail(reason="deliberate fail")
def test_b():
    assert False

@pytest.mark.dependency()
def test_c(request):
    depends(request, ["test_b"])
    pass

@pytest.mark.dependency()
def test_d(request):
    depends(request, ["test_a", "test_c"])
    pass

@pytest.fixture
def needs_a(request):
    depends(request, ["test_a"])

@pytest.mark.parametrize("n", range(6))
def test_fixture(needs_a, n):
    time.sleep(0.05)

@pytest.mark.parametrize("n", range(6))
@pytest.mark.dependency(depends=["test_a"])
def test_marker(n):
    time.sleep(0.05)
"""


@pytest.mark.skipif(not HAS_DEPENDENCY, reason="pytest-dependency is not installed")
@MODES
def test_dependency_installed_runtime_and_markers(pytester: pytest.Pytester, mode: str) -> None:
    pytester.makepyfile(test_runtime=RUNTIME, test_first=DECLARED_FIRST)
    result = run(pytester, mode, "-p", "dependency")
    expected = {
        "test_runtime.py::test_a": "passed", "test_runtime.py::test_b": "xfailed",
        "test_runtime.py::test_c": "skipped", "test_runtime.py::test_d": "skipped",
        "test_first.py::test_use": "passed", "test_first.py::test_create": "passed",
    }
    expected.update({f"test_runtime.py::test_fixture[{n}]": "passed" for n in range(6)})
    expected.update({f"test_runtime.py::test_marker[{n}]": "passed" for n in range(6)})
    expect(pytester, expected)
    assert result.ret == pytest.ExitCode.OK


@pytest.mark.skipif(not HAS_DEPENDENCY, reason="pytest-dependency is not installed")
def test_dependency_installed_options_keep_their_meaning(pytester: pytest.Pytester) -> None:
    """automark_dependency makes every test known by name; --ignore-unknown-dependency ignores
    unknown names instead of making them errors."""
    pytester.makeini("[pytest]\nautomark_dependency = true\n")
    pytester.makepyfile(
        test_opts="""
        import pytest

        @pytest.mark.dependency(depends=["test_plain", "test_nowhere"])
        def test_use():
            pass

        def test_plain():
            pass
        """
    )
    assert run(pytester, "serial", "-p", "dependency",
               "--depgraph-strict").ret == pytest.ExitCode.INTERRUPTED
    result = run(pytester, "serial", "-p", "dependency", "--ignore-unknown-dependency")
    assert names(result) == ["test_plain", "test_use"]
    expect(pytester, {"test_opts.py::test_plain": "passed", "test_opts.py::test_use": "passed"})


FLASK_SESSION = """
import pytest
from flask import session

@pytest.mark.dependency()
def test_login():
    pass

@pytest.mark.dependency(depends=["test_login"])
def test_profile():
    pass

def test_no_request():
    with pytest.raises(RuntimeError):
        session.get("user")
"""


HAS_FLASK = importlib.util.find_spec("flask") is not None

#: where the suite of globals that raise is written when it shares a run
FLASK_FOLDER = "raising_globals/"


def _raising_globals_suite(pytester: pytest.Pytester, folder: str = "") -> None:
    if folder:
        (pytester.path / folder).mkdir()
    (pytester.path / folder / "test_flask.py").write_text(FLASK_SESSION)


def _check_raising_globals(
    pytester: pytest.Pytester, result: pytest.RunResult, folder: str = ""
) -> None:
    """The run went on (exit code 0) and the suite's three tests passed."""
    assert result.ret == pytest.ExitCode.OK
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    expect(pytester, {f"{folder}test_flask.py::{name}": "passed"
                      for name in ("test_login", "test_profile", "test_no_request")})


def test_globals_that_raise_on_any_attribute_do_not_stop_collection(
    pytester: pytest.Pytester,
) -> None:
    """``flask.session`` (a werkzeug LocalProxy) raises RuntimeError on any attribute outside a
    request; the runtime-``depends()`` scan reads every global a test names, and used to end
    the run with an INTERNALERROR ("no tests ran", exit 3). On -n 2 the suite shares the run
    of test_dependency_documented_examples (the same command line)."""
    pytest.importorskip("flask")
    _raising_globals_suite(pytester)
    result = run(pytester, "serial", *NO_DEPENDENCY)
    result.assert_outcomes(passed=3)
    _check_raising_globals(pytester, result)
