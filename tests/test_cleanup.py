"""Cleanup steps: ``cleanup_of`` runs after its targets and every test that depends on them,
whatever their outcomes, and is skipped when none of its targets ran."""

from __future__ import annotations

import pytest

from pytest_depgraph.core.graph import Graph
from pytest_depgraph.core.plan import Cleanup, Plan

from .conftest import Run, names, skip_reasons
from .helpers import RAN_CONFTEST, ran

WORKERS = [(), ("-n", "2")]
WORKER_IDS = ["serial", "xdist"]

#: four targets: one passes (with a user that fails), one fails, one is skipped by its own
#: marker, one passes with nothing after it
LIFE = """
import pytest
import pytest_depgraph

# written before its target: it waits for the target and for every user of it
@pytest.mark.cleanup_of("test_make_a")
def test_clean_a():
    pass

def test_make_a():
    pass

@pytest.mark.depends_on("test_make_a")
def test_use_a():
    assert 0, "the user fails"

@pytest.mark.depends_on("test_use_a", on_failure="run")
def test_use_a_later():
    pass

def test_make_b():
    assert 0, "the target fails"

@pytest.mark.depends_on("test_make_b")
def test_use_b():
    pass

@pytest.mark.cleanup_of(test_make_b)
def test_clean_b():
    pass

@pytest.mark.skip(reason="not here")
def test_make_c():
    pass

@pytest.mark.cleanup_of("test_make_c")
def test_clean_c():
    pass

@pytest.mark.depends_on("test_clean_c")
def test_after_clean_c():
    pass

def test_make_d():
    pass

@pytest_depgraph.cleanup_of(test_make_d)
def test_clean_d():
    pass

def test_last():
    pass
"""


@pytest.mark.parametrize("workers", WORKERS, ids=WORKER_IDS)
def test_a_cleanup_runs_after_its_targets_and_their_users_whatever_their_outcomes(
    pytester: pytest.Pytester, run: Run, workers: tuple[str, ...]
) -> None:
    """A cleanup runs after its target and after every test that depends on it, directly or
    not, when the target passed or failed; it is skipped, naming the target, when the target
    did not run, and its own dependents then skip. Serially it keeps its place in pytest's
    order unless a test it waits for comes later. The DOT file draws its edges."""
    pytester.makeconftest(RAN_CONFTEST)
    pytester.makepyfile(test_life=LIFE)
    result = run(*workers, "--depgraph-dot=graph.dot")
    result.assert_outcomes(passed=7, failed=2, skipped=4)
    started = list(ran(pytester.path))  # in the order the bodies ran
    for target, users, cleanup in [
        ("test_make_a", ["test_use_a", "test_use_a_later"], "test_clean_a"),
        ("test_make_b", [], "test_clean_b"),
        ("test_make_d", [], "test_clean_d"),
    ]:
        assert all(started.index(t) < started.index(cleanup) for t in [target, *users])
    file = "test_life.py"
    assert skip_reasons(result) == {
        "test_use_b": f"depgraph: upstream {file}::test_make_b failed",
        "test_make_c": "not here",
        "test_clean_c": "depgraph: nothing to clean up: no target of this cleanup ran "
                        f"({file}::test_make_c was skipped)",
        "test_after_clean_c": f"depgraph: upstream {file}::test_clean_c was skipped",
    }
    if not workers:
        assert names(result) == [
            "test_make_a", "test_use_a", "test_use_a_later", "test_clean_a", "test_make_b",
            "test_use_b", "test_clean_b", "test_make_c", "test_clean_c", "test_after_clean_c",
            "test_make_d", "test_clean_d", "test_last",
        ]
    dot = (pytester.path / "graph.dot").read_text()
    assert (f'"{file}::test_clean_a" -> "{file}::test_use_a_later" [tooltip = "cleanup_of at '
            f'{file}:5", style = "dashed", label = "cleanup_of"];') in dot
    assert f'"{file}::test_clean_d" -> "{file}::test_make_d"' in dot
    assert "cleans up after: runs after it and its dependents" in dot  # the legend


SHOP = """
import pytest

def test_login():
    pass

@pytest.mark.depends_on("test_login")
def test_cart():
    pass

@pytest.mark.depends_on("test_cart")
def test_checkout():
    pass

@pytest.mark.cleanup_of("test_login")
def test_logout():
    pass

def test_unrelated():
    pass
"""


@pytest.mark.parametrize("workers", WORKERS, ids=WORKER_IDS)
def test_selecting_a_user_of_a_target_pulls_the_cleanup_in(
    pytester: pytest.Pytester, run: Run, workers: tuple[str, ...]
) -> None:
    """``-k`` of a test that depends on a target pulls in the target, as a dependency, and the
    cleanup, which runs after them; the summary counts the cleanup apart."""
    pytester.makeconftest(RAN_CONFTEST)
    pytester.makepyfile(test_shop=SHOP)
    result = run(*workers, "-k", "checkout")
    result.assert_outcomes(passed=4)
    assert list(ran(pytester.path)) == ["test_login", "test_cart", "test_checkout", "test_logout"]
    result.stdout.fnmatch_lines(["*2 dependencies and 1 cleanup pulled in by selection*"])


def test_without_pulling_in_the_cleanup_stays_out_and_alone_it_skips(
    pytester: pytest.Pytester, run: Run
) -> None:
    """``--depgraph-no-deps`` leaves the cleanup out; a cleanup selected without its targets
    has nothing to clean up (its targets are not pulled in by it)."""
    pytester.makepyfile(test_shop=SHOP)
    result = run("-k", "login", "--depgraph-no-deps")
    assert names(result) == ["test_login"]
    alone = run("-k", "logout")
    assert names(alone) == ["test_logout"]
    assert skip_reasons(alone) == {
        "test_logout": "depgraph: nothing to clean up: no target of this cleanup ran "
                       "(test_shop.py::test_login is not in this run)"
    }


def test_bad_cleanups_are_collection_errors_at_their_line(
    pytester: pytest.Pytester, run: Run
) -> None:
    """A cleanup of itself, a target that matches nothing, a keyword, and a cycle through a
    cleanup (a test that depends on both the cleanup and its target) are errors at the
    marker's ``file:line``; the cycle names the ``cleanup_of`` edge."""
    pytester.makepyfile(
        test_bad="""
        import pytest

        def test_make():
            pass

        @pytest.mark.cleanup_of("test_make")
        def test_clean():
            pass

        @pytest.mark.depends_on("test_make", "test_clean")
        def test_both():
            pass

        @pytest.mark.cleanup_of("test_itself")
        def test_itself():
            pass

        @pytest.mark.cleanup_of("test_nothing")
        def test_stray():
            pass

        @pytest.mark.cleanup_of("test_make", on_failure="run")
        def test_keyword():
            pass
        """
    )
    result = run()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines([
        "depgraph: test_bad.py:22: unknown keyword argument on_failure=; cleanup_of accepts "
        "targets only (it runs whatever their outcomes)",
        "depgraph: test_bad.py:14: self reference: target 'test_itself' includes the test "
        "itself (@pytest.mark.cleanup_of, declared for test_bad.py::test_itself).",
        "  A test cannot be the cleanup of itself:*",
        "depgraph: test_bad.py:18: target 'test_nothing' matches no collected test "
        "(@pytest.mark.cleanup_of, declared for test_bad.py::test_stray).",
        "depgraph: dependency cycle (2 tests)",
        "  test_bad.py::test_clean",
        "    -> test_bad.py::test_both    cleanup_of at test_bad.py:6",
        "    -> test_bad.py::test_clean   depends_on at test_bad.py:10",
    ])


def test_the_plan_carries_the_cleanups_to_the_controller() -> None:
    """The cleanups' targets travel in the plan's wire format (an xdist controller decides the
    skip)."""
    plan = Plan(["a", "b", "c"], Graph(3), [0, 0, 0], 2,
                cleanups={1: Cleanup((0,), ("c",))})
    assert Plan.from_json(plan.to_json()).cleanups == {1: Cleanup((0,), ("c",))}
