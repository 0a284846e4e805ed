"""Cleanup steps: ``cleanup_of`` runs after its targets and every test that depends on them,
whatever their outcomes, and is skipped when none of its targets ran."""

from __future__ import annotations

import json
import random
from collections.abc import Iterable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_depgraph.core.graph.paths import reachable
from pytest_depgraph.core.graph.storage import Graph
from pytest_depgraph.core.plan import Cleanup, Plan

from .fake_workers import collected_plan
from .graph_strategies import PROPERTIES
from .helpers import RAN_CONFTEST, Run, names, ran, skip_reasons

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


def check_life(result: pytest.RunResult, folder: Path, file: str, dot: str) -> None:
    """What a run of :data:`LIFE` shows, serially or on workers: its conftest
    (:data:`RAN_CONFTEST`) in ``folder``, its file ``file`` (a node id's path), the run's
    DOT file's text ``dot``."""
    started = list(ran(folder))  # in the order the bodies ran
    for target, users, cleanup in [
        ("test_make_a", ["test_use_a", "test_use_a_later"], "test_clean_a"),
        ("test_make_b", [], "test_clean_b"),
        ("test_make_d", [], "test_clean_d"),
    ]:
        assert all(started.index(t) < started.index(cleanup) for t in [target, *users])
    assert skip_reasons(result) == {
        "test_use_b": f"depgraph: upstream {file}::test_make_b failed",
        "test_make_c": "not here",
        "test_clean_c": "depgraph: nothing to clean up: no target of this cleanup ran "
                        f"({file}::test_make_c was skipped)",
        "test_after_clean_c": f"depgraph: upstream {file}::test_clean_c was skipped",
    }
    assert (f'"{file}::test_clean_a" -> "{file}::test_use_a_later" [tooltip = "cleanup_of at '
            f'{file}:5", style = "dashed", label = "cleanup_of"];') in dot
    assert f'"{file}::test_clean_d" -> "{file}::test_make_d"' in dot
    assert "cleans up after: runs after it and its dependents" in dot  # the legend


def test_a_cleanup_runs_after_its_targets_and_their_users_whatever_their_outcomes(
    pytester: pytest.Pytester, run: Run
) -> None:
    """A cleanup runs after its target and after every test that depends on it, directly or
    not, when the target passed or failed; it is skipped, naming the target, when the target
    did not run, and its own dependents then skip. Serially it keeps its place in pytest's
    order unless a test it waits for comes later. The DOT file draws its edges. (On two
    workers: :func:`test_cleanups_on_two_workers`.)"""
    pytester.makeconftest(RAN_CONFTEST)
    pytester.makepyfile(test_life=LIFE)
    result = run("--depgraph-dot=graph.dot")
    result.assert_outcomes(passed=7, failed=2, skipped=4)
    check_life(result, pytester.path, "test_life.py", (pytester.path / "graph.dot").read_text())
    assert names(result) == [
        "test_make_a", "test_use_a", "test_use_a_later", "test_clean_a", "test_make_b",
        "test_use_b", "test_clean_b", "test_make_c", "test_clean_c", "test_after_clean_c",
        "test_make_d", "test_clean_d", "test_last",
    ]


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


#: each test's setup start and teardown end, one line each, appended in the order they happen
#: on every worker (an append of one line is atomic): ``start|node id`` and ``end|node id``
SPAN_CONFTEST = """
import os
import pytest

LOG = os.path.join(os.path.dirname(__file__), "spans.log")

def _write(what, item):
    with open(LOG, "a") as f:
        f.write(f"{what}|{item.nodeid}\\n")

@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    _write("start", item)

@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item):
    try:
        return (yield)
    finally:
        _write("end", item)
"""


def spans(folder: Path) -> list[tuple[str, str]]:
    """The log of :data:`SPAN_CONFTEST` in ``folder``: (``start`` or ``end``, node id), in
    the order it happened."""
    lines = (folder / "spans.log").read_text().splitlines()
    return [(what, nodeid) for what, nodeid in (line.split("|", 1) for line in lines)]


def assert_after(log: list[tuple[str, str]], later: str, earlier: Iterable[str]) -> None:
    """The test ``later`` started after each of ``earlier`` ended (node ids)."""
    started = log.index(("start", later))
    for nodeid in earlier:
        assert log.index(("end", nodeid)) < started, f"{later} started before {nodeid} ended"


MANY = """
import pytest
import pytest_depgraph

def test_create():
    pass

@pytest.mark.depends_on("test_create")
def test_use():
    pass

@pytest.mark.cleanup_of("test_create")
def test_clean_one():
    pass

@pytest.mark.cleanup_of("test_create")
def test_clean_two():
    pass

@pytest.mark.cleanup_of("test_create")
@pytest.mark.parametrize("n", [1, 2])
def test_clean_each(n):
    pass

@pytest.mark.cleanup_of("test_create")
class TestCleanups:
    def test_a(self):
        pass

    def test_b(self):
        pass

@pytest_depgraph.cleanup_of("test_create")
class TestDecorated:
    def test_c(self):
        pass

    def test_d(self):
        pass

# a chain: this cleanup waits for another because an edge says so
@pytest.mark.cleanup_of("test_create")
@pytest.mark.depends_on("test_clean_two", on_failure="run")
def test_clean_after_two():
    pass

# a cleanup of a cleanup
@pytest.mark.cleanup_of("test_clean_one")
def test_clean_the_cleanup():
    pass
"""

MANY_MODULE = """
import pytest

pytestmark = pytest.mark.cleanup_of("test_many.py::test_create")

def test_module_a():
    pass

def test_module_b():
    pass
"""


def check_many(pytester: pytest.Pytester, folder: Path, prefix: str) -> None:
    """What a run of :data:`MANY` and :data:`MANY_MODULE` shows, serially or on workers: its
    conftest's spans (:data:`SPAN_CONFTEST`) in ``folder``, its files' node ids after
    ``prefix``; and the plan of the suite in ``pytester``."""
    log = spans(folder)
    file = f"{prefix}test_many.py"
    target, user = f"{file}::test_create", f"{file}::test_use"
    cleanups = [
        f"{file}::{name}" for name in [
            "test_clean_one", "test_clean_two", "test_clean_each[1]", "test_clean_each[2]",
            "TestCleanups::test_a", "TestCleanups::test_b", "TestDecorated::test_c",
            "TestDecorated::test_d", "test_clean_after_two",
        ]
    ] + [f"{prefix}test_many_module.py::{name}" for name in ["test_module_a", "test_module_b"]]
    for cleanup in cleanups:
        assert_after(log, cleanup, [target, user])
    assert_after(log, f"{file}::test_clean_after_two", [f"{file}::test_clean_two"])
    assert_after(log, f"{file}::test_clean_the_cleanup", [f"{file}::test_clean_one"])
    plan = collected_plan(pytester)
    siblings = [plan.nodeids.index(cleanup) for cleanup in cleanups]
    waits = {
        (plan.nodeids[cleanup], plan.nodeids[other])
        for cleanup in siblings
        for other in reachable(plan.graph, [cleanup], "dependencies")
        if other in siblings
    }
    assert waits == {(f"{file}::test_clean_after_two", f"{file}::test_clean_two")}


def test_a_target_may_have_many_cleanups_in_every_form(pytester: pytest.Pytester, run: Run) -> None:
    """Functions, a parametrized one, a class of them (marker and decorator), a module's
    ``pytestmark``, a chain and a cleanup of a cleanup, all of one target that has a
    dependent: no cycle and no internal error (both were, before), each runs after the
    target and its dependent ended, and only an edge orders them among themselves. (On two
    workers: :func:`test_cleanups_on_two_workers`.)"""
    pytester.makeconftest(SPAN_CONFTEST)
    pytester.makepyfile(test_many=MANY, test_many_module=MANY_MODULE)
    result = run()
    result.assert_outcomes(passed=14)
    check_many(pytester, pytester.path, "")


REPEAT_CONFTEST = SPAN_CONFTEST + """
# what pytest-repeat's --count 3 does: every test parametrized three times
def pytest_generate_tests(metafunc):
    metafunc.fixturenames.append("repeat")
    metafunc.parametrize("repeat", [1, 2, 3], indirect=True, ids=lambda n: f"{n}-3")

@pytest.fixture
def repeat(request):
    return request.param
"""


def check_repeated(folder: Path, file: str) -> None:
    """What a run of :data:`SHOP` under :data:`REPEAT_CONFTEST` shows, serially or on
    workers: the conftest's spans in ``folder``, the file ``file`` (a node id's path)."""
    log = spans(folder)
    used = [f"{file}::{name}[{n}-3]" for name in ["test_login", "test_cart", "test_checkout"]
            for n in (1, 2, 3)]
    for n in (1, 2, 3):
        assert_after(log, f"{file}::test_logout[{n}-3]", used)


def test_a_repeated_file_with_a_cleanup_runs(pytester: pytest.Pytester, run: Run) -> None:
    """Every test of a file with a cleanup repeated three times, as pytest-repeat's
    ``--count 3`` does: each instance of the cleanup runs after every instance of its target
    and of the target's dependent (it was a cycle). (On two workers:
    :func:`test_cleanups_on_two_workers`.)"""
    pytester.makeconftest(REPEAT_CONFTEST)
    pytester.makepyfile(test_shop=SHOP)
    result = run()
    result.assert_outcomes(passed=15)
    check_repeated(pytester.path, "test_shop.py")


def test_cleanups_on_two_workers(pytester: pytest.Pytester, run: Run) -> None:
    """The three suites above, each in a folder with its conftest, in one run on two
    workers (one run's two worker processes, not three runs' six): each shows what it shows
    serially, but for pytest's order -- cleanups that wait for tests of the other worker."""
    for folder, conftest, files in [
        ("life", RAN_CONFTEST, {"test_life": LIFE}),
        ("many", SPAN_CONFTEST, {"test_many": MANY, "test_many_module": MANY_MODULE}),
        ("repeat", REPEAT_CONFTEST, {"test_shop": SHOP}),
    ]:
        pytester.makepyfile(**{f"{folder}/conftest": conftest},
                            **{f"{folder}/{name}": text for name, text in files.items()})
    result = run("-n", "2", "--depgraph-dot=graph.dot")
    # life's 7 passed, 2 failed and 4 skipped; many's 14 and repeat's 15 passed
    result.assert_outcomes(passed=7 + 14 + 15, failed=2, skipped=4)
    dot = (pytester.path / "graph.dot").read_text()
    check_life(result, pytester.path / "life", "life/test_life.py", dot)
    check_many(pytester, pytester.path / "many", "many/")
    check_repeated(pytester.path / "repeat", "repeat/test_shop.py")


def _random_suite(seed: int, size: int) -> tuple[str, dict[str, set[str]], dict[str, set[str]],
                                                  set[str]]:
    """A file of ``size`` tests drawn with ``seed``, each depending only on tests before it:
    plain tests (``depends_on`` of plain tests, either kind), cleanups (``cleanup_of`` tests
    or cleanups before them; some with ``depends_on`` a plain test that depends on nothing and
    that no cleanup before cleans up, some chained after an earlier cleanup of the same
    targets), and tests that depend on one cleanup without ``depends_on``. Returns the file,
    each cleanup's targets, the ``depends_on`` targets of each test, and the cleanups without
    ``depends_on``."""
    rng = random.Random(seed)
    lines = ["import pytest", ""]
    plain: list[str] = []
    roots: list[str] = []
    cleanups: dict[str, set[str]] = {}
    depends: dict[str, set[str]] = {}
    loose: set[str] = set()
    for n in range(size):
        name = f"test_{n}"
        kind = rng.choice(["plain", "plain", "cleanup", "cleanup", "reader"]) if n else "plain"
        if kind == "reader" and not loose:
            kind = "plain"
        marks: list[str] = []
        after: set[str] = set()
        if kind == "plain":
            after = set(rng.sample(plain, rng.randint(0, min(2, len(plain)))))
            if not after:
                roots.append(name)
            plain.append(name)
        elif kind == "reader":
            # one cleanup without depends_on: a test that depends on a cleanup and on what the
            # cleanup waits for (or on a cleanup that does) uses it after its cleanup, a
            # true cycle
            after = {rng.choice(sorted(loose))}
        else:
            earlier = [f"test_{k}" for k in range(n)]
            # a cleanup that uses a test an earlier cleanup cleans up would use it after
            # its cleanup when it cleans that cleanup up as well: a true cycle
            cleaned = set().union(*cleanups.values())
            fresh = [root for root in roots if root not in cleaned]
            targets = set(rng.sample(earlier, rng.randint(1, min(3, n))))
            marks.append(f"@pytest.mark.cleanup_of({', '.join(map(repr, sorted(targets)))})")
            twins = [c for c, t in cleanups.items() if t == targets]
            if twins and rng.random() < 0.5:
                after = {rng.choice(twins)}
            elif fresh and rng.random() < 0.3:
                after = {rng.choice(fresh)}
            else:
                loose.add(name)
            cleanups[name] = targets
        if after:
            kind_word = rng.choice(['"skip"', '"run"'])
            marks.append(f"@pytest.mark.depends_on({', '.join(map(repr, sorted(after)))}, "
                         f"on_failure={kind_word})")
        depends[name] = after
        lines += [*marks, f"def {name}():", "    pass", ""]
    return "\n".join(lines), cleanups, depends, loose


@settings(PROPERTIES, max_examples=max(10, (PROPERTIES.max_examples or 200) // 10),
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.integers(0, 2**32), st.integers(3, 24))
def test_random_cleanups_of_random_targets_never_make_a_cycle(
    pytester: pytest.Pytester, seed: int, size: int
) -> None:
    """Random suites of targets, their dependents, many cleanups of one target, cleanups of
    cleanups, chains of cleanups and tests that depend on cleanups: never a cycle, each
    cleanup after its targets and every test that depends on one (not through the cleanup
    itself, nor another cleanup of the target only because it depends on it), and two
    cleanups of the same targets that declare nothing else never waiting for each other
    directly."""
    text, cleanups, depends, loose = _random_suite(seed, size)
    module = f"test_random_{seed}_{size}"
    for old in pytester.path.glob("test_random_*.py"):
        old.unlink()
    pytester.makepyfile(**{module: text})
    plan = collected_plan(pytester)
    assert plan.errors == []
    node = {nodeid.rsplit("::", 1)[-1]: n for n, nodeid in enumerate(plan.nodeids)}
    normal: dict[str, set[str]] = {}  # test -> the tests that depend on it by depends_on
    for name, targets in depends.items():
        for target in targets:
            normal.setdefault(target, set()).add(name)
    for cleanup, targets in cleanups.items():
        waits = set(reachable(plan.graph, [node[cleanup]], "dependencies"))
        # a cleanup of one of these targets that depends on it is no user of it
        siblings = {other for other, cleaned in cleanups.items() if cleaned & targets}
        users = set(targets)
        stack = list(targets)
        while stack:
            used = stack.pop()
            for user in normal.get(used, ()):
                if used in targets and user in siblings:
                    continue
                if user != cleanup and user not in users:
                    users.add(user)
                    stack.append(user)
        assert {node[user] for user in users - {cleanup}} <= waits, text
    for one in loose:
        for other in loose:
            if one != other and cleanups[one] == cleanups[other]:
                # through a third test it may (one waits for a cleanup of a user that cleans
                # up the other too), directly never
                assert plan.graph.edge(node[one], node[other]) is None, text


IDLE = """
import pytest

@pytest.mark.skip(reason="not here")
def test_make():
    pass

@pytest.mark.cleanup_of("test_make")
def test_clean():
    pass

def test_fail():
    assert 0
"""


@pytest.mark.parametrize("workers", [(), ("-n", "1")], ids=WORKER_IDS)
def test_a_cleanup_that_nothing_needed_is_not_a_failure_to_run_again(
    pytester: pytest.Pytester, workers: tuple[str, ...]
) -> None:
    """A cleanup whose only target is skip-marked does not run; it is not kept for ``--lf``
    (it was, for ever: ``--lf`` ran it alone, with nothing to clean up again) and the summary
    says why it did not run, not "skipped because of 1 upstream test". On xdist, one worker:
    the controller keeps ``--lf``'s books and reports the skip, however many workers run."""
    pytester.makepyfile(test_idle=IDLE)
    first = pytester.runpytest("-p", "no:randomly", *workers)
    first.assert_outcomes(failed=1, skipped=2)
    first.stdout.fnmatch_lines([
        "1 cleanup did not run, with nothing to clean up (none of its targets ran):",
        "  test_idle.py::test_clean",
    ])
    assert "upstream" not in first.stdout.str()
    lastfailed = pytester.path / ".pytest_cache" / "v" / "cache" / "lastfailed"
    assert json.loads(lastfailed.read_text()) == {"test_idle.py::test_fail": True}
    again = pytester.runpytest("-p", "no:randomly", "--lf", "-q", *workers)
    # the workers deselect: the xdist controller's summary does not count them
    again.assert_outcomes(failed=1, deselected=None if workers else 2)
    assert json.loads(lastfailed.read_text()) == {"test_idle.py::test_fail": True}
