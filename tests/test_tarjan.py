"""Strongly connected components and the loops shown for cycles, against networkx."""

from __future__ import annotations

import networkx as nx
from hypothesis import given, settings

from pytest_depgraph.core.graph.storage import Edge, Graph
from pytest_depgraph.core.graph.tarjan import find_cycles, strongly_connected_components

from .graph_strategies import PROPERTIES, Drawn, dags, digraphs
from .helpers import A, M, R, make, to_nx


def test_self_loop_is_a_cycle() -> None:
    graph = make(2, [(1, 1, R)])
    assert find_cycles(graph) == [[Edge(1, 1, R, M)]]
    assert strongly_connected_components(graph) == [[0], [1]]


def test_cycle_report_starts_at_smallest_node() -> None:
    graph = make(4, [(1, 2, R), (2, 3, A), (3, 1, R), (0, 1, R)])
    (loop,) = find_cycles(graph)
    assert [(e.dependent, e.dependency, e.kind) for e in loop] == [(1, 2, R), (2, 3, A), (3, 1, R)]


def test_cycle_report_takes_shortest_loop() -> None:
    # 0 -> 1 -> 2 -> 3 -> 0 and the shortcut 0 -> 3
    graph = make(4, [(0, 1, R), (1, 2, R), (2, 3, R), (3, 0, R), (0, 3, R)])
    (loop,) = find_cycles(graph)
    assert [(e.dependent, e.dependency) for e in loop] == [(0, 3), (3, 0)]


def test_acyclic_graph_has_no_cycles() -> None:
    assert find_cycles(make(3, [(2, 1, R), (1, 0, A), (2, 0, R)])) == []


def cycle_oracle_length(g: nx.DiGraph[int], start: int) -> float:
    """Length of a shortest loop of two or more nodes through ``start``."""
    best: float | None = None
    for w in g.successors(start):
        if w != start and nx.has_path(g, w, start):
            length = 1 + nx.shortest_path_length(g, w, start)
            best = length if best is None else min(best, length)
    assert best is not None
    return best


@settings(max_examples=300, deadline=None)
@given(digraphs())
def test_scc_and_cycles_match_networkx(graph: Graph) -> None:
    check_scc_and_cycles(graph)


@settings(PROPERTIES)
@given(dags(back_edges=True))
def test_scc_and_cycles_match_networkx_on_large_graphs(drawn: Drawn) -> None:
    check_scc_and_cycles(drawn.graph)


def check_scc_and_cycles(graph: Graph) -> None:
    """Components as networkx finds them, in dependency order; one shortest loop each."""
    g = to_nx(graph)
    components = strongly_connected_components(graph)
    assert sorted(map(sorted, components)) == sorted(
        sorted(c) for c in nx.strongly_connected_components(g)
    )
    assert all(c == sorted(c) for c in components)
    # a component comes after every component it depends on
    where = {v: i for i, c in enumerate(components) for v in c}
    assert all(where[u] >= where[v] for u, v in g.edges())

    loops = find_cycles(graph)
    nontrivial = [c for c in components if len(c) > 1]
    self_loops = [v for v in range(graph.size) if g.has_edge(v, v)]
    assert len(loops) == len(nontrivial) + len(self_loops)
    assert [loop[0].dependent for loop in loops] == sorted([c[0] for c in nontrivial] + self_loops)
    no_self = g.copy()
    no_self.remove_edges_from(nx.selfloop_edges(g))
    for loop in loops:
        for e, nxt in zip(loop, loop[1:] + loop[:1]):
            assert e.dependency == nxt.dependent
            assert graph.edge(e.dependent, e.dependency) == e
        if len(loop) == 1:
            assert loop[0].dependent == loop[0].dependency
            continue
        nodes = [e.dependent for e in loop]
        assert len(set(nodes)) == len(nodes)
        assert nodes[0] == components[where[nodes[0]]][0]
        assert len(loop) == cycle_oracle_length(no_self, nodes[0])
    if not loops:
        assert nx.is_directed_acyclic_graph(g)
