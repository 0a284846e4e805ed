"""The walker: order, skips with their root causes, the in-flight limit, priority and affinity."""

from __future__ import annotations

import random

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_depgraph.graph import (
    Graph,
    Kind,
    Origin,
    stable_topological_order,
    transitive_reduction,
)
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


# -- pinned groups -------------------------------------------------------------------------


def test_a_pinned_group_stays_on_the_worker_that_started_it() -> None:
    # 0 -> 1 pinned (chained by an AFTER edge, as the plan does); 2 free
    graph = make(3, [(1, 0, A)])
    walker = Walker(graph, priority=[5.0, 5.0, 3.0], pinned=[[0, 1]])
    assert walker.next(worker="w1") == 0
    assert walker.next(worker="w2") == 2
    walker.finish(0, True)
    assert not walker.may_start(1, "w2") and walker.may_start(1, "w1")
    assert walker.next(worker="w2") is None
    with pytest.raises(ValueError, match="pinned to another worker"):
        walker.start(1, "w2")
    assert walker.next(worker="w1") == 1
    walker.finish(1, True)
    walker.finish(2, True)
    assert walker.done and walker.bound_groups("w1") == []


def test_a_bound_worker_takes_its_group_before_better_work() -> None:
    graph = make(4, [(1, 0, A)])
    walker = Walker(graph, priority=[1.0, 1.0, 9.0, 9.0], pinned=[[0, 1]])
    assert walker.next(worker="w1") == 2
    assert walker.next(worker="w2") == 3
    walker.finish(2, True)
    assert walker.next(worker="w1") == 0
    walker.finish(0, True)
    walker.finish(3, True)
    # w2 is idle first, but the group is bound to w1
    assert walker.next(worker="w2") is None
    assert walker.next(worker="w1") == 1


def test_release_hands_a_dead_workers_group_to_another() -> None:
    graph = make(3, [(1, 0, A), (2, 1, R)])
    walker = Walker(graph, pinned=[[0, 1, 2]])
    assert walker.next(worker="w1") == 0
    walker.finish(0, True)
    assert walker.next(worker="w1") == 1
    walker.release("w1")  # w1 died running 1
    step = walker.finish(1, False)
    assert step.skipped == [Skip(2, 1)]
    assert walker.done


def test_release_moves_the_ready_nodes_of_a_dead_worker() -> None:
    graph = make(3, [(1, 0, A)])
    walker = Walker(graph, pinned=[[0, 1]])
    assert walker.next(worker="w1") == 0
    walker.finish(0, True)
    walker.release("w1")
    assert walker.next(worker="w2") == 1


def test_a_group_is_free_again_once_every_node_finished_or_skipped() -> None:
    graph = make(4, [(1, 0, R), (2, 1, A)])
    walker = Walker(graph, pinned=[[0, 1]], unsatisfied=[3])
    assert walker.next(worker="w1") == 0
    step = walker.finish(0, False)
    assert step.skipped == [Skip(1, 0)]
    assert walker.bound_groups("w1") == []
    assert walker.next(worker="w2") == 2


def test_pinned_groups_are_checked() -> None:
    with pytest.raises(ValueError, match="two groups"):
        Walker(make(3, []), pinned=[[0, 1], [1, 2]])


@st.composite
def pinned_scenarios(
    draw: st.DrawFn,
) -> tuple[Graph, list[list[int]], set[int], int | None, int]:
    """A graph, disjoint groups chained as the plan chains them, failures, a limit, a seed."""
    graph, failing, _unsatisfied, limit, seed = draw(scenarios())
    size = graph.size
    label = draw(st.lists(st.integers(-1, 2), min_size=size, max_size=size))
    order = stable_topological_order(graph)
    groups = [[v for v in order if label[v] == g] for g in range(3)]
    groups = [g for g in groups if len(g) > 1]
    for group in groups:
        for before, after in zip(group, group[1:]):
            graph.add_edge(after, before, A, Origin("pin"))
    return graph, groups, failing, limit, seed


@settings(max_examples=400, deadline=None)
@given(pinned_scenarios(), st.integers(1, 3), st.floats(0, 0.3))
def test_random_pinned_walks_keep_order_and_binding(
    scenario: tuple[Graph, list[list[int]], set[int], int | None, int],
    workers: int,
    crash_rate: float,
) -> None:
    """Random workers take, finish and die: a group never runs on two live workers at once,
    its nodes start in group order one at a time, dependencies finish first, nothing stalls."""
    graph, groups, failing, limit, seed = scenario
    rng = random.Random(seed)
    group_of = {v: g for g, members in enumerate(groups) for v in members}
    ancestors = {v: nx.descendants(to_nx(graph), v) for v in range(graph.size)}
    walker = Walker(
        graph, priority=[float(rng.randrange(3)) for _ in range(graph.size)],
        group=[rng.randrange(2) for _ in range(graph.size)], limit=limit, pinned=groups,
    )
    alive = list(range(workers))
    next_worker = workers
    running: dict[int, int] = {}  # worker -> node
    finished = {s.node for s in walker.initial.skipped}
    owner: dict[int, int] = {}  # group -> worker that runs it now
    while not walker.done:
        for w in alive:
            if w in running or rng.random() < 0.2:
                continue
            node = walker.next(prefer_group=rng.choice([None, 0, 1]), worker=w)
            if node is None:
                continue
            assert ancestors[node] <= finished, "started before a dependency finished"
            g = group_of.get(node)
            if g is not None:
                members = groups[g]
                assert all(m in finished for m in members[: members.index(node)]), "order"
                assert not any(running.get(x) in members for x in running), "two in flight"
                assert owner.get(g, w) == w, "group moved to another live worker"
                owner[g] = w
            running[w] = node
        if not running:  # some worker must get something
            for w in alive:
                node = walker.next(worker=w)
                if node is not None:
                    g = group_of.get(node)
                    if g is not None:
                        assert owner.get(g, w) == w
                        owner[g] = w
                    running[w] = node
                    break
            assert running, "stalled"
        w = rng.choice(list(running))
        node = running.pop(w)
        if rng.random() < crash_rate:  # the worker dies in the test; a new one replaces it
            alive.remove(w)
            walker.release(w)
            owner = {g: o for g, o in owner.items() if o != w}
            alive.append(next_worker)
            next_worker += 1
            step = walker.finish(node, False)
        else:
            step = walker.finish(node, node not in failing)
        finished.add(node)
        finished.update(s.node for s in step.skipped)
        for g, members in enumerate(groups):
            if all(m in finished for m in members):
                owner.pop(g, None)
    assert finished == set(range(graph.size))
