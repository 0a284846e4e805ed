"""The dispatch policy at the level of workers: the chain rule, the bound, pinned groups, a
worker leaving, queueing; and the xdist adapter in front of it, on fake worker nodes."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_depgraph.core.graph.storage import Graph, Kind, Origin
from pytest_depgraph.core.graph.toposort import stable_topological_order
from pytest_depgraph.core.plan import Plan
from pytest_depgraph.core.walk.dispatch import Dispatcher, WalkInputs, priorities, weights, width
from pytest_depgraph.core.walk.walker import Skip
from pytest_depgraph.run.outcomes import ERROR, FAILED

from .fake_workers import (
    FakeNode,
    collect,
    complete,
    controller_config,
    running,
    settle,
    start,
    start_on,
)
from .graph_strategies import PROPERTIES, Drawn, dags
from .helpers import A, R, make, oracle

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .helpers import Placement


def test_a_worker_continues_the_chain_of_its_group_before_better_work() -> None:
    """1 follows 0 in group 0; 2 and 3 (group 1) have a longer path behind them. When w1
    finishes 0 it takes 1 (class/module fixtures stay up), not the better-placed 3."""
    graph = make(5, [(1, 0, R), (4, 3, R)])
    dispatcher = Dispatcher(
        WalkInputs(graph, priority=[3.0, 2.0, 9.0, 8.0, 1.0], group=[0, 0, 1, 1, 1])
    )
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
    dispatcher = Dispatcher(WalkInputs(graph, group=[0, 0, 1], pinned=[[0, 2]]))
    dispatcher.add_worker("w1")
    assert dispatcher.assign() == [("w1", [0])]
    dispatcher.complete("w1", 0, True)
    assert dispatcher.assign(first="w1") == [("w1", [2])]


def test_the_bound_counts_running_tests() -> None:
    dispatcher = Dispatcher(WalkInputs(Graph(4), limit=2))
    for worker in ("w1", "w2", "w3"):
        dispatcher.add_worker(worker)
    assert dispatcher.assign() == [("w1", [0]), ("w2", [1])]
    assert dispatcher.view.running == 2 and dispatcher.assign() == []
    dispatcher.complete("w2", 1, True)
    assert dispatcher.assign(first="w3") == [("w3", [2])]


def test_a_retired_worker_gets_nothing_and_the_walk_waits_for_a_new_one() -> None:
    dispatcher = Dispatcher(WalkInputs(Graph(2)))
    dispatcher.add_worker("w1")
    dispatcher.retire("w1")
    assert dispatcher.assign() == [] and not dispatcher.finished
    dispatcher.add_worker("w2")
    assert dispatcher.assign() == [("w2", [0])]
    assert not dispatcher.finished


def test_a_worker_that_leaves_fails_its_test_and_frees_its_group() -> None:
    graph = make(4, [(1, 0, A), (2, 1, R)])
    dispatcher = Dispatcher(WalkInputs(graph, pinned=[[0, 1, 2]]))
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

    from pytest_depgraph.run.xdist.scheduler import DepGraphScheduling

    nodeids = ["t.py::a", "t.py::b", "t.py::c"]
    plan = Plan(nodeids=nodeids, graph=Graph(3), group=[0, 0, 0], item_count=3)
    config = controller_config(pytester, "load")

    class Session:  # what the scheduler reads of xdist's DSession
        shouldstop = shuttingdown = False
        sched: object = None

    dsession = Session()
    config.pluginmanager.register(dsession, "dsession")
    scheduler = DepGraphScheduling(config)
    dsession.sched = scheduler
    nodes = [FakeNode(f"gw{i}") for i in range(2)]
    for node in nodes:
        scheduler.add_node(node)
    collect(config, scheduler, nodes, plan)
    scheduler.schedule()
    assert isinstance(dsession.sched, LoadScheduling)
    assert scheduler.walk_stats() is None


def test_known_durations_walk_a_suite_without_edges_longest_first(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    """A fresh machine (no cache) with a durations file: the two long tests, collected last,
    start first, one on each worker, instead of being handed to --dist load; the file's
    durations win over the cache's. A --dist mode the user chose is kept."""
    nodeids = [f"t.py::short{i}" for i in range(6)] + ["t.py::long_a", "t.py::long_b"]
    plan = Plan(nodeids=nodeids, graph=Graph(8), group=[0] * 8, item_count=8)
    given = tmp_path / "durations.json"
    given.write_text(json.dumps({**{n: 0.1 for n in nodeids[:6]}, "t.py::long_a": 3.0,
                                 "t.py::long_b": 2.0}))
    args = ("-p", "no:cacheprovider", "--depgraph-durations", str(given))
    scheduler, (gw0, gw1) = start(pytester, plan, None, args=args)
    assert (gw0.sent[0], gw1.sent[0]) == (6, 7)
    while not scheduler.tests_finished:
        for node in (gw0, gw1):
            if running(scheduler, node) is not None:
                complete(scheduler, node)
    assert scheduler.walk_stats() is not None
    assert scheduler.controller.durations_from == f"{given} (8 tests)"
    # the cache's seconds lose to the file's; a test the file lacks takes the cache's
    one = tmp_path / "one.json"
    one.write_text(json.dumps({"t.py::long_a": 3.0}))
    config = controller_config(pytester, None, args=("--depgraph-durations", str(one)))
    assert config.cache is not None
    config.cache.set("depgraph/durations", {"t.py::long_a": 0.01, "t.py::short0": 9.0})
    scheduler, _ = start_on(config, plan)
    assert scheduler.controller.durations == {0: 9.0, 6: 3.0}
    assert scheduler.controller.durations_from == f"{one} (1 test) and pytest's cache (1 test)"
    # the user's own --dist load: xdist's scheduler runs the suite
    scheduler, _ = start(pytester, plan, "load", args=args)
    assert scheduler.walk_stats() is None and scheduler.handed_over is not None


def test_the_adapter_sends_what_the_dispatcher_hands_out(pytester: pytest.Pytester) -> None:
    nodeids = ["t.py::a", "t.py::b", "u.py::c"]
    graph = make(3, [(1, 0, R)])
    plan = Plan(nodeids=nodeids, graph=graph, group=[0, 0, 1], item_count=3)
    scheduler, (gw0, gw1) = start(pytester, plan, "load")
    assert (gw0.sent, gw1.sent) == ([0], [2])
    assert complete(scheduler, gw0) == 0
    assert gw0.sent == [0, 1] and running(scheduler, gw0) == 1
    complete(scheduler, gw0)
    complete(scheduler, gw1)
    assert scheduler.tests_finished


def test_a_held_test_settles_before_its_dependents_start_and_keeps_its_chain() -> None:
    """0 -> 1 in group 0, 2 in group 1, one worker. w1 ran 0 with its teardown deferred: 1
    waits for that teardown; w1 takes nothing else (2 would tear down group 0's fixtures) and
    is asked to finish the teardown towards 1, which it then runs."""
    dispatcher = Dispatcher(
        WalkInputs(make(3, [(1, 0, R)]), priority=[2.0, 1.0, 5.0], group=[0, 0, 1])
    )
    dispatcher.add_worker("w1")
    assert dispatcher.assign() == [("w1", [2])]
    dispatcher.complete("w1", 2, True)
    assert dispatcher.assign(first="w1") == [("w1", [0])]
    assert dispatcher.complete("w1", 0, True, held=True).ready == []
    assert dispatcher.unsettled(0) and dispatcher.view.unsettled_on("w1") == 0
    assert dispatcher.assign(first="w1") == [] and not dispatcher.finished
    assert dispatcher.teardowns() == [("w1", 0, 1)]
    assert dispatcher.teardowns() == []  # asked once
    assert dispatcher.settle(0, True).ready == [1]
    assert dispatcher.assign(first="w1") == [("w1", [1])]
    dispatcher.complete("w1", 1, True, held=True)
    assert dispatcher.teardowns() == [] and dispatcher.finished  # nothing waits for 1


def test_the_adapter_skips_the_dependents_of_a_deferred_teardown_error(
    pytester: pytest.Pytester,
) -> None:
    nodeids = ["t.py::a", "t.py::b", "u.py::c", "u.py::d"]
    graph = make(4, [(1, 0, R), (3, 2, R)])
    plan = Plan(nodeids=nodeids, graph=graph, group=[0, 0, 1, 1], item_count=4)
    scheduler, (gw0, gw1) = start(pytester, plan, "load")
    assert (gw0.sent, gw1.sent) == ([0], [2])
    complete(scheduler, gw0, held=True)
    assert gw0.teardowns == [1] and gw0.sent == [0]  # b waits for a's teardown
    settle(scheduler, gw0, ERROR)
    assert scheduler.skips == {"t.py::b": "t.py::a"} and gw0.sent == [0]
    # gw1 dies in the teardown it deferred: c failed, d is skipped, nothing is left to run
    complete(scheduler, gw1, held=True)
    assert gw1.teardowns == [3]
    assert scheduler.remove_node(gw1) == "u.py::c"
    assert scheduler.skips["u.py::d"] == "u.py::c"
    assert scheduler.tests_finished


# -- queueing: a worker holds more than the test it runs ------------------------------------


def queued(
    graph: Graph, seconds: float | None, workers: int = 2, **kw: Unpack[Placement]
) -> Dispatcher:
    """A dispatcher that may queue (hold 16), the tests' previous durations all ``seconds``."""
    size = graph.size
    known = {} if seconds is None else dict.fromkeys(range(size), seconds)
    weight = weights(known, size, size)
    dispatcher = Dispatcher(WalkInputs(graph, priority=priorities(graph, weight), weight=weight,
                                       hold=16, durations=known, **kw))
    for w in range(workers):
        dispatcher.add_worker(f"w{w}")
    return dispatcher


def test_short_tests_go_out_in_batches_and_the_bound_counts_only_running_ones() -> None:
    dispatcher = queued(Graph(40), 0.001, limit=2)
    given = dict(dispatcher.assign())
    assert [len(given["w0"]), len(given["w1"])] == [16, 16]
    assert dispatcher.view.running == 2 and dispatcher.view.in_flight == 32
    for node in given["w0"][:14]:  # topped up only once it holds two: one message
        dispatcher.complete("w0", node, True, 0.001)
        if len(dispatcher.view.held("w0")) > 3:
            assert dispatcher.assign(first="w0") == []
    assert dispatcher.assign(first="w0") == [("w0", [32, 33, 34, 35, 36, 37, 38, 39])]


def test_a_long_test_gets_one_test_queued_behind_it_while_more_is_ready_than_taken() -> None:
    dispatcher = queued(Graph(5), 1.0)
    assert dispatcher.assign() == [("w0", [0, 2]), ("w1", [1, 3])]
    dispatcher.complete("w0", 0, True, 1.0)
    # one ready test for two workers: it waits for the first one idle, not behind a test
    assert dispatcher.assign(first="w0") == []
    dispatcher.complete("w0", 2, True, 1.0)
    assert dispatcher.assign(first="w0") == [("w0", [4])]


def test_nothing_waits_behind_a_test_that_releases_more_urgent_work() -> None:
    """0 -> 1 -> 2 is the critical path; the short tests 3..8 never queue behind 0 or 1, so
    each step of the chain starts the moment its dependency finished."""
    graph = make(9, [(1, 0, R), (2, 1, R)])
    known = {0: 1.0, 1: 1.0, 2: 1.0, **dict.fromkeys(range(3, 9), 0.001)}
    weight = weights(known, 9, 9)
    dispatcher = Dispatcher(WalkInputs(graph, priority=priorities(graph, weight), weight=weight,
                                       hold=16, durations=known))
    dispatcher.add_worker("w0")
    dispatcher.add_worker("w1")
    given = dict(dispatcher.assign())
    assert given["w0"] == [0] and given["w1"][0] == 3
    dispatcher.complete("w0", 0, True, 1.0)
    assert dispatcher.assign(first="w0") == [("w0", [1])]


def test_nothing_of_another_class_queues_inside_a_chain() -> None:
    """A1 -> A2 in one class: a test of class B queued between them would tear the class
    fixture down; the worker continues A's chain instead."""
    graph = make(4, [(1, 0, R)])
    dispatcher = queued(graph, 0.001, workers=1, group=[0, 0, 1, 1])
    assert dispatcher.assign() == [("w0", [0])]
    dispatcher.complete("w0", 0, True, 0.001)
    assert dispatcher.assign(first="w0") == [("w0", [1, 2, 3])]


def test_a_test_of_the_same_class_queues_inside_a_chain() -> None:
    """A1 -> A2 in one class, A3 ready in it too: A3 between A1 and A2 keeps the class fixture
    up, so it queues behind A1 (the worker does not wait for a round trip), and class B's
    tests behind A3, whose chain ends there."""
    graph = make(5, [(1, 0, R)])
    dispatcher = queued(graph, 0.001, workers=1, group=[0, 0, 0, 1, 1])
    assert dispatcher.assign() == [("w0", [0, 2, 3, 4])]
    dispatcher.complete("w0", 0, True, 0.001)
    dispatcher.complete("w0", 2, True, 0.001)
    assert dispatcher.assign(first="w0") == [("w0", [1])]


def test_a_unit_goes_out_whole_and_a_required_test_inside_it_is_not_queued_early() -> None:
    """A --dist unit is a pinned group chained by ordering edges: its tests queue behind each
    other on one worker, whatever the earlier ones do. 3 requires 2 (a real dependency): it is
    sent only once 2 passed."""
    graph = make(5, [(1, 0, A), (2, 1, A), (3, 2, A), (3, 2, R), (4, 3, A)])
    dispatcher = queued(graph, 0.001, workers=2, pinned=[[0, 1, 2, 3, 4]])
    assert dispatcher.assign() == [("w0", [0, 1, 2])]
    step = dispatcher.complete("w0", 0, False, 0.001)  # an ordering edge: 1 runs anyway
    assert step.skipped == [] and dispatcher.assign(first="w0") == []
    dispatcher.complete("w0", 1, True, 0.001)
    dispatcher.complete("w0", 2, False, 0.001)
    assert dict(dispatcher.view.skipped) == {3: 2}
    assert dispatcher.assign(first="w0") == [("w0", [4])]


def test_a_worker_that_dies_gives_back_what_it_had_queued() -> None:
    graph = make(5, [(1, 0, A), (2, 1, A)])
    dispatcher = queued(graph, 0.001, workers=1, pinned=[[0, 1, 2]])
    assert dispatcher.assign() == [("w0", [0, 1, 2, 3, 4])]
    assert dispatcher.remove_worker("w0") == 0
    dispatcher.finish(0, False)
    assert not dispatcher.finished
    dispatcher.add_worker("w1")
    assert dispatcher.assign() == [("w1", [1, 2, 3, 4])]


def test_the_adapter_fails_the_crashed_test_and_sends_its_queue_elsewhere(
    pytester: pytest.Pytester,
) -> None:
    nodeids = [f"t.py::t{i}" for i in range(6)]
    graph = make(6, [(5, 0, R)])
    plan = Plan(nodeids=nodeids, graph=graph, group=list(range(6)), item_count=6)
    scheduler, (gw0, gw1) = start(pytester, plan, "load")
    assert (gw0.sent, gw1.sent) == ([0, 2], [1, 3])
    assert scheduler.remove_node(gw0) == "t.py::t0"
    assert scheduler.skips == {"t.py::t5": "t.py::t0"}
    complete(scheduler, gw1)
    assert sorted(gw1.sent) == [1, 2, 3, 4]
    while not scheduler.tests_finished:
        complete(scheduler, gw1)
    assert sorted(gw1.sent) == [1, 2, 3, 4]


def test_a_worker_that_died_before_xdist_says_so_is_given_nothing_lost(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A test ends its worker's process (``os._exit``) just after the one before it completed:
    the controller handles that completion, and the tests it hands that worker meet a closed
    channel (execnet raises OSError) before xdist reports the worker down. Nothing raises out
    of the scheduler (an INTERNALERROR, exit code 3, in a real run); when xdist reports the
    worker down, the test it died in fails and what it was given runs elsewhere."""
    nodeids = [f"t.py::t{i}" for i in range(6)]
    graph = make(6, [(5, 1, R)])
    plan = Plan(nodeids=nodeids, graph=graph, group=list(range(6)), item_count=6)
    scheduler, (gw0, gw1) = start(pytester, plan, "load")
    assert (gw0.sent, gw1.sent) == ([1, 2], [0, 3])

    def closed(indices: list[int]) -> None:
        raise OSError("cannot send (already closed?)")

    monkeypatch.setattr(gw0, "send_runtest_some", closed)
    complete(scheduler, gw0)  # t1 passed: t5 is ready; gw0 died in t2 meanwhile
    assert scheduler.remove_node(gw0) == "t.py::t2"
    assert scheduler.recorder.outcome("t.py::t2") == FAILED
    while not scheduler.tests_finished:
        complete(scheduler, gw1)
    assert sorted(gw1.sent) == [0, 3, 4, 5]


@settings(PROPERTIES, max_examples=max(1, PROPERTIES.max_examples // 3))
@given(dags(max_size=120), st.integers(0, 2**32 - 1))
def test_random_queued_walks_run_every_test_once_after_its_dependencies(
    drawn: Drawn, seed: int
) -> None:
    """Workers that hold up to 16 tests, run them in order, fail some and die: a test runs
    only once everything it waits for finished (and never after a failed requirement), a
    pinned group stays on one live worker, no more than the bound run, nothing stalls, and
    the skips are the oracle's.

    A worker that finishes a test with nothing behind it may hold it (its teardown deferred):
    the test settles when the worker begins its next test, when the dispatcher asks for its
    teardown, or at the end -- and only then do its dependents start; a teardown may fail,
    and a worker may die in it."""
    graph = drawn.graph
    size = graph.size
    rng = random.Random(seed)
    order = stable_topological_order(graph)
    pinned: list[list[int]] = []
    if rng.random() < 0.5:  # units chained by ordering edges in serial order, as the plan does
        label = [rng.randrange(-2, 3) for _ in range(size)]
        pinned = [g for g in ([v for v in order if label[v] == u] for u in range(3)) if len(g) > 1]
        for members in pinned:
            for before, after in zip(members, members[1:]):
                graph.add_edge(after, before, A, Origin("pin"))
    known = {v: rng.choice([0.0005, 0.002, 0.3]) for v in range(size) if rng.random() < 0.7}
    weight = weights(known, size, size)
    limit = rng.choice([None, 1, 2, 3])
    dispatcher = Dispatcher(WalkInputs(
        graph, priority=priorities(graph, weight), weight=weight,
        group=[rng.randrange(3) for _ in range(size)], limit=limit, pinned=pinned, hold=16,
        durations=known,
    ))
    failing = {v for v in range(size) if rng.random() < 0.1}
    holding = rng.choice([0.0, 0.5, 1.0])
    deps: dict[int, list[tuple[int, Kind]]] = {v: [] for v in range(size)}
    for u, v, kind in graph.triples():
        deps[u].append((v, kind))
    pin_of = {v: g for g, members in enumerate(pinned) for v in members}
    owner: dict[int, object] = {}
    queues: dict[object, list[int]] = {}
    finished: dict[int, bool] = {}  # node -> satisfied
    held: dict[object, int] = {}  # worker -> its held test, not settled yet
    asked: set[object] = set()  # workers asked to settle their held test
    ran: list[int] = []
    fresh = 0

    def add() -> None:
        nonlocal fresh
        name = f"w{fresh}"
        fresh += 1
        queues[name] = []
        dispatcher.add_worker(name)

    def hand_out(first: object = None) -> None:
        for worker, nodes in dispatcher.assign(first):
            queues[worker].extend(nodes)
        for worker, node, towards in dispatcher.teardowns():
            assert held.get(worker) == node and not queues[worker] and worker not in asked
            assert node in {d for d, _ in deps[towards]} and towards not in finished
            asked.add(worker)
        assert limit is None or sum(1 for q in queues.values() if q) <= limit
        for worker, queue in queues.items():
            assert list(dispatcher.view.held(worker)) == queue
            if queue and worker not in held:
                begin(worker, queue[0])

    def begin(worker: object, node: int) -> None:
        if node in ran:
            return
        for d, kind in deps[node]:
            assert d in finished, f"{node} runs before {d} finished and settled"
            assert kind is A or finished[d], f"{node} runs after {d} failed"
        group = pin_of.get(node)
        if group is not None:
            assert owner.get(group, worker) == worker, "a pinned group moved to another worker"
            owner[group] = worker
        ran.append(node)

    for _ in range(rng.randint(1, 4)):
        add()
    hand_out()
    while not dispatcher.finished:
        movable = [w for w, q in queues.items() if q or (w in held and w in asked)]
        assert movable, "stalled"
        worker = rng.choice(movable)
        if rng.random() < 0.03:  # the worker dies (in its test, or in a deferred teardown)
            dead = held.pop(worker, None)
            node = dead if dead is not None else queues[worker][0]
            assert dispatcher.remove_worker(worker) == node
            del queues[worker]
            asked.discard(worker)
            owner = {g: w for g, w in owner.items() if w != worker}
            step = dispatcher.settle(node, False) if dead is not None else (
                dispatcher.finish(node, False)
            )
            finished[node] = False
            add()
        elif worker in held:  # it settles its held test before it begins the next one
            node = held.pop(worker)
            asked.discard(worker)
            satisfied = node not in failing and rng.random() > 0.1  # a teardown error
            step = dispatcher.settle(node, satisfied)
            finished[node] = satisfied
        else:
            node = queues[worker].pop(0)
            satisfied = node not in failing
            holds = not queues[worker] and rng.random() < holding
            step = dispatcher.complete(
                worker, node, satisfied, known.get(node, 0.001), held=holds
            )
            if holds:
                assert not step.ready and not step.skipped
                held[worker] = node
                if not satisfied:
                    failing.add(node)
            else:
                finished[node] = satisfied
        for skip in step.skipped:
            finished[skip.node] = False
        for group, members in enumerate(pinned):
            if all(m in finished for m in members):
                owner.pop(group, None)
        hand_out(worker)
    for node in held.values():  # the shutdown settles what is still held
        step = dispatcher.settle(node, node not in failing)
        assert not step.ready and not step.skipped, "the walk ended before all could run"
        finished[node] = node not in failing
    assert sorted(finished) == list(range(size))
    assert len(ran) == len(set(ran)) == size - len(dispatcher.view.skipped)
    assert set(dispatcher.view.skipped) == oracle(graph, {v for v in ran if not finished[v]}, set())
