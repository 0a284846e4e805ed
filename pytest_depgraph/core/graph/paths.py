"""Walks over the graph: the nodes reached from some, and the critical path.

A new walk over the graph (everything a node requires, everything that requires it) goes
here, not into another breadth-first loop where it is needed.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Container, Iterable, Sequence
from typing import Literal

from pytest_depgraph.core.graph.storage import Graph, Kind
from pytest_depgraph.core.graph.toposort import topological_order

#: which way :func:`reachable` follows the edges
Direction = Literal["dependencies", "dependents"]


def reachable(
    graph: Graph,
    starts: Iterable[int],
    direction: Direction,
    kinds: Container[Kind] = (Kind.REQUIRES, Kind.AFTER),
    blocked: Iterable[int] = (),
) -> dict[int, int]:
    """The nodes reached from ``starts`` through edges of ``kinds``, towards their
    ``"dependencies"`` or their ``"dependents"``, breadth first: node -> the node it was
    first reached from, in the order reached; the starts themselves are left out, and the
    ``blocked`` nodes are neither reached nor walked through.
    O(V + E) over the part reached.
    """
    queue = deque(starts)
    found: dict[int, int] = {}
    if not graph.edge_count or not queue:
        return found
    forward = direction == "dependencies"
    neighbours = graph.dependencies_of if forward else graph.dependents_of
    every = Kind.REQUIRES in kinds and Kind.AFTER in kinds
    seen = {*queue, *blocked}
    while queue:
        node = queue.popleft()
        for other in neighbours(node):
            if other in seen:
                continue
            dependent, dependency = (node, other) if forward else (other, node)
            if every or graph.kind(dependent, dependency) in kinds:
                seen.add(other)
                found[other] = node
                queue.append(other)
    return found


def critical_path(
    graph: Graph, weights: Sequence[float], order: Sequence[int] | None = None
) -> list[float]:
    """Longest weighted path from each node to the end of the graph, following dependents.

    ``remaining[v] = weights[v] + max(remaining[u] for u dependent on v, default 0)``.
    ``order``: a topological order, dependencies first (computed when omitted). Acyclic graph
    assumed. O(V + E).
    """
    if len(weights) != graph.size:
        raise ValueError(f"{len(weights)} weights for {graph.size} nodes")
    if order is None:
        order = topological_order(graph)
    # longest[v]: the best remaining path among v's dependents seen so far; every dependent
    # comes later in ``order``, so walking it backwards completes longest[v] before v.
    longest = [0.0] * graph.size
    for v in reversed(order):
        total = longest[v] = weights[v] + longest[v]
        for d in graph.dependencies_of(v):
            if total > longest[d]:
                longest[d] = total
    return longest
