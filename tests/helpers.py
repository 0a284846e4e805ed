"""Helpers shared by the test modules: small graphs and plans made by hand."""

from __future__ import annotations

from pytest_depgraph.core.graph import Graph, Kind, Origin
from pytest_depgraph.core.plan import Plan

R, A = Kind.REQUIRES, Kind.AFTER
#: the origin of the edges made here
M = Origin("marker")


def make(size: int, edges: list[tuple[int, int, Kind]]) -> Graph:
    """A graph of ``size`` nodes with the edges (dependent, dependency, kind)."""
    graph = Graph(size)
    for dependent, dependency, kind in edges:
        graph.add_edge(dependent, dependency, kind, M)
    return graph


def plan_of(
    nodeids: list[str], edges: list[tuple[int, int]], group: list[int] | None = None
) -> Plan:
    """A plan of the tests ``nodeids`` with REQUIRES edges (dependent, dependency), each test
    its own module's group unless ``group`` says otherwise."""
    graph = Graph(len(nodeids))
    for dependent, dependency in edges:
        graph.add_edge(dependent, dependency, Kind.REQUIRES, Origin("marker", "t.py:1"))
    modules: dict[str, int] = {}
    if group is None:
        group = [modules.setdefault(nodeid.split("::")[0], len(modules)) for nodeid in nodeids]
    return Plan(nodeids=nodeids, locations=[], graph=graph, group=group,
                item_count=len(nodeids))
