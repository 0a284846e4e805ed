"""Dependency-closed shards: split a plan's tests into N parts made of whole components.

A *component* is a weakly connected component of the plan's graph (every edge kind, the AFTER
chains of pinned groups included): the tests that must run in one process. Components are
weighed by expected duration and dealt out largest first, each to the lightest shard (LPT).
Nothing here knows pytest: the glue is :mod:`pytest_depgraph.run.sharding`.

Every CI job computes the split on its own, so it depends only on the set of tests and their
durations, never on the order of collection (a randomised order must give the same split):
components are keyed by their smallest node id, weights are summed exactly (``math.fsum``),
and every tie is broken by key, then by shard number.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass

from pytest_depgraph.core.graph.disjoint import DisjointSets
from pytest_depgraph.core.graph.storage import Graph
from pytest_depgraph.core.plan import Plan, ShardInfo, edges_by_origin


def parse(text: str) -> tuple[int, int]:
    """``"K/N"`` as ``(K, N)`` with 1 <= K <= N; ValueError saying what is wrong."""
    head, sep, tail = text.strip().partition("/")
    try:
        if not sep:
            raise ValueError
        index, count = int(head), int(tail)
    except ValueError:
        raise ValueError(
            f"{text!r} is not K/N: write the shard number and the number of shards, "
            "e.g. 2/4 for the second of four"
        ) from None
    if count < 1:
        raise ValueError(f"{text!r}: the number of shards must be at least 1")
    if not 1 <= index <= count:
        raise ValueError(f"{text!r}: the shard number must be between 1 and {count}")
    return index, count


def seconds(value: float) -> str:
    """Tenths of a second, or thousandths below a tenth (a suite of fast tests)."""
    return f"{value:.1f} s" if value >= 0.1 or value == 0 else f"{value:.3f} s"


def components(
    size: int, edges: Iterable[tuple[int, int]], groups: Iterable[Sequence[int]] = ()
) -> list[list[int]]:
    """Weakly connected components of nodes ``0..size-1`` joined by ``edges`` and by
    ``groups`` (each group one component); each sorted, listed by smallest member.

    O((V + E) log V) at worst (:class:`~pytest_depgraph.core.graph.disjoint.DisjointSets`).
    """
    sets = DisjointSets(size)
    for a, b in edges:
        sets.union(a, b)
    for group in groups:
        for a, b in zip(group, group[1:]):
            sets.union(a, b)
    return sets.sets()


def balance(weights: Sequence[float], keys: Sequence[str], count: int) -> list[int]:
    """The shard (0-based) of each component: largest first, each to the lightest shard.

    ``keys`` (unique) break ties between equal weights, the lower shard number ties between
    equal loads, so the result depends only on the pairs (key, weight). Longest processing
    time first: the heaviest shard holds at most the ideal ``total / count`` plus the largest
    component, and at most 4/3 of the best split. O(C log C).
    """
    if count < 1:
        raise ValueError(f"count must be at least 1, not {count}")
    order = sorted(range(len(weights)), key=lambda c: (-weights[c], keys[c]))
    loads = [(0.0, shard) for shard in range(count)]  # already a heap
    assigned = [0] * len(weights)
    for component in order:
        load, shard = heapq.heappop(loads)
        assigned[component] = shard
        heapq.heappush(loads, (load + weights[component], shard))
    return assigned


def weigh(nodeids: Sequence[str], known: Mapping[str, float]) -> list[float]:
    """Expected seconds of each test: its known duration, else the mean of the known ones
    among ``nodeids`` (1 s when none is known)."""
    found = [known.get(nodeid) for nodeid in nodeids]
    values = [seconds for seconds in found if seconds is not None]
    default = math.fsum(values) / len(values) if values else 1.0
    return [default if seconds is None else seconds for seconds in found]


@dataclass(frozen=True)
class Split:
    """One shard of a plan's items."""

    info: ShardInfo
    #: the items of this shard, ascending (plan order)
    nodes: list[int]


def split(
    plan: Plan, weights: Sequence[float], index: int, count: int, loose: Container[str] = ()
) -> Split:
    """Shard ``index`` (1-based) of ``count`` of the plan's items, weighted by ``weights``
    (seconds per item). Edges whose origin kind is in ``loose`` order the tests of a shard
    but do not join them into one component (a position that puts a test first would
    otherwise put the whole suite in one shard). O((V + E) log V + C log C)."""
    size = plan.item_count
    edges = (
        (e.dependent, e.dependency) for e in plan.graph.edges()
        if e.dependent < size and e.dependency < size and e.origin.kind not in loose
    )
    parts = components(size, edges, plan.pinned)
    keys = [min(plan.nodeids[n] for n in part) for part in parts]
    sizes = [math.fsum(weights[n] for n in part) for part in parts]
    total = math.fsum(weights[:size])
    chosen = balance(sizes, keys, count)
    mine = [c for c in range(len(parts)) if chosen[c] == index - 1]
    ideal = total / count
    nodes = sorted(n for c in mine for n in parts[c])
    oversized = tuple(
        (plan.nodeids[parts[c][0]], len(parts[c]), sizes[c])
        for c in mine
        if count > 1 and sizes[c] > ideal
    )
    info = ShardInfo(
        index=index,
        count=count,
        tests=len(nodes),
        groups=len(mine),
        expected=math.fsum(sizes[c] for c in mine),
        total=total,
        selected=size,
        oversized=oversized,
    )
    return Split(info=info, nodes=nodes)


def restrict(plan: Plan, keep: Sequence[int], unreduced: Graph | None = None) -> Plan:
    """The plan of the items ``keep`` (ascending; closed under the plan's edges) and of the
    external nodes they depend on, renumbered in the same order.

    ``unreduced``, the graph before transitive reduction over the plan's numbers, lets the
    edge counts describe the kept tests; without it they stay those of the whole plan.
    O(V + E).
    """
    size = plan.item_count
    new_id: dict[int, int] = {old: new for new, old in enumerate(keep)}
    # (edges to the tests of other shards are position edges only, see split)
    edges = [
        e for e in plan.graph.edges()
        if e.dependent in new_id and (e.dependency in new_id or e.dependency >= size)
    ]
    for external in sorted({e.dependency for e in edges if e.dependency >= size}):
        new_id[external] = len(new_id)
    old_of = sorted(new_id, key=new_id.__getitem__)
    graph = Graph(len(old_of))
    graph.add_edges(
        (new_id[e.dependent], new_id[e.dependency], e.kind, e.origin) for e in edges
    )
    edge_counts, removed = plan.edge_counts, plan.removed_edges
    if unreduced is not None:
        before = [e.origin for e in unreduced.edges() if e.dependent in new_id]
        edge_counts = edges_by_origin(before)
        removed = len(before) - graph.edge_count
    return Plan(
        nodeids=[plan.nodeids[old] for old in old_of],
        graph=graph,
        group=[plan.group[old] for old in old_of],
        item_count=len(keep),
        errors=plan.errors,
        broken={new_id[n]: m for n, m in plan.broken.items() if n in new_id},
        edge_counts=edge_counts,
        removed_edges=removed,
        added=[new_id[n] for n in plan.added if n in new_id],
        pinned=[[new_id[n] for n in group] for group in plan.pinned if group[0] in new_id],
        warnings=plan.warnings,
        shard=plan.shard,
        # a shard's walk holds the resources of the tests it has (no lock reaches another
        # machine): the split above ignores them
        resources=plan.resources.renumbered(new_id),
        # a cleanup's targets share its shard: its edges join them
        cleanups={
            new_id[n]: cleanup._replace(
                targets=tuple(new_id[t] for t in cleanup.targets if t in new_id)
            )
            for n, cleanup in plan.cleanups.items() if n in new_id
        },
    )
