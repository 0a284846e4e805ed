"""The parallel walk on real xdist workers: order, overlap, the bound, skips, faults, fixtures."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from types import SimpleNamespace

import pytest

from pytest_depgraph.core.graph import Graph, Kind, Origin
from pytest_depgraph.core.plan import Plan
from pytest_depgraph.run.controller import Controller
from pytest_depgraph.run.xdist_hooks import shows_places, unhonoured_message

#: records, for every test call, "nodeid|start|end|worker" into times.log beside the suite
TIMING_CONFTEST = """
import os, time
import pytest

LOG = os.path.join(os.path.dirname(__file__), "times.log")

@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    start = time.time()
    try:
        return (yield)
    finally:
        end = time.time()
        with open(LOG, "a") as f:
            f.write(f"{item.nodeid}|{start}|{end}|{os.environ.get('PYTEST_XDIST_WORKER', '-')}\\n")
"""


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makeconftest(TIMING_CONFTEST)
    return pytester


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "xdist", "-p", "depgraph", *args, timeout=120)


def times(pytester: pytest.Pytester, folder: str = "") -> dict[str, tuple[float, float, str]]:
    """Test name -> (start, end, worker) of every test body that ran (TIMING_CONFTEST in
    ``folder``)."""
    log = pytester.path / folder / "times.log"
    found: dict[str, tuple[float, float, str]] = {}
    if log.exists():
        for line in log.read_text().splitlines():
            nodeid, start, end, worker = line.split("|")
            found[nodeid.rsplit("::", 1)[-1]] = (float(start), float(end), worker)
    return found


def assert_order(ran: dict[str, tuple[float, float, str]], edges: list[tuple[str, str]]) -> None:
    for dependent, dependency in edges:
        if dependent in ran:
            assert dependency in ran, (dependent, dependency)
            assert ran[dependent][0] >= ran[dependency][1], (dependent, dependency, ran)


def max_overlap(ran: dict[str, tuple[float, float, str]]) -> int:
    events = sorted([(s, 1) for s, _, _ in ran.values()] + [(e, -1) for _, e, _ in ran.values()])
    level = peak = 0
    for _, delta in events:
        level += delta
        peak = max(peak, level)
    return peak


def test_chain_runs_step_after_step_on_one_worker_with_module_fixture_once(
    suite: pytest.Pytester,
) -> None:
    steps = ["import os, time, pytest", "", "@pytest.fixture(scope='module')", "def resource():",
             "    with open(os.path.join(os.path.dirname(__file__), 'setups.log'), 'a') as f:",
             "        f.write('setup\\n')", "    yield", ""]
    for i in range(12):
        if i:
            steps.append(f"@pytest.mark.depends_on('test_s{i - 1:02d}')")
        steps += [f"def test_s{i:02d}(resource):", "    time.sleep(0.05)", ""]
    suite.makepyfile(test_chain="\n".join(steps))
    result = run(suite, "-n", "2")
    result.assert_outcomes(passed=12)
    ran = times(suite)
    names = [f"test_s{i:02d}" for i in range(12)]
    assert_order(ran, list(zip(names[1:], names[:-1])))
    gaps = [ran[b][0] - ran[a][1] for a, b in zip(names, names[1:])]
    assert max(gaps) < 1.0, gaps  # no stall: each step starts as soon as the last one ended
    assert len({worker for _, _, worker in ran.values()}) == 1  # affinity kept it on one worker
    assert (suite.path / "setups.log").read_text() == "setup\n"
    cached = json.loads((suite.path / ".pytest_cache/v/depgraph/durations").read_text())
    assert set(cached) == {f"test_chain.py::{name}" for name in names}


DIAMOND = """
import time, pytest

def test_root():
    time.sleep(0.3)

@pytest.mark.depends_on(test_root)
def test_left():
    time.sleep(0.6)

@pytest.mark.depends_on(test_root)
def test_right():
    time.sleep(0.6)

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
    (sub / "conftest.py").write_text(TIMING_CONFTEST + LOCATED_CONFTEST)
    (sub / "test_dag.py").write_text(DIAMOND)
    result = run(suite, "sub", "-n", "2", "-rs", "--junitxml=junit.xml")
    result.assert_outcomes(passed=5, failed=1, skipped=2)
    ran = times(suite, "sub")
    assert "test_child" not in ran and "test_grandchild" not in ran  # never started
    assert_order(ran, [("test_left", "test_root"), ("test_right", "test_root"),
                       ("test_join", "test_left"), ("test_join", "test_right"),
                       ("test_after", "test_broken")])
    left, right = ran["test_left"], ran["test_right"]
    assert left[0] < right[1] and right[0] < left[1]  # independent ready tests overlap
    reason = "depgraph: upstream test_dag.py::test_broken failed"
    # the decorator lines of test_child and test_grandchild, as serially: the controller
    # reports the skips under the locations one worker computed for it (the other none)
    result.stdout.fnmatch_lines([f"SKIPPED [[]1[]] sub/test_dag.py:{line}: {reason}"
                                 for line in (22, 26)])
    located = sorted(
        int(line.split()[1]) for line in (sub / "located.log").read_text().splitlines()
    )
    assert located == [0, 5]  # the tests that require another (they can skip)
    skipped = {
        case.get("name"): case.find("skipped")
        for case in ET.parse(suite.path / "junit.xml").iter("testcase")
    }
    for name in ("test_child", "test_grandchild"):
        element = skipped[name]
        assert element is not None and element.get("message") == reason


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
    suite.makepyfile(
        test_flat="import time\n"
        + "".join(f"def test_{i}():\n    time.sleep(0.4)\n" for i in range(6))
    )
    result = run(suite, "-n", "3", "--depgraph-parallelism", "2")
    result.assert_outcomes(passed=6)
    assert max_overlap(times(suite)) == 2


def test_parallelism_without_n_starts_workers(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_two="import time\n"
        + "".join(f"def test_{n}():\n    time.sleep(0.5)\n" for n in "ab")
    )
    result = run(suite, "--depgraph-parallelism", "2")
    result.assert_outcomes(passed=2)
    assert {w for _, _, w in times(suite).values()} == {"gw0", "gw1"}


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
    assert "test_dep" not in times(suite)


def test_exitfirst_stops_the_walk(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_x="""
        import time, pytest

        def test_fail():
            time.sleep(0.2)
            assert False

        def test_a():
            time.sleep(0.8)

        @pytest.mark.depends_on(test_a)
        def test_b():
            pass

        @pytest.mark.depends_on(test_b)
        def test_c():
            pass
        """
    )
    result = run(suite, "-n", "2", "-x")
    assert result.ret != 0
    ran = times(suite)
    assert "test_fail" in ran and "test_b" not in ran and "test_c" not in ran


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
    run(suite, "-n", "2").assert_outcomes(**expected)  # handed to xdist's LoadScheduling
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
    result = run(suite, "-n", "2")
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
            "*Timeout (>1.0s) from pytest-timeout*",
            "SKIPPED [[]1[]] test_z.py:*: depgraph: upstream test_td.py::test_td errored",
        ])


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
    result = run(suite, "-n", "2")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*dependency cycle*"])
    assert times(suite) == {}


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
    assert times(suite) == {}


def test_no_xdist_keeps_the_plugin_working(suite: pytest.Pytester) -> None:
    suite.makepyfile(
        test_serial="import pytest\n\ndef test_a():\n    pass\n\n"
        "@pytest.mark.depends_on(test_a)\ndef test_b():\n    pass\n"
    )
    result = suite.runpytest_subprocess(
        "-p", "depgraph", "-p", "no:xdist", "-p", "no:cacheprovider", timeout=120
    )
    result.assert_outcomes(passed=2)


def test_keyboard_interrupt_on_the_controller_ends_the_run(suite: pytest.Pytester) -> None:
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
    result = run(suite, "-n", "2", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*KeyboardInterrupt*"])


def _plan(nodeids: list[str], edges: list[tuple[int, int]]) -> Plan:
    graph = Graph(len(nodeids))
    for dependent, dependency in edges:
        graph.add_edge(dependent, dependency, Kind.REQUIRES, Origin("marker"))
    return Plan(nodeids=nodeids, locations=[(n, 0, n) for n in nodeids], graph=graph,
                group=[0] * len(nodeids), item_count=len(nodeids))


def test_unhonoured_message_only_for_modes_the_scheduler_does_not_run() -> None:
    plan = _plan(["a.py::T::t1", "a.py::T::t2", "a.py::t3", "b.py::t4"], [(1, 0), (2, 1), (3, 2)])
    # every worker runs every test in plan order: each honours all of them itself
    assert unhonoured_message(plan, "each") == ""
    assert "cannot honour 3 of 3" in unhonoured_message(plan, "someplugin")
    assert unhonoured_message(_plan(["a.py::t"], []), "someplugin") == ""


def test_durations_round_trip_through_the_cache(pytester: pytest.Pytester) -> None:
    from pytest_depgraph.run.durations import load_durations, save_durations

    config = pytester.parseconfigure()
    save_durations(config, {"t.py::a": 0.5, "t.py::b": 2.0})
    save_durations(config, {"t.py::b": 1.0})
    assert load_durations(config, ["t.py::b", "t.py::x", "t.py::a"]) == {0: 1.0, 2: 0.5}


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

    def unread() -> str:
        raise AssertionError("read a place the controller does not show")

    graph = Graph(3)
    graph.add_edge(1, 0, Kind.REQUIRES, Origin("marker", unread))
    graph.add_edge(2, 0, Kind.AFTER, Origin("fixture", "t.py:2", "db"))
    plan = Plan(nodeids=["t.py::a", "t.py::b", "t.py::c"], locations=[], graph=graph,
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
    first, the controller's reports name each test's file from its node id."""
    class Node:
        def __init__(self, name: str) -> None:
            self.gateway = SimpleNamespace(id=name)

    plan = Plan(nodeids=["t.py::test_a", "t.py::test_b"], locations=[], graph=Graph(2),
                group=[0, 0], item_count=2)
    assert "locations" not in json.loads(plan.to_json())
    config = pytester.parseconfigure("-p", "xdist")
    silent, sender = Node("gw0"), Node("gw1")
    for nodes, expected in (([silent, sender], ("t.py", 4, "test_b")),
                            ([silent], ("t.py", None, "t.py::test_b"))):
        controller = Controller(config)
        controller.received(silent, plan.to_json())
        controller.received(sender, plan.to_json(), [None, ["t.py", 4, "test_b"]])
        assert controller.agree([(node, plan.nodeids) for node in nodes], print) is not None
        assert controller.location(1) == expected
