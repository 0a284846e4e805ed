"""Union-find against a brute-force search: the sets, their names, what union reports."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pytest_depgraph.core.graph.disjoint import DisjointSets


@given(st.integers(0, 30), st.lists(st.tuples(st.integers(0, 29), st.integers(0, 29))))
def test_sets_are_the_connected_parts_named_by_their_smallest_member(
    size: int, pairs: list[tuple[int, int]]
) -> None:
    pairs = [(a, b) for a, b in pairs if a < size and b < size]
    sets = DisjointSets(size)
    # by brute force: the part of each node, merged pair by pair
    part = {v: {v} for v in range(size)}
    for a, b in pairs:
        apart = part[a] is not part[b]
        assert sets.union(a, b) == apart
        if apart:
            merged = part[a] | part[b]
            for v in merged:
                part[v] = merged
    for v in range(size):
        assert sets.find(v) == min(part[v])
    expected = sorted({min(p): sorted(p) for p in part.values()}.items())
    assert sets.sets() == [members for _, members in expected]


def test_a_long_chain_joined_from_its_end() -> None:
    n = 100_000
    sets = DisjointSets(n)
    for v in range(n - 1, 0, -1):
        sets.union(v, v - 1)
    assert sets.find(n - 1) == 0 and len(sets.sets()) == 1
