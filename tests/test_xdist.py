"""The parallel walk on xdist: order, overlap, the bound, skips, faults, fixtures.

What only a real run shows (outcomes, skip lines, fixtures set up once, the files written) is
checked on real ``-n 2`` runs; what depends on which worker finishes first (the order, what
runs at once, the bound) is checked on the scheduler's decisions, in process, with fake
workers finishing the tests in many orders (:mod:`tests.fake_workers`).
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_depgraph.core.graph.storage import Graph, Kind, Origin
from pytest_depgraph.core.plan import Cleanup, Plan
from pytest_depgraph.run.outcomes import FAILED, PASSED
from pytest_depgraph.run.xdist.controller import Controller
from pytest_depgraph.run.xdist.hooks import shows_places, unhonoured_message
from pytest_depgraph.run.xdist.locations import at_start, from_source

from .fake_workers import collected_plan, complete, controller_config, running, start_on, walked
from .helpers import RAN_CONFTEST, ran


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makeconftest(RAN_CONFTEST)
    return pytester


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """A real run, its xdist controller in this process (its workers are processes of their
    own): a controller process more cost a third of a second of CPU a run."""
    return pytester.runpytest("-p", "xdist", "-p", "depgraph", *args)


def run_apart(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """A real run in a process of its own, for a test that signals its controller."""
    return pytester.runpytest_subprocess("-p", "xdist", "-p", "depgraph", *args, timeout=120)


def assert_order(after: dict[str, set[str]], plan: Plan) -> None:
    """Every test sent was sent once each test it depends on (either kind) had finished."""
    for edge in plan.graph.edges():
        dependent, dependency = plan.nodeids[edge.dependent], plan.nodeids[edge.dependency]
        if dependent in after:
            assert dependency in after[dependent], (dependent, dependency)


def test_chain_runs_step_after_step_on_one_worker_with_module_fixture_once(
    suite: pytest.Pytester,
) -> None:
    steps = ["import os, pytest", "", "@pytest.fixture(scope='module')", "def resource():",
             "    with open(os.path.join(os.path.dirname(__file__), 'setups.log'), 'a') as f:",
             "        f.write('setup\\n')", "    yield", ""]
    for i in range(12):
        if i:
            steps.append(f"@pytest.mark.depends_on('test_s{i - 1:02d}')")
        steps += [f"def test_s{i:02d}(resource):", "    pass", ""]
    suite.makepyfile(test_chain="\n".join(steps))
    result = run(suite, "-n", "2")
    result.assert_outcomes(passed=12)
    names = [f"test_chain.py::test_s{i:02d}" for i in range(12)]
    assert len(set(ran(suite.path).values())) == 1  # affinity kept it on one worker
    assert (suite.path / "setups.log").read_text() == "setup\n"
    cached = json.loads((suite.path / ".pytest_cache/v/depgraph/durations").read_text())
    assert set(cached) == set(names)
    # whichever way the workers finish: one worker runs the chain, each step in order and
    # sent the moment the step before it finished (no stall)
    plan = collected_plan(suite)
    for walk in walked(suite, plan):
        assert sum(1 for sent in walk.sent if sent) == 1, walk.sent
        assert_order(walk.after, plan)
        for before, after in zip(names, names[1:]):
            assert walk.sent_at[after] == walk.finished_at[before], (before, after)


DIAMOND = """
import time, pytest

def test_root():
    pass

@pytest.mark.depends_on(test_root)
def test_left():
    pass

@pytest.mark.depends_on(test_root)
def test_right():
    pass

@pytest.mark.depends_on(test_left, test_right)
def test_join():
    pass

def test_broken():
    assert False

@pytest.mark.depends_on(test_broken)
def test_child():
    pass

@pytest.mark.depends_on(test_child)
def test_grandchild():
    pass

@pytest.mark.depends_on(test_broken, on_failure="run")
def test_after():
    pass
"""


#: records, per worker, how many items had their location computed when collection ended
LOCATED_CONFTEST = """
import os
import pytest

@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    located = sum("location" in vars(item) for item in session.items)
    with open(os.path.join(os.path.dirname(__file__), "located.log"), "a") as f:
        f.write(f"{os.environ.get('PYTEST_XDIST_WORKER', '-')} {located}\\n")
"""


def test_dependencies_first_overlap_and_skips_with_root_cause(suite: pytest.Pytester) -> None:
    # rootdir in a subfolder, as examples/ has: the controller's skip lines read like the
    # serial run's (test_skip_lines_name_the_file_from_the_current_directory)
    sub = suite.mkdir("sub")
    (sub / "pytest.ini").write_text("[pytest]\n")
    (sub / "conftest.py").write_text(RAN_CONFTEST + LOCATED_CONFTEST)
    (sub / "test_dag.py").write_text(DIAMOND)
    result = run(suite, "sub", "-n", "2", "-rs", "--junitxml=junit.xml")
    result.assert_outcomes(passed=5, failed=1, skipped=2)
    started = ran(sub)
    assert "test_child" not in started and "test_grandchild" not in started  # never started
    reason = "depgraph: upstream test_dag.py::test_broken failed"
    # the decorator lines of test_child and test_grandchild, as serially: the controller
    # reports the skips under the locations test_broken's worker sent with its failure
    result.stdout.fnmatch_lines([f"SKIPPED [[]1[]] sub/test_dag.py:{line}: {reason}"
                                 for line in (22, 26)])
    located = sorted(
        int(line.split()[1]) for line in (sub / "located.log").read_text().splitlines()
    )
    # no worker computed a location when its collection ended: the walk skips nothing at its
    # start (each location costs 30 us; a worker needs those of the tests it runs, later)
    assert located == [0, 0]
    skipped = {
        case.get("name"): case.find("skipped")
        for case in ET.parse(suite.path / "junit.xml").iter("testcase")
    }
    for name in ("test_child", "test_grandchild"):
        element = skipped[name]
        assert element is not None and element.get("message") == reason
    # which worker finishes first: dependencies first, whatever it is
    plan = collected_plan(suite, "sub")
    nodeid = {name: f"test_dag.py::{name}" for name in ("test_root", "test_left", "test_right",
                                                        "test_broken", "test_child")}
    for walk in walked(suite, plan, outcomes={nodeid["test_broken"]: FAILED}, seconds=0.5):
        assert_order(walk.after, plan)
        assert nodeid["test_child"] not in walk.after  # never sent
    # independent ready tests overlap: once the other tests are done (test_broken fails,
    # test_after runs), test_root's end makes test_left and test_right ready, and the two
    # workers run them at once
    scheduler, nodes = start_on(controller_config(suite, "load"), plan)
    root, left, right = (plan.nodeids.index(nodeid[name])
                         for name in ("test_root", "test_left", "test_right"))
    while busy := [n for n in nodes if running(scheduler, n) not in (None, root)]:
        failed = plan.nodeids[running(scheduler, busy[0]) or 0] == nodeid["test_broken"]
        complete(scheduler, busy[0], FAILED if failed else PASSED, seconds=0.5)
    [worker] = [n for n in nodes if running(scheduler, n) == root]
    complete(scheduler, worker, seconds=0.5)
    assert {running(scheduler, n) for n in nodes} == {left, right}


def test_skip_lines_name_the_file_from_the_current_directory(pytester: pytest.Pytester) -> None:
    # rootdir in a subfolder, as examples/ has: the skips read "sub/test_dag.py:N", not the
    # rootdir-relative "test_dag.py:N"; on -n 2 the controller's lines read the same
    # (test_dependencies_first_overlap_and_skips_with_root_cause runs this layout on -n 2)
    sub = pytester.mkdir("sub")
    (sub / "pytest.ini").write_text("[pytest]\n")
    (sub / "test_dag.py").write_text(DIAMOND)
    reason = "depgraph: upstream test_dag.py::test_broken failed"
    result = pytester.runpytest("sub", "-p", "depgraph", "-rs")
    result.assert_outcomes(passed=5, failed=1, skipped=2)
    result.stdout.fnmatch_lines([f"SKIPPED [[]1[]] sub/test_dag.py:*: {reason}"] * 2)


def test_in_flight_never_exceeds_the_bound(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_flat="".join(f"def test_{i}():\n    pass\n" for i in range(6)))
    args = ("--depgraph-parallelism", "2")
    result = run(suite, "-n", "3", *args)
    result.assert_outcomes(passed=6)
    # at most two run at once, whichever way they finish, and two do
    for walk in walked(suite, collected_plan(suite), workers=3, args=args):
        assert walk.most_running == 2


def test_parallelism_without_n_starts_workers(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_two="".join(f"def test_{n}():\n    pass\n" for n in "ab"))
    result = run(suite, "--depgraph-parallelism", "2")
    result.assert_outcomes(passed=2)
    # the two ready tests go out at once, one to each worker
    assert set(ran(suite.path).values()) == {"gw0", "gw1"}


def test_crashed_worker_fails_its_test_skips_dependents_rest_runs(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_crash="""
        import os, time, pytest

        def test_crash():
            time.sleep(0.2)
            os._exit(1)

        @pytest.mark.depends_on(test_crash)
        def test_dep():
            pass

        @pytest.mark.depends_on(test_dep)
        def test_dep2():
            pass

        def test_ok1():
            time.sleep(0.3)

        def test_ok2():
            time.sleep(0.3)

        @pytest.mark.depends_on(test_ok1)
        def test_ok3():
            pass
        """
    )
    result = run(suite, "-n", "2", "-rs")
    result.assert_outcomes(passed=3, failed=1, skipped=2)
    result.stdout.fnmatch_lines(["*crashed while running*test_crash*"])
    result.stdout.fnmatch_lines(["*depgraph: upstream test_crash.py::test_crash failed*"])
    # no worker computed where test_dep and test_dep2 are (the crash came before test_crash's
    # report): the controller reads their lines from the source, their decorators', as pytest
    for line in (7, 11):
        result.stdout.fnmatch_lines([f"SKIPPED [[]1[]] test_crash.py:{line}: depgraph: *"])
    assert "test_dep" not in ran(suite.path)


def test_exitfirst_stops_the_walk(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_x="""
        import pytest

        def test_fail():
            assert False

        def test_a():
            pass

        @pytest.mark.depends_on(test_a)
        def test_b():
            pass

        @pytest.mark.depends_on(test_b)
        def test_c():
            pass
        """
    )
    # one worker: test_a's end on the other worker is the scheduler's, checked below
    result = run(suite, "-n", "1", "-x")
    assert result.ret != 0
    assert "test_fail" in ran(suite.path)
    # once xdist's session stops (-x after test_fail failed), test_a's end sends nothing
    plan = collected_plan(suite)
    config = controller_config(suite, "load")
    class Session:  # what the scheduler reads of xdist's session
        shouldstop: object = False
        shuttingdown = False
        sched: object = None

    dsession = Session()
    config.pluginmanager.register(dsession, "dsession")
    scheduler, nodes = start_on(config, plan)
    fail, a = plan.nodeids.index("test_x.py::test_fail"), plan.nodeids.index("test_x.py::test_a")
    assert {running(scheduler, n) for n in nodes} == {fail, a}
    complete(scheduler, next(n for n in nodes if running(scheduler, n) == fail), FAILED)
    dsession.shouldstop = "stopping after 1 failures"
    complete(scheduler, next(n for n in nodes if running(scheduler, n) == a))
    assert sorted(i for n in nodes for i in n.sent) == sorted([fail, a])


def test_without_edges_same_outcomes_as_dist_load(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_plain="""
        import pytest

        @pytest.mark.parametrize("n", range(8))
        def test_many(n):
            assert n != 3

        def test_skip():
            pytest.skip("no")

        @pytest.mark.xfail
        def test_xfail():
            assert False

        @pytest.fixture
        def bad():
            raise RuntimeError

        def test_error(bad):
            pass
        """
    )
    expected = {"passed": 7, "failed": 1, "skipped": 1, "xfailed": 1, "errors": 1}
    # the outcomes without the plugin (xdist's load scheduling gives pytest's own: a serial
    # run in this process tells them for less than a run on two workers)
    suite.runpytest("-p", "no:depgraph").assert_outcomes(**expected)
    run(suite, "-n", "1").assert_outcomes(**expected)  # handed to xdist's LoadScheduling
    run(suite, "-n", "2", "--depgraph-parallelism", "2").assert_outcomes(**expected)  # walker


def test_module_fixture_teardown_error_is_reported(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_td="""
        import pytest

        @pytest.fixture(scope="module")
        def resource():
            yield
            raise RuntimeError("teardown went wrong")

        def test_a(resource):
            pass

        @pytest.mark.depends_on(test_a)
        def test_b(resource):
            pass
        """
    )
    result = run(suite, "-n", "1")  # the chain stays on one worker anyway (affinity)
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*ERROR at teardown of test_b*", "*teardown went wrong*"])


def test_deferred_teardowns_are_timed_and_decide_the_dependents(suite: pytest.Pytester) -> None:
    """A worker that knows no next test defers the teardown of module fixtures. That teardown
    runs under pytest-timeout's timer, as any teardown (it hung past it, unreported, and the
    run passed); and a test's dependents start only after it was reported, so a teardown error
    skips them, as serially (they ran)."""
    suite.makepyfile(
        test_td="""
        import pytest

        @pytest.fixture(scope="module")
        def res():
            yield 1
            raise RuntimeError("teardown broke")

        def test_td(res):
            pass
        """,
        test_z="""
        import pytest

        @pytest.mark.depends_on("test_td.py::test_td")
        def test_needs_td():
            pass
        """,
        test_hang="""
        import time
        import pytest

        @pytest.fixture(scope="module")
        def slow():
            yield 1
            time.sleep(10)

        def test_uses(slow):
            pass

        @pytest.mark.depends_on("test_uses")
        def test_after_uses():
            pass
        """,
    )
    expected = {"passed": 3, "skipped": 1, "errors": 2}
    serial = suite.runpytest("-p", "depgraph", "-p", "timeout", "--timeout", "1", "-rs")
    serial.assert_outcomes(**expected)
    result = run(suite, "-p", "timeout", "--timeout", "1", "-n", "2", "-rs")
    result.assert_outcomes(**expected)
    assert result.ret == 1
    for lines in (serial.stdout, result.stdout):
        lines.fnmatch_lines_random([
            "*ERROR at teardown of test_td*",
            "*teardown broke*",
            "*ERROR at teardown of test_after_uses*",
            "*Timeout*>1.0s*",  # pytest-timeout 2.3 and 2.4 word it differently
            "SKIPPED [[]1[]] test_z.py:*: depgraph: upstream test_td.py::test_td errored",
        ])
    # the walk lasts until the deferred teardown was reported: never shorter than its bound
    # (it ended at the test's first report, 0.01 s against a best possible 1.02 s)
    figures = re.search(r"parallel run: ([0-9.]+) s wall time; best possible ([0-9.]+) s",
                        result.stdout.str())
    assert figures is not None
    assert float(figures[1]) >= float(figures[2]) - 0.01, figures[0]


def test_cycle_runs_nothing_and_exits_with_collection_error(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_cycle="""
        import pytest

        @pytest.mark.depends_on("test_b")
        def test_a():
            pass

        @pytest.mark.depends_on("test_a")
        def test_b():
            pass

        def test_c():
            pass
        """
    )
    result = run(suite, "-n", "1")  # a worker that collects the cycle: no second one needed
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*dependency cycle*"])
    assert ran(suite.path) == {}


def test_workers_with_different_graphs_run_nothing(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_differ="""
        import os, pytest

        def test_a():
            pass

        def test_b():
            pass

        if os.environ.get("PYTEST_XDIST_WORKER") == "gw1":
            test_b = pytest.mark.depends_on("test_a")(test_b)
        """
    )
    result = run(suite, "-n", "2")
    result.stdout.fnmatch_lines(["*different dependency graphs*"])
    assert ran(suite.path) == {}


def test_no_xdist_keeps_the_plugin_working(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_serial="import pytest\n\ndef test_a():\n    pass\n\n"
        "@pytest.mark.depends_on(test_a)\ndef test_b():\n    pass\n"
    )
    result = suite.runpytest("-p", "depgraph", "-p", "no:xdist", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


#: a process started in the background of a script (``.ci/run``'s environments, ``cmd &``)
#: inherits SIGINT ignored, and Python then raises no KeyboardInterrupt: the controller of the
#: run below takes the default handler back, as in a terminal
# the controller answers SIGINT even when its parent ignores it (a background job of a shell:
# CI's steps); keyed on the controller's configuration, not on PYTEST_XDIST_WORKER, which a
# controller started by an outer xdist worker inherits
SIGINT_CONFTEST = """
import signal

def pytest_configure(config):
    if not hasattr(config, "workerinput"):
        signal.signal(signal.SIGINT, signal.default_int_handler)
"""


def test_keyboard_interrupt_on_the_controller_ends_the_run(suite: pytest.Pytester) -> None:
    suite.makeconftest(RAN_CONFTEST + SIGINT_CONFTEST)
    suite.makepyfile(
        test_int="""
        import os, signal, time, pytest

        def test_interrupt():
            time.sleep(0.2)
            os.kill(os.getppid(), signal.SIGINT)  # the controller started this worker
            time.sleep(2)

        def test_slow():
            time.sleep(0.5)

        @pytest.mark.depends_on(test_slow)
        def test_later():
            time.sleep(0.5)
        """
    )
    result = run_apart(suite, "-n", "1", "-p", "no:cacheprovider")  # one worker is enough
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*KeyboardInterrupt*"])


def _plan(nodeids: list[str], edges: list[tuple[int, int]]) -> Plan:
    graph = Graph(len(nodeids))
    for dependent, dependency in edges:
        graph.add_edge(dependent, dependency, Kind.REQUIRES, Origin("marker"))
    return Plan(nodeids=nodeids, graph=graph,
                group=[0] * len(nodeids), item_count=len(nodeids))


def test_unhonoured_message_only_for_modes_the_scheduler_does_not_run() -> None:
    plan = _plan(["a.py::T::t1", "a.py::T::t2", "a.py::t3", "b.py::t4"], [(1, 0), (2, 1), (3, 2)])
    # every worker runs every test in plan order: each honours all of them itself
    assert unhonoured_message(plan, "each") == ""
    assert "cannot honour 3 of 3" in unhonoured_message(plan, "someplugin")
    one = _plan(["a.py::t1", "a.py::t2"], [(1, 0)])
    assert "cannot honour 1 of 1 dependency:" in unhonoured_message(one, "someplugin")
    assert unhonoured_message(_plan(["a.py::t"], []), "someplugin") == ""


def test_durations_round_trip_through_the_cache(pytester: pytest.Pytester) -> None:
    from pytest_depgraph.run.durations import for_walk, save_durations

    config = pytester.parseconfigure()
    save_durations(config, {"t.py::a": 0.5, "t.py::b": 2.0})
    save_durations(config, {"t.py::b": 1.0})
    known = for_walk(config, ["t.py::b", "t.py::x", "t.py::a"])
    assert known.seconds == {0: 1.0, 2: 0.5}
    assert known.source == "pytest's cache (2 tests)"


def test_parallelism_without_xdist_is_a_usage_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Asking for parallel runs with xdist not loaded says how to load it (no silent serial run)."""
    pytester.makepyfile(test_p="def test_one():\n    pass\n")
    result = pytester.runpytest("-p", "no:xdist", "--depgraph-parallelism", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        "ERROR: --depgraph-parallelism: running tests in parallel needs pytest-xdist, which is "
        "not loaded in this run (-p no:xdist, or PYTEST_DISABLE_PLUGIN_AUTOLOAD is set). Load "
        "it with -p xdist, or set the parallelism to 1 to run serially."
    ])
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makeini("[pytest]\ndepgraph_parallelism = auto\n")
    result = pytester.runpytest("-p", "depgraph")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: depgraph_parallelism = auto in the ini file: *-p xdist*"])
    # parallelism 1 is a serial run: nothing to load
    pytester.runpytest("-p", "depgraph", "--depgraph-parallelism", "1").assert_outcomes(passed=1)


def test_parallelism_auto_as_for_n(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_depgraph.options import read_settings

    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "3")
    config = pytester.parseconfigure("-p", "xdist", "--depgraph-parallelism", "auto")
    assert read_settings(config).parallelism == 3
    pytester.makeini("[pytest]\ndepgraph_parallelism = auto\n")
    assert read_settings(pytester.parseconfigure("-p", "xdist")).parallelism == 3
    pytester.makeini("[pytest]\ndepgraph_parallelism = lots\n")
    with pytest.raises(pytest.UsageError, match="'lots' in the ini file is neither a whole"):
        pytester.parseconfigure("-p", "xdist")
    # one CPU: auto is 1, a serial run
    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "1")
    pytester.makeini("[pytest]\ndepgraph_parallelism = auto\n")
    pytester.makepyfile(test_p="def test_one():\n    pass\n")
    result = pytester.runpytest("-p", "xdist")
    result.assert_outcomes(passed=1)
    assert "workers" not in result.stdout.str()


def test_workers_leave_out_where_edges_were_declared_unless_the_controller_shows_it(
    pytester: pytest.Pytester,
) -> None:
    """Finding a marker's file:line reads the source; a controller asks its workers for it
    only when it shows it (the DOT file, the run report, --dist unit errors), and a plan
    sent without it is the same plan but for the empty places."""

    def unread(node: object, what: object) -> str:
        raise AssertionError("read a place the controller does not show")

    graph = Graph(3)
    graph.add_edge(1, 0, Kind.REQUIRES, Origin("marker", unread))
    graph.add_edge(2, 0, Kind.AFTER, Origin("fixture", "t.py:2", "db"))
    plan = Plan(nodeids=["t.py::a", "t.py::b", "t.py::c"], graph=graph,
                group=[0, 0, 0], item_count=3)
    data = json.loads(plan.to_json(places=False))
    assert data["origins"] == [["marker", "", ""], ["fixture", "", "db"]]
    again = Plan.from_json(plan.to_json(places=False))
    assert [(e.dependent, e.dependency, e.kind) for e in again.graph.edges()] == [
        (1, 0, Kind.REQUIRES), (2, 0, Kind.AFTER)
    ]

    def shown(*args: str) -> bool:
        return shows_places(pytester.parseconfigure("-p", "xdist", *args))

    assert not shown("--dist", "load") and not shown("--dist", "worksteal")
    assert shown("--dist", "load", "--depgraph-dot=g.dot")
    assert shown("--dist", "load", "--depgraph-report=r.html")
    assert shown("--dist", "loadfile") and shown("--dist", "loadgroup")


def test_locations_come_from_the_worker_that_sent_them_else_from_the_node_ids(
    pytester: pytest.Pytester,
) -> None:
    """One worker sends the items' locations beside its plan (never in it); should it die
    first, the controller's reports name each test's file and names from its node id (and
    its line from that file, which is not there)."""
    class Node:
        def __init__(self, name: str) -> None:
            self.gateway = SimpleNamespace(id=name)

    plan = Plan(nodeids=["t.py::test_a", "t.py::test_b"], graph=Graph(2),
                group=[0, 0], item_count=2)
    assert "locations" not in json.loads(plan.to_json())
    config = pytester.parseconfigure("-p", "xdist")
    silent, sender = Node("gw0"), Node("gw1")
    for nodes, expected in (([silent, sender], ("t.py", 4, "test_b")),
                            ([silent], ("t.py", None, "test_b"))):
        controller = Controller(config)
        controller.received(silent, plan.to_json())
        controller.received(sender, plan.to_json(), {1: ["t.py", 4, "test_b"]})
        assert controller.agree([(node, plan.nodeids) for node in nodes], print) is not None
        assert controller.location(1) == expected


def test_locations_are_shared_out_between_the_first_workers(pytester: pytest.Pytester) -> None:
    """The first workers of a walk each compute a share of the locations (one worker computing
    all of them held the start back); the controller puts the shares together, and a share
    its worker did not send falls back to the node ids."""
    class Node:
        def __init__(self, name: str) -> None:
            self.gateway = SimpleNamespace(id=name)

    nodeids = [f"t.py::test_{i}" for i in range(5)]
    plan = Plan(nodeids=nodeids, graph=Graph(5), group=[0] * 5, item_count=5)
    config = pytester.parseconfigure("-p", "xdist")
    first, second, third = Node("gw0"), Node("gw1"), Node("gw2")
    controller = Controller(config)
    controller.received(first, plan.to_json(), {0: ["t.py", 0, "test_0"], 2: ["t.py", 2, "test_2"]})
    controller.received(second, plan.to_json(), {1: ["t.py", 1, "test_1"],
                                                 3: ["t.py", 3, "test_3"]})
    controller.received(third, plan.to_json())  # its share never came
    collected = [(node, plan.nodeids) for node in (first, second, third)]
    assert controller.agree(collected, print) is not None
    assert [controller.location(n) for n in range(5)] == [
        ("t.py", 0, "test_0"), ("t.py", 1, "test_1"), ("t.py", 2, "test_2"),
        ("t.py", 3, "test_3"), ("t.py", None, "test_4"),
    ]


class _Located:
    """An item whose location is counted when computed (pytest computes it on demand)."""

    def __init__(self, n: int, asked: list[int]) -> None:
        self.n = n
        self.asked = asked

    @property
    def location(self) -> tuple[str, int, str]:
        self.asked.append(self.n)
        return ("t.py", self.n, f"test_{self.n}")


def test_locations_at_a_walks_start_only_of_the_tests_it_may_skip_then(
    pytester: pytest.Pytester,
) -> None:
    """Beside its plan a worker computes the locations of the tests a walk may skip before any
    test runs, its share of them: the broken ones, those downstream of them or of a test
    outside the run, the cleanups. Those downstream of a test that will run come when a test
    does not pass; the controller reports each under the location a worker sent."""
    # 0 broken <- 1 <- 2; 3 <- 4 (a test outside the run, 8); 5 cleans up after 6; 6 <- 7
    graph = Graph(9)
    for dependent, dependency in ((1, 0), (2, 1), (3, 8), (4, 3), (7, 6)):
        graph.add_edge(dependent, dependency, Kind.REQUIRES, Origin("marker"))
    graph.add_edge(5, 6, Kind.AFTER, Origin("cleanup"))
    plan = Plan(nodeids=[f"t.py::test_{n}" for n in range(9)], graph=graph, group=[0] * 9,
                item_count=8, broken={0: "broken"}, cleanups={5: Cleanup((6,))})
    asked: list[int] = []
    items: Any = [_Located(n, asked) for n in range(8)]
    found = [at_start(plan, items, share, 2) for share in (0, 1)]
    assert sorted(asked) == [0, 1, 2, 3, 4, 5]  # not 6 nor 7: they run first
    assert found[0] == {0: ("t.py", 0, "test_0"), 2: ("t.py", 2, "test_2"),
                        4: ("t.py", 4, "test_4")}
    assert found[1] == {1: ("t.py", 1, "test_1"), 3: ("t.py", 3, "test_3"),
                        5: ("t.py", 5, "test_5")}

    class Node:
        gateway = SimpleNamespace(id="gw0")

    controller = Controller(pytester.parseconfigure("-p", "xdist"))
    controller.received(Node, plan.to_json(), found[0])
    assert controller.agree([(Node, plan.nodeids[:8])], print) is not None
    controller.located([7], [["t.py", 7, "test_7"]])  # test_6 failed on a worker
    assert controller.location(7) == ("t.py", 7, "test_7")
    assert controller.location(6) == ("t.py", None, "test_6")  # no t.py to read here
    assert controller.location(0) == ("t.py", 0, "test_0")


def test_a_location_no_worker_sent_is_read_from_the_source(pytester: pytest.Pytester) -> None:
    """As pytest's ``item.location``: the first line of the test's function (its first
    decorator's), 0-based, and its names joined by dots, its parameters kept."""
    pytester.makepyfile(test_src="""
        import pytest

        @pytest.mark.parametrize("n", [1, 2])
        @pytest.mark.depends_on("test_b")
        def test_a(n):
            pass

        class TestC:
            class TestInner:
                def test_x(self):
                    pass
        """)
    root = pytester.path
    assert from_source(root, "test_src.py::test_a[2]") == ("test_src.py", 2, "test_a[2]")
    assert from_source(root, "test_src.py::TestC::TestInner::test_x") == (
        "test_src.py", 9, "TestC.TestInner.test_x")
    assert from_source(root, "test_src.py::test_gone") == ("test_src.py", None, "test_gone")
    assert from_source(root, "missing.py::test_a") == ("missing.py", None, "test_a")


def test_a_fresh_machine_walks_a_suite_without_edges_longest_first(
    suite: pytest.Pytester,
) -> None:
    """No cache, a durations file: the two long tests, defined last, are each worker's first
    test (xdist's --dist load sends the short ones first and leaves a worker alone with a
    long one at the end); the summary says where the durations came from. Serially the order
    is pytest's; a file that cannot be read is a usage error naming it."""
    suite.makepyfile(
        test_skew="".join(f"def test_short_{i}():\n    pass\n\n" for i in range(8))
        + "def test_long_a():\n    pass\n\ndef test_long_b():\n    pass\n"
    )
    durations = {f"test_skew.py::test_short_{i}": 0.01 for i in range(8)}
    durations.update({"test_skew.py::test_long_a": 2.0, "test_skew.py::test_long_b": 1.5})
    (suite.path / "durations.json").write_text(json.dumps(durations))
    fresh = ("-p", "no:cacheprovider", "--depgraph-durations", "durations.json")
    result = run(suite, *fresh, "-n", "2")
    result.assert_outcomes(passed=10)
    result.stdout.fnmatch_lines(
        ["parallel run: *; longest first by the durations in durations.json (10 tests)"]
    )
    order = (suite.path / "ran.log").read_text().splitlines()
    first: dict[str, str] = {}
    for line in order:
        nodeid, worker = line.split("|")
        first.setdefault(worker, nodeid.rsplit("::", 1)[-1])
    assert sorted(first.values()) == ["test_long_a", "test_long_b"]
    (suite.path / "ran.log").unlink()
    serial = suite.runpytest("-p", "depgraph", *fresh)
    serial.assert_outcomes(passed=10)
    assert list(ran(suite.path))[-2:] == ["test_long_a", "test_long_b"]
    (suite.path / "durations.json").write_text("[1, 2, 3]")
    broken = suite.runpytest("-p", "depgraph", *fresh)
    assert broken.ret == pytest.ExitCode.USAGE_ERROR
    broken.stderr.fnmatch_lines(["*--depgraph-durations durations.json: expected a JSON object*"])


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_missing_file_argument_ends_as_with_xdist_alone(
    pytester: pytest.Pytester, workers: str
) -> None:
    """A file argument that does not exist: each worker's collection fails and the worker
    ends at once. The session ends as plain xdist's does ("no tests ran", exit code 5); it
    was an INTERNALERROR -- an empty collection was taken for none (-n 1), and the workers
    already gone never counted as collected (-n 2)."""
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    alone = run(pytester, "-p", "no:depgraph", "-n", workers, "missing.py")
    ours = run(pytester, "-n", workers, "missing.py")
    assert "INTERNALERROR" not in ours.stdout.str() + ours.stderr.str()
    assert ours.ret == alone.ret == pytest.ExitCode.NO_TESTS_COLLECTED


PROTOCOL_CONFTEST = """
import os
import pytest

@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item):
    with open(os.path.join(os.path.dirname(__file__), "protocol.log"), "a") as f:
        f.write(item.name + "\\n")
    return (yield)
"""


def test_a_drained_worker_with_nothing_set_up_makes_no_second_protocol_call(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A test whose worker knew no next test has its teardown towards the next one finished
    later, inside a second protocol call that plugins' wrappers cover (a timer, a fault
    handler). With nothing of a wider scope set up that teardown runs nothing, and the worker
    makes no such call (it cost 170 us a drained test), nor when the next test shares every
    scope set up: a chain without fixtures sees one protocol call a test, and so does a chain
    with a module fixture but for its last test, whose deferred teardown ends the fixture."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makeconftest(PROTOCOL_CONFTEST)
    pytester.makepyfile(
        test_bare="""
        import pytest

        def test_a():
            pass

        @pytest.mark.depends_on("test_a")
        def test_b():
            pass

        @pytest.mark.depends_on("test_b")
        def test_c():
            pass
        """,
        test_kept="""
        import pytest

        import os

        def log(what):
            with open(os.path.join(os.path.dirname(__file__), "res.log"), "a") as f:
                f.write(what + "\\n")

        @pytest.fixture(scope="module")
        def res():
            log("setup")
            yield 1
            log("teardown")

        @pytest.mark.depends_on("test_bare.py::test_c")
        def test_k1(res):
            pass

        @pytest.mark.depends_on("test_k1")
        def test_k2(res):
            pass
        """,
    )
    run(pytester, "-n", "1").assert_outcomes(passed=5)
    calls = (pytester.path / "protocol.log").read_text().split()
    # each drains its worker: the next test is sent once it finished (and settled)
    assert {name: calls.count(name) for name in calls} == {
        "test_a": 1, "test_b": 1, "test_c": 1, "test_k1": 1, "test_k2": 2,
    }
    assert (pytester.path / "res.log").read_text().split() == ["setup", "teardown"]
