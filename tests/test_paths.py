"""Walks over the graph: the nodes reached, the critical path; against networkx."""

from __future__ import annotations

import random

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_depgraph.core.graph.paths import Direction, critical_path, reachable
from pytest_depgraph.core.graph.storage import Graph, Kind

from .graph_strategies import PROPERTIES, Drawn, dags, digraphs
from .helpers import A, R, make, to_nx


@given(
    digraphs(),
    st.data(),
    st.sampled_from(["dependencies", "dependents"]),
    st.sampled_from([(R,), (A,), (R, A)]),
)
def test_reachable_matches_networkx(
    graph: Graph, data: st.DataObject, direction: Direction, kinds: tuple[Kind, ...]
) -> None:
    """Nodes reached from the starts over edges of ``kinds``, each with the node it was
    reached from over such an edge; breadth first (a node's source was reached before it)."""
    starts = data.draw(st.lists(st.integers(0, graph.size - 1), max_size=3, unique=True))
    g = to_nx(graph, kinds)
    if direction == "dependents":
        g = g.reverse()
    expected = set().union(*(nx.descendants(g, s) for s in starts)) - set(starts)
    found = reachable(graph, starts, direction, kinds)
    assert set(found) == expected

    def distance(node: int) -> float:
        return min(nx.shortest_path_length(g, s, node) for s in starts if nx.has_path(g, s, node))

    order = {n: i for i, n in enumerate([*starts, *found])}
    for node, source in found.items():
        assert g.has_edge(source, node)
        assert order[source] < order[node]
        assert distance(node) == distance(source) + 1


def test_critical_path_diamond() -> None:
    graph = make(4, [(1, 0, R), (2, 0, A), (3, 1, R), (3, 2, R)])
    assert critical_path(graph, [1.0, 5.0, 2.0, 1.0]) == [7.0, 6.0, 3.0, 1.0]
    with pytest.raises(ValueError):
        critical_path(graph, [1.0])


@settings(max_examples=200, deadline=None)
@given(digraphs(max_size=9, acyclic=True), st.data())
def test_critical_path_is_longest_path(graph: Graph, data: st.DataObject) -> None:
    weights = data.draw(st.lists(st.integers(0, 9), min_size=graph.size, max_size=graph.size))
    remaining = critical_path(graph, [float(w) for w in weights])
    g = to_nx(graph).reverse()  # follow dependents
    for v in range(graph.size):
        paths = [[v]] + [
            p for t in range(graph.size) if t != v for p in nx.all_simple_paths(g, v, t)
        ]
        assert remaining[v] == max(sum(weights[u] for u in p) for p in paths)


@settings(PROPERTIES)
@given(dags(), st.randoms(use_true_random=False))
def test_critical_path_on_large_graphs(drawn: Drawn, rng: random.Random) -> None:
    graph = drawn.graph
    weights = [float(rng.randint(0, 9)) for _ in range(graph.size)]
    remaining = critical_path(graph, weights)
    g = to_nx(graph)  # dependent -> dependency: the longest path *down* from v ends at v
    expected = [0.0] * graph.size
    for v in nx.topological_sort(g):
        expected[v] = weights[v] + max((expected[u] for u in g.predecessors(v)), default=0.0)
    assert remaining == expected
