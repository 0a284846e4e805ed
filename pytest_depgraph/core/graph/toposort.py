"""Topological orders of a graph: Kahn's, the stable serial order with scopes, a chain cover.

Every order here puts dependencies first. ``kahn`` is the plain breadth-first one (the
reduction's, found with the cycles); ``stable_topological_order`` is the serial run order,
which keeps the id order wherever the edges allow and keeps scopes (packages, modules,
classes: opaque keys here) together.
"""

from __future__ import annotations

import heapq
from collections.abc import Container, Hashable, Sequence

from pytest_depgraph.core.graph.storage import Graph


def positions_in(order: Sequence[int]) -> list[int]:
    """``position[v]``: the index of node ``v`` in ``order`` (a permutation). O(V)."""
    position = [0] * len(order)
    for index, v in enumerate(order):
        position[v] = index
    return position


def kahn_order(graph: Graph) -> tuple[list[int], list[int]]:
    """Kahn's algorithm, dependencies first, ties in node order: (order, unplaced nodes). O(V+E).

    Nodes left unplaced are on a cycle or depend on one. A self loop leaves its node unplaced.
    """
    waiting = graph.dependency_counts()
    dependents = graph.dependents_by_node()
    # the order is its own queue: the loop reads the nodes appended as it goes (measured:
    # the captured graphs of layer100k and rand100k, 101 -> 87 and 128 -> 109 ms CPU, median
    # of 7 in one process: a deque, then the order -> this)
    order = [v for v, count in enumerate(waiting) if not count]
    for v in order:
        for u in dependents[v]:
            left = waiting[u] - 1
            waiting[u] = left
            if not left:
                order.append(u)
    unplaced = [v for v in range(graph.size) if waiting[v]] if len(order) < graph.size else []
    return order, unplaced


def topological_order(graph: Graph) -> list[int]:
    """Any topological order, dependencies first; ValueError on a cycle. O(V + E)."""
    order, unplaced = kahn_order(graph)
    if unplaced:
        raise ValueError(f"graph has a cycle through node {unplaced[0]}")
    return order


def stable_topological_order(
    graph: Graph, scopes: Sequence[Sequence[Hashable]] | None = None
) -> list[int]:
    """The serial run order: Kahn's algorithm over the id order, keeping scopes together.

    A cursor walks the ids in order and places each node it finds ready; a node it passes
    while the node still waits for a dependency is *late*, and is placed once it is ready.
    The candidates at each step are the ready late nodes and the cursor's node, never a node
    past it, so nothing moves up: a node comes after a larger one only if it was late, which
    needs an edge to a larger id up its dependencies (without ``scopes``: from the node to a
    dependency larger than itself, directly or through others). With no edges the result is
    ``range(size)``. Without ``scopes`` the smallest candidate goes first. With ``scopes``
    (``scopes[n]``: keys of the scopes that hold node n, outermost first, e.g. a package, a
    module, a class; the nodes of one innermost scope may share one sequence), the candidate
    sharing the most scopes with the node placed last goes first, the smallest among equals:
    a late node waits until the scopes it would split are done, and a scope whose nodes are
    consecutive ids and need no node outside it is never split. ValueError on a cycle.
    O(V + E + k d log k) for the k late nodes, d scopes deep: only late nodes go through
    heaps.
    """
    size = graph.size
    if not graph.edge_count:
        return list(range(size))
    waiting = graph.dependency_counts()
    dependents = graph.dependents_by_node()
    if scopes is not None:
        order = _keeping_scopes(dependents, waiting, scopes)
    else:
        order = []
        # ``late``: each is smaller than ``cursor``, so the smallest of them always beats the
        # next ready node the cursor finds
        late: list[int] = []
        cursor = 0
        while True:
            if late:
                v = heapq.heappop(late)
            else:
                while cursor < size and waiting[cursor]:
                    cursor += 1
                if cursor == size:
                    break
                v = cursor
                cursor += 1
            order.append(v)
            for u in dependents[v]:
                waiting[u] -= 1
                if not waiting[u] and u < cursor:
                    heapq.heappush(late, u)
    if len(order) < size:
        stuck = next(v for v in range(size) if waiting[v])
        raise ValueError(f"graph has a cycle through node {stuck}")
    return order


def _keeping_scopes(
    dependents: Sequence[Sequence[int]],
    waiting: list[int],
    scopes: Sequence[Sequence[Hashable]],
) -> list[int]:
    """:func:`stable_topological_order` with ``scopes``, on its dependents and in-degrees."""
    size = len(waiting)
    order: list[int] = []
    # the late nodes: a heap of them all and one per scope of those it holds; a node placed
    # from one heap stays in the others until it comes to their top (lazy deletion)
    late: list[int] = []
    by_scope: dict[Hashable, list[int]] = {}
    placed = bytearray(size)
    count = 0
    cursor = 0
    while True:
        while cursor < size and waiting[cursor]:
            cursor += 1
        if cursor == size:
            break
        if not count:
            v = cursor
            cursor += 1
        else:
            chain = scopes[order[-1]]
            shared = 0
            for key, other_key in zip(chain, scopes[cursor]):
                if key != other_key:
                    break
                shared += 1
            # the deepest scope of the node placed last that holds a late node, down to the
            # depth it shares with the cursor's node (a tie goes to the late node: it is smaller)
            v = -1
            for depth in range(len(chain) - 1, max(shared - 1, 0) - 1, -1):
                heap = by_scope.get(chain[depth])
                while heap and placed[heap[0]]:
                    heapq.heappop(heap)
                if heap:
                    v = heap[0]
                    break
            if v < 0:
                if shared:
                    v = cursor
                else:
                    while placed[late[0]]:
                        heapq.heappop(late)
                    v = late[0]
            if v == cursor:
                cursor += 1
            else:
                count -= 1
            placed[v] = 1
        order.append(v)
        for u in dependents[v]:
            waiting[u] -= 1
            if not waiting[u] and u < cursor:
                count += 1
                heapq.heappush(late, u)
                for key in scopes[u]:
                    heap = by_scope.get(key)
                    if heap is None:
                        by_scope[key] = [u]
                    else:
                        heapq.heappush(heap, u)
    if count:
        _late_ones(dependents, waiting, scopes, order, late, by_scope, placed)
    return order


def _late_ones(
    dependents: Sequence[Sequence[int]],
    waiting: list[int],
    scopes: Sequence[Sequence[Hashable]],
    order: list[int],
    late: list[int],
    by_scope: dict[Hashable, list[int]],
    placed: bytearray,
) -> None:
    """:func:`_keeping_scopes` once its cursor is at the end: the candidates are the late
    nodes alone, every node made ready is late, and the heaps drop what they hand out."""
    # measured, callgrind of the order alone on the inputs of real builds: real10k 132.3 ->
    # 91.7 M instructions, rand100k 1,278.6 -> 866.1 M: the loop above to the end -> this one.
    # Its release of the dependents repeats the loop's above on purpose: one loop with both
    # ways of choosing costs 8% more (rand100k 902.6 -> 972.0 M, layer100k 847.6 -> 919.7 M,
    # real10k 95.7 -> 103.5 M, the order alone under callgrind)
    v = order[-1]
    while True:
        for key in reversed(scopes[v]):
            heap = by_scope.get(key)
            while heap and placed[heap[0]]:
                heapq.heappop(heap)
            if heap:
                v = heapq.heappop(heap)
                break
        else:
            while late:
                v = heapq.heappop(late)
                if not placed[v]:
                    break
            else:
                return
        placed[v] = 1
        order.append(v)
        for u in dependents[v]:
            waiting[u] -= 1
            if not waiting[u]:
                heapq.heappush(late, u)
                for key in scopes[u]:
                    heap = by_scope.get(key)
                    if heap is None:
                        by_scope[key] = [u]
                    else:
                        heapq.heappush(heap, u)


def chain_cover(graph: Graph, order: Sequence[int], leave_out: Container[int] = ()) -> int:
    """The number of chains in a greedy cover of the nodes by paths along edges. O(V + E).

    Nodes in flight at once never lie on one path, so this bounds how many can be: 1 for a
    chain, ``size`` for a graph without edges. ``order``: a topological order, dependencies
    first; ``leave_out``: nodes that will not run. Greedy, so not always the least cover (the
    true bound, Dilworth's, needs a matching), but never below it.
    """
    dependencies = graph.dependencies_by_node()
    tail = bytearray(graph.size)  # 1: a chain ends at this node and may go on
    chains = 0
    for v in order:
        if v in leave_out:
            continue
        for d in dependencies[v]:
            if tail[d]:
                tail[d] = 0
                break
        else:
            chains += 1
        tail[v] = 1
    return chains
