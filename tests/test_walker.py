"""The walker: order, skips with their root causes, the in-flight limit, priority and affinity."""

from __future__ import annotations

import random

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_depgraph.graph import Graph, Kind, Origin, transitive_reduction
from pytest_depgraph.walker import Skip, Step, Walker

R, A = Kind.REQUIRES, Kind.AFTER
M = Origin("marker")


def make(size: int, edges: list[tuple[int, int, Kind]]) -> Graph:
    graph = Graph(size)
    for dependent, dependency, kind in edges:
        graph.add_edge(dependent, dependency, kind, M)
    return graph


def run_serial(walker: Walker, failing: frozenset[int] = frozenset()) -> list[int]:
    ran = []
    while (node := walker.next()) is not None:
        ran.append(node)
        walker.finish(node, node not in failing)
    assert walker.done
    return ran


# -- hand-made graphs ----------------------------------------------------------------------


def test_diamond_runs_in_order() -> None:
    graph = make(4, [(1, 0, R), (2, 0, R), (3, 1, R), (3, 2, R)])
    walker = Walker(graph)
    assert walker.initial == Step([0], [])
    assert walker.next() == 0
    assert walker.next() is None
    assert walker.in_flight == 1
    assert walker.finish(0, True) == Step([1, 2], [])
    assert walker.ready_count == 2
    assert walker.next() == 1 and walker.next() == 2
    assert walker.finish(2, True) == Step([], [])
    assert walker.finish(1, True) == Step([3], [])
    assert run_serial(walker) == [3]


def test_failure_skips_requires_dependents_with_the_first_failure_as_root() -> None:
    # 0 <- 1 <- 2 (requires), 3 after 2, 4 requires 3
    graph = make(5, [(1, 0, R), (2, 1, R), (3, 2, A), (4, 3, R)])
    walker = Walker(graph)
    assert walker.next() == 0
    step = walker.finish(0, False)
    assert step == Step([3], [Skip(1, 0), Skip(2, 0)])
    assert walker.skipped == {1: 0, 2: 0}
    assert walker.root_cause(2) == 0 and walker.root_cause(3) is None
    assert run_serial(walker) == [3, 4]


def test_a_node_waits_for_every_dependency_before_it_skips() -> None:
    # 2 requires 0 (fails) and 1 (still running): 2 is decided only when 1 finishes, so an
    # AFTER-dependent of 2 cannot overtake 1.
    graph = make(4, [(2, 0, R), (2, 1, R), (3, 2, A)])
    walker = Walker(graph)
    assert walker.next() == 0 and walker.next() == 1
    assert walker.finish(0, False) == Step([], [])
    assert walker.finish(1, True) == Step([3], [Skip(2, 0)])


def test_unsatisfied_nodes_at_construction() -> None:
    graph = make(4, [(1, 0, R), (2, 0, A), (3, 1, R)])
    walker = Walker(graph, unsatisfied=[0])
    assert walker.initial == Step([2], [Skip(1, 0), Skip(3, 0)])
    assert run_serial(walker) == [2]
    # an unsatisfied node with pending dependencies does not wait for them
    walker = Walker(make(2, [(1, 0, R)]), unsatisfied=[1])
    assert walker.initial == Step([0], [])
    assert run_serial(walker) == [0]
    with pytest.raises(ValueError):
        Walker(Graph(1), unsatisfied=[1])


def test_priority_then_id() -> None:
    walker = Walker(Graph(4), priority=[1.0, 3.0, 3.0, 2.0])
    assert walker.initial.ready == [1, 2, 3, 0]
    assert run_serial(walker) == [1, 2, 3, 0]


def test_group_affinity_only_at_equal_priority() -> None:
    walker = Walker(Graph(4), priority=[1.0, 1.0, 1.0, 0.5], group=[0, 1, 1, 1])
    assert walker.next(prefer_group=1) == 1
    assert walker.next(prefer_group=1) == 2
    assert walker.next(prefer_group=1) == 0  # group 1 has only a lower priority left
    assert walker.next(prefer_group=7) == 3
    assert walker.next(prefer_group=1) is None


def test_limit_and_start() -> None:
    walker = Walker(Graph(3), limit=2)
    walker.start(2)
    assert not walker.is_ready(2)
    with pytest.raises(ValueError):
        walker.start(2)
    assert walker.next() == 0
    assert walker.next() is None  # limit
    with pytest.raises(ValueError):
        walker.start(1)
    with pytest.raises(ValueError):
        walker.finish(1, True)  # not started
    walker.finish(2, True)
    assert walker.next() == 1
    walker.finish(0, True)
    walker.finish(1, True)
    assert walker.done
    with pytest.raises(ValueError):
        Walker(Graph(1), limit=0)


def test_empty_graph_is_done() -> None:
    walker = Walker(Graph(0))
    assert walker.done and walker.next() is None and walker.initial == Step([], [])


def test_long_chain_walk() -> None:
    n = 100_000
    graph = make(n, [(i + 1, i, R) for i in range(n - 1)])
    walker = Walker(graph, group=[i % 7 for i in range(n)])
    assert walker.next(prefer_group=0) == 0
    step = walker.finish(0, False)
    assert len(step.skipped) == n - 1 and step.skipped[-1] == Skip(n - 1, 0)
    assert walker.done
    walker = Walker(graph, limit=1)
    assert run_serial(walker) == list(range(n))


# -- random graphs against an oracle -------------------------------------------------------


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[Graph, set[int], set[int], int | None, int]:
    """An acyclic graph, the nodes that fail, the nodes unsatisfied up front, a limit, a seed."""
    size = draw(st.integers(1, 14))
    perm = draw(st.permutations(range(size)))
    pairs = draw(
        st.lists(
            st.tuples(st.integers(0, size - 1), st.integers(0, size - 1), st.sampled_from([R, A])),
            max_size=3 * size,
        )
    )
    graph = make(size, [(perm[max(u, v)], perm[min(u, v)], k) for u, v, k in pairs if u != v])
    failing = draw(st.sets(st.integers(0, size - 1), max_size=3))
    unsatisfied = draw(st.sets(st.integers(0, size - 1), max_size=2))
    limit = draw(st.one_of(st.none(), st.integers(1, 4)))
    return graph, failing, unsatisfied, limit, draw(st.integers(0, 2**32))


def oracle(graph: Graph, failing: set[int], unsatisfied: set[int]) -> set[int]:
    """Skipped iff some REQUIRES dependency is unsatisfied (failed, skipped, or given)."""
    g = nx.DiGraph()
    g.add_nodes_from(range(graph.size))
    g.add_edges_from((e.dependency, e.dependent) for e in graph.edges())
    skipped: set[int] = set()
    for v in nx.topological_sort(g):
        if v in unsatisfied:
            continue
        if any(
            e.kind is R and (e.dependency in skipped | failing | unsatisfied)
            for e in graph.dependencies(v)
        ):
            skipped.add(v)
    return skipped


def simulate(
    graph: Graph,
    full: Graph,
    failing: set[int],
    unsatisfied: set[int],
    limit: int | None,
    seed: int,
) -> Walker:
    """Walk ``graph`` with random finish orders, checking the order against ``full``."""
    rng = random.Random(seed)
    # Unsatisfied nodes count as finished from the start, whatever their own dependencies do,
    # so nothing waits for a dependency reached only through one of them. That is also why
    # the reduced graph is checked against itself then: a shortcut past an unsatisfied node
    # may be gone.
    if unsatisfied:
        full = graph
    g = to_nx(full)
    g.remove_edges_from([(u, d) for u, d in full_pairs(full) if u in unsatisfied])
    ancestors = {v: nx.descendants(g, v) for v in range(full.size)}
    group = [rng.randrange(3) for _ in range(graph.size)]
    priority = [float(rng.randrange(3)) for _ in range(graph.size)]
    walker = Walker(graph, priority=priority, group=group, limit=limit, unsatisfied=unsatisfied)
    finished = set(unsatisfied) | {s.node for s in walker.initial.skipped}
    ready = set(walker.initial.ready)
    running: list[int] = []
    started: list[int] = []
    while not walker.done:
        while rng.random() < 0.7:
            node = walker.next(prefer_group=rng.choice([None, 0, 1, 2]))
            if node is None:
                break
            assert node in ready and node not in finished
            assert ancestors[node] <= finished, "started before a dependency finished"
            ready.discard(node)
            running.append(node)
            started.append(node)
            assert limit is None or len(running) <= limit
            assert walker.in_flight == len(running)
        if not running:
            node = walker.next()
            assert node is not None, "stalled"
            running.append(node)
            started.append(node)
            ready.discard(node)
        node = running.pop(rng.randrange(len(running)))
        step = walker.finish(node, node not in failing)
        finished.add(node)
        for skip in step.skipped:
            assert skip.node not in finished and skip.node not in ready
            assert ancestors[skip.node] <= finished | {s.node for s in step.skipped}
            finished.add(skip.node)
        assert not (set(step.ready) & finished)
        ready.update(step.ready)
        assert walker.ready_count == len(ready)
    assert not running and not ready
    assert len(started) == len(set(started))
    assert finished == set(range(graph.size))
    return walker


def full_pairs(graph: Graph) -> list[tuple[int, int]]:
    return [(e.dependent, e.dependency) for e in graph.edges()]


def to_nx(graph: Graph, kinds: tuple[Kind, ...] = (R, A)) -> nx.DiGraph:
    g = nx.DiGraph()
    g.add_nodes_from(range(graph.size))
    g.add_edges_from((e.dependent, e.dependency) for e in graph.edges() if e.kind in kinds)
    return g


@settings(max_examples=400, deadline=None)
@given(scenarios())
def test_random_walks_match_the_oracle(
    scenario: tuple[Graph, set[int], set[int], int | None, int],
) -> None:
    graph, failing, unsatisfied, limit, seed = scenario
    expected = oracle(graph, failing, unsatisfied)
    requires = to_nx(graph, (R,))
    for walked in (graph, transitive_reduction(graph)):
        walker = simulate(walked, graph, failing, unsatisfied, limit, seed)
        assert set(walker.skipped) == expected
        for node, root in walker.skipped.items():
            assert root in failing | unsatisfied
            assert root not in walker.skipped
            assert nx.has_path(requires, node, root)
