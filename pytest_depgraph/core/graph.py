"""The dependency graph of a session and its algorithms; nodes are integers, not tests.

An edge points from the *dependent* (the test that waits) to the *dependency* (the test it
waits for), as in ``terraform graph``. Every algorithm here is a short function with its
complexity in its docstring; none of them recurses, so a chain of 100,000 tests is fine.
"""

from __future__ import annotations

import enum
import heapq
from array import array
from collections import Counter, deque
from collections.abc import Container, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import compress, repeat
from operator import add, mul, ne, not_
from typing import Callable, Literal, TypeVar

#: which way :meth:`Graph.reachable` follows the edges
Direction = Literal["dependencies", "dependents"]


class Kind(enum.IntEnum):
    """What an edge asks of its dependency."""

    #: run only if the dependency passed; skip otherwise
    REQUIRES = 0
    #: ordering only: run after the dependency whatever its outcome
    AFTER = 1


class Origin:
    """Where an edge was declared: one is made per declaration and shared by its edges.

    ``kind`` is opaque here: the layers above name the kinds and word them (the core only
    keeps, counts and compares origins). ``where`` may be given as a callable: finding the
    ``file:line`` of a marker reads the source, and only error messages, cycle reports and
    the DOT file ever show it, so it is computed on first use.
    """

    __slots__ = ("_where", "kind", "name")

    def __init__(self, kind: str, where: str | Callable[[], str] = "", name: str = "") -> None:
        #: what declared the edge, in the words of the layer that made it
        self.kind = kind
        #: a name that ``kind`` gives a meaning to (a fixture's, for a fixture's edges)
        self.name = name
        self._where = where

    @property
    def where(self) -> str:
        """``tests/test_net.py:14`` (file:line), a text that says why, or "" when unknown."""
        where = self._where
        if not isinstance(where, str):
            where = self._where = where()
        return where

    def _key(self) -> tuple[str, str, str]:
        return (self.kind, self.where, self.name)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Origin):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"Origin(kind={self.kind!r}, where={self.where!r}, name={self.name!r})"


@dataclass(frozen=True)
class Edge:
    """One declared dependency: ``dependent`` waits for ``dependency``."""

    dependent: int
    dependency: int
    kind: Kind
    origin: Origin


# Shared by every node without edges in the adjacency lists: 200,000 empty lists would cost
# more (in allocation and garbage-collector passes) than the algorithms that read them. Only
# ``Graph.add_edges`` ever appends, and it replaces this list first.
_NO_EDGES: list[int] = []

_KINDS = (Kind.REQUIRES, Kind.AFTER)

#: an edge column: nodes or origin numbers (array), kinds (bytearray)
_Column = TypeVar("_Column", "array[int]", bytearray)


def _adjacency(size: int, owners: Iterable[int], others: Iterable[int]) -> list[list[int]]:
    """Each node's list of the ``others`` paired with it in ``owners``, in order; appended
    in C (a Python loop over the edges costs twice as much)."""
    lists: list[list[int]] = list(map(list, repeat((), size)))
    deque(map(list.append, map(lists.__getitem__, owners), others), 0)
    # the empty ones back to the shared list: one list object less per node without edges
    return [ns or _NO_EDGES for ns in lists]


def positions(order: Sequence[int]) -> list[int]:
    """``position[v]``: the index of node ``v`` in ``order`` (a permutation). O(V), in C."""
    position = [0] * len(order)
    deque(map(position.__setitem__, order, range(len(order))), 0)
    return position


def _pair_words(dependents: array[int], dependencies: array[int]) -> bytearray | None:
    """Each edge's two nodes side by side as one 64-bit word, or None for arrays of another
    type than C int: read as unsigned 32-bit halves they bound-check both columns in one pass (a
    negative node reads as a huge one), read as 64-bit words they are distinct exactly when
    the pairs are, and neither makes a Python int by arithmetic."""
    if not (dependents.typecode == dependencies.typecode == "i" and dependents.itemsize == 4):
        return None
    words = bytearray(8 * len(dependents))
    halves = memoryview(words).cast("i")
    halves[0::2] = dependents
    halves[1::2] = dependencies
    return words


def _without(column: _Column, gone: list[int]) -> _Column:
    """A copy of an edge column without the items at ``gone`` (ascending): the runs between
    them copied in C. O(E)."""
    kept = column[:0]
    start = 0
    for e in gone:
        kept += column[start:e]
        start = e + 1
    kept += column[start:]
    return kept


def _copy(column: _Column) -> _Column:
    return column[:]


def _masked(keep: bytearray, column: _Column) -> _Column:
    """A copy of an edge column with the items whose ``keep`` byte is set. O(E), in C."""
    if isinstance(column, bytearray):
        return bytearray(compress(column, keep))
    return array(column.typecode, compress(column, keep))


def _pair_keys(size: int, dependents: Iterable[int], dependencies: Iterable[int]) -> Iterator[int]:
    """``dependent * size + dependency`` of each pair, in C (operator's functions are
    quicker to call than int's slot wrappers)."""
    return map(add, map(mul, dependents, repeat(size)), dependencies)

# kind bytes to "is REQUIRES" flags (1 for 0, 0 for 1)
_NOT = bytes.maketrans(b"\x00\x01", b"\x01\x00")


class Graph:
    """Nodes ``0..size-1`` and the edges between them, kept in flat arrays.

    Edge ``e`` (numbered in the order of first declaration) is ``_dependent[e] ->
    _dependency[e]`` of kind ``_kinds[e]`` (0 REQUIRES, 1 AFTER), declared by
    ``_table[_origin[e]]``: one origin per declaration, shared by its edges. A graph derived by
    removing edges (the reduction, :meth:`subgraph_without`) shares these arrays and masks the
    removed edges out with ``_keep``; a graph that adds edges to shared arrays copies them
    first. None of this is a Python object per edge or per node, so a plan kept for the run
    costs the cyclic garbage collector nothing.

    The algorithms read adjacency lists (a list per node each way, faster to iterate in
    Python than slices of flat arrays): they are built on first use and dropped by
    :meth:`compact`, with the look-up tables, once the plan is made.
    """

    __slots__ = (
        "_dependency",
        "_dependent",
        "_keep",
        "_keys",
        "_kinds",
        "_lists_cache",
        "_lists_left",
        "_live",
        "_origin",
        "_shared",
        "_table",
        "_table_ids",
        "size",
    )

    def __init__(self, size: int) -> None:
        if size < 0:
            raise ValueError(f"graph size must be >= 0, not {size}")
        self.size = size
        self._dependent = array("i")
        self._dependency = array("i")
        self._kinds = bytearray()
        self._origin = array("i")
        self._table: list[Origin] = []
        # id(origin) -> its index in _table (the table keeps the origin, so the id holds);
        # None until needed again after :meth:`compact`
        self._table_ids: dict[int, int] | None = {}
        # ``dependent * size + dependency`` -> the pair's latest edge, which ``_keep`` may
        # mask out in a derived graph; None until needed again after :meth:`compact`
        self._keys: dict[int, int] | None = {}
        # 1 per live edge, 0 per removed one; None: every edge is live
        self._keep: bytearray | None = None
        self._live = 0
        # (dependencies, dependents) node lists of the live edges, or None; kept up to date
        # by add_edges from the start, so that a graph built edge by edge is ready to walk
        self._lists_cache: tuple[list[list[int]], list[list[int]]] | None = (
            [_NO_EDGES] * size, [_NO_EDGES] * size
        )
        # a derived graph's lists still to make, when first needed: the lists of the graph
        # it was derived from, and the edges it removed (see :meth:`_derived`)
        self._lists_left: tuple[tuple[list[list[int]], list[list[int]]], Sequence[int]] | None
        self._lists_left = None
        # True while the arrays (and lists) may be shared with another graph
        self._shared = False

    # -- building ---------------------------------------------------------------------------

    def add_edge(self, dependent: int, dependency: int, kind: Kind, origin: Origin) -> None:
        """Add ``dependent -> dependency``; a repeated pair merges, REQUIRES winning over AFTER.

        The merged edge keeps the origin of the first declaration of its surviving kind and
        the position of the pair's first declaration. Self loops are kept so they can be
        reported. O(1).
        """
        self.add_edges(((dependent, dependency, kind, origin),))

    def _index_of(self, origin: Origin) -> int:
        """The index of ``origin`` in the table, added if new. O(1)."""
        table_ids = self._table_ids if self._table_ids is not None else self._origin_ids()
        index = table_ids.get(id(origin))
        if index is None:
            index = table_ids[id(origin)] = len(self._table)
            self._table.append(origin)
        return index

    def add_edges(self, edges: Iterable[tuple[int, int, Kind, Origin]]) -> None:
        """:meth:`add_edge` for each edge in turn, with the look-ups made once. O(E)."""
        self._lists_left = None  # the lists are made from the arrays, added edges included
        if self._shared:
            self._unshare()
        size = self.size
        keys = self._keys if self._keys is not None else self._key_index()
        table_ids = self._table_ids if self._table_ids is not None else self._origin_ids()
        add_dependent, add_dependency = self._dependent.append, self._dependency.append
        kinds, origins, table, keep = self._kinds, self._origin, self._table, self._keep
        add_kind, add_origin = kinds.append, origins.append
        lists = self._lists_cache
        outs, ins = lists if lists is not None else (None, None)
        # the last origin's index: edges of one declaration come together
        last: Origin | None = None
        o = -1
        count = first = len(kinds)
        try:
            for dependent, dependency, kind, origin in edges:
                if not (0 <= dependent < size and 0 <= dependency < size):
                    raise ValueError(
                        f"edge {dependent} -> {dependency} outside a graph of {size} nodes"
                    )
                key = dependent * size + dependency
                e = keys.get(key)
                if e is not None and (keep is None or keep[e]):
                    if kind == Kind.REQUIRES and kinds[e]:
                        kinds[e] = 0
                        origins[e] = self._index_of(origin)
                    continue
                if origin is not last:
                    found = table_ids.get(id(origin))
                    if found is None:
                        found = table_ids[id(origin)] = len(table)
                        table.append(origin)
                    last, o = origin, found
                add_kind(kind)
                add_dependent(dependent)
                add_dependency(dependency)
                add_origin(o)
                keys[key] = count
                count += 1
                if keep is not None:
                    keep.append(1)
                if outs is not None and ins is not None:
                    ds = outs[dependent]
                    if ds is _NO_EDGES:
                        outs[dependent] = [dependency]
                    else:
                        ds.append(dependency)
                    us = ins[dependency]
                    if us is _NO_EDGES:
                        ins[dependency] = [dependent]
                    else:
                        us.append(dependent)
        finally:
            self._live += count - first
    @classmethod
    def from_arrays(
        cls,
        size: int,
        dependents: array[int],
        dependencies: array[int],
        kinds: bytearray,
        origins: array[int],
        table: list[Origin],
    ) -> Graph:
        """The graph of edges given as parallel arrays (``origins`` index ``table``), merged as
        :meth:`add_edges` merges them; the arrays are taken over, not copied. O(E)."""
        graph = cls(size)
        graph._lists_cache = None  # built on first use, in one pass
        count = len(kinds)
        if not (len(dependents) == len(dependencies) == len(origins) == count):
            raise ValueError("edge arrays of different lengths")
        pairs = _pair_words(dependents, dependencies)
        if count and not (
            max(memoryview(pairs).cast("I")) < size if pairs is not None
            else min(dependents) >= 0 and max(dependents) < size
            and min(dependencies) >= 0 and max(dependencies) < size
        ):
            bad = next(
                e for e in range(count)
                if not (0 <= dependents[e] < size and 0 <= dependencies[e] < size)
            )
            raise ValueError(
                f"edge {dependents[bad]} -> {dependencies[bad]} outside a graph of {size} nodes"
            )
        keys: Sequence[int] = (
            memoryview(pairs).cast("q") if pairs is not None
            else list(_pair_keys(size, dependents, dependencies))
        )
        graph._table, graph._keys, graph._table_ids = table, None, None
        if len(set(keys)) == count:
            # no pair declared twice (the usual case): the arrays are the graph as they are,
            # and the pair -> edge table (a dict entry and two ints per edge) waits until a
            # look-up or an added edge needs it
            graph._dependent, graph._dependency = dependents, dependencies
            graph._kinds, graph._origin, graph._live = kinds, origins, count
            return graph
        # Some pair repeats: merge each into its first edge as add_edges would, then drop the
        # repeats. add_edges numbers an origin by the last place of that object in the table.
        last = dict(zip(map(id, table), range(len(table))))
        if len(last) < len(table):
            origins = array("i", map([last[id(o)] for o in table].__getitem__, origins))
        first: dict[int, int] = {}
        firsts = list(map(first.setdefault, keys, range(count)))  # each pair's first edge
        repeats = list(compress(range(count), map(ne, firsts, range(count))))
        for e in repeats:
            f = firsts[e]
            if not kinds[e] and kinds[f]:  # REQUIRES wins, with its first declaration
                kinds[f] = 0
                origins[f] = origins[e]
        graph._dependent = _without(dependents, repeats)
        graph._dependency = _without(dependencies, repeats)
        graph._kinds = _without(kinds, repeats)
        graph._origin = _without(origins, repeats)
        graph._live = len(graph._kinds)
        return graph

    def compact(self) -> None:
        """Drop the adjacency lists and look-up tables (rebuilt when needed): for a graph
        kept for the whole run, which then holds no Python object per node or edge."""
        self._keys = None
        self._table_ids = None
        self._lists_cache = self._lists_left = None

    def _key_index(self) -> dict[int, int]:
        keys = self._keys
        if keys is None:
            size = self.size
            # every edge, so that a pair's latest edge wins, as in add_edges
            keys = self._keys = dict(
                zip(_pair_keys(size, self._dependent, self._dependency),
                    range(len(self._kinds)))
            )
        return keys

    def _origin_ids(self) -> dict[int, int]:
        table_ids = self._table_ids
        if table_ids is None:
            table_ids = self._table_ids = {id(o): i for i, o in enumerate(self._table)}
        return table_ids

    def _unshare(self) -> None:
        self._dependent = self._dependent[:]
        self._dependency = self._dependency[:]
        self._kinds = self._kinds[:]
        self._origin = self._origin[:]
        self._table = self._table[:]
        self._table_ids = None if self._table_ids is None else self._table_ids.copy()
        self._keys = None if self._keys is None else self._keys.copy()
        if self._keep is not None:
            self._keep = self._keep[:]
        lists = self._lists_cache
        if lists is not None:
            self._lists_cache = tuple(
                [ns if ns is _NO_EDGES else ns[:] for ns in adjacency] for adjacency in lists
            )  # type: ignore[assignment]
        self._shared = False

    def _derived(self, keep: bytearray | None, live: int, removed: Sequence[int] = ()) -> Graph:
        """A graph over the same edge arrays with ``keep`` as its live edges, ``removed``
        being the edges live here and not there. Until either graph adds an edge, the two
        share the arrays and the adjacency lists of the nodes the removal leaves alone; the
        derived graph's lists are made when first read (a reduced graph is often only
        relabelled)."""
        graph = Graph(self.size)
        graph._dependent, graph._dependency = self._dependent, self._dependency
        graph._kinds, graph._origin = self._kinds, self._origin
        graph._table, graph._table_ids, graph._keys = self._table, self._table_ids, self._keys
        graph._keep, graph._live = keep, live
        graph._lists_cache = None
        lists = self._lists_cache
        if lists is not None:
            if removed:
                graph._lists_left = (lists, removed)
            else:
                graph._lists_cache = (lists[0][:], lists[1][:])
        graph._shared = self._shared = True
        return graph

    def _lists_without(
        self, lists: tuple[list[list[int]], list[list[int]]], removed: Sequence[int]
    ) -> tuple[list[list[int]], list[list[int]]]:
        """The lists of the graph this one was derived from without the ``removed`` edges:
        new lists for the nodes they touch, the others shared. O(V + removed edges)."""
        dependencies, dependents = lists[0][:], lists[1][:]
        size = self.size
        gone = {
            u * size + d
            for u, d in zip(map(self._dependent.__getitem__, removed),
                            map(self._dependency.__getitem__, removed))
        }
        for u in {key // size for key in gone}:
            base = u * size
            dependencies[u] = [d for d in dependencies[u] if base + d not in gone]
        for d in {key % size for key in gone}:
            dependents[d] = [u for u in dependents[d] if u * size + d not in gone]
        return dependencies, dependents

    # -- reading ----------------------------------------------------------------------------

    def _live_ids(self) -> Sequence[int]:
        """The numbers of the live edges, in declaration order."""
        keep = self._keep
        if keep is None:
            return range(len(self._kinds))
        return list(compress(range(len(keep)), keep))

    def _column(self, column: Sequence[int]) -> Iterable[int]:
        """The values of an edge column (``_dependent``, ``_kinds``, ...) for the live edges,
        in declaration order, in C (no list of edge numbers: 36 bytes an edge)."""
        keep = self._keep
        return column if keep is None else compress(column, keep)

    def _lists(self) -> tuple[list[list[int]], list[list[int]]]:
        """(dependencies, dependents) of each node, in declaration order. O(V + E) once."""
        lists = self._lists_cache
        if lists is None and self._lists_left is not None:
            lists = self._lists_cache = self._lists_without(*self._lists_left)
            self._lists_left = None
        if lists is None:
            size = self.size
            # one int object per node, shared by the lists (an array makes a new one per
            # read: two per edge, 28 bytes each, for as long as the lists live)
            node = list(range(size)).__getitem__
            src = list(map(node, self._column(self._dependent)))
            dst = list(map(node, self._column(self._dependency)))
            lists = self._lists_cache = (_adjacency(size, src, dst), _adjacency(size, dst, src))
        return lists

    def _keys_of(self, flags: bytes | bytearray | None = None) -> Iterator[int]:
        """``dependent * size + dependency`` of each live edge (whose flag is set), in order.
        O(E), in C."""
        src, dst = self._column(self._dependent), self._column(self._dependency)
        if flags is not None:
            live = bytes(self._column(flags))  # read twice
            return _pair_keys(self.size, compress(src, live), compress(dst, live))
        return _pair_keys(self.size, src, dst)

    def edges_keyed(self, keys: Iterable[int]) -> list[int]:
        """The numbers of the live edges keyed ``dependent * size + dependency`` in ``keys``,
        in declaration order, without the pair -> edge table. O(E), in C."""
        wanted = set(keys)
        if not wanted:
            return []
        table = self._keys
        if table is not None:
            found = [table.get(key) for key in wanted]
            keep = self._keep
            return sorted(
                e for e in found if e is not None and (keep is None or keep[e])
            )
        # the few candidate edges by their dependent first (in C), then their pairs
        size = self.size
        owners = {key // size for key in wanted}
        ids = self._live_ids()
        src, dst = self._dependent, self._dependency
        owner_of = src if isinstance(ids, range) else map(src.__getitem__, ids)
        return [
            e for e in compress(ids, map(owners.__contains__, owner_of))
            if src[e] * size + dst[e] in wanted
        ]

    def _edge(self, e: int) -> Edge:
        return Edge(
            self._dependent[e], self._dependency[e], _KINDS[self._kinds[e]],
            self._table[self._origin[e]],
        )

    def _find(self, dependent: int, dependency: int) -> int | None:
        """The number of the live edge between two nodes, or None."""
        if not (0 <= dependent < self.size and 0 <= dependency < self.size):
            return None
        e = self._key_index().get(dependent * self.size + dependency)
        if e is None or (self._keep is not None and not self._keep[e]):
            return None
        return e

    def edges(self) -> list[Edge]:
        """Every edge, in the order of its first declaration. O(E)."""
        return [self._edge(e) for e in self._live_ids()]

    def triples(self) -> Iterator[tuple[int, int, Kind]]:
        """(dependent, dependency, kind) of every edge, in declaration order, without
        building Edge objects (the fast path for large graphs). O(E)."""
        return zip(
            self._column(self._dependent), self._column(self._dependency),
            map(_KINDS.__getitem__, self._column(self._kinds)),
        )

    def dependencies(self, node: int) -> list[Edge]:
        """The edges whose dependent is ``node``. O(out-degree)."""
        # the adjacency lists hold live edges only, and a live edge is its pair's latest
        keys, base = self._key_index(), node * self.size
        return [self._edge(keys[base + d]) for d in self._lists()[0][node]]

    def dependents(self, node: int) -> list[Edge]:
        """The edges whose dependency is ``node``. O(in-degree)."""
        keys, size = self._key_index(), self.size
        return [self._edge(keys[u * size + node]) for u in self._lists()[1][node]]

    @property
    def edge_count(self) -> int:
        """Number of distinct (dependent, dependency) pairs."""
        return self._live

    def edge(self, dependent: int, dependency: int) -> Edge | None:
        """The edge between two nodes, or None. O(1)."""
        e = self._find(dependent, dependency)
        return None if e is None else self._edge(e)

    def dependency_ids(self, node: int) -> list[int]:
        """The nodes ``node`` depends on, in declaration order (a copy). O(out-degree)."""
        return list(self._lists()[0][node])

    def dependent_ids(self, node: int) -> list[int]:
        """The nodes that depend on ``node``, in declaration order (a copy). O(in-degree)."""
        return list(self._lists()[1][node])

    def kind(self, dependent: int, dependency: int) -> Kind | None:
        """The kind of the edge between two nodes, or None. O(1)."""
        e = self._find(dependent, dependency)
        return None if e is None else _KINDS[self._kinds[e]]

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
        queue = deque(starts)
        found: dict[int, int] = {}
        if not self._live or not queue:
            return found
        forward = direction == "dependencies"
        adjacency = self._lists()[0 if forward else 1]
        size, keys, edge_kinds = self.size, self._key_index(), self._kinds
        take = (Kind.REQUIRES in kinds, Kind.AFTER in kinds)
        seen = set(queue)
        while queue:
            node = queue.popleft()
            for other in adjacency[node]:
                if other in seen:
                    continue
                key = node * size + other if forward else other * size + node
                if take[edge_kinds[keys[key]]]:
                    seen.add(other)
                    found[other] = node
                    queue.append(other)
        return found

    def origins(self) -> Iterator[Origin]:
        """The origin of every edge, in declaration order. O(E)."""
        return map(self._table.__getitem__, self._column(self._origin))

    def _kept_columns(self) -> Callable[[_Column], _Column]:
        """A function that copies an edge column with the live edges only. O(E), in C: the
        runs between removed edges when they are few (a reduced graph), else a mask."""
        keep = self._keep
        if keep is None:
            return _copy
        if keep.count(0) * 8 > len(keep):
            return partial(_masked, keep)
        removed = []
        find = keep.find
        e = find(0)
        while e >= 0:
            removed.append(e)
            e = find(0, e + 1)
        return partial(_without, gone=removed)

    def columns(self) -> tuple[list[int], list[int], bytes]:
        """(dependents, dependencies, kinds: 0 REQUIRES, 1 AFTER) of every edge as columns, in
        declaration order. O(E), in C."""
        if self._keep is None:
            return self._dependent.tolist(), self._dependency.tolist(), bytes(self._kinds)
        return (
            list(self._column(self._dependent)), list(self._column(self._dependency)),
            bytes(self._column(self._kinds)),
        )

    def requiring(self) -> set[int]:
        """The nodes with at least one REQUIRES edge. O(E), in C."""
        requires = bytes(self._column(self._kinds)).translate(_NOT)
        return set(compress(self._column(self._dependent), requires))

    def origin_counts(self) -> Iterator[tuple[Origin, int]]:
        """Each origin that has edges, with how many, in order of first use. O(E), counted
        in C (no list of the edges' origins)."""
        counts = Counter(self._column(self._origin))
        return zip(map(self._table.__getitem__, counts), counts.values())

    def origin_indexes(self) -> tuple[list[Origin], list[int]]:
        """(one origin per declaration, the index of each edge's origin in it), in declaration
        order: the compact form of :meth:`origins`. O(E)."""
        return self._table, list(self._column(self._origin))

    # -- derived graphs ---------------------------------------------------------------------

    def relabel(self, new_id: Sequence[int]) -> Graph:
        """A copy where node ``n`` is ``new_id[n]`` (a permutation), edges in the same
        declaration order, kinds and origins kept. O(E), most of it in C."""
        graph = Graph(self.size)
        graph._lists_cache = None
        get = new_id.__getitem__
        # the live edges only: a relabelled graph is one to keep
        kept = self._kept_columns()
        graph._dependent = array("i", list(map(get, kept(self._dependent))))
        graph._dependency = array("i", list(map(get, kept(self._dependency))))
        graph._kinds = kept(self._kinds)
        graph._origin = kept(self._origin)
        graph._table = self._table[:]
        graph._table_ids = graph._keys = None
        graph._live = self._live
        return graph

    def subgraph_without(self, nodes: set[int]) -> Graph:
        """The same nodes, without the edges that touch ``nodes``. O(V + E)."""
        if not nodes:
            return self._derived(self._keep, self._live)
        src, dst = self._dependent, self._dependency
        return self.without_edges(
            [e for e in self._live_ids() if src[e] in nodes or dst[e] in nodes]
        )

    def without_edges(self, removed: Sequence[int]) -> Graph:
        """The same nodes without the live edges numbered ``removed``. O(V + E)."""
        if not removed:
            return self._derived(self._keep, self._live)
        keep = bytearray(b"\x01") * len(self._kinds) if self._keep is None else self._keep[:]
        for e in removed:
            keep[e] = 0
        return self._derived(keep, self._live - len(removed), removed)

    def __repr__(self) -> str:
        return f"Graph(size={self.size}, edges={self._live})"


def _kahn_order(graph: Graph) -> tuple[list[int], list[int]]:
    """Kahn's algorithm, dependencies first, ties in node order: (order, unplaced nodes). O(V+E).

    Nodes left unplaced are on a cycle or depend on one. A self loop leaves its node unplaced.
    """
    dependencies, dependents = graph._lists()
    waiting = list(map(len, dependencies))
    order = list(compress(range(graph.size), map(not_, waiting)))
    # ``order`` doubles as the FIFO queue: it only grows at the end, and a list's iterator
    # goes on to what was appended meanwhile
    append = order.append
    for v in order:
        for u in dependents[v]:
            waiting[u] = left = waiting[u] - 1
            if not left:
                append(u)
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
    successors = graph._lists()[0]
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
    successors = graph._lists()[0]
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


def find_cycles(graph: Graph, kahn: list[int] | None = None) -> list[list[Edge]]:
    """One concrete loop per component of more than one node, and one per self loop. O(V + E).

    A component's loop starts at its smallest node and is a shortest loop (of two or more
    nodes) through it: ``loop[i].dependency == loop[i + 1].dependent`` and the last edge
    returns to the first node. Loops are sorted by first node, then length (a self loop
    before its component's loop). An acyclic graph costs one Kahn pass; ``kahn``, when given,
    receives the order of that pass (a topological order when there is no cycle).
    """
    order, unplaced = _kahn_order(graph)
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


def stable_topological_order(
    graph: Graph, scopes: Callable[[int], Sequence[Hashable]] | None = None
) -> list[int]:
    """The serial run order: Kahn's algorithm over the id order, keeping scopes together.

    A cursor walks the ids in order and places each node it finds ready; a node it passes
    while the node still waits for a dependency is *late*, and is placed once it is ready.
    The candidates at each step are the ready late nodes and the cursor's node, never a node
    past it, so nothing moves up: a node comes after a larger one only if it was late, which
    needs an edge to a larger id up its dependencies (without ``scopes``: from the node to a
    dependency larger than itself, directly or through others). With no edges the result is
    ``range(size)``. Without ``scopes`` the smallest candidate goes first. With ``scopes``
    (``scopes(n)``: keys of the scopes that hold node n, outermost first, e.g. a package, a
    module, a class; the nodes of one innermost scope may share one sequence), the candidate
    sharing the most scopes with the node placed last goes first, the smallest among equals:
    a late node waits until the scopes it would split are done, and a scope whose nodes are
    consecutive ids and need no node outside it is never split. ValueError on a cycle.
    O(V + E + k d log k) for the k late nodes, d scopes deep: only late nodes go through
    heaps, and ``scopes`` is asked only while some wait.
    """
    size = graph.size
    if not graph._live:
        return list(range(size))
    dependencies, dependents = graph._lists()
    waiting = list(map(len, dependencies))
    if scopes is not None:
        order = _keeping_scopes(dependents, waiting, scopes)
    else:
        order = []
        append = order.append
        # ``late``: each is smaller than ``cursor``, so the smallest of them always beats the
        # next ready node the cursor finds
        late: list[int] = []
        push, pop = heapq.heappush, heapq.heappop
        cursor = 0
        while True:
            if late:
                v = pop(late)
            else:
                while cursor < size and waiting[cursor]:
                    cursor += 1
                if cursor == size:
                    break
                v = cursor
                cursor += 1
            append(v)
            for u in dependents[v]:
                waiting[u] = left = waiting[u] - 1
                if not left and u < cursor:
                    push(late, u)
    if len(order) < size:
        stuck = next(v for v in range(size) if waiting[v])
        raise ValueError(f"graph has a cycle through node {stuck}")
    return order


def _keeping_scopes(
    dependents: list[list[int]], waiting: list[int], scopes: Callable[[int], Sequence[Hashable]]
) -> list[int]:
    """:func:`stable_topological_order` with ``scopes``, on its adjacency and in-degrees."""
    size = len(waiting)
    order: list[int] = []
    append = order.append
    push, pop = heapq.heappush, heapq.heappop
    # the late nodes: a heap of them all and one per scope of those it holds; a node placed
    # from one heap stays in the others until it comes to their top (lazy deletion)
    late: list[int] = []
    by_scope: dict[Hashable, list[int]] = {}
    placed = bytearray(size)
    count = 0
    chains: list[Sequence[Hashable] | None] = [None] * size  # ``scopes``, asked once a node
    cursor = 0
    while True:
        while cursor < size and waiting[cursor]:
            cursor += 1
        if not count:
            if cursor == size:
                break
            v = cursor
            cursor += 1
        else:
            v = order[-1]
            chain = chains[v]
            if chain is None:
                chain = chains[v] = scopes(v)
            shared = 0
            if cursor < size:
                other = chains[cursor]
                if other is None:
                    other = chains[cursor] = scopes(cursor)
                if other is chain:
                    shared = len(chain)
                else:
                    for key, other_key in zip(chain, other):
                        if key != other_key:
                            break
                        shared += 1
            # the deepest scope of the node placed last that holds a late node, down to the
            # depth it shares with the cursor's node (a tie goes to the late node: it is smaller)
            v = -1
            for depth in range(len(chain) - 1, max(shared - 1, 0) - 1, -1):
                heap = by_scope.get(chain[depth])
                while heap and placed[heap[0]]:
                    pop(heap)
                if heap:
                    v = heap[0]
                    break
            if v < 0:
                if shared:
                    v = cursor
                else:
                    while placed[late[0]]:
                        pop(late)
                    v = late[0]
            if v == cursor:
                cursor += 1
            else:
                count -= 1
            placed[v] = 1
        append(v)
        for u in dependents[v]:
            waiting[u] = left = waiting[u] - 1
            if not left and u < cursor:
                count += 1
                push(late, u)
                chain = chains[u]
                if chain is None:
                    chain = chains[u] = scopes(u)
                for key in chain:
                    heap = by_scope.get(key)
                    if heap is None:
                        by_scope[key] = [u]
                    else:
                        push(heap, u)
    return order


def chain_cover(graph: Graph, order: Sequence[int], leave_out: Container[int] = ()) -> int:
    """The number of chains in a greedy cover of the nodes by paths along edges. O(V + E).

    Nodes in flight at once never lie on one path, so this bounds how many can be: 1 for a
    chain, ``size`` for a graph without edges. ``order``: a topological order, dependencies
    first; ``leave_out``: nodes that will not run. Greedy, so not always the least cover (the
    true bound, Dilworth's, needs a matching), but never below it.
    """
    dependencies = graph._lists()[0]
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
    dependencies = graph._lists()[0]
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
    dependencies = graph._lists()[0]
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

    Two exact methods, one result: :func:`_reduce_by_search` first (a search per candidate
    edge, pruned by a small reachability filter: fast and small on graphs whose reach spans
    the whole order, as random ones), and :func:`_reduce_by_closures` (bitset closures, with
    a worst-case bound) when the searches exceed their budget.
    """
    if order is None:
        order = _topological_order(graph)
    removed = _reduce_by_search(graph, order)
    if removed is None:
        removed = _reduce_by_closures(graph, order)
    return graph.without_edges(graph.edges_keyed(removed))


#: nodes (the first ones in the order that something depends on) whose bits the filter of
#: :func:`_reduce_by_search` keeps: 256 bytes a node
_FILTER_BITS = 2048


def _reduce_by_search(
    graph: Graph, order: Sequence[int], filter_bits: int = _FILTER_BITS,
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
    if not graph._live:
        return []
    dependencies, dependents = graph._lists()
    position = positions(order)
    at = position.__getitem__
    # each node's dependencies as positions, latest first (nodes are positions from here on)
    deps = [
        ds if not ds else sorted(map(at, ds), reverse=True) if len(ds) > 1 else [at(ds[0])]
        for ds in map(dependencies.__getitem__, order)
    ]
    # the AFTER edges (few), keyed ``dependent * size + dependency``
    after = {at(key // size) * size + at(key % size) for key in graph._keys_of(graph._kinds)}
    bit = [0] * size
    count = 0
    for t, v in enumerate(order):
        if count == filter_bits:
            break
        if dependents[v]:
            bit[t] = 1 << count
            count += 1
    # every filtered node: the filters equal to it are this one int, so that the test
    # against it is ``is`` (the usual case far enough into a layered graph)
    full = (1 << count) - 1
    hub = [0] * size
    seen = [0] * size  # == stamp: entered by the current search
    stamp = visits = 0
    limit = 8 * graph._live + 10_000 if budget is None else budget
    removed: list[int] = []
    for t, (ds, read) in enumerate(zip(deps, map(dependents.__getitem__, order))):
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
                    ha = hub[a]
                    if ha is full or (hb is not full and ha | hb == ha):
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
                        if seen[d] != stamp and not (requires_only and xbase + d in after):
                            hd = hub[d]
                            if hd is full or (hb is not full and hd | hb == hd):
                                seen[d] = stamp
                                stack.append(d)
                if visits > limit:
                    return None
            if found:
                removed.append(order[t] * size + order[b])
        if read:  # (the filter of a node nothing depends on is never read)
            if bit[t]:
                reach |= bit[t]
            # once every filtered node is reached, one int serves every node (memory)
            hub[t] = full if reach == full else reach
    return removed


def _reduce_by_closures(graph: Graph, order: Sequence[int]) -> list[int]:
    """The redundant edges (keyed ``dependent * size + dependency``) by bitset closures.
    O(V * E / wordsize).

    Closures are Python ints used as bitsets over the positions in ``order``. Each node's
    dependencies are visited latest-in-order first, so a dependency that reaches another one
    is always seen before it, and one bit test per edge decides. A closure is dropped once its
    last reader has used it, and loses the bits of nodes that can no longer be tested (see
    :func:`_live_from`), so on graphs whose edges are local in the order it stays short.
    """
    size = graph.size
    dependencies = graph._lists()[0]
    position = positions(order)
    # edges are keyed ``dependent * size + dependency`` here; the AFTER ones are few
    after = set(graph._keys_of(graph._kinds))
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
    dependencies = graph._lists()[0]
    # longest[v]: the best remaining path among v's dependents seen so far; every dependent
    # comes later in ``order``, so walking it backwards completes longest[v] before v.
    longest = [0.0] * graph.size
    for v in reversed(order):
        total = longest[v] = weights[v] + longest[v]
        for d in dependencies[v]:
            if total > longest[d]:
                longest[d] = total
    return longest
