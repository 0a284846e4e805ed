"""The xdist scheduler in-process, against fake worker nodes (as xdist's own test_dsession.py).

A real ``-n 2`` run samples one timing of the workers; driving the scheduler here tries many
completion orders in milliseconds, and checks where each test was sent.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_depgraph.core.graph.storage import Kind
from pytest_depgraph.core.plan import Plan
from pytest_depgraph.run.outcomes import PASSED
from pytest_depgraph.run.state import session_state
from pytest_depgraph.run.xdist.controller import controller
from pytest_depgraph.run.xdist.scheduler import DepGraphScheduling
from pytest_depgraph.run.xdist.worker import TEARDOWN_COMMAND, TORN_INDEX


class FakeNode:
    """What the scheduler uses of xdist's WorkerController."""

    def __init__(self, name: str) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.shutting_down = False
        self.sent: list[int] = []
        #: the tests the controller asked this worker to finish the teardown of (towards whom)
        self.teardowns: list[int] = []
        #: the test this worker ran with its teardown deferred, until it reports that teardown
        self.held: int | None = None
        #: the locked scopes the controller asked this worker to tear down, not torn down yet
        self.scopes: list[str] = []

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.extend(indices)

    def sendcommand(self, name: str, **kwargs: Any) -> None:
        assert name == TEARDOWN_COMMAND, name
        if "beyond" in kwargs:  # a kept block's scopes: the worker tears them down
            self.scopes.extend(kwargs["beyond"])
            return
        assert self.held is not None, "asked to finish a teardown it does not hold"
        self.teardowns.append(kwargs["towards"])

    def shutdown(self) -> None:
        self.shutting_down = True

    def __repr__(self) -> str:
        return f"<FakeNode {self.gateway.id}>"


def start(
    pytester: pytest.Pytester, plan: Plan, dist: str | None, workers: int = 2,
    plugin: object = None,
    args: tuple[str, ...] = (),
) -> tuple[DepGraphScheduling, list[FakeNode]]:
    return start_on(controller_config(pytester, dist, workers, plugin, args), plan, workers)


def controller_config(
    pytester: pytest.Pytester, dist: str | None, workers: int = 2, plugin: object = None,
    args: tuple[str, ...] = (),
) -> pytest.Config:
    """The configuration of an xdist controller with ``workers`` workers; ``dist`` None: no
    ``--dist`` given (``-n`` alone, which means ``load``)."""
    chosen = ("--dist", dist) if dist is not None else ()
    config = pytester.parseconfigure("-p", "xdist", "-p", "depgraph", *chosen, *args)
    if dist is None:
        config.option.dist = "load"  # what xdist makes of -n without --dist
    if plugin is not None:
        config.pluginmanager.register(plugin)
    config.option.tx = ["popen"] * workers
    # no session runs here: the terminal would ask it about the last item
    config.pluginmanager.unregister(name="terminalreporter")
    return config


def start_on(
    config: pytest.Config, plan: Plan, workers: int = 2
) -> tuple[DepGraphScheduling, list[FakeNode]]:
    """A scheduler on ``config`` that got ``plan`` from ``workers`` fake nodes and started."""
    state = session_state(config)
    state.controller, state.plan = None, None  # a new run on the same configuration
    scheduler = DepGraphScheduling(config)
    nodes = [FakeNode(f"gw{i}") for i in range(workers)]
    for node in nodes:
        scheduler.add_node(node)
    collect(config, scheduler, nodes, plan)
    assert scheduler.collection_is_completed
    scheduler.schedule()
    return scheduler, nodes


def collect(
    config: pytest.Config, scheduler: DepGraphScheduling, nodes: list[FakeNode], plan: Plan
) -> None:
    """Each of ``nodes`` sends ``plan``, then collects its tests, as xdist's session passes the
    events on."""
    for node in nodes:
        controller(config).received(node, plan.to_json())
        controller(config).collected(node, plan.nodeids[: plan.item_count])
        scheduler.add_node_collection(node, plan.nodeids[: plan.item_count])


def running(scheduler: DepGraphScheduling, node: FakeNode) -> int | None:
    """The test ``node`` runs now (the first it holds), None when it holds none."""
    dispatcher = scheduler.dispatcher
    held = dispatcher.view.held(node) if dispatcher is not None else ()
    return held[0] if held else None


def complete(
    scheduler: DepGraphScheduling,
    node: FakeNode,
    outcome: str = PASSED,
    held: bool = False,
    seconds: float = 0.0,
) -> int:
    """The node's running test finishes with ``outcome`` after ``seconds``; return its index.
    ``held``: the worker knew no next test, so the test's teardown waits (:func:`settle`
    reports it)."""
    index = running(scheduler, node)
    assert index is not None
    assert scheduler.plan is not None
    assert node.held is None, "a worker finishes its held test's teardown before the next test"
    scheduler.recorder.mark(scheduler.plan.nodeids[index], outcome)
    if held:
        node.held = index
        scheduler.note_held(node, index)
    scheduler.mark_test_complete(node, index, seconds)
    return index


def tear_down(scheduler: DepGraphScheduling, node: FakeNode) -> list[str]:
    """The node tears down the scopes the controller asked it to, after the last test it
    was sent, and says so; return them."""
    scopes, node.scopes = node.scopes, []
    if scheduler.note_torn(node, node.sent[-1], scopes):
        scheduler.mark_test_complete(node, TORN_INDEX)
    return scopes


def settle(scheduler: DepGraphScheduling, node: FakeNode, outcome: str | None = None) -> int:
    """The node reports the deferred teardown of its held test (``outcome``: what it makes of
    the test, e.g. an error; None: it passed); return the test's index."""
    index = node.held
    assert index is not None and scheduler.plan is not None
    node.held = None
    if outcome is not None:
        scheduler.recorder.mark(scheduler.plan.nodeids[index], outcome)
    scheduler.mark_test_complete(node, index)
    return index


class PlanGrab:
    """A plugin that keeps the plan of an in-process run (pass it in ``plugins=``)."""

    plan: Plan | None = None

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.plan = session_state(session.config).plan


def collected_plan(pytester: pytest.Pytester, *args: str) -> Plan:
    """The plan of the suite in ``pytester.path``, from an in-process collection."""
    grab = PlanGrab()
    pytester.inline_run(
        "--collect-only", "-p", "depgraph", "-p", "no:randomly", *args, plugins=[grab]
    )
    assert grab.plan is not None
    return grab.plan


@dataclass
class Walked:
    """One walk of a plan on fake workers: what was sent where, and when."""

    #: per worker, the node ids it was sent, in order
    sent: list[list[str]]
    #: node id -> the node ids that had finished (and settled) when it was sent
    after: dict[str, set[str]] = field(default_factory=dict)
    #: node id -> the event that sent it, and the event that finished (and settled) it; an
    #: event is a test's completion or settling, 0 the start of the walk
    sent_at: dict[str, int] = field(default_factory=dict)
    finished_at: dict[str, int] = field(default_factory=dict)
    #: the most workers running a test at the same moment
    most_running: int = 0
    #: at each event, the node ids the workers ran (the first test each holds)
    running: list[frozenset[str]] = field(default_factory=list)
    #: a locked scope -> the events that tore it down (asked by the controller)
    torn_at: dict[str, list[int]] = field(default_factory=dict)


def walked(
    pytester: pytest.Pytester,
    plan: Plan,
    orders: int = 50,
    dist: str = "load",
    workers: int = 2,
    outcomes: dict[str, str] | None = None,
    seconds: float = 0.0,
    args: tuple[str, ...] = (),
) -> list[Walked]:
    """Walk ``plan`` on ``workers`` fake workers ``orders`` times, each time finishing the
    running tests in another (seeded) random order, each test with its outcome in
    ``outcomes`` (passed unless named there) after ``seconds``; return each walk. Every test
    that is not skipped is sent exactly once in every walk.

    As a real worker does, a worker that holds nothing behind the test it finishes may hold
    that test (its teardown deferred): it reports the teardown when it begins its next test,
    when the controller asks, or at the end. A worker tears a locked scope down when the
    controller asks (a real one also does on moving on: the fake keeps it until asked). No
    test is ever sent before every test it requires finished and settled."""
    found = []
    config = controller_config(pytester, dist, workers, args=args)
    outcomes = outcomes or {}
    for seed in range(orders):
        rng = random.Random(seed)
        walk = Walked([])
        scheduler, nodes = start_on(config, Plan.from_json(plan.to_json()), workers)
        dispatcher = scheduler.dispatcher
        assert dispatcher is not None
        settled: set[int] = set()
        seen = [0] * len(nodes)
        event = 0
        _check_sent(plan, nodes, seen, settled, walk, event)
        while not scheduler.tests_finished:
            now = [i for i in (running(scheduler, node) for node in nodes) if i is not None]
            walk.most_running = max(walk.most_running, len(now))
            walk.running.append(frozenset(plan.nodeids[index] for index in now))
            moves = []
            for node in nodes:
                index = running(scheduler, node)
                if node.held is not None and (index is not None or node.teardowns):
                    moves.append((node, "settle"))  # its next test, or the controller, asks
                elif index is not None:
                    moves.append((node, "complete"))
                elif node.scopes:
                    moves.append((node, "tear"))  # idle, asked to tear a locked scope down
            assert moves, "nothing runs and the walk is not over"
            node, move = rng.choice(moves)
            event += 1
            if move == "tear":
                for scope in tear_down(scheduler, node):
                    walk.torn_at.setdefault(scope, []).append(event)
            elif move == "settle":
                node.teardowns.clear()
                done = settle(scheduler, node)
                settled.add(done)
                walk.finished_at[plan.nodeids[done]] = event
            else:
                holds = len(dispatcher.view.held(node)) == 1 and rng.random() < 0.6
                index = running(scheduler, node)
                assert index is not None
                outcome = outcomes.get(plan.nodeids[index], PASSED)
                complete(scheduler, node, outcome, held=holds, seconds=seconds)
                if not holds:
                    settled.add(index)
                    walk.finished_at[plan.nodeids[index]] = event
            _check_sent(plan, nodes, seen, settled, walk, event)
        for node in nodes:  # the shutdown: each held test's teardown runs now
            if node.held is not None:
                settled.add(settle(scheduler, node))
        walk.sent = [[plan.nodeids[i] for i in node.sent] for node in nodes]
        ran = sorted(n for s in walk.sent for n in s)
        assert ran == sorted(set(plan.nodeids[: plan.item_count]) - set(scheduler.skips)), (
            "a test was sent twice, or never (the walk ended while a held test was awaited)"
        )
        found.append(walk)
    return found


def walks(
    pytester: pytest.Pytester, plan: Plan, orders: int = 50, dist: str = "load"
) -> list[list[list[str]]]:
    """Per walk of :func:`walked`, every test passing, the node ids each worker was sent."""
    return [walk.sent for walk in walked(pytester, plan, orders, dist)]


def _check_sent(
    plan: Plan,
    nodes: list[FakeNode],
    seen: list[int],
    settled: set[int],
    walk: Walked,
    event: int,
) -> None:
    """No test sent since the last check requires a test that has not finished and settled;
    note what had when each was sent."""
    for n, node in enumerate(nodes):
        for index in node.sent[seen[n]:]:
            waiting = [
                d for d in plan.graph.dependencies_of(index)
                if plan.graph.kind(index, d) is Kind.REQUIRES and d not in settled
            ]
            assert not waiting, f"{index} sent before {waiting} finished"
            walk.after[plan.nodeids[index]] = {plan.nodeids[i] for i in settled}
            walk.sent_at[plan.nodeids[index]] = event
        seen[n] = len(node.sent)
