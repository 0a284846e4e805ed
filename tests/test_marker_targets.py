"""Every form of a ``depends_on`` target gives an edge or a clear error, and never changes what
is collected (pytest's MarkDecorator takes a lone function or class for the decorated test)."""

from __future__ import annotations

import pytest

from .helpers import assert_clean

HELPERS = """
class TestK:
    def test_k(self): pass
"""

TARGETS = """
import pytest
import test_helpers
from test_helpers import TestK as D

class TestHelpers:
    def test_setup(self): pass

def test_first(): pass

@pytest.mark.depends_on(TestHelpers.test_setup)
def test_attribute(): pass

@pytest.mark.depends_on(test_helpers.TestK)
def test_module_class(): pass

@pytest.mark.depends_on(D)
def test_alias(): pass

@pytest.mark.depends_on(TestHelpers().test_setup)
def test_bound_method(): pass

@pytest.mark.depends_on(test_first)
def test_function(): pass

@pytest.mark.depends_on(TestHelpers)
class TestOnClass:
    def test_in_class(self): pass
"""

EXPECTED = {
    "test_helpers.py::TestK::test_k",
    "test_targets.py::TestHelpers::test_setup",
    "test_targets.py::test_first",
    "test_targets.py::test_attribute",
    "test_targets.py::test_module_class",
    "test_targets.py::test_alias",
    "test_targets.py::test_bound_method",
    "test_targets.py::test_function",
    "test_targets.py::TestOnClass::test_in_class",
}


def _collected(result: pytest.RunResult) -> set[str]:
    return {line for line in result.outlines if "::" in line and " " not in line}


def test_object_targets_give_edges_and_keep_every_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_helpers=HELPERS, test_targets=TARGETS)
    assert _collected(pytester.runpytest("--collect-only", "-q")) == EXPECTED
    result = pytester.runpytest("-v", "-p", "no:randomly")
    result.assert_outcomes(passed=len(EXPECTED))
    # every marker is an edge: the dependents run after their targets
    order = [line.split(" ")[0] for line in result.outlines if " PASSED" in line]
    for dependent, dependency in [
        ("test_attribute", "TestHelpers::test_setup"),
        ("test_module_class", "TestK::test_k"),
        ("test_alias", "TestK::test_k"),
        ("test_bound_method", "TestHelpers::test_setup"),
        ("test_function", "test_first"),
        ("test_in_class", "TestHelpers::test_setup"),
    ]:
        position = {n.split(".py::", 1)[1]: k for k, n in enumerate(order)}
        assert position[dependency] < position[f"TestOnClass::{dependent}"
                                                if dependent == "test_in_class" else dependent]
    result.stdout.fnmatch_lines(["*6 edges (6 explicit*"])


def test_other_objects_are_clear_errors_and_lose_no_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_odd="""
        import functools
        import pytest

        def wrap(f):
            @functools.wraps(f)
            def wrapper(*a, **k):
                return f(*a, **k)
            return wrapper

        class NotATest:
            def method(self): pass

        @pytest.mark.depends_on(int)
        def test_builtin_class(): pass

        @pytest.mark.depends_on(len)
        def test_builtin_function(): pass

        @pytest.mark.depends_on(NotATest.method)
        def test_not_collected(): pass

        @pytest.mark.depends_on
        def test_bare(): pass

        @pytest.mark.depends_on
        @wrap
        def test_bare_above_wrapper(): pass

        def plain_wrap(f):
            def plain_wrapper(*a, **k):
                return f(*a, **k)
            return plain_wrapper

        @pytest.mark.depends_on
        @plain_wrap
        def test_bare_above_plain_wrapper(): pass
        """
    )
    ids = {f"test_odd.py::{name}" for name in (
        "test_builtin_class", "test_builtin_function", "test_not_collected", "test_bare",
        "test_bare_above_wrapper", "test_bare_above_plain_wrapper")}
    assert _collected(pytester.runpytest("--collect-only", "-q")) == ids
    result = pytester.runpytest("-p", "no:randomly")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        [
            "depgraph: test_odd.py:13: target class int matches no collected test "
            "(@pytest.mark.depends_on, declared for test_odd.py::test_builtin_class).",
            "depgraph: test_odd.py:16: target built-in len is not a test; *",
            "depgraph: test_odd.py:19: target function test_odd.NotATest.method matches no "
            "collected test *",
            "depgraph: test_odd.py:22: depends_on() names no target; *",
            "  (@pytest.mark.depends_on, declared for test_odd.py::test_bare)",
            "depgraph: test_odd.py:25: depends_on() names no target; *",
            "  (@pytest.mark.depends_on, declared for test_odd.py::test_bare_above_wrapper)",
            # the test pytest sees is the wrapper: the error points at it
            "depgraph: test_odd.py:30: depends_on() names no target; *",
            "  (@pytest.mark.depends_on, declared for test_odd.py::test_bare_above_plain_wrapper)",
        ],
        consecutive=False,
    )
    assert "6 errors during collection" in result.stdout.str()
    assert_clean(result)


FIXTURE_TARGET = """
import pytest

@pytest.fixture
def user():
    return 1

@pytest.mark.depends_on(user)
def test_b(): pass

def test_c(): pass
"""


def test_error_messages_are_the_same_in_every_process(pytester: pytest.Pytester) -> None:
    """A fixture object as target: described by kind and name, never by repr (an address),
    so two xdist workers report it once and agree on the graph; same exit code as serially."""
    pytester.makepyfile(test_fixture_target=FIXTURE_TARGET)
    serial = pytester.runpytest("-p", "no:randomly")
    parallel = pytester.runpytest("-p", "no:randomly", "-n", "2")
    message = (
        "depgraph: test_fixture_target.py:7: the target is fixture 'user', not a test. A test "
        "that uses the fixture gets the fixture's own dependencies*"
    )
    for result in (serial, parallel):
        assert result.ret == pytest.ExitCode.INTERRUPTED
        result.stdout.fnmatch_lines([message, "*Interrupted: 1 error during collection*"])
        assert result.stdout.str().count("ERROR collecting") == 1
        assert "0x" not in result.stdout.str()
        assert "different dependency graphs" not in result.stdout.str()
        assert_clean(result)


def test_module_globals_that_raise_on_any_access_are_left_alone(
    pytester: pytest.Pytester,
) -> None:
    """The plugin looks at every name of a test module (a marker left in a test's place) and
    at every global a test names (pytest-dependency's runtime calls): an object that raises
    even when asked for its class must not stop collection (pytest's own collector copes
    with it where its name is not a test's)."""
    pytester.makepyfile(
        test_globals="""
        import pytest

        class Hostile:
            @property
            def __class__(self):
                raise RuntimeError("no class")

            def __getattr__(self, name):
                raise RuntimeError(f"no {name}")

        connection = Hostile()

        @pytest.mark.dependency()
        def test_a():
            assert connection is not None

        @pytest.mark.dependency(depends=["test_a"])
        @pytest.mark.depends_on(test_a)
        def test_b():
            assert connection is not None
        """
    )
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:dependency")
    result.assert_outcomes(passed=2)
    assert_clean(result)


def test_the_markers_shortcut_marks_exactly_as_pytest_does() -> None:
    """``@pytest.mark.depends_on("...")`` on a plain function stores its mark at once; on
    anything else pytest's own decorator does. Either way the decorated object ends up as
    pytest's plain marker leaves it: the same marks, the same object returned."""
    from pytest_depgraph.collect.dependency_markers import MARKER, install_marker, uninstall_marker

    def plain(*args: object) -> pytest.MarkDecorator:
        return pytest.MarkDecorator(pytest.Mark(MARKER, args, {}, _ispytest=True), _ispytest=True)

    anonymous = lambda: None  # noqa: E731 (pytest takes a lambda for a target, not the test)

    def subjects() -> list[object]:
        def test_plain() -> None: ...

        @pytest.mark.filterwarnings("ignore")
        def test_marked() -> None: ...

        def test_attribute() -> None: ...

        test_attribute.note = 1  # type: ignore[attr-defined]  # an attribute of its own, on purpose

        class TestClass:
            def test_method(self) -> None: ...

        return [test_plain, test_marked, test_attribute, TestClass,
                staticmethod(test_plain), anonymous, "test_other"]

    install_marker()
    try:
        ours = [pytest.mark.depends_on("test_a", "b.py::test_c")(s) for s in subjects()]
    finally:
        uninstall_marker()
    theirs = [plain("test_a", "b.py::test_c")(s) for s in subjects()]
    for mine, reference in zip(ours, theirs):
        assert type(mine) is type(reference)
        if isinstance(reference, pytest.MarkDecorator):  # not a decoration: targets added
            # each list has its own subjects: a staticmethod, no callable before Python 3.10,
            # is such a target there, and its twin in the other list is another object
            kinds = [[a if isinstance(a, str) else type(a) for a in m.mark.args]
                     for m in (mine, reference)]
            assert kinds[0] == kinds[1]
            assert mine.mark.name == reference.mark.name
            assert mine.mark.kwargs == reference.mark.kwargs
            continue
        function = getattr(reference, "__func__", reference)
        assert getattr(mine, "__func__", mine).pytestmark == function.pytestmark
    # a decorated function is typed as the MarkDecorator; pytest keeps its marks in pytestmark
    assert [m.args for m in ours[1].pytestmark] == [("ignore",), ("test_a", "b.py::test_c")]  # type: ignore[attr-defined]
