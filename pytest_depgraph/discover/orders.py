"""The orders a discovery runs: pytest's, its reversal, and any wanted list made consistent.

Pure functions over node numbers and the declared graph (the plan's reduced graph, whose
paths are the declared ones). Node ``i`` is the i-th test in the serial run's order, which
is consistent with the graph: a dependency comes before its dependents.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence

from pytest_depgraph.core.graph.paths import reachable
from pytest_depgraph.core.graph.storage import Graph, Kind

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


def uncovered(graph: Graph, count: int, orders: Sequence[Order]) -> list[int]:
    """For each test ``b``, as a bitset: the tests ``a`` before it in the serial order, not
    joined to it by declared edges, that run before it in every one of ``orders`` too -- the
    pairs no order has run the other way round yet. Ancestors are bitsets over the serial
    (topological) order, so the whole is O(V * (V / word) + E). Empty when the reversal
    covered every pair (always, without declared edges)."""
    ancestors = [0] * count
    for node in range(count):
        mask = 0
        for dependency in graph.dependencies_of(node):
            if dependency < count:
                mask |= ancestors[dependency] | (1 << dependency)
        ancestors[node] = mask
    missing = [((1 << node) - 1) & ~ancestors[node] for node in range(count)]
    for order in orders:
        seen = 0
        for node in order:
            missing[node] &= seen
            seen |= 1 << node
    return missing


def covering_order(graph: Graph, count: int, missing: list[int]) -> Order:
    """An order consistent with the graph that turns round as many of the ``missing`` pairs as
    it can, built from its end: among the tests whose dependents are all placed, the one that
    must come after a partner of a missing pair still to be placed goes last, the first in the
    serial order first. O(V^2 / word) at worst (a scan of the candidates per step), only when
    declared edges left pairs uncovered."""
    partners = [0] * count  # a -> the tests b that must come before a to turn (a, b) round
    for node in range(count):
        rest = missing[node]
        while rest:
            low = rest & -rest
            partners[low.bit_length() - 1] |= 1 << node
            rest ^= low
    waiting = [sum(1 for d in graph.dependents_of(n) if d < count) for n in range(count)]
    candidates = {n for n in range(count) if not waiting[n]}
    placed = 0
    backwards: list[int] = []
    while candidates:
        node = max(candidates, key=lambda n: (bool(partners[n] & ~placed), -n))
        candidates.remove(node)
        backwards.append(node)
        placed |= 1 << node
        for dependency in graph.dependencies_of(node):
            if dependency < count:
                waiting[dependency] -= 1
                if not waiting[dependency]:
                    candidates.add(dependency)
    return tuple(reversed(backwards))


def reversals(graph: Graph, count: int, budget: int = 3) -> list[Order]:
    """The orders that run the serial order's pairs the other way round: the reversal, then
    while the declared graph leaves pairs uncovered, covering orders (at most ``budget`` in
    all), each stopping when it turns no new pair round."""
    orders = [reversed_order(graph, count)]
    missing = uncovered(graph, count, orders)
    while any(missing) and len(orders) < budget:
        order = covering_order(graph, count, missing)
        still = uncovered(graph, count, [*orders, order])
        if still == missing:
            break
        orders.append(order)
        missing = still
    return orders


def requirements(graph: Graph, tests: Iterable[int], count: int) -> set[int]:
    """What ``tests`` require, transitively (requires edges), without themselves."""
    return {n for n in reachable(graph, tests, "dependencies", kinds=(Kind.REQUIRES,))
            if n < count}


def sublist(wanted: Iterable[int], graph: Graph, count: int, position: Sequence[int]) -> Order:
    """``wanted`` and what it requires, in the order of a reference order consistent with the
    graph (``position[n]``: where ``n`` is in it): a sub-sequence of it, so consistent too, and
    each test keeps what runs before it there among the tests kept. O(K log K) for K tests
    kept."""
    wanted = set(wanted)
    wanted |= requirements(graph, wanted, count)
    return tuple(sorted(wanted, key=position.__getitem__))
