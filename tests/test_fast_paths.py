"""The collection's shortcuts give what the full build gives, as a user sees it: a suite
without declarations, markers read once per definition, the string-only marker, imported
copies of a test."""

from __future__ import annotations

import re

import pytest

from pytest_depgraph.collect.process_registry import REGISTRY

from .helpers import names

PLAIN = """
import pytest

def test_one():
    pass

@pytest.mark.parametrize("x", [1, 2])
def test_two(x):
    pass

class TestThree:
    def test_three(self):
        pass
"""


def test_a_suite_without_declarations_selects_draws_and_runs_on_xdist(
    pytester: pytest.Pytester,
) -> None:
    """Nothing declared: -k and node ids select as in plain pytest, the DOT file shows the
    selected tests without edges, and a run on two workers passes (the controller compares
    the workers' plans) -- the build takes its shortcut in each of these processes."""
    pytester.makepyfile(test_plain=PLAIN, test_other="def test_four():\n    pass\n")
    out = pytester.path / "g.dot"
    selected = pytester.runpytest("-v", "-k", "two or three", f"--depgraph-dot={out}")
    selected.assert_outcomes(passed=3)
    assert names(selected) == ["test_two[1]", "test_two[2]", "test_three"]
    text = out.read_text()
    assert '"test_plain.py::test_two[1]"' in text
    assert '"test_plain.py::TestThree::test_three"' in text
    assert "test_one" not in text and "->" not in text
    # as in a fresh process: an in-process run elsewhere in this worker that applied a
    # @depends_on makes every later build in the process take the full path
    REGISTRY.reset()
    by_id = pytester.runpytest("-v", "test_plain.py::test_two", "--depgraph-timings")
    by_id.assert_outcomes(passed=2)
    by_id.stdout.fnmatch_lines([
        "*depgraph timings: 2 tests, 0 edges after reduction: resolve *",
        "depgraph timings (CPU): resolve * ms, validate 0.0 ms, order 0.0 ms, reduce 0.0 ms; *",
    ])
    parallel = pytester.runpytest("-n", "2", "-p", "xdist", "-k", "not one")
    parallel.assert_outcomes(passed=4)
    assert "error" not in parallel.stdout.str().lower()


def test_parametrized_instances_share_the_marker_and_keep_their_own(
    pytester: pytest.Pytester,
) -> None:
    """The marker of a parametrized function is read once for its instances, each still
    gets the edge; a mark given to one instance with pytest.param stays that instance's."""
    pytester.makepyfile(
        test_p="""
        import pytest

        @pytest.mark.depends_on("test_base")
        @pytest.mark.parametrize("x", [
            1, pytest.param(2, marks=pytest.mark.depends_on("test_other")), 3,
        ])
        def test_p(x):
            pass

        def test_other():
            assert 0

        def test_base():
            pass
        """
    )
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=3, failed=1, skipped=1)
    assert names(result) == ["test_other", "test_base", "test_p[1]", "test_p[2]", "test_p[3]"]
    result.stdout.fnmatch_lines(
        ["*test_p.py::test_p[[]2[]] SKIPPED (depgraph: upstream test_p.py::test_o*"]
    )


def test_markers_beside_the_string_only_marker_keep_their_meaning(
    pytester: pytest.Pytester,
) -> None:
    """A marker with a function target, one with on_failure='run' and a bad one, beside the
    usual names-only markers: each is validated and resolved as before."""
    pytester.makepyfile(
        test_m="""
        import pytest

        def test_a():
            assert 0

        @pytest.mark.depends_on(test_a)
        def test_by_object():
            pass

        @pytest.mark.depends_on("test_a", on_failure="run")
        def test_order_only():
            pass

        @pytest.mark.depends_on("test_a")
        def test_by_name():
            pass

        class TestC:
            @pytest.mark.depends_on("test_a", "")
            def test_bad(self):
                pass
        """
    )
    result = pytester.runpytest("-v")
    result.stdout.fnmatch_lines([
        "*test_m.py:*: an empty string is not a target; name a test or a file",
        "*(@pytest.mark.depends_on, declared for test_m.py::TestC::test_bad)*",
    ])
    result = pytester.runpytest("-v", "--continue-on-collection-errors")
    result.assert_outcomes(failed=1, passed=1, skipped=2, errors=2)
    text = result.stdout.str()
    assert "test_m.py::test_by_object SKIPPED" in text
    assert "test_m.py::test_by_name SKIPPED" in text
    assert "test_m.py::test_order_only PASSED" in text


def test_imported_copy_warned_only_when_a_test_depends_on_it(pytester: pytest.Pytester) -> None:
    """A test function imported into another module is warned about when something depends
    on a copy of it; an import nobody depends on, and a method inherited from another
    module's class, are not."""
    pytester.makepyfile(
        test_base="""
        def test_create():
            pass

        def test_unused():
            pass

        class TestBase:
            def test_method(self):
                pass
        """,
        test_user="""
        import pytest
        from test_base import test_create, test_unused, TestBase

        class TestChild(TestBase):
            pass

        @pytest.mark.depends_on(test_create, "TestChild::test_method")
        def test_login():
            pass
        """,
    )
    result = pytester.runpytest("-v", "-W", "always::pytest.PytestWarning")
    result.assert_outcomes(passed=8)
    text = result.stdout.str()
    assert text.count("imported into") == 1
    assert "test_create is a test of test_base imported into test_user" in text


def test_decorator_found_through_wrappers_and_base_classes(pytester: pytest.Pytester) -> None:
    """Test functions without attributes are passed over quickly; one whose @depends_on
    sits on what it wraps, or was copied onto it by functools.wraps, and a class that
    inherits a decorated base, still declare."""
    pytester.makepyfile(
        test_w="""
        import functools
        from pytest_depgraph import depends_on

        def wrap(f):
            @functools.wraps(f)
            def wrapper(*a, **k):
                return f(*a, **k)
            return wrapper

        def test_plain():
            pass

        @wrap
        @depends_on("test_base")
        def test_copied():
            pass

        @depends_on("test_base")
        class Base:
            pass

        class TestChild(Base):
            def test_inherits(self):
                pass

        def test_base():
            assert 0
        """
    )
    result = pytester.runpytest("-v")
    result.assert_outcomes(passed=1, failed=1, skipped=2)
    assert names(result) == ["test_plain", "test_base", "test_copied", "test_inherits"]


def test_one_marker_object_on_several_functions_applies_to_each(
    pytester: pytest.Pytester,
) -> None:
    """A marker kept in a variable and put on several tests is one Mark object: it is cached
    per function, so each test gets its edge and its own place in messages."""
    pytester.makepyfile(
        test_s="""
        import pytest

        needs_a = pytest.mark.depends_on("test_a")
        needs_nothing = pytest.mark.depends_on("test_gone")

        def test_a():
            assert 0

        @needs_a
        def test_b():
            pass

        @needs_a
        def test_c():
            pass

        @needs_nothing
        def test_d():
            pass

        @needs_nothing
        def test_e():
            pass
        """
    )
    result = pytester.runpytest("-v", "--continue-on-collection-errors")
    result.assert_outcomes(failed=1, skipped=2, errors=3)
    result.stdout.fnmatch_lines([
        "depgraph: test_s.py:17: target 'test_gone' matches no collected test (*::test_d).",
        "  1 more declaration names the same target:",
        "    test_s.py:21: target 'test_gone' (*test_s.py::test_e)",
    ])


def _edges(dot: str) -> list[str]:
    """The DOT file's edges between tests, without their tooltips, sorted."""
    return sorted(
        re.sub(r'tooltip = "[^"]*"(, )?', "", line).strip()
        for line in dot.splitlines() if "->" in line and "legend" not in line
    )


def test_definitions_and_scopes_read_once_give_each_item_its_edges(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a definition declares is read once for its instances, and a declaration resolved
    once per class or module: a class inherited into another module resolves its markers
    there, an instance keeps its own mark, and the edges are the same when another plugin
    interleaves the tests (no instance or class consecutive any more)."""
    pytester.makepyfile(
        test_base="""
        import pytest

        def test_first():
            pass

        @pytest.mark.depends_on("test_first", on_failure="run")
        class TestBase:
            def test_helper(self):
                pass

            @pytest.mark.depends_on("test_helper")
            @pytest.mark.parametrize("x", [
                1, pytest.param(2, marks=pytest.mark.depends_on("test_base.py::test_other")), 3,
            ])
            def test_p(self, x):
                pass

        @pytest.mark.depends_on("test_first")
        def test_other():
            pass
        """,
        test_sub="""
        import test_base

        def test_first():
            pass

        class TestSub(test_base.TestBase):
            def test_helper(self):
                pass
        """,
    )
    pytester.makeconftest(
        """
        import os

        def pytest_collection_modifyitems(items):
            if os.environ.get("INTERLEAVE"):
                items[:] = items[::2] + items[1::2]
        """
    )
    pytester.runpytest("--depgraph-dot=plain.dot").assert_outcomes(passed=11)
    monkeypatch.setenv("INTERLEAVE", "1")
    pytester.runpytest("--depgraph-dot=mixed.dot").assert_outcomes(passed=11)
    edges = _edges((pytester.path / "plain.dot").read_text())
    assert edges == _edges((pytester.path / "mixed.dot").read_text())
    assert edges == [
        '"test_base.py::TestBase::test_helper" -> "test_base.py::test_first" '
        '[style = "dashed"];',
        '"test_base.py::TestBase::test_p[1]" -> "test_base.py::TestBase::test_helper" [];',
        '"test_base.py::TestBase::test_p[2]" -> "test_base.py::TestBase::test_helper" [];',
        '"test_base.py::TestBase::test_p[2]" -> "test_base.py::test_other" [];',
        '"test_base.py::TestBase::test_p[3]" -> "test_base.py::TestBase::test_helper" [];',
        '"test_base.py::test_other" -> "test_base.py::test_first" [];',
        '"test_sub.py::TestSub::test_helper" -> "test_sub.py::test_first" [style = "dashed"];',
        '"test_sub.py::TestSub::test_p[1]" -> "test_sub.py::TestSub::test_helper" [];',
        '"test_sub.py::TestSub::test_p[2]" -> "test_base.py::test_other" [];',
        '"test_sub.py::TestSub::test_p[2]" -> "test_sub.py::TestSub::test_helper" [];',
        '"test_sub.py::TestSub::test_p[3]" -> "test_sub.py::TestSub::test_helper" [];',
    ]


def test_a_shared_marker_read_once_gives_every_test_its_edges_and_messages(
    pytester: pytest.Pytester,
) -> None:
    """A test's own marker is read for the first test it is on without asking which function
    that is; when the same Mark object comes again (a parametrized instance, another function
    it was put on, a subclass inheriting the test) each test still gets its edges and its
    place in the messages."""
    pytester.makepyfile(
        test_e="""
        import pytest

        shared = pytest.mark.depends_on("test_a", "TestC", "test_b")
        gone = pytest.mark.depends_on("test_a", "test_gone")

        def test_a():
            pass

        def test_b():
            assert 0

        class TestC:
            def test_c1(self):
                pass

            @pytest.mark.depends_on("test_c1", on_failure="run")
            def test_c2(self):
                pass

        class TestD(TestC):
            pass

        @shared
        @pytest.mark.parametrize("x", [1, 2])
        def test_p(x):
            pass

        @shared
        def test_q():
            pass

        @gone
        @pytest.mark.parametrize("x", [1, 2])
        def test_r(x):
            pass

        @gone
        def test_s():
            pass
        """
    )
    result = pytester.runpytest("-v", "--continue-on-collection-errors", "--depgraph-dot=g.dot")
    result.assert_outcomes(passed=5, failed=1, skipped=3, errors=4)  # errors: the file, 3 tests
    result.stdout.fnmatch_lines([
        "depgraph: test_e.py:32: target 'test_gone' matches no collected test "
        "(@pytest.mark.depends_on, declared for test_e.py::test_r[[]1[]] and 1 more test).",
        "*",
        "    test_e.py:37: target 'test_gone' (@pytest.mark.depends_on, declared for "
        "test_e.py::test_s)",
    ])
    edges = _edges((pytester.path / "g.dot").read_text())
    for name in ("test_p[1]", "test_p[2]", "test_q"):
        targets = [edge.split(" -> ")[1] for edge in edges
                   if edge.startswith(f'"test_e.py::{name}" ->')]
        assert targets == [
            '"test_e.py::TestC::test_c1" [];', '"test_e.py::TestC::test_c2" [];',
            '"test_e.py::test_a" [];', '"test_e.py::test_b" [];',
        ]
    assert '"test_e.py::TestD::test_c2" -> "test_e.py::TestD::test_c1" [style = "dashed"];' \
        in edges


def test_items_that_are_not_pytest_functions_read_their_markers_and_skip_cleanly(
    pytester: pytest.Pytester,
) -> None:
    """Items another plugin makes (no fixture info to share, say a YAML-spec plugin's) are
    read one by one: their own markers and one Mark shared by two of them. Such an item
    without a line (no ``reportinfo``) is skipped without stopping pytest."""
    pytester.makeconftest(
        """
        import pytest

        shared = pytest.mark.depends_on("spec_b.check::first")

        class Check(pytest.Item):
            def runtest(self):
                assert self.name != "fails"

        class Spec(pytest.File):
            def collect(self):
                names = self.path.read_text().split()
                for name in names:
                    item = Check.from_parent(self, name=name)
                    if self.path.name == "spec_a.check":
                        item.add_marker(shared)
                    elif name == "after":
                        item.add_marker(pytest.mark.depends_on("fails"))
                    yield item

        def pytest_collect_file(file_path, parent):
            if file_path.suffix == ".check":
                return Spec.from_parent(parent, path=file_path)
        """
    )
    pytester.path.joinpath("spec_a.check").write_text("one two\n")
    pytester.path.joinpath("spec_b.check").write_text("after fails first\n")
    result = pytester.runpytest("-v", "-p", "no:randomly")
    result.assert_outcomes(passed=3, failed=1, skipped=1)
    assert names(result) == ["fails", "after", "first", "one", "two"]
    result.stdout.fnmatch_lines(["*spec_b.check::after SKIPPED*spec_b.check::fails*"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


GROUPS_CONFTEST = """
import json
import pytest

@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    from pytest_depgraph.run.state import session_state
    plan = session_state(session.config).plan
    with open("plan_groups.json", "w") as f:
        json.dump([plan.nodeids, plan.group], f)
"""

GROUPED = """
import pytest

class TestB:
    @pytest.mark.parametrize("x", ["a::b", "c[d]::e", "f"])
    def test_one(self, x):
        pass

    class TestInner:
        def test_two(self):
            pass

@pytest.mark.parametrize("y", ["g::h"])
def test_after(y):
    pass

def test_top():
    pass
"""


def _scope_of(nodeid: str) -> str:
    """Each test's group as the plan numbered them before groups were found in C."""
    name = nodeid.split("[", 1)[0] if "[" in nodeid else nodeid
    return name.rpartition("::")[0] or nodeid


def test_affinity_groups_are_a_tests_class_or_module_numbered_as_they_come(
    pytester: pytest.Pytester,
) -> None:
    """The plan's groups (what xdist workers keep to) with and without declarations: a
    test's innermost class or its module, whatever its parameters hold, numbered in plan
    order."""
    import json

    pytester.makeconftest(GROUPS_CONFTEST)
    pytester.makepyfile(test_a=GROUPED, test_z="def test_z():\n    pass\n")
    for declared in (False, True):
        if declared:  # test_top moves after test_z, which comes after test_a's tests
            pytester.makepyfile(test_a=GROUPED.replace(
                "def test_top", '@pytest.mark.depends_on("test_z.py::test_z")\ndef test_top'
            ))
        pytester.runpytest("--collect-only", "-q").assert_outcomes()
        nodeids, group = json.loads((pytester.path / "plan_groups.json").read_text())
        assert (nodeids[-1] == "test_a.py::test_top") is declared
        numbered: dict[str, int] = {}
        assert group == [numbered.setdefault(_scope_of(n), len(numbered)) for n in nodeids]
        assert len(set(group)) == 4  # TestB, TestInner, test_a.py, test_z.py


def test_a_session_where_only_tests_own_markers_declare_reads_as_the_full_path(
    pytester: pytest.Pytester,
) -> None:
    """With no marker on a class or module, no ``@depends_on`` and no peer marker, the build
    reads each test's own marks only (and looks a module's names up directly); a fixture
    that declares, used by no test, sends the same suite through the full reading. Both give
    the same run, skips, errors and DOT file: tests in and out of classes, a shared Mark,
    parametrized instances with marks of their own, missing and self-naming targets."""
    pytester.makepyfile(
        test_m="""
        import pytest

        def test_a():
            pass

        @pytest.mark.depends_on("test_a", "test_other.py::test_c")
        def test_b():
            assert 0

        shared = pytest.mark.depends_on("test_a")

        @shared
        def test_d():
            pass

        @shared
        def test_e():
            pass

        @pytest.mark.parametrize("x", [1, pytest.param(2, marks=pytest.mark.depends_on("test_d"))])
        @pytest.mark.depends_on("test_b", on_failure="run")
        def test_p(x):
            pass

        class TestK:
            def test_k1(self):
                pass

            @pytest.mark.depends_on("test_k1", " test_a", "test_missing")
            def test_k2(self):
                pass

        @pytest.mark.depends_on("test_self")
        def test_self():
            pass
        """,
        test_other="""
        import pytest

        def test_c():
            pass

        @pytest.mark.depends_on("test_m.py::test_b", "test_m.py::TestK", "gone.py::test_x")
        def test_f():
            pass
        """,
    )
    outputs = []
    for full in (False, True):
        if full:
            pytester.makeconftest(
                """
                import pytest
                from pytest_depgraph import depends_on

                @pytest.fixture
                @depends_on("test_m.py::test_a")
                def unused():
                    pass
                """
            )
        dot = pytester.path / f"graph_{full}.dot"
        # as in a fresh process: @depends_on applied anywhere in a process sends its later
        # sessions through the full reading
        REGISTRY.reset()
        result = pytester.runpytest(
            "-v", "-rs", "--continue-on-collection-errors", f"--depgraph-dot={dot}"
        )
        result.assert_outcomes(passed=7, failed=1, errors=6)
        # (the critical path is chosen by the tests' durations)
        text = re.sub(r"critical path: .*\n(  .*\n)*", "", result.stdout.str())
        text = re.sub(r" in [\d.]+s\b.*", "", text)
        outputs.append((text.replace(str(dot), "graph.dot"), dot.read_text()))
    assert outputs[0] == outputs[1]
    assert "target 'test_missing' matches no collected test" in outputs[0][0]


def test_what_a_definition_shares_reaches_each_of_its_instances(
    pytester: pytest.Pytester,
) -> None:
    """The declarations a test definition shares (its module's and class's marks, a
    @depends_on on its function, its fixtures') are read once for its parametrized instances
    and reach each of them; a mark given to one instance stays that instance's, and another
    definition of the same class reads its own."""
    pytester.makeconftest(
        """
        import pytest
        import pytest_depgraph

        @pytest_depgraph.depends_on("test_g.py::test_fixture_target")
        @pytest.fixture
        def db():
            return None
        """
    )
    pytester.makepyfile(
        test_g="""
        def test_module_target():
            pass

        def test_class_target():
            pass

        def test_fixture_target():
            pass

        def test_decorated_target():
            pass

        def test_own_target():
            pass
        """,
        test_f="""
        import pytest
        from pytest_depgraph import depends_on

        pytestmark = pytest.mark.depends_on("test_g.py::test_module_target")

        @pytest.mark.depends_on("test_g.py::test_class_target")
        class TestC:
            @depends_on("test_g.py::test_decorated_target")
            @pytest.mark.parametrize("x", [
                1, pytest.param(2, marks=pytest.mark.depends_on("test_g.py::test_own_target")),
                3,
            ])
            def test_p(self, x, db):
                pass

            def test_q(self, db):
                pass

        def test_r():
            pass
        """,
    )
    out = pytester.path / "g.dot"
    result = pytester.runpytest("-v", f"--depgraph-dot={out}")
    result.assert_outcomes(passed=10)
    edges = set(re.findall(r'"test_f\.py::([^"]+)" -> "test_g\.py::([^"]+)"', out.read_text()))
    every = ("test_module_target", "test_class_target", "test_fixture_target")
    assert edges == {
        *((f"TestC::test_p[{x}]", t) for x in (1, 2, 3)
          for t in (*every, "test_decorated_target")),
        ("TestC::test_p[2]", "test_own_target"),
        *(("TestC::test_q", t) for t in every),
        ("test_r", "test_module_target"),
    }


def test_the_plugins_own_modules_are_not_assertion_rewritten(pytester: pytest.Pytester) -> None:
    """pytest rewrites the asserts of every module of an installed plugin's distribution
    (here marked by a plugin loaded before ours, as pytest marks an installed wheel's package),
    keeping the result in files of its own: where byte code is not written, each pytest
    process parsed and compiled the package's modules again (0.2-0.3 s of CPU a start). The
    package's first module takes the rest off; a test module is rewritten as ever."""
    pytester.makepyfile(
        mark_ours="""
        import pytest

        pytest.register_assert_rewrite("pytest_depgraph")
        """,
        test_loaders="""
        import sys

        def _rewritten(name):
            return type(sys.modules[name].__loader__).__name__ == "AssertionRewritingHook"

        def test_ours_are_imported_as_python_imports_them():
            assert not _rewritten("pytest_depgraph.collect.build")
            assert not _rewritten("pytest_depgraph.plugin")

        def test_a_test_module_is_still_rewritten():
            assert _rewritten(__name__)
        """,
    )
    result = pytester.runpytest_subprocess("-p", "mark_ours", "-p", "depgraph", "-W", "error")
    result.assert_outcomes(passed=2)


def test_decorated_tests_beside_decorated_fixtures_keep_their_edges(
    pytester: pytest.Pytester,
) -> None:
    """``@depends_on`` on fixtures (below and above ``@pytest.fixture``) lets the build skip
    reading the tests' functions and classes for it; on a test function or class beside such
    fixtures, it is read all the same."""
    pytester.makeconftest(
        """
        import pytest
        from pytest_depgraph import depends_on

        @pytest.fixture
        @depends_on("test_m.py::test_a")
        def below():
            pass

        @depends_on("test_m.py::test_a")
        @pytest.fixture
        def above():
            pass
        """
    )
    pytester.makepyfile(
        test_m="""
        from pytest_depgraph import depends_on

        def test_fixtures(below, above):
            pass

        def test_a():
            assert False

        @depends_on("test_a")
        def test_function():
            pass

        @depends_on("test_a")
        class TestClass:
            def test_method(self):
                pass
        """
    )
    for decorated_tests in (True, False):
        if not decorated_tests:
            (pytester.path / "test_m.py").write_text(
                "def test_fixtures(below, above):\n    pass\n\n"
                "def test_a():\n    assert False\n"
            )
        # as in a fresh process: only this session's decorators are known
        REGISTRY.reset()
        result = pytester.runpytest("-v", "-rs", "-p", "no:randomly")
        skipped = 3 if decorated_tests else 1
        result.assert_outcomes(failed=1, skipped=skipped)
        tests = ["test_fixtures", *(["test_function", "TestClass::test_method"]
                                     if decorated_tests else [])]
        result.stdout.fnmatch_lines([
            f"{skipped} test* skipped because of an upstream test:",
            "  test_m.py::test_a failed:",
            *(f"    test_m.py::{test}" for test in tests),
        ])


MARKS_AS_STORED = '''
import functools
import pytest

def test_a():
    pass

@pytest.mark.depends_on("test_a")
def test_plain():
    pass

@pytest.mark.depends_on("test_a", "test_plain", on_failure="run")
def test_two_targets_and_a_keyword():
    pass

@pytest.mark.depends_on("test_plain")
@pytest.mark.depends_on("test_a")
def test_two_markers():
    pass

@pytest.mark.depends_on("test_a")
@pytest.mark.skipif(False, reason="never")
def test_beside_another_mark():
    pass

def _tagged(function):
    function.tag = "kept"
    return function

@pytest.mark.depends_on("test_a")
@_tagged
def test_with_an_attribute():
    pass

def _wrapping(function):
    @functools.wraps(function)
    def wrapper():
        return function()
    return wrapper

@pytest.mark.depends_on("test_a")
@_wrapping
def test_wrapped():
    pass

test_lambda = pytest.mark.depends_on("test_a")(lambda: None)

@pytest.mark.depends_on("test_a")
class TestMarked:
    @pytest.mark.depends_on("test_plain")
    def test_method(self):
        pass

chained = pytest.mark.depends_on("test_a")
@chained("test_plain")
def test_chained_arguments():
    pass
'''

MARKS_PRINTER = '''
def pytest_collection_modifyitems(items):
    for item in items:
        marks = [(m.name, m.args, sorted(m.kwargs.items())) for m in item.iter_markers()]
        tag = getattr(getattr(item, "function", None), "tag", None)
        print("MARKS", item.nodeid, marks, tag)
'''


def test_the_usual_marker_is_stored_as_pytests_own_decorator_stores_it(
    pytester: pytest.Pytester,
) -> None:
    """``@pytest.mark.depends_on("...")`` is made and stored at once on a plain function:
    every test keeps the marks, their order and its own attributes that pytest's decorator
    gives it (the plugin off, with the marker registered)."""
    # checked: it fails if the mark is stored at once on a function that has marks already,
    # or made without its keywords
    pytester.makepyfile(test_marks=MARKS_AS_STORED)
    pytester.makeconftest(MARKS_PRINTER)

    def marks(*args: str) -> list[str]:
        # a process of its own: this one has the plugin's marker installed
        result = pytester.runpytest_subprocess("--collect-only", "-q", "-s", *args)
        lines = [line for line in result.outlines if line.startswith("MARKS ")]
        assert lines, result.outlines
        return lines

    ours = marks()
    pytests = marks("-p", "no:depgraph", "-o", "markers=depends_on")
    assert ours == pytests
    assert len(ours) == 9  # pytest collects no lambda
    assert any("test_with_an_attribute" in line and line.endswith(" kept") for line in ours)


class _Text(str):
    """A str subclass: a target the full validation turns into a plain str."""


def _function_target() -> None:
    """A test function given as a target object."""


#: every kind of argument a ``depends_on`` mark is given: positional targets, keywords
NAMES_ONLY_CASES: list[tuple[tuple[object, ...], dict[str, object]]] = [
    (("test_a",), {}),
    (("test_a", "m.py::test_b", "sub/"), {}),
    ((" test_a ",), {}),
    (("",), {}),
    (("  ",), {}),
    (("test_a", "\t"), {}),
    ((_Text("test_a"),), {}),
    ((_function_target,), {}),
    ((1,), {}),
    (("test_a",), {"on_failure": "run"}),
    (("test_a",), {"kind": "after"}),
    ((), {}),
]


def test_the_names_only_marker_reads_as_its_full_validation(pytester: pytest.Pytester) -> None:
    """A ``depends_on`` mark whose targets are all names is read without the full validation
    (the usual mark of a large suite): what it declares, or the problem with it, is what
    the full validation finds, for every kind of argument (one collection for every case:
    1.34 -> 0.10 s of CPU, getrusage, three runs each, spread 0.1, where each case collected
    its own)."""
    from pytest_depgraph.collect.context import Context
    from pytest_depgraph.collect.dependency_markers import RawDeclaration
    from pytest_depgraph.collect.locate import marker_origin
    from pytest_depgraph.collect.readers.depends_on import LABEL, as_source, marker_found

    items = pytester.getitems("def test_a():\n    pass\n")

    def read(
        args: tuple[object, ...], kwargs: dict[str, object], full: bool
    ) -> tuple[list[object], list[str]]:
        mark = pytest.mark.depends_on.with_args(*args, **kwargs).mark
        context = Context(items, pytester.path)
        origin = marker_origin(context.locator, items[0], mark)
        found = (as_source(context, RawDeclaration(args, kwargs, ""), origin, LABEL, 0, False)
                 if full else marker_found(context, items[0], mark, 0, False))
        sources: list[object] = [
            (s.declaration, [type(t) for t in s.declaration.targets], s.label, s.inherited,
             s.resolved, s.written)
            for s in found.sources
        ]
        return sources, [problem.message for problem in found.problems]

    for args, kwargs in NAMES_ONLY_CASES:
        assert read(args, kwargs, full=False) == read(args, kwargs, full=True), (args, kwargs)


STRAY = """
import pytest

def plain_wrap(f):
    def plain_wrapper(*a, **k):
        return f(*a, **k)
    return plain_wrapper

def test_a():
    pass

@pytest.mark.depends_on
@plain_wrap
def test_hidden():
    pass
"""

ASKS_FOR_STRAYS = """
def pytest_collection_finish(session):
    print("strays looked for:", session.config.pluginmanager.has_plugin("depgraph-strays"))
"""


def test_strays_are_looked_for_once_a_mark_takes_a_function_for_its_target(
    pytester: pytest.Pytester,
) -> None:
    """pytest asks every name of every module whether it is a test: the plugin answers only
    once a mark took a function or class for its target (only such a mark can hide a test).
    In a fresh process whose first module holds a bare marker above a wrapper without
    ``functools.wraps``, the test behind it is still collected and reported; a suite of names
    never has the question asked."""
    pytester.makeconftest(ASKS_FOR_STRAYS)
    pytester.makepyfile(test_stray=STRAY)
    result = pytester.runpytest_subprocess("-p", "no:randomly")
    result.stdout.fnmatch_lines([
        "strays looked for: True",
        "depgraph: test_stray.py:*: depends_on() names no target; *",
        "  (@pytest.mark.depends_on, declared for test_stray.py::test_hidden)",
    ])
    (pytester.path / "test_stray.py").unlink()
    pytester.makepyfile(test_names="""
        import pytest

        def test_a():
            pass

        @pytest.mark.depends_on("test_a")
        def test_b():
            pass
        """)
    names = pytester.runpytest_subprocess("-p", "no:randomly")
    names.assert_outcomes(passed=2)
    names.stdout.fnmatch_lines(["strays looked for: False"])
