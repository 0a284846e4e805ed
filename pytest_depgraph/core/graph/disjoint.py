"""Union-find: disjoint sets of the integers ``0..size-1``, each named by its smallest member.

Pinned groups, dependency-closed shards and ``--dist`` work units all join nodes into sets
this way; naming a set by its smallest member makes the result independent of the order of
the joins (every xdist worker and every CI job finds the same names).
"""

from __future__ import annotations


class DisjointSets:
    """Sets of ``0..size-1``, each a set of its own until :meth:`union` joins two.

    Path halving, the larger name pointing at the smaller (not union by rank, so that a
    set's name is its smallest member): O(log size) amortised per operation, and O(size)
    for :meth:`sets`.
    """

    __slots__ = ("_parent",)

    def __init__(self, size: int) -> None:
        self._parent = list(range(size))

    def find(self, v: int) -> int:
        """The name of the set that holds ``v``: its smallest member."""
        parent = self._parent
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    def union(self, a: int, b: int) -> bool:
        """Join the sets of ``a`` and ``b``; False when they were one set already."""
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return False
        self._parent[max(ra, rb)] = min(ra, rb)
        return True

    def sets(self) -> list[list[int]]:
        """Every set, its members ascending, listed by smallest member."""
        found: dict[int, list[int]] = {}
        for v in range(len(self._parent)):
            found.setdefault(self.find(v), []).append(v)
        return list(found.values())
