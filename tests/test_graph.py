"""The graph's storage against its own edge list: merging, derived graphs, edge arrays, JSON.

Every algorithm also runs once here on empty, edgeless and 100,000-node graphs. Small graphs
are drawn edge by edge (they shrink to minimal examples); large ones, up to a few hundred
nodes in the shapes of :mod:`tests.graph_strategies`, run ``PROPERTIES.max_examples`` (200;
``DEPGRAPH_PROPERTY_EXAMPLES``: 500 in CI's oldest and newest environments) examples per property.
"""

from __future__ import annotations

import json
import random
import sys
from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_depgraph.core.graph.paths import critical_path
from pytest_depgraph.core.graph.reduction import transitive_reduction
from pytest_depgraph.core.graph.storage import Edge, Graph, Kind, Origin
from pytest_depgraph.core.graph.tarjan import find_cycles, strongly_connected_components
from pytest_depgraph.core.graph.toposort import stable_topological_order
from pytest_depgraph.core.plan import Plan, edges_by_origin, graph_edges_by_origin

from .graph_strategies import PROPERTIES, Drawn, dags
from .helpers import A, M, R, make


def test_duplicate_edge_merges_requires_wins() -> None:
    first, second, third = Origin("order", "a:1"), Origin("marker", "b:2"), Origin("marker", "c:3")
    graph = Graph(3)
    graph.add_edge(1, 0, A, first)
    graph.add_edge(2, 0, A, first)
    graph.add_edge(1, 0, R, second)
    graph.add_edge(1, 0, R, third)
    graph.add_edge(1, 0, A, third)
    assert graph.edge_count == 2
    assert graph.edges() == [Edge(1, 0, R, second), Edge(2, 0, A, first)]
    assert [graph.edge(1, d) for d in graph.dependencies_of(1)] == [Edge(1, 0, R, second)]
    assert list(graph.dependents_of(0)) == [1, 2]
    assert graph.kind(1, 0) is R and graph.kind(0, 1) is None
    assert graph.edge(2, 0) == Edge(2, 0, A, first) and graph.edge(0, 2) is None


def test_bad_edges_are_refused() -> None:
    with pytest.raises(ValueError):
        Graph(2).add_edge(2, 0, R, M)
    with pytest.raises(ValueError):
        Graph(-1)


def test_subgraph_without() -> None:
    graph = make(4, [(1, 0, R), (2, 1, A), (3, 2, R), (3, 0, R)])
    sub = graph.subgraph_without({1})
    assert sub.size == 4
    assert [(e.dependent, e.dependency) for e in sub.edges()] == [(3, 2), (3, 0)]
    assert graph.edge_count == 4


def test_derived_graphs_do_not_share_edits() -> None:
    graph = make(4, [(1, 0, R), (2, 1, R), (2, 0, R)])
    reduced = transitive_reduction(graph)
    sub = graph.subgraph_without({3})
    reduced.add_edge(3, 0, A, M)
    graph.add_edge(3, 2, R, M)
    assert graph.dependencies_of(3) == [2] and graph.dependents_of(0) == [1, 2]
    assert reduced.dependencies_of(3) == [0] and reduced.dependents_of(0) == [1, 3]
    assert sub.dependencies_of(3) == [] and sub.dependents_of(2) == []
    assert sub.edge_count == 3 and reduced.edge_count == 3 and graph.edge_count == 4


def test_long_chain_without_recursion() -> None:
    n = 20_000  # twenty times the recursion limit: a recursive walk would fail
    assert n > sys.getrecursionlimit()
    graph = make(n, [(i + 1, i, R) for i in range(n - 1)])
    components = strongly_connected_components(graph)
    assert len(components) == n and components[0] == [0]
    assert find_cycles(graph) == []
    assert stable_topological_order(graph) == list(range(n))
    assert transitive_reduction(graph).edge_count == n - 1
    assert critical_path(graph, [1.0] * n)[0] == n
    # the same chain backwards is one big cycle once closed
    graph.add_edge(0, n - 1, R, M)
    (loop,) = find_cycles(graph)
    assert len(loop) == n and loop[0].dependent == 0


def test_everything_on_empty_and_edgeless_graphs() -> None:
    for size in (0, 1, 3):
        graph = Graph(size)
        assert strongly_connected_components(graph) == [[v] for v in range(size)]
        assert find_cycles(graph) == []
        assert transitive_reduction(graph).edge_count == 0
        assert critical_path(graph, [2.0] * size) == [2.0] * size
        assert stable_topological_order(graph) == list(range(size))


def _check_adjacency(graph: Graph) -> None:
    edges = graph.edges()
    out: list[list[Edge]] = [[] for _ in range(graph.size)]
    into: list[list[Edge]] = [[] for _ in range(graph.size)]
    for e in edges:
        out[e.dependent].append(e)
        into[e.dependency].append(e)
    assert [[graph.edge(v, d) for d in graph.dependencies_of(v)]
            for v in range(graph.size)] == out
    assert [[graph.edge(u, v) for u in graph.dependents_of(v)]
            for v in range(graph.size)] == into
    assert [graph.dependencies_of(v) for v in range(graph.size)] == [
        [e.dependency for e in es] for es in out
    ]
    assert [graph.dependents_of(v) for v in range(graph.size)] == [
        [e.dependent for e in es] for es in into
    ]
    assert graph.dependency_counts() == [len(es) for es in out]
    assert list(graph.triples()) == [(e.dependent, e.dependency, e.kind) for e in edges]
    table, origin_of = graph.origin_indexes()
    assert [table[o] for o in origin_of] == [e.origin for e in edges]
    assert list(graph.origins()) == table
    assert graph.after_keys() == {
        e.dependent * graph.size + e.dependency for e in edges if e.kind is Kind.AFTER
    }
    assert graph.edge_count == len(edges)
    for e in edges:
        assert graph.edge(e.dependent, e.dependency) == e
        assert graph.kind(e.dependent, e.dependency) is e.kind
    assert graph_edges_by_origin(graph) == edges_by_origin(e.origin for e in edges)
    assert graph.edges_keyed(k * graph.size + k for k in range(graph.size)) == []
    assert graph.edges_keyed(
        e.dependent * graph.size + e.dependency for e in graph.edges()
    ) == list(range(graph.edge_count))
    # every other edge, among keys of no edge (the graphs here have no self loop)
    assert graph.edges_keyed([
        *(e.dependent * graph.size + e.dependency for e in edges[::2]),
        *(k * graph.size + k for k in range(graph.size)),
    ]) == list(range(0, graph.edge_count, 2))


@settings(PROPERTIES, max_examples=max(1, PROPERTIES.max_examples // 5))
@given(dags(max_size=60), st.randoms(use_true_random=False))
def test_adjacency_equals_the_edge_list_in_every_derived_graph(
    drawn: Drawn, rng: random.Random
) -> None:
    graph = drawn.graph
    edges = graph.edges()
    reduced = transitive_reduction(graph)
    without = graph.subgraph_without(set(rng.sample(range(graph.size), graph.size // 4)))
    perm = list(range(graph.size))
    rng.shuffle(perm)
    relabelled = reduced.relabel(perm)
    # (a reduction removes few edges, taking a quarter of the nodes out many)
    relabelled_without = without.relabel(perm)
    dependents, dependencies, kinds = graph.columns()
    table, origin_of = graph.origin_indexes()
    rebuilt = Graph.from_arrays(
        graph.size, array("i", dependents), array("i", dependencies), bytearray(kinds),
        array("i", origin_of), table,
    )
    for derived in (graph, reduced, without, relabelled, relabelled_without, rebuilt):
        _check_adjacency(derived)
        derived.compact()  # the look-up tables come back when needed
        _check_adjacency(derived)
    assert rebuilt.edges() == edges
    for before, after in ((reduced, relabelled), (without, relabelled_without)):
        assert after.edges() == [
            Edge(perm[e.dependent], perm[e.dependency], e.kind, e.origin)
            for e in before.edges()
        ]
    # an edge added to a derived graph is its own
    if graph.size > 1:
        without.add_edge(0, 1, A, M)
        reduced.add_edge(1, 0, A, M)
        assert graph.edges() == edges
        _check_adjacency(without)
        _check_adjacency(reduced)


def test_the_same_pair_twice_in_arrays_merges_as_add_edges_does() -> None:
    first, second = Origin("order", "a:1"), Origin("marker", "b:2")
    graph = Graph.from_arrays(
        3, array("i", [1, 2, 1]), array("i", [0, 0, 0]), bytearray([1, 1, 0]),
        array("i", [0, 0, 1]), [first, second],
    )
    assert graph.edges() == [Edge(1, 0, R, second), Edge(2, 0, A, first)]
    # either end outside, on either side: the range is checked on the dependencies and on
    # the pairs
    for dependent, dependency in [(3, 0), (-1, 2), (2, 3), (0, -1), (3, 2)]:
        with pytest.raises(ValueError, match="outside a graph of 3 nodes"):
            Graph.from_arrays(3, array("i", [1, dependent]), array("i", [0, dependency]),
                              bytearray(2), array("i", [0, 0]), [first])


def _by_add_edges(
    size: int, edges: list[tuple[int, int, int, int]], table: list[Origin]
) -> Graph:
    """The graph of edge arrays as from_arrays made it before its fast path for repeated
    pairs (merged edge by edge when a pair repeats): the reference that path must equal.
    The edges are merged by add_edges; the graph is then made of its distinct pairs over
    ``table``, each origin numbered by its own place when nothing repeats, else by the last
    place of that object in the table."""
    merged = Graph(size)
    merged.add_edges((u, d, Kind(k), table[o]) for u, d, k, o in edges)
    if len({(u, d) for u, d, _, _ in edges}) == len(edges):
        origins = [o for _, _, _, o in edges]
    else:
        last = {id(origin): i for i, origin in enumerate(table)}
        origins = [last[id(edge.origin)] for edge in merged.edges()]
    dependents, dependencies, kinds = merged.columns()
    return Graph.from_arrays(
        size, array("i", dependents), array("i", dependencies), bytearray(kinds),
        array("i", origins), list(table),
    )


@st.composite
def edge_arrays(draw: st.DrawFn) -> tuple[int, list[tuple[int, int, int, int]], list[Origin]]:
    """Edges with repeated pairs of either kind, over a table that holds some origin objects
    at more than one place (the build appends a shared declaration once per scope)."""
    size = draw(st.integers(1, 6))
    objects = [Origin("marker", f"t.py:{i}") for i in range(3)]
    table = draw(st.lists(st.sampled_from(objects), min_size=1, max_size=5))
    node, where = st.integers(0, size - 1), st.integers(0, len(table) - 1)
    edges = draw(st.lists(st.tuples(node, node, st.integers(0, 1), where), max_size=24))
    return size, edges, table


@given(edge_arrays(), st.sampled_from(["i", "l"]))
def test_arrays_with_repeated_pairs_give_the_graph_of_add_edges(
    case: tuple[int, list[tuple[int, int, int, int]], list[Origin]], typecode: str
) -> None:
    size, edges, table = case
    expected = _by_add_edges(size, edges, table)
    graph = Graph.from_arrays(
        size, array(typecode, [e[0] for e in edges]), array(typecode, [e[1] for e in edges]),
        bytearray(e[2] for e in edges), array("i", [e[3] for e in edges]), list(table),
    )
    assert graph.edges() == expected.edges()
    assert graph.columns() == expected.columns()
    assert graph.origin_indexes() == expected.origin_indexes()
    if all(u != d for u, d, _, _ in edges):  # (the check takes self loops for absent)
        _check_adjacency(graph)
    # what the plan sends and the DOT file shows: the same origins, numbered the same way
    plans = [
        Plan(nodeids=[f"t.py::t{v}" for v in range(size)], graph=g,
             group=[0] * size, item_count=size)
        for g in (graph, expected)
    ]
    assert plans[0].to_json() == plans[1].to_json()


def test_nodes_outside_the_graph_are_refused_whatever_the_array_type() -> None:
    for typecode in "il":
        for dependents, dependencies in (([0, 3], [1, 0]), ([1], [-1]), ([-2], [0])):
            with pytest.raises(ValueError, match=f"edge {dependents[-1]} -> "
                               f"{dependencies[-1]} outside a graph of 3 nodes"):
                Graph.from_arrays(
                    3, array(typecode, dependents), array(typecode, dependencies),
                    bytearray(len(dependents)), array("i", [0] * len(dependents)), [M],
                )


def test_a_derived_graph_keeps_its_edges_whatever_its_parent_does_meanwhile() -> None:
    # a graph derived by removing edges has the edges of the graph it came from as they were,
    # not as that graph's own additions left them
    for late_edit in ("parent adds", "parent compacts", "child adds", "nothing"):
        graph = make(4, [(1, 0, R), (2, 1, R), (2, 0, R), (3, 2, A)])
        graph.dependencies_of(0)  # (its lists made before the reduction)
        reduced = transitive_reduction(graph)
        if late_edit == "parent adds":
            graph.add_edge(3, 0, R, M)
        elif late_edit == "parent compacts":
            graph.compact()
        elif late_edit == "child adds":
            reduced.add_edge(3, 1, A, M)
        _check_adjacency(reduced)
        _check_adjacency(graph)
        assert [(e.dependent, e.dependency) for e in reduced.edges()] == [
            (1, 0), (2, 1), (3, 2), *([(3, 1)] if late_edit == "child adds" else [])
        ]


def test_relabelling_a_graph_with_few_edges_removed_keeps_the_rest_in_order() -> None:
    chain = [(v, v - 1, R) for v in range(1, 30)]
    shortcuts = [(5, 1, A), (9, 2, R), (29, 0, R), (29, 27, A)]
    graph = make(30, chain[:10] + shortcuts[:2] + chain[10:] + shortcuts[2:])
    reduced = transitive_reduction(graph)
    assert reduced.edge_count == len(chain)
    perm = list(reversed(range(30)))
    assert reduced.relabel(perm).edges() == [
        Edge(perm[u], perm[d], k, M) for u, d, k in chain
    ]


def test_a_removed_edge_declared_again_comes_back_last() -> None:
    graph = make(3, [(1, 0, R), (2, 0, R), (2, 1, R)])
    without = graph.subgraph_without({0})
    without.add_edge(1, 0, A, M)
    assert [(e.dependent, e.dependency, e.kind) for e in without.edges()] == [
        (2, 1, R), (1, 0, A)
    ]
    assert without.kind(2, 0) is None and graph.kind(2, 0) is R
    _check_adjacency(without)
    _check_adjacency(graph)


def test_a_plans_copy_changes_the_fields_named_and_refuses_others() -> None:
    plan = Plan(nodeids=["t.py::a"], graph=Graph(1), group=[0], item_count=1)
    copy = plan.replace(errors=["boom"])
    assert (copy.errors, plan.errors) == (["boom"], [])
    assert copy.graph is plan.graph and copy.nodeids is plan.nodeids
    with pytest.raises(TypeError, match="Plan has no field shards"):
        plan.replace(shards=None)


@settings(PROPERTIES, max_examples=max(1, PROPERTIES.max_examples // 5))
@given(dags(max_size=60))
def test_plan_json_round_trip_keeps_edges_kinds_and_origins(drawn: Drawn) -> None:
    graph = drawn.graph
    origins = [Origin("marker", "t.py:3"), Origin("fixture", name="db"),
               Origin("output", "", "vpc"), Origin("order", "o.py:9")]
    relabelled = Graph(graph.size)  # a few declarations, shared by many edges
    relabelled.add_edges(
        (u, d, k, origins[(u + d) % len(origins)]) for u, d, k in graph.triples()
    )
    reduced = transitive_reduction(relabelled)
    plan = Plan(nodeids=[f"t.py::t{v}" for v in range(graph.size)],
                graph=reduced, group=[0] * graph.size, item_count=graph.size)
    text = plan.to_json()
    again = Plan.from_json(text)
    assert again.graph.edges() == reduced.edges()
    assert again.to_json() == text
    data = json.loads(text)
    assert len(data["origins"]) <= len(origins)  # once per declaration, not per edge
