"""The orders a discovery runs: pytest's, its reversal, and any wanted list made consistent.

Pure functions over node numbers and the declared graph (the plan's reduced graph, whose
paths are the declared ones). Node ``i`` is the i-th test in the serial run's order, which
is consistent with the graph: a dependency comes before its dependents.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence

from pytest_depgraph.core.graph import Graph, Kind
from pytest_depgraph.core.paths import reachable

#: one list of tests to run in one fresh process, in this order
Order = tuple[int, ...]


def pytest_order(count: int) -> Order:
    """The serial run's own order: the tests as the plan numbers them."""
    return tuple(range(count))


def reversed_order(graph: Graph, count: int) -> Order:
    """The serial order turned around as far as the declared graph allows: Kahn's algorithm
    taking, among the ready tests, the one that comes last in the serial order. Two tests not
    joined by a path of declared edges run one way round here and the other way round in
    :func:`pytest_order`. O((V + E) log V)."""
    waiting = [0] * count
    for node in range(count):
        waiting[node] = sum(1 for d in graph.dependencies_of(node) if d < count)
    ready = [-node for node in range(count) if not waiting[node]]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        node = -heapq.heappop(ready)
        order.append(node)
        for dependent in graph.dependents_of(node):
            if dependent < count:
                waiting[dependent] -= 1
                if not waiting[dependent]:
                    heapq.heappush(ready, -dependent)
    return tuple(order)


def arrange(wanted: Iterable[int], graph: Graph, count: int) -> Order:
    """``wanted`` in its own order as far as the declared graph allows, with everything they
    require (requires edges, transitively) added: each test comes after the tests of the list
    it depends on (requires or after edges), which are pulled ahead of it, and nothing else
    moves. A list made so runs in a child exactly as given. O(V + E) over the part reached."""
    wanted = list(dict.fromkeys(wanted))
    included = set(wanted)
    included.update(
        n for n in reachable(graph, wanted, "dependencies", kinds=(Kind.REQUIRES,)) if n < count
    )
    order: list[int] = []
    placed: set[int] = set()
    for start in wanted:
        if start in placed:
            continue
        # depth first, iterative: a node is placed once every dependency in the list is
        stack: list[tuple[int, int]] = [(start, 0)]
        entered = {start}
        while stack:
            node, next_index = stack[-1]
            dependencies = graph.dependencies_of(node)
            while next_index < len(dependencies):
                dependency = dependencies[next_index]
                next_index += 1
                if dependency in included and dependency not in placed and (
                    dependency not in entered
                ):
                    stack[-1] = (node, next_index)
                    stack.append((dependency, 0))
                    entered.add(dependency)
                    break
            else:
                stack.pop()
                placed.add(node)
                order.append(node)
    return tuple(order)


def joined(graph: Graph, node: int) -> set[int]:
    """The tests joined to ``node`` by a path of declared edges either way (its declared
    dependencies and dependents, transitively): never a hidden dependency of it."""
    found = set(reachable(graph, [node], "dependencies"))
    found.update(reachable(graph, [node], "dependents"))
    return found


def before(order: Sequence[int], node: int) -> list[int]:
    """The tests that run before ``node`` in ``order`` (all of them when it is absent)."""
    try:
        return list(order[: order.index(node)])
    except ValueError:
        return list(order)
