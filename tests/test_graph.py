"""The graph algorithms against networkx and brute force, on hand-made and random graphs.

Small graphs are drawn edge by edge (they shrink to minimal examples); large ones, up to
a few hundred nodes in the shapes of :mod:`tests.graph_strategies`, run
``PROPERTIES.max_examples`` (500) examples per algorithm.
"""

from __future__ import annotations

import json
import random
import sys
from array import array

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_depgraph.core import graph as graph_module
from pytest_depgraph.core.graph import (
    Direction,
    Edge,
    Graph,
    Kind,
    Origin,
    critical_path,
    find_cycles,
    stable_topological_order,
    strongly_connected_components,
    transitive_reduction,
)
from pytest_depgraph.core.plan import Plan, edges_by_origin, graph_edges_by_origin

from .graph_strategies import PROPERTIES, Drawn, Scopes, dags, reachable, scope_layout

R, A = Kind.REQUIRES, Kind.AFTER
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


@st.composite
def digraphs(draw: st.DrawFn, max_size: int = 12, acyclic: bool = False) -> Graph:
    """Random graphs; acyclic ones point only from higher to lower ids, then get relabelled."""
    size = draw(st.integers(1, max_size))
    pairs = st.tuples(st.integers(0, size - 1), st.integers(0, size - 1))
    raw = draw(st.lists(st.tuples(pairs, st.sampled_from([R, A])), max_size=size * 3))
    if acyclic:
        perm = draw(st.permutations(range(size)))
        raw = [((perm[max(u, v)], perm[min(u, v)]), k) for (u, v), k in raw if u != v]
    return make(size, [(u, v, k) for (u, v), k in raw])


# -- Origin, Graph -------------------------------------------------------------------------


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
    assert graph.dependencies(1) == [Edge(1, 0, R, second)]
    assert [e.dependent for e in graph.dependents(0)] == [1, 2]
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
    assert graph.dependency_ids(3) == [2] and graph.dependent_ids(0) == [1, 2]
    assert reduced.dependency_ids(3) == [0] and reduced.dependent_ids(0) == [1, 3]
    assert sub.dependency_ids(3) == [] and sub.dependent_ids(2) == []
    assert sub.edge_count == 3 and reduced.edge_count == 3 and graph.edge_count == 4


# -- strongly connected components, cycles -------------------------------------------------


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
    found = graph.reachable(starts, direction, kinds)
    assert set(found) == expected

    def distance(node: int) -> int:
        return min(nx.shortest_path_length(g, s, node) for s in starts if nx.has_path(g, s, node))

    order = {n: i for i, n in enumerate([*starts, *found])}
    for node, source in found.items():
        assert g.has_edge(source, node)
        assert order[source] < order[node]
        assert distance(node) == distance(source) + 1


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


def test_long_chain_without_recursion() -> None:
    n = 100_000
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


def cycle_oracle_length(g: nx.DiGraph, start: int) -> int:
    """Length of a shortest loop of two or more nodes through ``start``."""
    best = None
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


# -- stable topological order --------------------------------------------------------------


def test_order_without_edges_is_identity() -> None:
    assert stable_topological_order(Graph(5)) == [0, 1, 2, 3, 4]
    assert stable_topological_order(Graph(0)) == []


def test_order_moves_dependents_down_not_dependencies_up() -> None:
    # 1 needs 4, 3 needs 2 and 4: 1 and 3 wait for 4; 2 and 4 keep their order
    graph = make(5, [(1, 4, R), (3, 4, A), (3, 2, R)])
    assert stable_topological_order(graph) == [0, 2, 4, 1, 3]


def _smallest_ready_first(graph: Graph) -> list[int]:
    """Kahn's algorithm at its plainest: at every step the smallest ready node."""
    placed: list[int] = []
    done: set[int] = set()
    left = set(range(graph.size))
    while left:
        v = min(u for u in left if done.issuperset(graph.dependency_ids(u)))
        placed.append(v)
        done.add(v)
        left.remove(v)
    return placed


@settings(max_examples=300, deadline=None)
@given(digraphs(acyclic=True))
def test_order_takes_the_smallest_ready_node_at_every_step(graph: Graph) -> None:
    assert stable_topological_order(graph) == _smallest_ready_first(graph)


def _shared(chain: tuple[str, ...], other: tuple[str, ...]) -> int:
    """How many scopes, from the outermost, two tests share."""
    shared = 0
    for key, other_key in zip(chain, other):
        if key != other_key:
            break
        shared += 1
    return shared


def _keeping_scopes(graph: Graph, scopes: Scopes) -> list[int]:
    """The documented rule at its plainest. The order reaches the tests in id order; a test
    it reaches while it still waits for a dependency is passed. The candidates of each step
    are the passed tests that are now ready and the first ready test not reached yet; the one
    sharing the most scopes with the test placed last goes first, the smallest among equals."""
    placed: list[int] = []
    done: set[int] = set()
    passed: set[int] = set()
    reached = 0  # every test below it is placed or passed

    def ready(u: int) -> bool:
        return done.issuperset(graph.dependency_ids(u))

    while len(placed) < graph.size:
        while reached < graph.size and not ready(reached):
            passed.add(reached)
            reached += 1
        candidates = [u for u in passed if ready(u)]
        if reached < graph.size:
            candidates.append(reached)
        last = scopes[placed[-1]] if placed else ()
        v = min(candidates, key=lambda u: (-_shared(last, scopes[u]), u))
        placed.append(v)
        done.add(v)
        if v == reached:
            reached += 1
        passed.discard(v)
    return placed


def _scoped_order(graph: Graph, scopes: Scopes) -> list[int]:
    return stable_topological_order(graph, scopes.__getitem__)


def test_order_keeps_a_class_together() -> None:
    # test_report (0) needs TestDb::test_connect (1); TestDb::test_query (2) keeps its class
    scopes = [("t.py",), ("t.py", "t.py::TestDb"), ("t.py", "t.py::TestDb")]
    graph = make(3, [(0, 1, R)])
    assert stable_topological_order(graph) == [1, 0, 2]
    assert _scoped_order(graph, scopes) == [1, 2, 0]


def test_order_keeps_the_innermost_scope_first() -> None:
    # a/t.py: 0 needs 2, then 1; class C: 2, 3 with nested C::D: 4, 5; 6 in the module;
    # a/u.py: 7; b/v.py: 8, and 9 needs 5
    scopes = [
        ("a/", "a/t.py"), ("a/", "a/t.py"), ("a/", "a/t.py", "C"), ("a/", "a/t.py", "C"),
        ("a/", "a/t.py", "C", "C::D"), ("a/", "a/t.py", "C", "C::D"), ("a/", "a/t.py"),
        ("a/", "a/u.py"), ("b/", "b/v.py"), ("b/", "b/v.py"),
    ]
    graph = make(10, [(0, 2, R), (9, 5, R)])
    # 0 waits for C (and its nested class) to finish; the rest stays in place
    assert _scoped_order(graph, scopes) == [1, 2, 3, 4, 5, 0, 6, 7, 8, 9]
    # 0 needs 4 instead: D is done, C goes on (3 is before 4), then the module takes 0
    graph = make(10, [(0, 4, R)])
    assert _scoped_order(graph, scopes) == [1, 2, 3, 4, 5, 0, 6, 7, 8, 9]
    # 0 needs 7 (a/u.py, its last test): 0 runs right after it, before b/
    graph = make(10, [(0, 7, R)])
    assert _scoped_order(graph, scopes) == [1, 2, 3, 4, 5, 6, 7, 0, 8, 9]
    # 0 needs 8 (b/v.py), which needs 2: 8 keeps its place, 0 waits for the rest of b/v.py
    graph = make(10, [(8, 2, R), (0, 8, R)])
    assert _scoped_order(graph, scopes) == [1, 2, 3, 4, 5, 6, 7, 8, 9, 0]


def test_order_keeps_a_package_together() -> None:
    # 0 (package c) needs 1 (package a, module u.py); 2 (a/w.py) keeps package a going
    graph = make(3, [(0, 1, R)])
    assert _scoped_order(graph, [("c/", "c/x.py"), ("a/", "a/u.py"), ("a/", "a/w.py")]) == [
        1, 2, 0
    ]
    # plain folders are no scopes: then nothing holds 0 back after 1
    assert _scoped_order(graph, [("c/x.py",), ("a/u.py",), ("a/w.py",)]) == [1, 0, 2]


def test_order_keeps_scopes_yet_never_moves_a_test_up() -> None:
    # 0 (m.py) needs 1 (n.py); 2 (n.py) keeps n.py going; 3 is back in m.py: pytest put it
    # after n.py (pytest-order, --ff), so it stays there although 0 is in its module
    scopes = [("m.py",), ("n.py",), ("n.py",), ("m.py",)]
    assert _scoped_order(make(4, [(0, 1, R)]), scopes) == [1, 2, 0, 3]
    # no edge: pytest's order, split modules and all
    assert _scoped_order(Graph(4), scopes) == [0, 1, 2, 3]


@settings(max_examples=300, deadline=None)
@given(digraphs(acyclic=True), st.integers(0, 2**32 - 1), st.booleans())
def test_order_keeps_scopes_at_every_step(graph: Graph, seed: int, interleaved: bool) -> None:
    scopes = scope_layout(random.Random(seed), graph.size, interleaved)
    assert _scoped_order(graph, scopes) == _keeping_scopes(graph, scopes)


def test_order_rejects_cycles() -> None:
    with pytest.raises(ValueError):
        stable_topological_order(make(2, [(0, 1, R), (1, 0, R)]))
    with pytest.raises(ValueError):
        stable_topological_order(make(1, [(0, 0, R)]))


@settings(max_examples=300, deadline=None)
@given(digraphs(acyclic=True))
def test_order_respects_every_edge(graph: Graph) -> None:
    order = stable_topological_order(graph)
    assert sorted(order) == list(range(graph.size))
    position = {v: i for i, v in enumerate(order)}
    assert all(position[e.dependency] < position[e.dependent] for e in graph.edges())


@settings(max_examples=100, deadline=None)
@given(
    st.integers(1, 30).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=3 * n),
        )
    )
)
def test_order_is_identity_when_nothing_must_move(case: tuple[int, list[tuple[int, int]]]) -> None:
    size, pairs = case
    graph = make(size, [(max(u, v), min(u, v), R) for u, v in pairs if u != v])
    assert stable_topological_order(graph) == list(range(size))


# -- transitive reduction ------------------------------------------------------------------


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
    assert removed_pairs(graph, graph_module._reduce_by_closures(graph, order)) == expected
    found = graph_module._reduce_by_search(graph, order, filter_bits, budget=sys.maxsize)
    assert removed_pairs(graph, found) == expected


def test_reduction_falls_back_to_closures_past_the_search_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 3 -> 2 -> 1 -> 0 and 3 -> 1, 3 -> 0: deciding 3 -> 0 takes a search when 0 is not
    # in the filter; a budget of no edge at all gives up
    graph = make(4, [(1, 0, R), (2, 1, R), (3, 2, R), (3, 1, A), (3, 0, R)])
    order = [0, 1, 2, 3]
    assert graph_module._reduce_by_search(graph, order, 0, budget=0) is None
    assert removed_pairs(graph, graph_module._reduce_by_search(graph, order, 0)) == {
        (3, 1), (3, 0)
    }
    expected = transitive_reduction(graph).edges()
    monkeypatch.setattr(graph_module, "_reduce_by_search", lambda *args: None)
    assert transitive_reduction(graph).edges() == expected
    assert [(e.dependent, e.dependency) for e in expected] == [(1, 0), (2, 1), (3, 2)]


@settings(max_examples=100, deadline=None)
@given(digraphs(max_size=40, acyclic=True))
def test_reduction_is_idempotent_and_order_independent(graph: Graph) -> None:
    reduced = transitive_reduction(graph)
    assert transitive_reduction(reduced).edges() == reduced.edges()
    assert transitive_reduction(graph, stable_topological_order(graph)).edges() == reduced.edges()


# -- critical path -------------------------------------------------------------------------


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


def test_everything_on_empty_and_edgeless_graphs() -> None:
    for size in (0, 1, 3):
        graph = Graph(size)
        assert strongly_connected_components(graph) == [[v] for v in range(size)]
        assert find_cycles(graph) == []
        assert transitive_reduction(graph).edge_count == 0
        assert critical_path(graph, [2.0] * size) == [2.0] * size
        assert stable_topological_order(graph) == list(range(size))


# -- large graphs: order, reduction, critical path -------------------------------------------


def reference_order(graph: Graph) -> list[int]:
    """The documented order, written plainly: Kahn's algorithm taking, at every step, the
    smallest ready id (a dependent waits; nothing moves up). O(V^2), for tests only."""
    return _smallest_ready_first(graph)


@settings(PROPERTIES)
@given(dags(), st.sampled_from(["no scopes", "scopes", "interleaved scopes"]))
def test_order_on_large_graphs(drawn: Drawn, layout: str) -> None:
    graph = drawn.graph
    if layout == "no scopes":
        scopes = None
        order = stable_topological_order(graph)
        assert order == reference_order(graph)
    else:
        scopes = scope_layout(random.Random(drawn.seed), graph.size, layout != "scopes")
        order = _scoped_order(graph, scopes)
        assert order == _keeping_scopes(graph, scopes)
    assert sorted(order) == list(range(graph.size))
    position = {v: i for i, v in enumerate(order)}
    assert all(position[e.dependency] < position[e.dependent] for e in graph.edges())
    if all(e.dependency < e.dependent for e in graph.edges()):
        assert order == list(range(graph.size))  # nothing has to move, nothing moves
    # a test runs after one collected later only when it waits for a test collected later:
    # without scopes, one collected after itself, directly or through others; with scopes,
    # one collected after the test that needs it, somewhere up its dependencies (a test that
    # waits for its target's module to finish may hold back its own dependents). Nothing
    # moves up past a test that does not wait so.
    leads_to = reachable(graph)
    forward = sum(1 << v for v in range(graph.size) if any(
        d > v for d in graph.dependency_ids(v)
    ))
    furthest = -1
    for u in order:
        if furthest > u:
            waits = leads_to[u] >> (u + 1) if scopes is None else (leads_to[u] | 1 << u) & forward
            assert waits, f"{u} placed after {furthest} without waiting"
        furthest = max(furthest, u)
    if scopes is None:
        return
    # a scope contiguous in pytest's order whose tests need no test outside it is never split
    members: dict[str, list[int]] = {}
    for v, chain in enumerate(scopes):
        for key in chain:
            members.setdefault(key, []).append(v)
    for key, nodes in members.items():
        inside = set(nodes)
        if nodes[-1] - nodes[0] + 1 != len(nodes) or any(
            d not in inside for v in nodes for d in graph.dependency_ids(v)
        ):
            continue
        where = sorted(position[v] for v in nodes)
        assert where[-1] - where[0] + 1 == len(nodes), f"{key} split"


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


# -- storage: flat edge arrays, derived graphs, the plan's JSON ----------------------------


def _check_adjacency(graph: Graph) -> None:
    edges = graph.edges()
    out: list[list[Edge]] = [[] for _ in range(graph.size)]
    into: list[list[Edge]] = [[] for _ in range(graph.size)]
    for e in edges:
        out[e.dependent].append(e)
        into[e.dependency].append(e)
    assert [graph.dependencies(v) for v in range(graph.size)] == out
    assert [graph.dependents(v) for v in range(graph.size)] == into
    assert [graph.dependency_ids(v) for v in range(graph.size)] == [
        [e.dependency for e in es] for es in out
    ]
    assert [graph.dependent_ids(v) for v in range(graph.size)] == [
        [e.dependent for e in es] for es in into
    ]
    assert list(graph.triples()) == [(e.dependent, e.dependency, e.kind) for e in edges]
    assert list(graph.origins()) == [e.origin for e in edges]
    assert graph.edge_count == len(edges)
    for e in edges:
        assert graph.edge(e.dependent, e.dependency) == e
        assert graph.kind(e.dependent, e.dependency) is e.kind
    assert graph.requiring() == {e.dependent for e in graph.edges() if e.kind is R}
    assert graph_edges_by_origin(graph) == edges_by_origin(graph.origins())
    assert graph.edges_keyed(k * graph.size + k for k in range(graph.size)) == []
    assert graph.edges_keyed(
        e.dependent * graph.size + e.dependency for e in graph.edges()
    ) == list(graph._live_ids())


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
    # derived graphs share the edge arrays until one of them adds an edge
    assert reduced._dependent is graph._dependent and without._kinds is graph._kinds
    if graph.size > 1:
        without.add_edge(0, 1, A, M)
        reduced.add_edge(1, 0, A, M)
        assert graph.edges() == edges
        _check_adjacency(without)
        _check_adjacency(reduced)


@settings(PROPERTIES)
@given(dags(), st.sampled_from([0, 3, 40, graph_module._FILTER_BITS]), st.booleans())
def test_search_and_closures_agree_on_large_graphs(
    drawn: Drawn, filter_bits: int, kahn_order: bool
) -> None:
    # the order the build passes (Kahn's, found with the cycles) or the serial one
    graph = drawn.graph
    order: list[int] = []
    find_cycles(graph, order)
    if not kahn_order:
        order = stable_topological_order(graph)
    by_closures = removed_pairs(graph, graph_module._reduce_by_closures(graph, order))
    # (without a budget: a small filter leaves many searches, which would give up)
    found = graph_module._reduce_by_search(graph, order, filter_bits, budget=sys.maxsize)
    assert removed_pairs(graph, found) == by_closures


@settings(PROPERTIES, max_examples=max(1, PROPERTIES.max_examples // 5))
@given(dags(max_size=80))
def test_removed_edge_mask_equals_networkx_transitive_reduction(drawn: Drawn) -> None:
    dependents, dependencies, kinds = drawn.graph.columns()
    table, origin_of = drawn.graph.origin_indexes()
    plain = Graph.from_arrays(  # every edge REQUIRES: networkx's reduction applies
        drawn.graph.size, array("i", dependents), array("i", dependencies),
        bytearray(len(kinds)), array("i", origin_of), table,
    )
    reduced = transitive_reduction(plain)
    keep = reduced._keep
    kept = {
        (dependents[e], dependencies[e])
        for e in range(len(dependents)) if keep is None or keep[e]
    }
    assert kept == set(nx.transitive_reduction(to_nx(plain)).edges())


def test_the_same_pair_twice_in_arrays_merges_as_add_edges_does() -> None:
    first, second = Origin("order", "a:1"), Origin("marker", "b:2")
    graph = Graph.from_arrays(
        3, array("i", [1, 2, 1]), array("i", [0, 0, 0]), bytearray([1, 1, 0]),
        array("i", [0, 0, 1]), [first, second],
    )
    assert graph.edges() == [Edge(1, 0, R, second), Edge(2, 0, A, first)]
    with pytest.raises(ValueError, match="outside a graph of 3 nodes"):
        Graph.from_arrays(3, array("i", [3]), array("i", [0]), bytearray(1), array("i", [0]),
                          [first])


def _by_add_edges(
    size: int, edges: list[tuple[int, int, int, int]], table: list[Origin]
) -> Graph:
    """The graph of edge arrays as from_arrays made it before its fast path for repeated
    pairs (merged edge by edge when a pair repeats): the reference that path must equal."""
    graph = Graph(size)
    if len({(u, d) for u, d, _, _ in edges}) == len(edges):
        graph._table = list(table)
        graph._table_ids = {}  # nothing repeats: each edge keeps its origin's place
        for u, d, k, o in edges:
            graph._table_ids[id(table[o])] = o
            graph.add_edge(u, d, Kind(k), table[o])
        return graph
    graph._table = list(table)
    graph._table_ids = {id(origin): i for i, origin in enumerate(table)}
    graph.add_edges((u, d, Kind(k), table[o]) for u, d, k, o in edges)
    return graph


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
        Plan(nodeids=[f"t.py::t{v}" for v in range(size)], locations=[], graph=g,
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


def test_a_derived_graph_reads_its_lists_late_whatever_happened_meanwhile() -> None:
    # a graph derived by removing edges makes its lists when first read: from the lists of
    # the graph it came from as they were, not as that graph's own additions left them
    for late_edit in ("parent adds", "parent compacts", "child adds", "nothing"):
        graph = make(4, [(1, 0, R), (2, 1, R), (2, 0, R), (3, 2, A)])
        graph._lists()
        reduced = transitive_reduction(graph)
        assert reduced._lists_cache is None  # (not made yet)
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
    # a reduction removes few edges: their columns are copied run by run between them
    chain = [(v, v - 1, R) for v in range(1, 30)]
    shortcuts = [(5, 1, A), (9, 2, R), (29, 0, R), (29, 27, A)]
    graph = make(30, chain[:10] + shortcuts[:2] + chain[10:] + shortcuts[2:])
    reduced = transitive_reduction(graph)
    assert reduced.edge_count == len(chain) and reduced._keep is not None
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
    plan = Plan(nodeids=[f"t.py::t{v}" for v in range(graph.size)], locations=[],
                graph=reduced, group=[0] * graph.size, item_count=graph.size)
    text = plan.to_json()
    again = Plan.from_json(text)
    assert again.graph.edges() == reduced.edges()
    assert again.to_json() == text
    data = json.loads(text)
    assert len(data["origins"]) <= len(origins)  # once per declaration, not per edge
