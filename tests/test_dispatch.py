"""The dispatch policy at the level of workers: the chain rule, the bound, pinned groups, a
worker leaving, queueing; and the xdist adapter in front of it, on fake worker nodes."""

from __future__ import annotations

import pytest

from pytest_depgraph.core.dispatch import Dispatcher, priorities, weights, width
from pytest_depgraph.core.graph import Graph, Kind, Origin
from pytest_depgraph.core.plan import Plan
from pytest_depgraph.core.walker import Skip

from .fake_workers import FakeNode, complete, controller_config, running, start

R, A = Kind.REQUIRES, Kind.AFTER
M = Origin("marker")


def make(size: int, edges: list[tuple[int, int, Kind]]) -> Graph:
    graph = Graph(size)
    for dependent, dependency, kind in edges:
        graph.add_edge(dependent, dependency, kind, M)
    return graph


def test_a_worker_continues_the_chain_of_its_group_before_better_work() -> None:
    """1 follows 0 in group 0; 2 and 3 (group 1) have a longer path behind them. When w1
    finishes 0 it takes 1 (class/module fixtures stay up), not the better-placed 3."""
    graph = make(5, [(1, 0, R), (4, 3, R)])
    dispatcher = Dispatcher(graph, priority=[3.0, 2.0, 9.0, 8.0, 1.0], group=[0, 0, 1, 1, 1])
    for worker in ("w1", "w2"):
        dispatcher.add_worker(worker)
    assert dispatcher.assign() == [("w1", [2]), ("w2", [3])]
    dispatcher.complete("w1", 2, True)
    assert dispatcher.assign(first="w1") == [("w1", [0])]
    dispatcher.complete("w2", 3, True)
    # w2's last group is 1: 4 just became ready there; 1 is not ready yet
    assert dispatcher.assign(first="w2") == [("w2", [4])]
    dispatcher.complete("w1", 0, True)
    assert dispatcher.assign(first="w1") == [("w1", [1])]


def test_the_chain_rule_yields_to_a_bound_pinned_group() -> None:
    # w1 holds pinned group [0, 2]; 1 (same group as 0) and 2 become ready when 0 finishes
    graph = make(3, [(1, 0, R), (2, 0, A)])
    dispatcher = Dispatcher(graph, group=[0, 0, 1], pinned=[[0, 2]])
    dispatcher.add_worker("w1")
    assert dispatcher.assign() == [("w1", [0])]
    dispatcher.complete("w1", 0, True)
    assert dispatcher.assign(first="w1") == [("w1", [2])]


def test_the_bound_counts_running_tests() -> None:
    dispatcher = Dispatcher(Graph(4), limit=2)
    for worker in ("w1", "w2", "w3"):
        dispatcher.add_worker(worker)
    assert dispatcher.assign() == [("w1", [0]), ("w2", [1])]
    assert dispatcher.running == 2 and dispatcher.assign() == []
    dispatcher.complete("w2", 1, True)
    assert dispatcher.assign(first="w3") == [("w3", [2])]


def test_a_retired_worker_gets_nothing_and_the_walk_waits_for_a_new_one() -> None:
    dispatcher = Dispatcher(Graph(2))
    dispatcher.add_worker("w1")
    dispatcher.retire("w1")
    assert dispatcher.assign() == [] and not dispatcher.finished
    dispatcher.add_worker("w2")
    assert dispatcher.assign() == [("w2", [0])]
    assert not dispatcher.finished


def test_a_worker_that_leaves_fails_its_test_and_frees_its_group() -> None:
    graph = make(4, [(1, 0, A), (2, 1, R)])
    dispatcher = Dispatcher(graph, pinned=[[0, 1, 2]])
    for worker in ("w1", "w2"):
        dispatcher.add_worker(worker)
    assert dispatcher.assign() == [("w1", [0]), ("w2", [3])]
    dispatcher.complete("w1", 0, True)
    assert dispatcher.assign(first="w1") == [("w1", [1])]
    assert dispatcher.remove_worker("w1") == 1
    step = dispatcher.finish(1, False)
    assert step.skipped == [Skip(2, 1)]
    dispatcher.complete("w2", 3, True)
    assert dispatcher.finished and dispatcher.done
    assert dispatcher.remove_worker("w2") is None


def test_priorities_weights_and_width() -> None:
    chain = make(3, [(1, 0, R), (2, 1, R)])
    assert weights({0: 2.0, 1: 4.0}, 2, 3) == [2.0, 4.0, 0.0]
    assert weights({}, 2, 2) == [1.0, 1.0]
    assert priorities(chain, [1.0, 2.0, 3.0]) == [6.0, 5.0, 3.0]
    assert width(chain, ()) == 1 and width(Graph(3), [2]) == 2


def test_a_plan_without_anything_to_walk_is_handed_to_xdist_itself(
    pytester: pytest.Pytester,
) -> None:
    """xdist's session then calls LoadScheduling directly: nothing of ours per event."""
    from xdist.scheduler import LoadScheduling  # type: ignore[import-untyped]

    from pytest_depgraph.run.scheduler import DepGraphScheduling

    nodeids = ["t.py::a", "t.py::b", "t.py::c"]
    plan = Plan(nodeids=nodeids, locations=[], graph=Graph(3), group=[0, 0, 0], item_count=3)
    config = controller_config(pytester, "load")

    class Session:  # what the scheduler reads of xdist's DSession
        shouldstop = shuttingdown = False
        sched: object = None

    dsession = Session()
    config.pluginmanager.register(dsession, "dsession")
    scheduler = DepGraphScheduling(config)
    dsession.sched = scheduler
    nodes = [FakeNode(f"gw{i}", plan) for i in range(2)]
    for node in nodes:
        scheduler.add_node(node)
        scheduler.add_node_collection(node, nodeids)
    scheduler.schedule()
    assert isinstance(dsession.sched, LoadScheduling)
    assert scheduler.walk.walk_stats() is None


def test_the_adapter_sends_what_the_dispatcher_hands_out(pytester: pytest.Pytester) -> None:
    nodeids = ["t.py::a", "t.py::b", "u.py::c"]
    graph = make(3, [(1, 0, R)])
    plan = Plan(nodeids=nodeids, locations=[], graph=graph, group=[0, 0, 1], item_count=3)
    scheduler, (gw0, gw1) = start(pytester, plan, "load")
    assert (gw0.sent, gw1.sent) == ([0], [2])
    assert complete(scheduler, gw0) == 0
    assert gw0.sent == [0, 1] and running(scheduler, gw0) == 1
    complete(scheduler, gw0)
    complete(scheduler, gw1)
    assert scheduler.tests_finished
