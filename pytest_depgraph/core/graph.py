"""The dependency graph of a session and its algorithms; nodes are integers, not tests.

An edge points from the *dependent* (the test that waits) to the *dependency* (the test it
waits for), as in ``terraform graph``. Every algorithm here is a short function with its
complexity in its docstring; none of them recurses, so a chain of 100,000 tests is fine.
"""

from __future__ import annotations

import enum
import heapq
from collections import deque
from collections.abc import Container, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Callable, Literal

#: which way :meth:`Graph.reachable` follows the edges
Direction = Literal["dependencies", "dependents"]


class Kind(enum.IntEnum):
    """What an edge asks of its dependency."""

    #: run only if the dependency passed; skip otherwise
    REQUIRES = 0
    #: ordering only: run after the dependency whatever its outcome
    AFTER = 1


_DESCRIBE = {
    "marker": "depends_on",
    "dependency": "dependency marker",
    "order": "order marker",
    "ordinal": "order marker",
}


#: origin kind of the edges that chain tests which must share a worker (``collect.pinning``)
PIN = "pin"


class Origin:
    """Where an edge was declared: one is made per declaration and shared by its edges.

    ``where`` may be given as a callable: finding the ``file:line`` of a marker reads the
    source, and only error messages, cycle reports and the DOT file ever show it, so it is
    computed on first use.
    """

    __slots__ = ("_where", "fixture", "kind")

    def __init__(
        self, kind: str, where: str | Callable[[], str] = "", fixture: str = ""
    ) -> None:
        #: "marker" | "fixture" | "output" | "dependency" | "order" | "ordinal" | "pin" |
        #: "unit" (where: why, for the last two)
        self.kind = kind
        #: the fixture name, for kinds "fixture" and "output"
        self.fixture = fixture
        self._where = where

    @property
    def where(self) -> str:
        """``tests/test_net.py:14`` (file:line), or "" when unknown."""
        where = self._where
        if not isinstance(where, str):
            where = self._where = where()
        return where

    def _key(self) -> tuple[str, str, str]:
        return (self.kind, self.where, self.fixture)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Origin):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"Origin(kind={self.kind!r}, where={self.where!r}, fixture={self.fixture!r})"

    def describe(self) -> str:
        """Say where the edge comes from, for a person: ``depends_on at tests/t.py:14``."""
        if self.kind == "fixture":
            return f"fixture '{self.fixture}'"
        if self.kind == "output":
            return f"output fixture '{self.fixture}'"
        if self.kind == PIN:
            return f"on one worker, in order: {self.where}"
        if self.kind == "unit":
            return self.where  # says it all: see pytest_depgraph.core.units
        what = _DESCRIBE.get(self.kind, self.kind)
        where = self.where
        return f"{what} at {where}" if where else what


@dataclass(frozen=True)
class Edge:
    """One declared dependency: ``dependent`` waits for ``dependency``."""

    dependent: int
    dependency: int
    kind: Kind
    origin: Origin


# Shared by every node without edges until its first edge arrives: 200,000 empty lists would
# cost more (in allocation and garbage-collector passes) than the algorithms that read them.
# Only ``Graph.add_edges`` ever appends, and it replaces this list first.
_NO_EDGES: list[int] = []


class Graph:
    """Nodes ``0..size-1`` and the edges between them, with up and down adjacency."""

    def __init__(self, size: int) -> None:
        if size < 0:
            raise ValueError(f"graph size must be >= 0, not {size}")
        self.size = size
        # Edges are keyed by ``dependent * size + dependency``; the dict keeps the order of first
        # declaration. Edge objects are built only on request: 300,000 frozen dataclasses (or
        # even tuples, which wake the garbage collector) would cost more than the algorithms.
        self._origins: dict[int, Origin] = {}
        self._after: set[int] = set()
        self._dependencies: list[list[int]] = [_NO_EDGES] * size
        self._dependents: list[list[int]] = [_NO_EDGES] * size
        # True while the adjacency lists may be shared with another graph (see _without_keys)
        self._shared = False

    def add_edge(self, dependent: int, dependency: int, kind: Kind, origin: Origin) -> None:
        """Add ``dependent -> dependency``; a repeated pair merges, REQUIRES winning over AFTER.

        The merged edge keeps the origin of the first declaration of its surviving kind and
        the position of the pair's first declaration. Self loops are kept so they can be
        reported. O(1).
        """
        self.add_edges(((dependent, dependency, kind, origin),))

    def add_edges(self, edges: Iterable[tuple[int, int, Kind, Origin]]) -> None:
        """:meth:`add_edge` for each edge in turn, with the look-ups made once. O(E)."""
        if self._shared:
            self._unshare()
        size = self.size
        origins, after = self._origins, self._after
        dependencies, dependents = self._dependencies, self._dependents
        for dependent, dependency, kind, origin in edges:
            if not (0 <= dependent < size and 0 <= dependency < size):
                raise ValueError(
                    f"edge {dependent} -> {dependency} outside a graph of {size} nodes"
                )
            key = dependent * size + dependency
            if key not in origins:
                origins[key] = origin
                if kind == Kind.AFTER:
                    after.add(key)
                ds = dependencies[dependent]
                if ds is _NO_EDGES:
                    dependencies[dependent] = [dependency]
                else:
                    ds.append(dependency)
                us = dependents[dependency]
                if us is _NO_EDGES:
                    dependents[dependency] = [dependent]
                else:
                    us.append(dependent)
            elif kind == Kind.REQUIRES and key in after:
                after.discard(key)
                origins[key] = origin

    def _edge(self, key: int) -> Edge:
        dependent, dependency = divmod(key, self.size)
        kind = Kind.AFTER if key in self._after else Kind.REQUIRES
        return Edge(dependent, dependency, kind, self._origins[key])

    def edges(self) -> list[Edge]:
        """Every edge, in the order of its first declaration. O(E)."""
        return [self._edge(key) for key in self._origins]

    def triples(self) -> Iterator[tuple[int, int, Kind]]:
        """(dependent, dependency, kind) of every edge, in declaration order, without
        building Edge objects (the fast path for large graphs). O(E)."""
        size, after = self.size, self._after
        requires, after_kind = Kind.REQUIRES, Kind.AFTER
        for key in self._origins:
            dependent, dependency = divmod(key, size)
            yield dependent, dependency, after_kind if key in after else requires

    def dependencies(self, node: int) -> list[Edge]:
        """The edges whose dependent is ``node``. O(out-degree)."""
        base = node * self.size
        return [self._edge(base + d) for d in self._dependencies[node]]

    def dependents(self, node: int) -> list[Edge]:
        """The edges whose dependency is ``node``. O(in-degree)."""
        size = self.size
        return [self._edge(u * size + node) for u in self._dependents[node]]

    @property
    def edge_count(self) -> int:
        """Number of distinct (dependent, dependency) pairs."""
        return len(self._origins)

    def edge(self, dependent: int, dependency: int) -> Edge | None:
        """The edge between two nodes, or None. O(1)."""
        key = dependent * self.size + dependency
        return self._edge(key) if key in self._origins else None

    def dependency_ids(self, node: int) -> list[int]:
        """The nodes ``node`` depends on, in declaration order (a copy). O(out-degree)."""
        return list(self._dependencies[node])

    def dependent_ids(self, node: int) -> list[int]:
        """The nodes that depend on ``node``, in declaration order (a copy). O(in-degree)."""
        return list(self._dependents[node])

    def kind(self, dependent: int, dependency: int) -> Kind | None:
        """The kind of the edge between two nodes, or None. O(1)."""
        key = dependent * self.size + dependency
        if key not in self._origins:
            return None
        return Kind.AFTER if key in self._after else Kind.REQUIRES

    def reachable(
        self,
        starts: Iterable[int],
        direction: Direction,
        kinds: Container[Kind] = (Kind.REQUIRES, Kind.AFTER),
    ) -> dict[int, int]:
        """The nodes reached from ``starts`` through edges of ``kinds``, towards their
        ``"dependencies"`` or their ``"dependents"``, breadth first: node -> the node it was
        first reached from, in the order reached; the starts themselves are left out.
        O(V + E) over the part reached.
        """
        forward = direction == "dependencies"
        adjacency = self._dependencies if forward else self._dependents
        size, after = self.size, self._after
        take_requires, take_after = Kind.REQUIRES in kinds, Kind.AFTER in kinds
        queue = deque(starts)
        seen = set(queue)
        found: dict[int, int] = {}
        while queue:
            node = queue.popleft()
            for other in adjacency[node]:
                if other in seen:
                    continue
                key = node * size + other if forward else other * size + node
                if take_after if key in after else take_requires:
                    seen.add(other)
                    found[other] = node
                    queue.append(other)
        return found

    def origins(self) -> Iterator[Origin]:
        """The origin of every edge, in declaration order. O(E)."""
        return iter(self._origins.values())

    def relabel(self, new_id: Sequence[int]) -> Graph:
        """A copy where node ``n`` is ``new_id[n]`` (a permutation), edges in the same
        declaration order, kinds and origins kept. O(V + E)."""
        size = self.size
        graph = Graph(size)
        graph._origins = {
            new_id[key // size] * size + new_id[key % size]: origin
            for key, origin in self._origins.items()
        }
        graph._after = {new_id[key // size] * size + new_id[key % size] for key in self._after}
        for adjacency, relabelled in (
            (self._dependencies, graph._dependencies),
            (self._dependents, graph._dependents),
        ):
            for node, neighbours in enumerate(adjacency):
                if neighbours:
                    relabelled[new_id[node]] = [new_id[n] for n in neighbours]
        return graph

    def subgraph_without(self, nodes: set[int]) -> Graph:
        """The same nodes, without the edges that touch ``nodes``. O(V + E)."""
        size = self.size
        return self._without_keys(
            {key for key in self._origins if key // size in nodes or key % size in nodes}
            if nodes
            else set()
        )

    def _without_keys(self, removed: set[int]) -> Graph:
        """A copy of this graph without the edges ``removed`` (keys). O(V + E).

        The two graphs share the adjacency lists of the nodes the removal leaves alone, until
        either graph adds an edge: copying 200,000 small lists up front would cost more than
        the reduction that usually precedes this.
        """
        size = self.size
        graph = Graph(size)
        graph._origins = (
            {key: origin for key, origin in self._origins.items() if key not in removed}
            if removed
            else self._origins.copy()
        )
        graph._after = self._after - removed
        dependencies = self._dependencies[:]
        dependents = self._dependents[:]
        for u in {key // size for key in removed}:
            base = u * size
            dependencies[u] = [d for d in dependencies[u] if base + d not in removed]
        for d in {key % size for key in removed}:
            dependents[d] = [u for u in dependents[d] if u * size + d not in removed]
        graph._dependencies, graph._dependents = dependencies, dependents
        graph._shared = self._shared = True
        return graph

    def _unshare(self) -> None:
        self._dependencies = [ds if ds is _NO_EDGES else ds[:] for ds in self._dependencies]
        self._dependents = [us if us is _NO_EDGES else us[:] for us in self._dependents]
        self._shared = False

    def __repr__(self) -> str:
        return f"Graph(size={self.size}, edges={len(self._origins)})"


def _kahn_order(graph: Graph) -> tuple[list[int], list[int]]:
    """Kahn's algorithm, dependencies first, ties in node order: (order, unplaced nodes). O(V+E).

    Nodes left unplaced are on a cycle or depend on one. A self loop leaves its node unplaced.
    """
    dependencies, dependents = graph._dependencies, graph._dependents
    waiting = [len(ds) for ds in dependencies]
    order = [v for v in range(graph.size) if not waiting[v]]
    # ``order`` doubles as the FIFO queue: it only grows at the end.
    i = 0
    while i < len(order):
        for u in dependents[order[i]]:
            waiting[u] -= 1
            if not waiting[u]:
                order.append(u)
        i += 1
    unplaced = [v for v in range(graph.size) if waiting[v]] if len(order) < graph.size else []
    return order, unplaced


def _topological_order(graph: Graph) -> list[int]:
    """Any topological order, dependencies first; ValueError on a cycle. O(V + E)."""
    order, unplaced = _kahn_order(graph)
    if unplaced:
        raise ValueError(f"graph has a cycle through node {unplaced[0]}")
    return order


def strongly_connected_components(graph: Graph) -> list[list[int]]:
    """Every strongly connected component (singletons too), by iterative Tarjan. O(V + E).

    Components come in the order Tarjan completes them, which puts a component after every
    component it depends on; the nodes of each component are sorted.
    """
    size = graph.size
    successors = graph._dependencies
    # index 0 means unvisited; once a node's component is emitted its low becomes ``done`` so
    # later visitors ignore it (the usual on-stack test, without a separate array).
    index = [0] * size
    low = [0] * size
    done = size + 1
    stack: list[int] = []
    components: list[list[int]] = []
    counter = 0
    for root in range(size):
        if index[root]:
            continue
        counter += 1
        index[root] = low[root] = counter
        stack.append(root)
        work = [(root, iter(successors[root]))]
        while work:
            v, it = work[-1]
            for w in it:
                if not index[w]:
                    counter += 1
                    index[w] = low[w] = counter
                    stack.append(w)
                    work.append((w, iter(successors[w])))
                    break
                if low[w] < low[v]:
                    low[v] = low[w]
            else:
                work.pop()
                lv = low[v]
                if lv == index[v]:
                    w = stack.pop()
                    if w == v:
                        components.append([v])
                        low[v] = done
                    else:
                        component = [w]
                        while w != v:
                            low[w] = done
                            w = stack.pop()
                            component.append(w)
                        low[v] = done
                        component.sort()
                        components.append(component)
                elif work:
                    parent = work[-1][0]
                    if lv < low[parent]:
                        low[parent] = lv
    return components


def _shortest_loop(graph: Graph, start: int, members: set[int]) -> list[int]:
    """Nodes of a shortest loop of length >= 2 from ``start`` back to it inside ``members``.

    Breadth-first search, self loops ignored. O(V + E) of the component.
    """
    successors = graph._dependencies
    parent = {start: start}
    queue = [start]
    for v in queue:
        for w in successors[v]:
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


def find_cycles(graph: Graph) -> list[list[Edge]]:
    """One concrete loop per component of more than one node, and one per self loop. O(V + E).

    A component's loop starts at its smallest node and is a shortest loop (of two or more
    nodes) through it: ``loop[i].dependency == loop[i + 1].dependent`` and the last edge
    returns to the first node. Loops are sorted by first node, then length (a self loop
    before its component's loop). An acyclic graph costs one Kahn pass.
    """
    _, unplaced = _kahn_order(graph)
    if not unplaced:
        return []
    loops = [[loop] for loop in map(graph.edge, unplaced, unplaced) if loop is not None]
    for component in strongly_connected_components(graph):
        if len(component) > 1:
            nodes = _shortest_loop(graph, component[0], set(component))
            targets = nodes[1:] + nodes[:1]
            loops.append([graph._edge(u * graph.size + d) for u, d in zip(nodes, targets)])
    loops.sort(key=lambda loop: (loop[0].dependent, len(loop)))
    return loops


def stable_topological_order(graph: Graph) -> list[int]:
    """The serial run order: Kahn's algorithm taking, among ready nodes, the smallest id.

    A node never comes earlier than its id puts it: a dependent waits for its dependencies
    (moves down), and a dependency is never pulled up past the nodes before it. With no edges
    the result is ``range(size)``. ValueError on a cycle. O(V + E + k log k) for the k nodes
    that become ready only after a larger id was placed: a cursor walks the ids in order, and
    only the nodes it had to pass over while they waited go through a heap.
    """
    size = graph.size
    dependencies, dependents = graph._dependencies, graph._dependents
    if not graph._origins:
        return list(range(size))
    waiting = [len(ds) for ds in dependencies]
    order: list[int] = []
    append = order.append
    # ``late``: released nodes the cursor has passed; each is smaller than ``cursor``, so the
    # smallest of them always beats the next ready node the cursor finds
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
        append(v)
        for u in dependents[v]:
            waiting[u] -= 1
            if not waiting[u] and u < cursor:
                heapq.heappush(late, u)
    if len(order) < size:
        stuck = next(v for v in range(size) if waiting[v])
        raise ValueError(f"graph has a cycle through node {stuck}")
    return order


def chain_cover(graph: Graph, order: Sequence[int], leave_out: Container[int] = ()) -> int:
    """The number of chains in a greedy cover of the nodes by paths along edges. O(V + E).

    Nodes in flight at once never lie on one path, so this bounds how many can be: 1 for a
    chain, ``size`` for a graph without edges. ``order``: a topological order, dependencies
    first; ``leave_out``: nodes that will not run. Greedy, so not always the least cover (the
    true bound, Dilworth's, needs a matching), but never below it.
    """
    dependencies = graph._dependencies
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


def _closure_readers(graph: Graph, order: Sequence[int]) -> list[int]:
    """How many dependents of each node will read its closure during the reduction. O(V + E).

    A node reads the closures of its dependencies when it has two or more (to test them
    against each other) or when its own closure is read. On a chain nobody reads anything,
    which keeps the reduction of a 100,000-node chain linear instead of quadratic.
    """
    dependencies = graph._dependencies
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
    dependencies = graph._dependencies
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

    Closures are Python ints used as bitsets over the positions in ``order``. Each node's
    dependencies are visited latest-in-order first, so a dependency that reaches another one
    is always seen before it, and one bit test per edge decides. A closure is dropped once its
    last reader has used it, and loses the bits of nodes that can no longer be tested (see
    :func:`_live_from`), so on graphs whose edges are local in the order it stays short.
    Acyclic graph assumed.
    """
    size = graph.size
    if order is None:
        order = _topological_order(graph)
    dependencies, after = graph._dependencies, graph._after
    position = [0] * size
    for i, v in enumerate(order):
        position[v] = i
    readers = _closure_readers(graph, order)
    live_from = _live_from(graph, order, position)
    # closure[v]: v and every node reachable from it, as bits ``position - offset[v]``;
    # closure_req[v]: the same through REQUIRES edges only. ``pure[v]``: nothing is reached
    # through an AFTER edge, so both are the same int and one union per edge does.
    closure = [0] * size
    closure_req = [0] * size
    offset = [0] * size
    pure = bytearray(size)
    removed: set[int] = set()
    by_position = position.__getitem__
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
        for d in sorted(ds, key=by_position, reverse=True) if len(ds) > 1 else ds:
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
                    removed.add(key)
                else:
                    if same:
                        reach_req, same = reach, False
                    reach |= closure[d]
            elif same and pure[d]:
                if reach >> p & 1:
                    removed.add(key)
                else:
                    reach |= closure[d]
            else:
                if same:
                    reach_req, same = reach, False
                if reach_req >> p & 1:
                    removed.add(key)
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
    return graph._without_keys(removed)


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
        order = _topological_order(graph)
    dependencies = graph._dependencies
    # longest[v]: the best remaining path among v's dependents seen so far; every dependent
    # comes later in ``order``, so walking it backwards completes longest[v] before v.
    longest = [0.0] * graph.size
    for v in reversed(order):
        total = longest[v] = weights[v] + longest[v]
        for d in dependencies[v]:
            if total > longest[d]:
                longest[d] = total
    return longest
