"""The dependency graph's storage: nodes are integers, edges flat columns with kinds and origins.

An edge points from the *dependent* (the node that waits) to the *dependency* (the node it
waits for), as in ``terraform graph``. Nothing here knows what a node stands for, nor what an
origin's kind means. The algorithms live beside it, one concept a module: ``tarjan`` (cycles),
``order`` (topological orders), ``reduction`` (transitive reduction) and ``paths`` (walks and
the critical path); they read the graph through :meth:`Graph.dependencies_of` and
:meth:`Graph.dependents_of`.
"""

from __future__ import annotations

import enum
from array import array
from collections import Counter, deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import compress, repeat
from operator import add, mul
from typing import Callable, TypeVar


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
        :meth:`add_edges` merges them. When every pair is distinct (the build's usual case)
        the arrays are taken over, not copied. O(E)."""
        graph = cls(size)
        graph._lists_cache = None  # built on first use, in one pass
        count = len(kinds)
        if not (len(dependents) == len(dependencies) == len(origins) == count):
            raise ValueError("edge arrays of different lengths")
        graph._table, graph._keys, graph._table_ids = table, None, None
        inside = not count or (
            min(dependents) >= 0 and max(dependents) < size
            and min(dependencies) >= 0 and max(dependencies) < size
        )
        if inside and len({u * size + d for u, d in zip(dependents, dependencies)}) == count:
            # the arrays are the graph as they are, and the pair -> edge table (a dict entry
            # and two ints per edge) waits until a look-up or an added edge needs it
            graph._dependent, graph._dependency = dependents, dependencies
            graph._kinds, graph._origin, graph._live = kinds, origins, count
            return graph
        # a pair repeats, or a node is outside the graph (add_edges says which): edge by edge,
        # an origin numbered by the last place of that object in the table, as add_edges does
        graph._table_ids = {id(origin): i for i, origin in enumerate(table)}
        graph.add_edges(
            zip(dependents, dependencies, map(Kind, kinds), map(table.__getitem__, origins))
        )
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

    def dependencies_of(self, node: int) -> Sequence[int]:
        """The nodes ``node`` depends on, in declaration order. O(1) (O(V + E) once, for every
        node, after the graph was made or compacted)."""
        return self._lists()[0][node]

    def dependents_of(self, node: int) -> Sequence[int]:
        """The nodes that depend on ``node``, in declaration order. O(1) (O(V + E) once, for
        every node, after the graph was made or compacted)."""
        return self._lists()[1][node]

    def kind(self, dependent: int, dependency: int) -> Kind | None:
        """The kind of the edge between two nodes, or None. O(1)."""
        e = self._find(dependent, dependency)
        return None if e is None else _KINDS[self._kinds[e]]

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
