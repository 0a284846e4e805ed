"""Transitive reduction, both methods, against networkx and a brute-force oracle."""

from __future__ import annotations

import sys
from array import array

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_depgraph.core.graph import reduction
from pytest_depgraph.core.graph.reduction import (
    FILTER_BITS,
    reduce_by_closures,
    reduce_by_search,
    transitive_reduction,
)
from pytest_depgraph.core.graph.storage import Edge, Graph, Kind, Origin
from pytest_depgraph.core.graph.tarjan import find_cycles
from pytest_depgraph.core.graph.toposort import stable_topological_order

from .graph_strategies import PROPERTIES, Drawn, dags, digraphs, reachable
from .helpers import A, M, R, closure, make, to_nx


def test_reduction_diamond_with_shortcut() -> None:
    # 3 needs 1 and 2, both need 0; the shortcut 3 -> 0 is implied
    graph = make(4, [(1, 0, R), (2, 0, R), (3, 1, R), (3, 2, R), (3, 0, R)])
    reduced = transitive_reduction(graph)
    assert {(e.dependent, e.dependency) for e in reduced.edges()} == {
        (1, 0),
        (2, 0),
        (3, 1),
        (3, 2),
    }


def test_reduction_requires_needs_a_requires_path() -> None:
    # 2 requires 0 directly, and reaches 0 through an AFTER edge: the REQUIRES edge stays,
    # since dropping it would let 2 run after 0 failed.
    graph = make(3, [(2, 0, R), (2, 1, A), (1, 0, R)])
    assert transitive_reduction(graph).edge_count == 3
    # an AFTER edge is implied by any path
    graph = make(3, [(2, 0, A), (2, 1, A), (1, 0, R)])
    assert [(e.dependent, e.dependency) for e in transitive_reduction(graph).edges()] == [
        (2, 1),
        (1, 0),
    ]
    # a REQUIRES path implies a REQUIRES edge; the kept edges keep kind and origin
    origin = Origin("fixture", name="db")
    graph = make(3, [(2, 0, R), (1, 0, R)])
    graph.add_edge(2, 1, R, origin)
    assert transitive_reduction(graph).edges() == [Edge(1, 0, R, M), Edge(2, 1, R, origin)]


def test_reduction_accepts_an_order_and_rejects_cycles() -> None:
    graph = make(3, [(0, 1, R), (1, 2, R), (0, 2, R)])
    assert transitive_reduction(graph, [2, 1, 0]).edge_count == 2
    with pytest.raises(ValueError):
        transitive_reduction(make(2, [(0, 1, R), (1, 0, R)]))


def redundant_oracle(graph: Graph) -> set[tuple[int, int]]:
    """Edges implied by a path of two or more edges: of REQUIRES edges only for a REQUIRES edge."""
    every, requires = to_nx(graph), to_nx(graph, (R,))
    out = set()
    for e in graph.edges():
        g = requires if e.kind is R else every
        if any(
            e.dependency in nx.descendants(g, w)
            for w in g.successors(e.dependent)
            if w != e.dependency
        ):
            out.add((e.dependent, e.dependency))
    return out


@settings(max_examples=400, deadline=None)
@given(digraphs(acyclic=True))
def test_reduction_removes_exactly_the_redundant_edges(graph: Graph) -> None:
    reduced = transitive_reduction(graph)
    kept = {(e.dependent, e.dependency) for e in reduced.edges()}
    every = {(e.dependent, e.dependency) for e in graph.edges()}
    assert every - kept == redundant_oracle(graph)
    assert all(e == graph.edge(e.dependent, e.dependency) for e in reduced.edges())
    for kinds in ((R,), (R, A)):
        assert closure(to_nx(reduced, kinds)) == closure(to_nx(graph, kinds))
    # with one kind only, it is the classic reduction
    if all(e.kind is R for e in graph.edges()):
        assert kept == set(nx.transitive_reduction(to_nx(graph)).edges())


def removed_pairs(graph: Graph, keys: list[int] | None) -> set[tuple[int, int]]:
    assert keys is not None
    return {divmod(key, graph.size) for key in keys}


@settings(max_examples=400, deadline=None)
@given(digraphs(acyclic=True), st.sampled_from([0, 1, 2, 5]))
def test_both_reduction_methods_remove_exactly_the_redundant_edges(
    graph: Graph, filter_bits: int
) -> None:
    # the search with a filter of a few nodes (most candidates searched), the closures
    order = stable_topological_order(graph)
    expected = redundant_oracle(graph)
    assert removed_pairs(graph, reduce_by_closures(graph, order)) == expected
    found = reduce_by_search(graph, order, filter_bits, budget=sys.maxsize)
    assert removed_pairs(graph, found) == expected


def test_reduction_falls_back_to_closures_past_the_search_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 3 -> 2 -> 1 -> 0 and 3 -> 1, 3 -> 0: deciding 3 -> 0 takes a search when 0 is not
    # in the filter; a budget of no edge at all gives up
    graph = make(4, [(1, 0, R), (2, 1, R), (3, 2, R), (3, 1, A), (3, 0, R)])
    order = [0, 1, 2, 3]
    assert reduce_by_search(graph, order, 0, budget=0) is None
    assert removed_pairs(graph, reduce_by_search(graph, order, 0)) == {
        (3, 1), (3, 0)
    }
    expected = transitive_reduction(graph).edges()
    monkeypatch.setattr(reduction, "reduce_by_search", lambda *args: None)
    assert transitive_reduction(graph).edges() == expected
    assert [(e.dependent, e.dependency) for e in expected] == [(1, 0), (2, 1), (3, 2)]


@settings(max_examples=100, deadline=None)
@given(digraphs(max_size=40, acyclic=True))
def test_reduction_is_idempotent_and_order_independent(graph: Graph) -> None:
    reduced = transitive_reduction(graph)
    assert transitive_reduction(reduced).edges() == reduced.edges()
    assert transitive_reduction(graph, stable_topological_order(graph)).edges() == reduced.edges()


@settings(PROPERTIES)
@given(dags())
def test_reduction_on_large_graphs(drawn: Drawn) -> None:
    graph = drawn.graph
    reduced = transitive_reduction(graph)
    every, requires = reachable(graph), reachable(graph, (R,))
    out: dict[int, list[tuple[int, Kind]]] = {}
    for u, v, kind in graph.triples():
        out.setdefault(u, []).append((v, kind))
    # an edge is redundant when another way out of its dependent leads to its dependency:
    # any edge for an AFTER edge, a REQUIRES edge (then REQUIRES all the way) for a REQUIRES one
    redundant = set()
    for u, v, kind in graph.triples():
        if kind is R:
            found = any(requires[w] >> v & 1 for w, k in out[u] if k is R and w != v)
        else:
            found = any(every[w] >> v & 1 for w, _ in out[u] if w != v)
        if found:
            redundant.add((u, v))
    kept = {(e.dependent, e.dependency) for e in reduced.edges()}
    assert {(e.dependent, e.dependency) for e in graph.edges()} - kept == redundant
    assert kept.isdisjoint(redundant)
    assert all(e == graph.edge(e.dependent, e.dependency) for e in reduced.edges())
    assert reachable(reduced) == every and reachable(reduced, (R,)) == requires
    if all(e.kind is R for e in graph.edges()):
        assert kept == set(nx.transitive_reduction(to_nx(graph)).edges())
    assert transitive_reduction(reduced).edges() == reduced.edges()


@settings(PROPERTIES)
@given(dags(), st.sampled_from([0, 3, 40, FILTER_BITS]), st.booleans())
def test_search_and_closures_agree_on_large_graphs(
    drawn: Drawn, filter_bits: int, kahn_order: bool
) -> None:
    # the order the build passes (Kahn's, found with the cycles) or the serial one
    graph = drawn.graph
    order: list[int] = []
    find_cycles(graph, order)
    if not kahn_order:
        order = stable_topological_order(graph)
    by_closures = removed_pairs(graph, reduce_by_closures(graph, order))
    # (without a budget: a small filter leaves many searches, which would give up)
    found = reduce_by_search(graph, order, filter_bits, budget=sys.maxsize)
    assert removed_pairs(graph, found) == by_closures


@settings(PROPERTIES, max_examples=max(1, PROPERTIES.max_examples // 5))
@given(dags(max_size=80))
def test_kept_edges_equal_networkx_transitive_reduction(drawn: Drawn) -> None:
    dependents, dependencies, kinds = drawn.graph.columns()
    table, origin_of = drawn.graph.origin_indexes()
    plain = Graph.from_arrays(  # every edge REQUIRES: networkx's reduction applies
        drawn.graph.size, array("i", dependents), array("i", dependencies),
        bytearray(len(kinds)), array("i", origin_of), table,
    )
    reduced = transitive_reduction(plain)
    kept = {(e.dependent, e.dependency) for e in reduced.edges()}
    assert kept == set(nx.transitive_reduction(to_nx(plain)).edges())
