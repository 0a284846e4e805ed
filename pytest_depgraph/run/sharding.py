"""``--depgraph-shard K/N`` in a session: the durations it weighs, the split, what is deselected.

The split itself is :mod:`pytest_depgraph.core.shard`. Every process that collects computes it from
its own collection (serial session, every xdist worker), so every process must weigh the tests
alike: the controller (or the serial session) loads the durations once, and hands them to its
xdist workers in ``workerinput`` -- a remote worker has neither the file nor the cache.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from pytest_depgraph.collect.origins import OriginKind
from pytest_depgraph.core import shard
from pytest_depgraph.core.graph.storage import Graph
from pytest_depgraph.core.plan import Plan, ShardInfo
from pytest_depgraph.core.shard import seconds as _seconds
from pytest_depgraph.options import Settings
from pytest_depgraph.plurals import tests
from pytest_depgraph.run import durations
from pytest_depgraph.run.role import role
from pytest_depgraph.run.state import session_state

#: ``workerinput`` key of the durations the controller hands its workers
WORKERINPUT_DURATIONS = "depgraph_durations"


def configure(config: pytest.Config, settings: Settings) -> None:
    """Check the durations paths and load what the split weighs; a bad file is a usage error
    naming it."""
    if settings.store_durations and not role(config).is_worker:
        try:
            durations.check_writable(settings.store_durations)
        except durations.FileError as error:
            raise pytest.UsageError(f"--depgraph-store-durations {error}") from None
    if settings.shard is not None and not role(config).is_worker:
        config.pluginmanager.register(ShardHooks(), "depgraph-shard")


def known_durations(config: pytest.Config) -> dict[str, float]:
    """The durations the split weighs: the controller's on an xdist worker, else the file's
    (read at configure time), else the cache's (read now: the cache is set up after us)."""
    state = session_state(config)
    if state.durations is None:
        given = _given(config)
        if given is None and state.settings.durations:
            given = state.given_durations or {}
        state.durations = given if given is not None else durations.cached_durations(config)
    return state.durations


def _given(config: pytest.Config) -> dict[str, float] | None:
    """The durations the controller sent this xdist worker, if any."""
    workerinput = getattr(config, "workerinput", None)
    given = workerinput.get(WORKERINPUT_DURATIONS) if isinstance(workerinput, dict) else None
    return dict(given) if isinstance(given, dict) else None


class ShardHooks:
    """The xdist controller's side of a sharded run."""

    def __init__(self) -> None:
        self._reported = False

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        # every worker must split its collection alike: with the controller's durations
        node.workerinput[WORKERINPUT_DURATIONS] = known_durations(node.config)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """The first worker's plan (the controller's, kept by ``run/xdist/hooks.py``' hook, which
        runs first): warn once about oversized groups."""
        if self._reported:
            return
        self._reported = True
        from pytest_depgraph.run.xdist.controller_warnings import record_warning

        plans = session_state(node.config).controller
        plan = None if plans is None else plans.first_plan()
        if plan is None or plan.shard is None:
            return
        for _, message in oversized_warnings(plan.shard):
            record_warning(node.config, message)


def apply(
    config: pytest.Config,
    plan: Plan,
    items: list[pytest.Item],
    unreduced: Graph | None,
    index: int,
    count: int,
) -> tuple[Plan, list[pytest.Item], list[pytest.Item]]:
    """Keep shard ``index`` of ``count`` of the planned ``items`` (``unreduced``: the plan's
    graph before reduction, for the edge counts); return its plan, its items and the items
    of the other shards. A group heavier than the ideal share is a warning (at collection)."""
    state = session_state(config)
    previous = state.kept_shard
    if previous is not None and all(item.nodeid in previous[0] for item in items):
        # the hook ran again (some plugins call it) on this shard's own items: splitting them
        # again would drop tests that no shard runs
        return plan.replace(shard=previous[1]), items, []
    weights = shard.weigh(plan.nodeids[: plan.item_count], known_durations(config))
    # pytest-order's positions order the tests of a shard, they do not join them
    chosen = shard.split(plan, weights, index, count, loose={OriginKind.ORDINAL})
    known = known_durations(config)
    info = chosen.info.with_durations(
        source=state.settings.durations or "pytest's cache",
        known=sum(1 for nodeid in plan.nodeids[: plan.item_count] if nodeid in known),
    )
    kept_plan = shard.restrict(plan, chosen.nodes, unreduced).replace(shard=info)
    keep = set(chosen.nodes)
    kept = [item for n, item in enumerate(items) if n in keep]
    others = [item for n, item in enumerate(items) if n not in keep]
    if not role(config).is_worker:  # the xdist controller warns once for all workers
        by_nodeid = {item.nodeid: item for item in kept}
        for first, message in oversized_warnings(info):
            # located at the group's first test, so the warnings summary points at it
            path, line, _ = by_nodeid[first].location
            warnings.warn_explicit(
                pytest.PytestWarning(message),
                pytest.PytestWarning,
                str(config.rootpath / path),
                (line or 0) + 1,
            )
    state.kept_shard = (frozenset(item.nodeid for item in kept), info)
    return kept_plan, kept, others


def oversized_warnings(info: ShardInfo) -> list[tuple[str, str]]:
    """(first test, warning) for each group of the shard heavier than the ideal share."""
    ideal = _seconds(info.total / info.count)
    return [
        (
            first,
            f"depgraph: shard {info.index}/{info.count} holds a group of {tests(size)} that "
            f"depend on each other, expected to take {_seconds(seconds)}, more than the ideal "
            f"share of {ideal}: no split can end sooner than this group. Its first test: "
            f"{first}",
        )
        for first, size, seconds in info.oversized
    ]


def exit_status(session: pytest.Session, plan: Plan | None) -> None:
    """An empty shard of a non-empty selection passed (N may exceed the number of groups):
    not pytest's 'no tests collected', which would fail that CI job."""
    info = plan.shard if plan is not None else None
    if (
        info is not None
        and info.tests == 0
        and info.selected > 0
        and session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED
    ):
        session.exitstatus = pytest.ExitCode.OK

