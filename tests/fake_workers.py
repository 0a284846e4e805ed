"""The xdist scheduler in-process, against fake worker nodes (as xdist's own test_dsession.py).

A real ``-n 2`` run samples one timing of the workers; driving the scheduler here tries many
completion orders in milliseconds, and checks where each test was sent.
"""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from pytest_depgraph.core.plan import Plan
from pytest_depgraph.run.outcomes import PASSED
from pytest_depgraph.run.scheduler import DepGraphScheduling
from pytest_depgraph.run.state import PLAN_ATTRIBUTE, session_state


class FakeNode:
    """What the scheduler uses of xdist's WorkerController."""

    def __init__(self, name: str, plan: Plan) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.shutting_down = False
        self.sent: list[int] = []
        setattr(self, PLAN_ATTRIBUTE, plan.to_json())

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.extend(indices)

    def shutdown(self) -> None:
        self.shutting_down = True

    def __repr__(self) -> str:
        return f"<FakeNode {self.gateway.id}>"


def start(
    pytester: pytest.Pytester, plan: Plan, dist: str, workers: int = 2, plugin: object = None,
    args: tuple[str, ...] = (),
) -> tuple[DepGraphScheduling, list[FakeNode]]:
    return start_on(controller_config(pytester, dist, workers, plugin, args), plan, workers)


def controller_config(
    pytester: pytest.Pytester, dist: str, workers: int = 2, plugin: object = None,
    args: tuple[str, ...] = (),
) -> pytest.Config:
    """The configuration of an xdist controller with ``workers`` workers."""
    config = pytester.parseconfigure("-p", "xdist", "--dist", dist, *args)
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
    scheduler = DepGraphScheduling(config)
    nodes = [FakeNode(f"gw{i}", plan) for i in range(workers)]
    for node in nodes:
        scheduler.add_node(node)
    for node in nodes:
        scheduler.add_node_collection(node, plan.nodeids[: plan.item_count])
    assert scheduler.collection_is_completed
    scheduler.schedule()
    return scheduler, nodes


def running(scheduler: DepGraphScheduling, node: FakeNode) -> int | None:
    """The test ``node`` runs now (the first it holds), None when it holds none."""
    dispatcher = scheduler.walk.dispatcher
    held = dispatcher.held(node) if dispatcher is not None else ()
    return held[0] if held else None


def complete(scheduler: DepGraphScheduling, node: FakeNode, outcome: str = PASSED) -> int:
    """The node's running test finishes with ``outcome``; return its index."""
    index = running(scheduler, node)
    assert index is not None
    assert scheduler.plan is not None
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
    pytester.inline_run("--collect-only", "-p", "no:randomly", *args, plugins=[grab])
    assert grab.plan is not None
    return grab.plan


def walks(
    pytester: pytest.Pytester, plan: Plan, orders: int = 50, dist: str = "load"
) -> list[list[list[str]]]:
    """Walk ``plan`` on two fake workers ``orders`` times, each time finishing the running tests
    in another (seeded) random order, every test passing; return, per walk, the node ids each
    worker was sent, in order. Every test is sent exactly once in every walk."""
    found = []
    config = controller_config(pytester, dist)
    for seed in range(orders):
        rng = random.Random(seed)
        scheduler, nodes = start_on(config, Plan.from_json(plan.to_json()))
        while not scheduler.tests_finished:
            busy = [n for n in nodes if running(scheduler, n) is not None]
            assert busy, "nothing runs and the walk is not over"
            complete(scheduler, rng.choice(busy))
        sent = [[plan.nodeids[i] for i in node.sent] for node in nodes]
        assert sorted(n for s in sent for n in s) == sorted(plan.nodeids[: plan.item_count])
        found.append(sent)
    return found
