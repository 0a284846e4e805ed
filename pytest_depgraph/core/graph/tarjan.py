"""Strongly connected components (Tarjan) and the cycles a person is shown, one per component.

None of it recurses: a chain of 100,000 nodes is fine.
"""

from __future__ import annotations

from pytest_depgraph.core.graph.storage import Edge, Graph
from pytest_depgraph.core.graph.toposort import kahn_order


def strongly_connected_components(graph: Graph) -> list[list[int]]:
    """Every strongly connected component (singletons too), by iterative Tarjan. O(V + E).

    Components come in the order Tarjan completes them, which puts a component after every
    component it depends on; the nodes of each component are sorted.
    """
    size = graph.size
    index = [0] * size  # 0: not visited yet
    low = [0] * size
    on_stack = bytearray(size)
    stack: list[int] = []
    components: list[list[int]] = []
    counter = 0
    dependencies = graph.dependencies_by_node()
    for root in range(size):
        if index[root]:
            continue
        counter += 1
        index[root] = low[root] = counter
        stack.append(root)
        on_stack[root] = 1
        # the depth-first path: each node with the iterator over its dependencies
        work = [(root, iter(dependencies[root]))]
        while work:
            v, successors = work[-1]
            for w in successors:
                if not index[w]:
                    counter += 1
                    index[w] = low[w] = counter
                    stack.append(w)
                    on_stack[w] = 1
                    work.append((w, iter(dependencies[w])))
                    break
                if on_stack[w]:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[v])
                if low[v] == index[v]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack[w] = 0
                        component.append(w)
                        if w == v:
                            break
                    component.sort()
                    components.append(component)
    return components


def _shortest_loop(graph: Graph, start: int, members: set[int]) -> list[int]:
    """Nodes of a shortest loop of length >= 2 from ``start`` back to it inside ``members``.

    Breadth-first search, self loops ignored. O(V + E) of the component.
    """
    parent = {start: start}
    queue = [start]
    for v in queue:
        for w in graph.dependencies_of(v):
            if w == start and v != start:
                path = [v]
                while path[-1] != start:
                    path.append(parent[path[-1]])
                path.reverse()
                return path
            if w in members and w not in parent:
                parent[w] = v
                queue.append(w)
    raise AssertionError("a strongly connected component without a loop")  # pragma: no cover


def find_cycles(graph: Graph, kahn: list[int] | None = None) -> list[list[Edge]]:
    """One concrete loop per component of more than one node, and one per self loop. O(V + E).

    A component's loop starts at its smallest node and is a shortest loop (of two or more
    nodes) through it: ``loop[i].dependency == loop[i + 1].dependent`` and the last edge
    returns to the first node. Loops are sorted by first node, then length (a self loop
    before its component's loop). An acyclic graph costs one Kahn pass; ``kahn``, when given,
    receives the order of that pass (a topological order when there is no cycle).
    """
    order, unplaced = kahn_order(graph)
    if kahn is not None:
        kahn[:] = order
    if not unplaced:
        return []
    loops = [[loop] for loop in map(graph.edge, unplaced, unplaced) if loop is not None]
    for component in strongly_connected_components(graph):
        if len(component) > 1:
            nodes = _shortest_loop(graph, component[0], set(component))
            targets = nodes[1:] + nodes[:1]
            loops.append([edge for edge in map(graph.edge, nodes, targets) if edge is not None])
    loops.sort(key=lambda loop: (loop[0].dependent, len(loop)))
    return loops
