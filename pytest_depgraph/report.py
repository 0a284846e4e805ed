"""The ``depgraph`` section of the terminal summary."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from pytest_depgraph.outcomes import OutcomeRecorder, describe
from pytest_depgraph.plan import Plan, ShardInfo
from pytest_depgraph.shard import seconds
from pytest_depgraph.state import WALK_KEY
from pytest_depgraph.timeline import critical_chain

_SHOWN_PATH = 6


def summary(
    terminal: pytest.TerminalReporter,
    plan: Plan,
    recorder: OutcomeRecorder,
    skips: Mapping[str, str],
) -> None:
    """Write the section; nothing at all for a run without dependencies (pytest as usual)."""
    if not (plan.graph.edge_count or plan.errors or skips or plan.shard):
        return
    walk = _walk_line(terminal.config)
    terminal.write_sep("=", "depgraph")
    for line in lines(plan, recorder, skips, verbose=terminal.config.get_verbosity() > 0):
        terminal.write_line(line)
    if walk:
        terminal.write_line(walk)


def lines(
    plan: Plan, recorder: OutcomeRecorder, skips: Mapping[str, str], verbose: bool = False
) -> list[str]:
    """The summary as text lines."""
    out = [] if plan.shard is None else shard_lines(plan.shard)
    if not (plan.graph.edge_count or plan.errors or skips):
        return out  # a sharded run without dependencies: the shard is all there is to say
    counts = plan.edge_counts
    total = sum(counts.values())
    fixture = counts.get("fixture", 0) + counts.get("output", 0)
    compat = counts.get("dependency", 0) + counts.get("order", 0)
    parts = [f"{counts.get('marker', 0)} explicit", f"{fixture} from fixtures"]
    if compat:
        parts.append(f"{compat} from pytest-dependency/pytest-order markers")
    if counts.get("ordinal"):
        parts.append(f"{counts['ordinal']} keeping pytest-order's positions apart")
    if counts.get("pin"):
        parts.append(f"{counts['pin']} keeping pinned tests on one worker")
    if counts.get("unit"):
        parts.append(f"{counts['unit']} keeping --dist work units whole")
    out.append(
        f"{plan.item_count} tests, {_plural(total, 'edge')} ({', '.join(parts)}); "
        f"{plan.removed_edges} removed by transitive reduction"
    )
    if plan.added:
        out.append(f"{_plural(len(plan.added), 'dependency')} pulled in by selection"
                   + (":" if verbose else ""))
        if verbose:
            out.extend(f"  {plan.nodeids[n]}" for n in plan.added)
    external = list(plan.external)
    if external:
        out.append(f"{_plural(len(external), 'dependency')} not selected (--depgraph-no-deps)")
    out.extend(_critical_path(plan, recorder))
    groups: dict[str, list[str]] = {}
    for nodeid, root in skips.items():
        groups.setdefault(root, []).append(nodeid)
    if groups:
        out.append(f"{_plural(len(skips), 'test')} skipped because of an upstream test:")
        for root, skipped in groups.items():
            not_selected = root in plan.nodeids[plan.item_count :]
            why = "was not selected" if not_selected else describe(recorder.outcome(root))
            out.append(f"  {root} {why}:")
            out.extend(f"    {nodeid}" for nodeid in skipped)
    return out


def shard_lines(info: ShardInfo) -> list[str]:
    """``shard K/N: T tests in C groups, expected S s of total X s (ideal X/N s)``, and where
    the durations came from (a split computed from other durations is another split)."""
    return [
        f"shard {info.index}/{info.count}: {_plural(info.tests, 'test')} in "
        f"{_plural(info.groups, 'group')}, expected {seconds(info.expected)} of total "
        f"{seconds(info.total)} (ideal {seconds(info.total / info.count)})",
        f"durations from {info.source}: {info.known} of {_plural(info.selected, 'test')} known",
    ]


def _critical_path(plan: Plan, recorder: OutcomeRecorder) -> list[str]:
    if not plan.graph.edge_count or not plan.item_count:
        return []
    ran = any(nodeid in recorder for nodeid in plan.nodeids[: plan.item_count])
    path, seconds = critical_chain(plan, recorder.duration if ran else None)
    names = [plan.nodeids[n] for n in path]
    if len(names) > _SHOWN_PATH:
        names = [*names[:3], f"... {len(names) - 5} more ...", *names[-2:]]
    length = f"{seconds:.2f} s" if ran else "by test count"
    return [f"critical path: {_plural(len(path), 'test')} ({length}): " + " -> ".join(names)]


def _walk_line(config: pytest.Config) -> str:
    walk = config.stash.get(WALK_KEY, None)
    if walk is None:
        return ""
    ratio = walk.wall / walk.lower_bound if walk.lower_bound > 0 else 1.0
    return (
        f"parallel walk: {walk.wall:.2f} s wall, lower bound {walk.lower_bound:.2f} s = "
        f"max(critical path {walk.critical_path:.2f} s, total {walk.total:.2f} s / "
        f"{walk.parallelism}) ({ratio:.2f}x)"
    )


def _plural(count: int, noun: str) -> str:
    if count == 1:
        return f"1 {noun}"
    plural = noun[:-1] + "ies" if noun.endswith("y") else noun + "s"
    return f"{count} {plural}"
