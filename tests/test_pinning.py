"""Pinned groups on xdist: tests that need serial semantics run on one worker, in order.

Three causes (docs/parallel.md): a module calls pytest-dependency's ``depends()`` with names
computed at run time (no edge can be read, so the whole module is kept serial), tests linked
by a dependency edge share a module- or class-scoped fixture instance, and tests of one module
are linked by a pytest-dependency or pytest-order edge (state in module globals).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import pytest

from .fake_workers import collected_plan, walks

GROUP_FIXTURE = """
import time
import pytest
from pytest_dependency import depends

@pytest.fixture(scope="module", params=range(1, 10))
def testcase(request):
    return request.param

@pytest.mark.dependency()
def test_a(testcase):
    time.sleep(0.02)
    if testcase % 7 == 0:
        pytest.xfail("deliberate fail")

@pytest.mark.dependency()
def test_b(request, testcase):
    depends(request, ["test_a[%d]" % testcase])
"""

GROUP_FIXTURE_IN_FIXTURE = """
import time
import pytest
from pytest_dependency import depends

@pytest.fixture(scope="module", params=range(1, 10))
def testcase(request):
    return request.param

@pytest.fixture(scope="module")
def dep_testcase(request, testcase):
    depends(request, [f"test_a[{testcase}]"])
    return testcase

@pytest.mark.dependency()
def test_a(testcase):
    time.sleep(0.02)
    if testcase % 7 == 0:
        pytest.xfail("deliberate fail")

@pytest.mark.dependency()
def test_b(dep_testcase):
    pass

@pytest.mark.dependency()
def test_c(dep_testcase):
    pass
"""

OR_DEPENDENCY = """
import time
import pytest
from pytest_dependency import depends

def depends_or(request, other, scope='module'):
    for o in other:
        try:
            depends(request, [o], scope)
        except pytest.skip.Exception:
            continue
        else:
            return
    pytest.skip("%s depends on any of %s" % (request.node.name, ", ".join(other)))

@pytest.mark.dependency()
def test_ap():
    time.sleep(0.05)

@pytest.mark.dependency()
@pytest.mark.xfail(reason="deliberate fail")
def test_ax():
    assert False

@pytest.mark.dependency()
def test_bp():
    time.sleep(0.05)

@pytest.mark.dependency()
@pytest.mark.xfail(reason="deliberate fail")
def test_bx():
    assert False

@pytest.mark.dependency()
def test_c(request):
    depends_or(request, ["test_ax", "test_bx"])

@pytest.mark.dependency()
def test_d(request):
    depends_or(request, ["test_ax", "test_bp"])

@pytest.mark.dependency()
def test_f(request):
    depends_or(request, ["test_ap", "test_bp"])
"""

#: a literal edge elsewhere in the session: the depgraph scheduler walks the run (without any
#: edge it hands the run to xdist's own load scheduling)
OTHER = """
import pytest

@pytest.mark.dependency()
def test_base():
    pass

@pytest.mark.dependency(depends=["test_base"])
def test_next():
    pass
"""

#: file, its source, its outcomes serially under pytest-dependency (without test_other.py)
COMPUTED = [
    ("test_group_fixture", GROUP_FIXTURE, {"passed": 16, "skipped": 1, "xfailed": 1}),
    ("test_group_fixture2", GROUP_FIXTURE_IN_FIXTURE,
     {"passed": 24, "skipped": 2, "xfailed": 1}),
    ("test_or_dependency", OR_DEPENDENCY, {"passed": 4, "skipped": 1, "xfailed": 2}),
]


#: a conftest fixture calls depends() with a computed name: the module that uses it is pinned
AFTER_PREVIOUS = """
import pytest
from pytest_dependency import depends

@pytest.fixture
def after_previous(request):
    number = int(request.node.name.rsplit("_", 1)[1])
    if number > 1:
        depends(request, [f"test_{number - 1}"])
"""

STEPS = """
import time
import pytest

@pytest.mark.dependency()
def test_1(after_previous):
    time.sleep(0.05)

@pytest.mark.dependency()
def test_2(after_previous):
    time.sleep(0.05)

@pytest.mark.dependency()
def test_3(after_previous):
    pass

@pytest.mark.dependency()
def test_4(after_previous):
    pass
"""


#: two sites with computed names in one module: one warning, naming the first
TWO_SITES = GROUP_FIXTURE_IN_FIXTURE + """
@pytest.mark.dependency()
def test_d(request, testcase):
    depends(request, ["test_a[%d]" % testcase])
"""


def outcomes_by_test(junit: Path) -> dict[str, str]:
    """"module::test" (junit's classname and name) -> outcome, from a --junitxml file."""
    found = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = child.tag
            elif child.tag == "skipped":
                outcome = "xfailed" if child.get("type") == "pytest.xfail" else "skipped"
        found[f"{case.get('classname')}::{case.get('name')}"] = outcome
    return found


def test_computed_depends_names_give_the_serial_outcomes_on_two_workers(
    pytester: pytest.Pytester,
) -> None:
    """Modules calling depends() with computed names (in a test, a module fixture, a conftest
    fixture) get, test by test, their serial outcomes on two workers: each runs on one worker
    in file order, whichever worker finishes first; one warning per module."""
    pytester.makepyfile(**{name: source for name, source, _ in COMPUTED},
                        test_other=OTHER, test_steps=STEPS, test_two_sites=TWO_SITES)
    pytester.makeconftest(AFTER_PREVIOUS)
    serial = pytester.runpytest("-p", "no:randomly", "--junitxml=serial.xml")
    assert "names computed at run time" not in serial.stdout.str()
    serial_outcomes = outcomes_by_test(pytester.path / "serial.xml")
    for name, _, outcomes in COMPUTED:
        in_file = Counter(o for t, o in serial_outcomes.items() if t.split("::")[0] == name)
        assert in_file == outcomes, name
    in_steps = [o for t, o in serial_outcomes.items() if t.split("::")[0] == "test_steps"]
    assert in_steps == ["passed"] * 4
    in_two_sites = Counter(o for t, o in serial_outcomes.items()
                           if t.split("::")[0] == "test_two_sites")
    assert in_two_sites == {"passed": 32, "skipped": 3, "xfailed": 1}
    total = Counter(serial_outcomes.values())
    serial.assert_outcomes(**total)
    result = pytester.runpytest("-n", "2", "-p", "xdist", "-p", "no:randomly",
                                "--junitxml=parallel.xml")
    result.assert_outcomes(**total)
    assert outcomes_by_test(pytester.path / "parallel.xml") == serial_outcomes
    result.stdout.fnmatch_lines_random(
        [f"*depgraph: {name}.py:*: depends() with names computed at run time: {name}.py runs "
         "on one worker in file order*" for name, _, _ in COMPUTED]
        + ["*depgraph: test_two_sites.py:11: depends() with names computed at run time (and 1 "
           "more in this module): test_two_sites.py runs on one worker in file order*"]
    )
    # one warning per module, however many sites it has
    warned = [line.split(": ")[-1].split(".py runs on one worker")[0]
              for line in result.outlines if "names computed at run time" in line]
    assert sorted(warned) == sorted([*(name for name, _, _ in COMPUTED), "test_steps",
                                     "test_two_sites"])
    # the controller's warning is located where the message says, as a serial run's is
    result.stdout.fnmatch_lines(["test_two_sites.py:11"])
    assert "controller_warnings.py" not in result.stdout.str()
    # where each module's tests go depends on which worker finishes first: the scheduler, in
    # process, under many completion orders (a real run samples one)
    plan = collected_plan(pytester)
    pinned = [[plan.nodeids[i] for i in group] for group in plan.pinned]
    modules = {nodeid.split("::")[0] for group in pinned for nodeid in group}
    # (test_other.py's two tests are linked by a dependency marker: pinned, without warning)
    assert modules == {f"{name}.py" for name, _, _ in COMPUTED} | {
        "test_steps.py", "test_two_sites.py", "test_other.py"}
    for sent in walks(pytester, plan):
        for group in pinned:
            holders = [tests for tests in sent if group[0] in tests]
            assert [t for t in holders[0] if t in group] == group, sent


STATE_CHAIN = """
import time
import pytest

@pytest.fixture(scope="module")
def state(tmp_path_factory):
    marker = tmp_path_factory.getbasetemp().parent / "state-setup"
    assert not marker.exists(), "module fixture set up twice"
    marker.touch()
    return []

def test_create(state):
    time.sleep(0.05)
    state.append("created")

@pytest.mark.depends_on("test_create")
def test_read(state):
    time.sleep(0.05)
    assert state[0] == "created"

@pytest.mark.depends_on("test_create")
def test_extend(state):
    assert state[0] == "created"
    state.append("extended")

@pytest.mark.depends_on("test_extend")
def test_check(state):
    assert state[-1] == "extended"

def test_unlinked():
    time.sleep(0.05)
"""


def test_a_chain_sharing_a_module_fixture_runs_on_one_worker(pytester: pytest.Pytester) -> None:
    """P1/A1: test_read and test_extend both became ready when test_create finished; the old
    scheduler gave one of them to the other worker, where the module fixture was new."""
    pytester.makepyfile(test_state=STATE_CHAIN)
    result = pytester.runpytest("-n", "2", "-p", "xdist", "-p", "no:randomly")
    result.assert_outcomes(passed=5)
    # which worker takes test_read and test_extend depends on timing: the scheduler, in
    # process, under many completion orders (a real run samples one)
    linked = ["test_state.py::test_create", "test_state.py::test_read",
              "test_state.py::test_extend", "test_state.py::test_check"]
    for sent in walks(pytester, collected_plan(pytester)):
        holder = next(tests for tests in sent if linked[0] in tests)
        assert [t for t in holder if t in linked] == linked, sent


def test_crash_in_a_pinned_group_releases_it(pytester: pytest.Pytester) -> None:
    """A worker dies in the middle of a pinned module: the rest goes elsewhere or skips."""
    pytester.makepyfile(
        test_crash="""
        import os
        import pytest
        from pytest_dependency import depends

        @pytest.mark.dependency()
        def test_1():
            pass

        @pytest.mark.dependency()
        def test_2(request):
            depends(request, ["test_" + "1"])
            os._exit(1)

        @pytest.mark.dependency()
        def test_3(request):
            depends(request, ["test_" + "2"])

        @pytest.mark.dependency()
        def test_4():
            pass
        """
    )
    # a group still bound to the dead worker would hang the run
    result = pytester.runpytest("-n", "2", "-p", "xdist", "-p", "no:randomly")
    result.assert_outcomes(passed=2, failed=1, skipped=1)


# -- which tests are pinned (the plan, in process) -------------------------------------------


def pinned_names(pytester: pytest.Pytester, source: str) -> list[list[str]]:
    pytester.makepyfile(test_p=source)
    plan = collected_plan(pytester)
    return [[plan.nodeids[n].split("::", 1)[1] for n in group] for group in plan.pinned]


def test_linked_tests_sharing_a_module_fixture_are_pinned(pytester: pytest.Pytester) -> None:
    groups = pinned_names(pytester, """
        import pytest

        @pytest.fixture(scope="module")
        def db():
            return {}

        @pytest.fixture(scope="session")
        def config():
            return {}

        @pytest.mark.depends_on("test_fill")
        def test_read(db):
            pass

        def test_fill(db):
            pass

        @pytest.mark.depends_on("test_fill")
        def test_other(config):
            pass

        def test_alone(db):
            pass

        @pytest.mark.depends_on("test_read")
        def test_again(db):
            pass
    """)
    assert groups == [["test_fill", "test_read", "test_again"]]


def test_session_fixtures_do_not_pin(pytester: pytest.Pytester) -> None:
    assert pinned_names(pytester, """
        import pytest

        @pytest.fixture(scope="session")
        def shared():
            return {}

        def test_a(shared):
            pass

        @pytest.mark.depends_on("test_a")
        def test_b(shared):
            pass
    """) == []


def test_class_fixtures_pin_within_their_class_only(pytester: pytest.Pytester) -> None:
    assert pinned_names(pytester, """
        import pytest

        @pytest.fixture(scope="class")
        def env():
            return {}

        class TestA:
            def test_1(self, env):
                pass

            @pytest.mark.depends_on("test_1")
            def test_2(self, env):
                pass

        class TestB:
            @pytest.mark.depends_on("test_p.py::TestA::test_1")
            def test_3(self, env):
                pass
    """) == [["TestA::test_1", "TestA::test_2"]]


def test_other_parameters_of_a_module_fixture_do_not_pin(pytester: pytest.Pytester) -> None:
    assert pinned_names(pytester, """
        import pytest

        @pytest.fixture(scope="module", params=[1, 2])
        def conn(request):
            return request.param

        @pytest.mark.depends_on("test_b[1]")
        def test_a(conn):
            pass

        def test_b(conn):
            pass
    """) == [["test_b[1]", "test_a[1]"]]


def test_computed_names_pin_the_whole_module(pytester: pytest.Pytester) -> None:
    groups = pinned_names(pytester, """
        import pytest
        from pytest_dependency import depends

        @pytest.mark.dependency()
        def test_a():
            pass

        def test_free():
            pass

        @pytest.mark.dependency()
        def test_b(request):
            depends(request, ["test_" + "a"])
    """)
    assert groups == [["test_a", "test_free", "test_b"]]


def test_literal_names_pin_the_tests_they_link(pytester: pytest.Pytester) -> None:
    """Read from the source, they are edges like the marker's: the linked tests are pinned
    (they may hand state over in the module), the module's other tests are not."""
    assert pinned_names(pytester, """
        import pytest
        from pytest_dependency import depends

        @pytest.mark.dependency()
        def test_a():
            pass

        def test_free():
            pass

        @pytest.mark.dependency()
        def test_b(request):
            depends(request, ["test_a"])
    """) == [["test_a", "test_b"]]


def test_the_chain_is_in_the_dot_file(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_state=STATE_CHAIN)
    result = pytester.runpytest("--collect-only", "-q", "--depgraph-dot=-", "-p", "no:randomly")
    text = result.stdout.str()
    assert '"test_state.py::test_extend" -> "test_state.py::test_read"' in text
    assert "on one worker, in order: both use the module fixture 'state'" in text


#: stands in for pytest-django: an installed plugin with a private class-scoped autouse fixture
#: (pytest-django's ``_django_setup_unittest``) and a public module-scoped one
FAKE_PLUGIN = """
import pytest

@pytest.fixture(autouse=True, scope="class")
def _fake_setup_unittest():
    yield

@pytest.fixture(scope="module")
def fake_db():
    return {}
"""


def test_another_plugins_private_fixture_does_not_pin(pytester: pytest.Pytester) -> None:
    """A private fixture of an installed plugin links no tests; the suite's own private
    fixtures and the plugin's public ones still do."""
    site = pytester.path.parent / f"{pytester.path.name}_site"
    site.mkdir()
    (site / "fake_django.py").write_text(FAKE_PLUGIN)
    pytester.syspathinsert(site)
    pytester.makeconftest("pytest_plugins = ['fake_django']\n")
    linked_in_a_class = """
        import pytest

        class TestViews:
            def test_create(self):
                pass

            @pytest.mark.depends_on("test_create")
            def test_read(self):
                pass

            @pytest.mark.depends_on("test_create")
            def test_update(self):
                pass
    """
    assert pinned_names(pytester, linked_in_a_class) == []
    # the suite's own private fixture (in its conftest) keeps its meaning
    pytester.makeconftest("""
        import pytest

        pytest_plugins = ['fake_django']

        @pytest.fixture(autouse=True, scope="class")
        def _own_state():
            return {}
    """)
    assert pinned_names(pytester, linked_in_a_class) == [
        ["TestViews::test_create", "TestViews::test_read", "TestViews::test_update"]
    ]
    # the plugin's public fixture pins as any module fixture does
    pytester.makeconftest("pytest_plugins = ['fake_django']\n")
    assert pinned_names(pytester, """
        import pytest

        def test_fill(fake_db):
            pass

        @pytest.mark.depends_on("test_fill")
        def test_read(fake_db):
            pass

        @pytest.mark.depends_on("test_fill")
        def test_again(fake_db):
            pass
    """) == [["test_fill", "test_read", "test_again"]]


#: pytest-dependency's common idiom: a producer fills a module global, its dependents read it
MODULE_GLOBALS = """
import time
import pytest

faces = []

@pytest.mark.dependency()
def test_polygonize():
    global faces
    time.sleep(0.05)
    faces = [[0, 1, 2], [2, 3, 0]]

@pytest.mark.dependency(depends=["test_polygonize"])
def test_duplication():
    assert faces, "faces is empty: test_polygonize ran in another process"

@pytest.mark.dependency(depends=["test_polygonize"])
def test_area():
    assert faces, "faces is empty: test_polygonize ran in another process"

@pytest.mark.dependency(depends=["test_polygonize"])
def test_normals():
    assert faces, "faces is empty: test_polygonize ran in another process"
"""


def test_state_in_module_globals_reaches_the_dependents_on_two_workers(
    pytester: pytest.Pytester,
) -> None:
    """Each module's producer and its dependents run in one worker process, as serially
    (before, a dependent that an idle worker took found the global empty). The worker of
    each test is read from -v; the scheduler then tries 50 completion orders in process."""
    pytester.makepyfile(**{f"test_m{i}": MODULE_GLOBALS for i in range(6)})
    result = pytester.runpytest("-n", "2", "-p", "xdist", "-p", "no:randomly", "-v")
    result.assert_outcomes(passed=24)
    workers: dict[str, set[str]] = {}
    for line in result.outlines:
        found = re.match(r"\[(gw\d+)\] \[ *\d+%\] PASSED (\S+?)::", line)
        if found:
            workers.setdefault(found[2], set()).add(found[1])
    assert len(workers) == 6 and all(len(w) == 1 for w in workers.values()), workers
    plan = collected_plan(pytester)
    for sent in walks(pytester, plan):
        for tests in sent:
            modules = {t.split("::")[0] for t in tests}
            assert all(sum(t.startswith(m) for t in tests) == 4 for m in modules), sent


def test_peer_edges_pin_within_their_module_only(pytester: pytest.Pytester) -> None:
    """A pytest-dependency or pytest-order edge pins its two tests when they are in one
    module, groups join through shared members; an edge across modules does not pin, nor
    does depends_on (values travel as outputs)."""
    pytester.makepyfile(test_q="""
        import pytest

        @pytest.mark.order(after="test_p.py::test_a")
        def test_elsewhere():
            pass
    """)
    assert pinned_names(pytester, """
        import pytest

        @pytest.mark.dependency()
        def test_a():
            pass

        @pytest.mark.dependency(depends=["test_a"])
        def test_b():
            pass

        @pytest.mark.order(after="test_b")
        def test_c():
            pass

        def test_free():
            pass

        @pytest.mark.depends_on("test_free")
        def test_uses_free():
            pass

        class TestK:
            @pytest.mark.order(before="test_x")
            def test_w(self):
                pass

            def test_x(self):
                pass
    """) == [["test_a", "test_b", "test_c"], ["TestK::test_w", "TestK::test_x"]]
