"""Helpers shared by the test modules (imported from here, never from another test module)."""

from __future__ import annotations

import networkx as nx

from pytest_depgraph.core.graph import Graph, Kind, Origin

R, A = Kind.REQUIRES, Kind.AFTER
#: the origin of the edges of hand-made graphs
M = Origin("marker", "t.py:1")


def make(size: int, edges: list[tuple[int, int, Kind]]) -> Graph:
    graph = Graph(size)
    for dependent, dependency, kind in edges:
        graph.add_edge(dependent, dependency, kind, M)
    return graph


def to_nx(graph: Graph, kinds: tuple[Kind, ...] = (R, A)) -> nx.DiGraph:
    g = nx.DiGraph()
    g.add_nodes_from(range(graph.size))
    g.add_edges_from((e.dependent, e.dependency) for e in graph.edges() if e.kind in kinds)
    return g


def closure(g: nx.DiGraph) -> set[tuple[int, int]]:
    return {(u, v) for u in g for v in nx.descendants(g, u)}
