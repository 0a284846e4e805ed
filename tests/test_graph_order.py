"""The orders of core/graph/toposort.py against plain references written from their rules."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_depgraph.core.graph.storage import Graph
from pytest_depgraph.core.graph.toposort import stable_topological_order

from .graph_strategies import PROPERTIES, Drawn, Scopes, dags, digraphs, reachable, scope_layout
from .helpers import A, R, make


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
        v = min(u for u in left if done.issuperset(graph.dependencies_of(u)))
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
        return done.issuperset(graph.dependencies_of(u))

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


def _scoped_order(graph: Graph, scopes: Sequence[tuple[str, ...]]) -> list[int]:
    return stable_topological_order(graph, scopes)


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
    # with scopes: 0 and 1 never get ready; 2 waits for 3, then is placed late
    scopes = [("m.py",), ("m.py",), ("n.py",), ("n.py",)]
    with pytest.raises(ValueError, match="node 0"):
        _scoped_order(make(4, [(0, 1, R), (1, 0, R), (2, 3, R)]), scopes)


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
        d > v for d in graph.dependencies_of(v)
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
            d not in inside for v in nodes for d in graph.dependencies_of(v)
        ):
            continue
        where = sorted(position[v] for v in nodes)
        assert where[-1] - where[0] + 1 == len(nodes), f"{key} split"
