"""Transitive reduction: the graph without the edges that longer paths imply.

Two exact methods give one result: a search per candidate edge, pruned by a small
reachability filter, and bitset closures over a topological order, with a worst-case bound.
The reduction keeps the walk's meaning: a REQUIRES edge goes only when a path of REQUIRES
edges implies it.
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_depgraph.core.graph.storage import Graph
from pytest_depgraph.core.graph.toposort import positions_in, topological_order


def _closure_readers(graph: Graph, order: Sequence[int]) -> list[int]:
    """How many dependents of each node will read its closure during the reduction. O(V + E).

    A node reads the closures of its dependencies when it has two or more (to test them
    against each other) or when its own closure is read. On a chain nobody reads anything,
    which keeps the reduction of a 100,000-node chain linear instead of quadratic.
    """
    dependencies = graph.dependencies_by_node()
    readers = [0] * graph.size
    for u in reversed(order):
        ds = dependencies[u]
        if len(ds) > 1 or (ds and readers[u]):
            for d in ds:
                readers[d] += 1
    return readers


def _live_from(graph: Graph, order: Sequence[int], position: list[int]) -> list[int]:
    """For each step of ``order``, the first position whose node can still be tested. O(V + E).

    A node's bit is tested only while one of its dependents is still to come; past its last
    dependent the bit is dead. Dead bits gather at the low end of the order, so closures can
    drop them and stay as short as the window of live nodes instead of growing with the graph.
    """
    dependencies = graph.dependencies_by_node()
    size = len(order)
    last_use = list(range(size))
    for t, v in enumerate(order):
        for d in dependencies[v]:
            last_use[position[d]] = t
    live_from = [0] * size
    low = 0
    for t in range(size):
        while low < t and last_use[low] < t:
            low += 1
        live_from[t] = low
    return live_from


def transitive_reduction(graph: Graph, order: Sequence[int] | None = None) -> Graph:
    """The graph without the edges implied by longer paths. O(V * E / wordsize) worst case.

    A REQUIRES edge goes only when a path of two or more REQUIRES edges implies it, an AFTER
    edge when any such path does, so both the REQUIRES-only and the any-edge reachability are
    kept. ``order`` is a topological order, dependencies first (computed when omitted).
    Acyclic graph assumed.

    Two exact methods, one result: :func:`reduce_by_search` first (a search per candidate
    edge, pruned by a small reachability filter: fast and small on graphs whose reach spans
    the whole order, as random ones), and :func:`reduce_by_closures` (bitset closures, with
    a worst-case bound) when the searches exceed their budget.
    """
    if order is None:
        order = topological_order(graph)
    removed = reduce_by_search(graph, order)
    if removed is None:
        removed = reduce_by_closures(graph, order)
    return graph.without_edges(graph.edges_keyed(removed))


#: nodes (the first ones in the order that something depends on) whose bits the filter of
#: :func:`reduce_by_search` keeps: 256 bytes a node
FILTER_BITS = 2048


def reduce_by_search(
    graph: Graph, order: Sequence[int], filter_bits: int = FILTER_BITS,
    budget: int | None = None,
) -> list[int] | None:
    """The redundant edges (keyed ``dependent * size + dependency``) found by searching, or
    None when the searches visit more than ``budget`` edges (8 per edge by default).

    An edge ``v -> b`` is redundant when another dependency ``a`` of ``v`` reaches ``b``
    (REQUIRES all the way for a REQUIRES edge). Only a dependency later in ``order`` than
    ``b`` can, so ``v``'s dependencies are taken latest first; a depth-first search from the
    later ones then decides, never entering a node at or before ``b`` in the order.

    The searches are pruned by a necessary condition: ``a`` reaches ``b`` only if everything
    ``b`` reaches, ``a`` reaches too. ``hub[x]`` holds, for the first ``filter_bits`` nodes
    in the order that something depends on (the ones most reached), whether ``x`` is or
    reaches each; ``hub[b]`` must be inside ``hub[a]``. For such a node ``b`` itself the
    test is exact (``b``'s own bit), so no search is needed unless the edge is REQUIRES and
    AFTER edges exist; most other candidates fail the test at once. Memory: one
    ``filter_bits`` int per node, shared once every filtered node is reached.
    """
    size = graph.size
    if not graph.edge_count:
        return []
    position = positions_in(order)
    # each node's dependencies as positions, latest first (nodes are positions from here on)
    dependencies, dependents = graph.dependencies_by_node(), graph.dependents_by_node()
    deps = [sorted(map(position.__getitem__, dependencies[v]), reverse=True) for v in order]
    # the AFTER edges (few), keyed ``dependent * size + dependency``
    after = {
        position[key // size] * size + position[key % size] for key in graph.after_keys()
    }
    bit = [0] * size
    count = 0
    for t, v in enumerate(order):
        if count == filter_bits:
            break
        if dependents[v]:
            bit[t] = 1 << count
            count += 1
    # every filtered node: far enough into a layered graph every filter equals it, and one
    # int serves them all (memory)
    full = (1 << count) - 1
    hub = [0] * size
    seen = [0] * size  # == stamp: entered by the current search
    stamp = visits = 0
    limit = 8 * graph.edge_count + 10_000 if budget is None else budget
    removed: list[int] = []
    for t, v in enumerate(order):
        ds = deps[t]
        if not ds:
            hub[t] = bit[t]
            continue
        reach = hub[ds[0]]
        base = t * size
        for i in range(1, len(ds)):
            b = ds[i]
            hb = hub[b]
            wider = reach | hb
            if wider != reach:
                reach = wider  # no later dependency reaches b: the edge stays
                continue
            requires_only = bool(after) and base + b not in after
            if bit[b] and not requires_only:
                found = True  # b's own bit: some later dependency reaches it
            else:
                stamp += 1
                stack = []
                for a in ds[:i]:
                    if requires_only and base + a in after:
                        continue
                    if hub[a] | hb == hub[a]:
                        seen[a] = stamp
                        stack.append(a)
                found = False
                while stack and not found:
                    x = stack.pop()
                    xbase = x * size
                    for d in deps[x]:
                        visits += 1
                        if d <= b:  # the rest come before b: they cannot reach it
                            found = d == b and not (requires_only and xbase + d in after)
                            break
                        if (
                            seen[d] != stamp
                            and not (requires_only and xbase + d in after)
                            and hub[d] | hb == hub[d]
                        ):
                            seen[d] = stamp
                            stack.append(d)
                if visits > limit:
                    return None
            if found:
                removed.append(order[t] * size + order[b])
        if dependents[v]:  # (the filter of a node nothing depends on is never read)
            if bit[t]:
                reach |= bit[t]
            hub[t] = full if reach == full else reach
    return removed


def reduce_by_closures(graph: Graph, order: Sequence[int]) -> list[int]:
    """The redundant edges (keyed ``dependent * size + dependency``) by bitset closures.
    O(V * E / wordsize).

    Closures are Python ints used as bitsets over the positions in ``order``. Each node's
    dependencies are visited latest-in-order first, so a dependency that reaches another one
    is always seen before it, and one bit test per edge decides. A closure is dropped once its
    last reader has used it, and loses the bits of nodes that can no longer be tested (see
    :func:`_live_from`), so on graphs whose edges are local in the order it stays short.
    """
    size = graph.size
    dependencies = graph.dependencies_by_node()
    position = positions_in(order)
    # edges are keyed ``dependent * size + dependency`` here; the AFTER ones are few
    after = graph.after_keys()
    readers = _closure_readers(graph, order)
    live_from = _live_from(graph, order, position)
    # closure[v]: v and every node reachable from it, as bits ``position - offset[v]``;
    # closure_req[v]: the same through REQUIRES edges only. ``pure[v]``: nothing is reached
    # through an AFTER edge, so both are the same int and one union per edge does.
    closure = [0] * size
    closure_req = [0] * size
    offset = [0] * size
    pure = bytearray(size)
    removed: list[int] = []
    for t, v in enumerate(order):
        ds = dependencies[v]
        if not ds or (len(ds) == 1 and not readers[v]):
            if readers[v]:
                offset[v] = live_from[t]
                closure[v] = closure_req[v] = 1 << (t - live_from[t])
                pure[v] = 1
            continue
        low = live_from[t]
        base = v * size
        # ``same``: reach_req is reach so far (only REQUIRES edges to pure closures), so a
        # single union per edge does; the two part at the first edge that breaks it.
        reach = reach_req = 0
        same = True
        for d in sorted(ds, key=position.__getitem__, reverse=True):
            # Bring d's closures to this step's offset; later readers have offsets at least
            # as high, so the shifted ints serve them too.
            shift = low - offset[d]
            if shift:
                offset[d] = low
                if pure[d]:
                    closure[d] = closure_req[d] = closure[d] >> shift
                else:
                    closure[d] >>= shift
                    closure_req[d] >>= shift
            p = position[d] - low
            key = base + d
            if key in after:
                if reach >> p & 1:
                    removed.append(key)
                else:
                    if same:
                        reach_req, same = reach, False
                    reach |= closure[d]
            elif same and pure[d]:
                if reach >> p & 1:
                    removed.append(key)
                else:
                    reach |= closure[d]
            else:
                if same:
                    reach_req, same = reach, False
                if reach_req >> p & 1:
                    removed.append(key)
                else:
                    reach_req |= closure_req[d]
                    if not reach >> p & 1:
                        reach |= closure[d]
            readers[d] -= 1
            if not readers[d]:
                closure[d] = closure_req[d] = 0
        if readers[v]:
            bit = 1 << (t - low)
            offset[v] = low
            if same:
                closure[v] = closure_req[v] = reach | bit
                pure[v] = 1
            else:
                closure[v] = reach | bit
                closure_req[v] = reach_req | bit
    return removed
