"""The walk state and the dispatch policy's choices for idle workers: order, skips with their
root causes, the bound, priority, affinity and pinned groups.

Hand-made graphs, small random ones against an oracle, and large ones (up to a few hundred
nodes, :mod:`tests.graph_strategies`) walked by random workers that fail and crash, each
answer checked against :class:`Reference`, a plain simulation of the documented walk. The
dispatcher is driven through the API the xdist scheduler uses (``assign``, ``complete``,
``remove_worker``, ``finish``); its worker-level choices (the chain rule, queueing, held tests)
are in tests/test_dispatch.py.
"""

from __future__ import annotations

import random
from collections.abc import Hashable
from dataclasses import dataclass

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_depgraph.core.graph.reduction import transitive_reduction
from pytest_depgraph.core.graph.storage import Graph, Kind, Origin
from pytest_depgraph.core.graph.toposort import stable_topological_order
from pytest_depgraph.core.walk.dispatch import Dispatcher, WalkInputs
from pytest_depgraph.core.walk.walker import QueueingWalker, Skip, Step, Walker

from .graph_strategies import PROPERTIES, Drawn, dags, reachable
from .helpers import A, R, dispatcher, make, oracle, run_serial, to_nx

# -- hand-made graphs ----------------------------------------------------------------------


def test_diamond_runs_in_order() -> None:
    graph = make(4, [(1, 0, R), (2, 0, R), (3, 1, R), (3, 2, R)])
    walk = dispatcher(graph, ("w1", "w2"))
    assert walk.initial == Step([0], [])
    assert walk.assign() == [("w1", [0])]
    assert walk.assign() == []
    assert walk.view.in_flight == 1
    assert walk.complete("w1", 0, True) == Step([1, 2], [])
    assert walk.view.ready_count == 2
    assert walk.assign() == [("w1", [1]), ("w2", [2])]
    assert walk.complete("w2", 2, True) == Step([], [])
    assert walk.complete("w1", 1, True) == Step([3], [])
    assert run_serial(walk) == [3]


def test_failure_skips_requires_dependents_with_the_first_failure_as_root() -> None:
    # 0 <- 1 <- 2 (requires), 3 after 2, 4 requires 3
    graph = make(5, [(1, 0, R), (2, 1, R), (3, 2, A), (4, 3, R)])
    walk = dispatcher(graph)
    assert walk.assign() == [("w", [0])]
    step = walk.complete("w", 0, False)
    assert step == Step([3], [Skip(1, 0), Skip(2, 0)])
    assert walk.view.skipped == {1: 0, 2: 0}
    assert walk.view.root_cause(2) == 0 and walk.view.root_cause(3) is None
    assert run_serial(walk) == [3, 4]


def test_a_node_waits_for_every_dependency_before_it_skips() -> None:
    # 2 requires 0 (fails) and 1 (still running): 2 is decided only when 1 finishes, so an
    # AFTER-dependent of 2 cannot overtake 1.
    graph = make(4, [(2, 0, R), (2, 1, R), (3, 2, A)])
    walk = dispatcher(graph, ("w1", "w2"))
    assert walk.assign() == [("w1", [0]), ("w2", [1])]
    assert walk.complete("w1", 0, False) == Step([], [])
    assert walk.complete("w2", 1, True) == Step([3], [Skip(2, 0)])


def test_unsatisfied_nodes_at_construction() -> None:
    graph = make(4, [(1, 0, R), (2, 0, A), (3, 1, R)])
    walk = dispatcher(graph, unsatisfied=[0])
    assert walk.initial == Step([2], [Skip(1, 0), Skip(3, 0)])
    assert run_serial(walk) == [2]
    # an unsatisfied node with pending dependencies does not wait for them
    walk = dispatcher(make(2, [(1, 0, R)]), unsatisfied=[1])
    assert walk.initial == Step([0], [])
    assert run_serial(walk) == [0]
    with pytest.raises(ValueError):
        Dispatcher(WalkInputs(Graph(1), unsatisfied=[1]))


def test_priority_then_id() -> None:
    walk = dispatcher(Graph(4), priority=[1.0, 3.0, 3.0, 2.0])
    assert walk.initial.ready == [1, 2, 3, 0]
    assert run_serial(walk) == [1, 2, 3, 0]


def test_group_affinity_only_at_equal_priority() -> None:
    """A worker prefers the group it ran last, but never over a better priority."""
    walk = dispatcher(Graph(4), priority=[2.0, 1.0, 1.0, 0.5], group=[1, 0, 1, 1])
    assert walk.assign() == [("w", [0])]
    walk.complete("w", 0, True)
    assert walk.assign() == [("w", [2])]  # group 1's, at the best priority, before 1
    walk.complete("w", 2, True)
    assert walk.assign() == [("w", [1])]  # group 1 has only a lower priority left
    walk.complete("w", 1, True)
    assert walk.assign() == [("w", [3])]


def test_the_bound_and_a_finish_of_what_never_started() -> None:
    walk = dispatcher(Graph(3), ("w1", "w2", "w3"), limit=2)
    assert walk.assign() == [("w1", [0]), ("w2", [1])]
    assert not walk.view.is_ready(0)
    assert walk.view.running == 2 and walk.assign() == []  # the bound
    with pytest.raises(ValueError):
        walk.finish(2, True)  # not started
    walk.complete("w1", 0, True)
    assert walk.assign() == [("w1", [2])]
    walk.complete("w2", 1, True)
    walk.complete("w1", 2, True)
    assert walk.done
    with pytest.raises(ValueError):
        Dispatcher(WalkInputs(Graph(1), limit=0))


def test_the_walk_state_alone_is_shaped_like_graphlib() -> None:
    """No choice between ready nodes: start, finish, is_active; a node given back (by the
    walk of workers that hold several tests) is ready."""
    walker = QueueingWalker(make(4, [(1, 0, R), (2, 0, A), (3, 1, R)]))
    assert walker.initial == Step([0], []) and walker.is_active()
    walker.start(0)
    with pytest.raises(ValueError):
        walker.start(0)
    walker.unstart(0)  # its worker left before it began
    assert walker.is_ready(0) and walker.in_flight == 0 and walker.ready_count == 1
    walker.start(0)
    assert walker.finish(0, False) == Step([2], [Skip(1, 0), Skip(3, 0)])
    walker.start(2)
    assert walker.is_active() and not walker.done
    assert walker.finish(2, True) == Step([], [])
    assert walker.done and not walker.is_active()
    with pytest.raises(ValueError):
        walker.unstart(2)


def test_empty_graph_is_done() -> None:
    walk = dispatcher(Graph(0))
    assert walk.done and walk.assign() == [] and walk.initial == Step([], [])


def test_long_chain_walk() -> None:
    n = 20_000  # twenty times the recursion limit: a recursive walk would fail
    graph = make(n, [(i + 1, i, R) for i in range(n - 1)])
    walk = dispatcher(graph, group=[i % 7 for i in range(n)])
    assert walk.assign() == [("w", [0])]
    step = walk.complete("w", 0, False)
    assert len(step.skipped) == n - 1 and step.skipped[-1] == Skip(n - 1, 0)
    assert walk.done
    walk = dispatcher(graph, limit=1)
    assert run_serial(walk) == list(range(n))


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


def simulate(
    graph: Graph,
    full: Graph,
    failing: set[int],
    unsatisfied: set[int],
    limit: int | None,
    seed: int,
) -> Dispatcher:
    """Walk ``graph`` on random workers with random finish orders, checking the order against
    ``full``."""
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
    workers = [f"w{i}" for i in range(rng.randint(1, 4))]
    walk = dispatcher(graph, workers, priority=priority, group=group, limit=limit,
                      unsatisfied=unsatisfied)
    finished = set(unsatisfied) | {s.node for s in walk.initial.skipped}
    ready = set(walk.initial.ready)
    running: dict[int, Hashable] = {}  # node -> worker
    started: list[int] = []
    while not walk.done:
        if not running or rng.random() < 0.7:
            for worker, nodes in walk.assign(rng.choice([None, *workers])):
                for node in nodes:
                    assert node in ready and node not in finished
                    assert ancestors[node] <= finished, "started before a dependency finished"
                    ready.discard(node)
                    running[node] = worker
                    started.append(node)
            assert limit is None or len(running) <= limit
            assert walk.view.in_flight == len(running)
        assert running, "stalled"
        node = rng.choice(sorted(running))
        step = walk.complete(running.pop(node), node, node not in failing)
        finished.add(node)
        for skip in step.skipped:
            assert skip.node not in finished and skip.node not in ready
            assert ancestors[skip.node] <= finished | {s.node for s in step.skipped}
            finished.add(skip.node)
        assert not (set(step.ready) & finished)
        ready.update(step.ready)
        assert walk.view.ready_count == len(ready)
    assert not running and not ready
    assert len(started) == len(set(started))
    assert finished == set(range(graph.size))
    return walk


def full_pairs(graph: Graph) -> list[tuple[int, int]]:
    return [(e.dependent, e.dependency) for e in graph.edges()]


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
        assert set(walker.view.skipped) == expected
        for node, root in walker.view.skipped.items():
            assert root in failing | unsatisfied
            assert root not in walker.view.skipped
            assert nx.has_path(requires, node, root)


# -- pinned groups -------------------------------------------------------------------------


def test_a_pinned_group_stays_on_the_worker_that_started_it() -> None:
    # 0 -> 1 pinned (chained by an AFTER edge, as the plan does); 2 free
    graph = make(3, [(1, 0, A)])
    walk = dispatcher(graph, ("w1", "w2"), priority=[5.0, 5.0, 3.0], pinned=[[0, 1]])
    assert walk.assign() == [("w1", [0]), ("w2", [2])]
    walk.complete("w1", 0, True)
    assert not walk.view.may_start(1, "w2") and walk.view.may_start(1, "w1")
    walk.complete("w2", 2, True)
    assert walk.assign(first="w2") == [("w1", [1])]  # w2 asks first and gets nothing
    walk.complete("w1", 1, True)
    assert walk.done and walk.view.bound_groups("w1") == []


def test_a_bound_worker_takes_its_group_before_better_work() -> None:
    graph = make(4, [(1, 0, A)])
    walk = dispatcher(graph, ("w1", "w2"), priority=[1.0, 1.0, 9.0, 9.0], pinned=[[0, 1]])
    assert walk.assign() == [("w1", [2]), ("w2", [3])]
    walk.complete("w1", 2, True)
    assert walk.assign(first="w1") == [("w1", [0])]
    walk.complete("w1", 0, True)
    walk.complete("w2", 3, True)
    # w2 is idle first, but the group is bound to w1
    assert walk.assign(first="w2") == [("w1", [1])]


def test_a_dead_workers_group_goes_to_another() -> None:
    graph = make(3, [(1, 0, A), (2, 1, R)])
    walk = dispatcher(graph, ("w1",), pinned=[[0, 1, 2]])
    assert walk.assign() == [("w1", [0])]
    walk.complete("w1", 0, True)
    assert walk.assign() == [("w1", [1])]
    assert walk.remove_worker("w1") == 1  # w1 died running 1
    step = walk.finish(1, False)
    assert step.skipped == [Skip(2, 1)]
    assert walk.done


def test_the_ready_nodes_of_a_dead_workers_group_go_to_another() -> None:
    graph = make(3, [(1, 0, A)])
    walk = dispatcher(graph, ("w1",), pinned=[[0, 1]])
    assert walk.assign() == [("w1", [0])]
    walk.complete("w1", 0, True)
    assert walk.remove_worker("w1") is None  # it left between two tests of its group
    walk.add_worker("w2")
    assert walk.assign() == [("w2", [1])]


def test_a_group_is_free_again_once_every_node_finished_or_skipped() -> None:
    graph = make(4, [(1, 0, R), (2, 1, A)])
    walk = dispatcher(graph, ("w1",), pinned=[[0, 1]], unsatisfied=[3])
    assert walk.assign() == [("w1", [0])]
    step = walk.complete("w1", 0, False)
    assert step.skipped == [Skip(1, 0)]
    assert walk.view.bound_groups("w1") == []
    walk.add_worker("w2")
    assert walk.assign(first="w2") == [("w2", [2])]


def test_pinned_groups_are_checked() -> None:
    with pytest.raises(ValueError, match="two groups"):
        Dispatcher(WalkInputs(make(3, []), pinned=[[0, 1], [1, 2]]))


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
    alive: list[Hashable] = list(range(workers))
    walk = dispatcher(
        graph, alive, priority=[float(rng.randrange(3)) for _ in range(graph.size)],
        group=[rng.randrange(2) for _ in range(graph.size)], limit=limit, pinned=groups,
    )
    next_worker = workers
    running: dict[Hashable, int] = {}  # worker -> node
    finished = {s.node for s in walk.initial.skipped}
    owner: dict[int, Hashable] = {}  # group -> worker that runs it now
    while not walk.done:
        if not running or rng.random() < 0.8:
            for w, nodes in walk.assign(rng.choice([None, *alive])):
                [node] = nodes
                assert ancestors[node] <= finished, "started before a dependency finished"
                g = group_of.get(node)
                if g is not None:
                    members = groups[g]
                    assert all(m in finished for m in members[: members.index(node)]), "order"
                    assert not any(running.get(x) in members for x in running), "two in flight"
                    assert owner.get(g, w) == w, "group moved to another live worker"
                    owner[g] = w
                running[w] = node
        assert running, "stalled"
        w = rng.choice(list(running))
        node = running.pop(w)
        if rng.random() < crash_rate:  # the worker dies in the test; a new one replaces it
            alive.remove(w)
            assert walk.remove_worker(w) == node
            owner = {g: o for g, o in owner.items() if o != w}
            alive.append(next_worker)
            walk.add_worker(next_worker)
            next_worker += 1
            step = walk.finish(node, False)
        else:
            step = walk.complete(w, node, node not in failing)
        finished.add(node)
        finished.update(s.node for s in step.skipped)
        for g, members in enumerate(groups):
            if all(m in finished for m in members):
                owner.pop(g, None)
    assert finished == set(range(graph.size))


# -- large graphs against a reference simulation ---------------------------------------------

PASSED, FAILED, SKIPPED, UNSATISFIED = "passed", "failed", "skipped", "unsatisfied"
DONE = {PASSED, FAILED, SKIPPED, UNSATISFIED}
#: outcomes that make a REQUIRES-dependent skip
BAD = {FAILED, SKIPPED, UNSATISFIED}


class Reference:
    """The walk as the docs tell it, kept plainly: a test is decided once every dependency is
    done; it skips if a REQUIRES dependency is bad, and then its root cause is the root of
    the bad dependency that went bad first (any of them when several went bad in one event).

    The walker must agree at every event. Where the docs allow several answers (ties within
    one event) the reference keeps the set of allowed ones and then follows the walker's.
    """

    def __init__(self, graph: Graph, unsatisfied: set[int], key: list[tuple[float, int]],
                 pinned: list[list[int]]) -> None:
        self.dependencies: dict[int, list[tuple[int, Kind]]] = {v: [] for v in range(graph.size)}
        self.dependents: dict[int, list[int]] = {v: [] for v in range(graph.size)}
        for u, v, kind in graph.triples():
            self.dependencies[u].append((v, kind))
            self.dependents[v].append(u)
        self.key = key
        self.state = {v: UNSATISFIED if v in unsatisfied else "waiting" for v in range(graph.size)}
        self.went_bad = dict.fromkeys(unsatisfied, 0)  # node -> event in which it went bad
        self.root = {v: v for v in unsatisfied}
        self.event = 0
        self.group = {v: g for g, members in enumerate(pinned) for v in members}
        self.members = pinned
        self.bound: dict[int, object] = {}
        self._ready: set[int] = set()
        self._running = 0

    def ready(self) -> set[int]:
        return self._ready

    def running(self) -> int:
        return self._running

    def allowed(self, node: int, worker: object) -> bool:
        g = self.group.get(node)
        return g is None or self.bound.get(g, worker) == worker

    def best(self, prefer: int | None, group: list[int], chain: list[int]) -> int:
        """The node an idle worker must get when nothing is pinned: the first still ready of
        ``chain`` (what its last test just made ready in its own group, best first), else the
        best priority, a node of ``prefer`` (its last group) before the others, then the
        lowest id."""
        ready = self.ready()
        for v in chain:
            if v in ready:
                return v
        top = min(self.key[v][0] for v in ready)  # the best priority; ids break ties
        mine = [v for v in ready if group[v] == prefer and self.key[v][0] == top]
        return min(mine or [v for v in ready if self.key[v][0] == top])

    def start(self, node: int, worker: object) -> None:
        assert self.state[node] == "ready", "started a node that is not ready"
        assert self.allowed(node, worker), "a pinned group went to a second worker"
        self.state[node] = "running"
        self._ready.discard(node)
        self._running += 1
        g = self.group.get(node)
        if g is not None:
            self.bound[g] = worker

    def release(self, worker: object) -> None:
        self.bound = {g: w for g, w in self.bound.items() if w != worker}

    def initial(self, step: Step) -> None:
        self._decide(list(range(len(self.state))), step)

    def finish(self, node: int, satisfied: bool, step: Step) -> None:
        assert self.state[node] == "running"
        self._running -= 1
        self.event += 1
        self.state[node] = PASSED if satisfied else FAILED
        if not satisfied:
            self.went_bad[node], self.root[node] = self.event, node
        self._unbind_done(node)
        self._decide(self.dependents[node], step)

    def _unbind_done(self, node: int) -> None:
        g = self.group.get(node)
        if g is not None and all(self.state[m] in DONE for m in self.members[g]):
            self.bound.pop(g, None)

    def _decide(self, candidates: list[int], step: Step) -> None:
        """Decide the waiting candidates whose dependencies are all done, then their
        dependents; check the walker's step says the same."""
        skipped_by_walker = {s.node: s.root_cause for s in step.skipped}
        ready: list[int] = []
        skipped: list[int] = []
        queue = list(candidates)
        while queue:
            v = queue.pop()
            if self.state[v] != "waiting":
                continue
            deps = self.dependencies[v]
            if any(self.state[d] not in DONE for d, _ in deps):
                continue
            bad = [d for d, k in deps if k is R and self.state[d] in BAD]
            if not bad:
                self.state[v] = "ready"
                self._ready.add(v)
                ready.append(v)
                continue
            first = min(self.went_bad[d] for d in bad)
            allowed = {self.root[d] for d in bad if self.went_bad[d] == first}
            assert v in skipped_by_walker, f"{v} must skip (root cause one of {allowed})"
            assert skipped_by_walker[v] in allowed, (v, skipped_by_walker[v], allowed)
            self.state[v] = SKIPPED
            self.went_bad[v], self.root[v] = self.event, skipped_by_walker[v]
            skipped.append(v)
            self._unbind_done(v)
            queue.extend(self.dependents[v])
        assert sorted(step.ready, key=self.key.__getitem__) == step.ready
        assert set(step.ready) == set(ready)
        assert set(skipped_by_walker) == set(skipped)
        order = {s.node: i for i, s in enumerate(step.skipped)}
        for s in step.skipped:  # dependencies before dependents
            assert all(order.get(d, -1) < order[s.node] for d, _ in self.dependencies[s.node])


@dataclass(frozen=True)
class WalkPlan:
    """How a random walk goes: the share of failing tests and of crashing workers, tests
    unsatisfied from the start, workers, the bound, pinned groups, and a seed for the rest."""

    fail: float
    crash: float
    unsatisfied: int
    workers: int
    limit: int | None
    pins: int
    seed: int


@st.composite
def walks(draw: st.DrawFn, pins: bool = False) -> tuple[Drawn, WalkPlan]:
    """A large graph and how its walk goes."""
    drawn = draw(dags())
    plan = WalkPlan(
        fail=draw(st.sampled_from([0.0, 0.02, 0.1, 0.4])),
        crash=draw(st.sampled_from([0.0, 0.0, 0.05, 0.2])),
        unsatisfied=draw(st.sampled_from([0, 0, 1, 3])),
        workers=draw(st.integers(1, 6)),
        limit=draw(st.one_of(st.none(), st.integers(1, 5))),
        pins=draw(st.integers(1, 4)) if pins else 0,
        seed=draw(st.integers(0, 2**32 - 1)),
    )
    return drawn, plan


def walk_against_reference(drawn: Drawn, plan: WalkPlan) -> dict[str, set[int]]:
    """Drive a dispatcher with random workers that finish, fail and crash, handing out after
    each event as the xdist scheduler does; check every answer against :class:`Reference`.
    Returns the nodes by final outcome."""
    graph = drawn.graph
    size = graph.size
    rng = random.Random(plan.seed)
    pinned: list[list[int]] = []
    if plan.pins:  # groups chained with AFTER edges in serial order, as the plan does
        order = stable_topological_order(graph)
        label = [rng.randrange(-3, plan.pins) for _ in range(size)]
        members = [[v for v in order if label[v] == g] for g in range(plan.pins)]
        pinned = [m for m in members if len(m) > 1]
        for group in pinned:
            for before, after in zip(group, group[1:]):
                graph.add_edge(after, before, A, Origin("pin"))
    failing = {v for v in range(size) if rng.random() < plan.fail}
    unsatisfied = set(rng.sample(range(size), min(size, plan.unsatisfied)))
    priority = [float(rng.randrange(4)) for _ in range(size)]
    group = [rng.randrange(4) for _ in range(size)]
    limit = plan.limit
    workers = list(range(plan.workers))
    walk = dispatcher(graph, workers, priority=priority, group=group, limit=limit,
                      unsatisfied=unsatisfied, pinned=pinned)
    reference = Reference(graph, unsatisfied, [(-p, v) for v, p in enumerate(priority)], pinned)
    reference.initial(walk.initial)
    fresh = len(workers)
    running: dict[int, int] = {}  # worker -> node
    last: dict[int, int] = {}  # worker -> the group of the last node it started
    first: int | None = None  # the worker that finished last: it asks first
    chain: list[int] = []  # what its test made ready in its own group, best first
    while not walk.done:
        given = dict(walk.assign(first))
        order = [w for w in workers if w == first] + [w for w in workers if w != first]
        for w in order:
            if w in running:
                continue
            full = limit is not None and reference.running() >= limit
            nodes = given.pop(w, None)
            if nodes is None:
                assert full or not any(reference.allowed(v, w) for v in reference.ready()), \
                    "a worker got nothing while a ready test was free for it"
                continue
            [node] = nodes
            assert not full, "more in flight than the bound"
            if not pinned:
                expected = reference.best(last.get(w), group, chain if w == first else [])
                assert node == expected, (
                    f"{w} got {node}, not {expected}; ready (key, id, group): "
                    f"{sorted((reference.key[v], group[v]) for v in reference.ready())}"
                )
            reference.start(node, w)
            running[w] = node
            last[w] = group[node]
        assert not given, "a busy worker got a test"
        assert walk.view.in_flight == len(running) == reference.running()
        assert walk.view.ready_count == len(reference.ready())
        if not running:
            raise AssertionError("stalled: nothing runs, nothing is handed out")
        w = rng.choice(sorted(running))
        node = running.pop(w)
        if rng.random() < plan.crash:
            # the worker dies in the test: its test failed, its pinned groups go elsewhere
            workers.remove(w)
            assert walk.remove_worker(w) == node
            reference.release(w)
            workers.append(fresh)
            walk.add_worker(fresh)
            fresh += 1
            step = walk.finish(node, False)
            first, chain = None, []
            reference.finish(node, False, step)
        else:
            satisfied = node not in failing
            step = walk.complete(w, node, satisfied)
            first, chain = w, [v for v in step.ready if group[v] == group[node]]
            reference.finish(node, satisfied, step)
    assert all(s in DONE for s in reference.state.values())
    assert walk.view.skipped == {v: reference.root[v] for v, s in reference.state.items()
                            if s == SKIPPED}
    by_outcome: dict[str, set[int]] = {s: set() for s in DONE}
    for v, s in reference.state.items():
        by_outcome[s].add(v)
    requires = reachable(graph, (R,))
    for v, root in walk.view.skipped.items():  # the root cause is unsatisfied and upstream
        assert root in by_outcome[FAILED] | by_outcome[UNSATISFIED]
        assert requires[v] >> root & 1
    return by_outcome


@settings(PROPERTIES)
@given(walks())
def test_large_walks_match_the_reference(case: tuple[Drawn, WalkPlan]) -> None:
    drawn, plan = case
    outcomes = walk_against_reference(drawn, plan)
    # the skips follow from the failures alone, whatever the order things ran in
    assert outcomes[SKIPPED] == oracle(
        drawn.graph, outcomes[FAILED], outcomes[UNSATISFIED]
    )


@settings(PROPERTIES, max_examples=max(1, PROPERTIES.max_examples // 3))
@given(walks())
def test_large_walks_of_the_reduced_graph_skip_the_same_tests(
    case: tuple[Drawn, WalkPlan],
) -> None:
    drawn, plan = case
    full = drawn.graph
    drawn.graph = transitive_reduction(full)
    outcomes = walk_against_reference(drawn, plan)
    assert outcomes[SKIPPED] == oracle(full, outcomes[FAILED], outcomes[UNSATISFIED])


@settings(PROPERTIES)
@given(walks(pins=True))
def test_large_pinned_walks_with_crashes(case: tuple[Drawn, WalkPlan]) -> None:
    walk_against_reference(*case)


def _lockstep(full: Graph, reduced: Graph, plan: WalkPlan) -> list[tuple[int, int, int]]:
    """Walk both graphs with the same workers finishing in the same order; every answer must
    be the same but the root cause named for a skip. Returns (node, root in full, root in
    reduced) of the skips whose named root causes differ."""
    size = full.size
    rng = random.Random(plan.seed)
    failing = {v for v in range(size) if rng.random() < plan.fail}
    # as in a plan: nodes unsatisfied from the start (external, broken) depend on nothing (a
    # broken node loses its edges); one in the middle of a chain would skip its dependents
    # at once in the reduced graph, before the dependencies it shortcuts have run
    sinks = [v for v in range(size) if not full.dependencies_of(v)]
    unsatisfied = set(rng.sample(sinks, min(len(sinks), plan.unsatisfied)))
    priority = [float(rng.randrange(4)) for _ in range(size)]
    group = [rng.randrange(4) for _ in range(size)]
    workers = range(plan.workers)
    walks = [
        dispatcher(graph, workers, priority=priority, group=group, limit=plan.limit,
                   unsatisfied=unsatisfied)
        for graph in (full, reduced)
    ]
    steps = [w.initial for w in walks]
    running: dict[int, int] = {}  # worker -> node
    first: int | None = None
    while not walks[0].done:
        assert steps[0].ready == steps[1].ready
        assert {s.node for s in steps[0].skipped} == {s.node for s in steps[1].skipped}
        given = [w.assign(first) for w in walks]
        assert given[0] == given[1]
        for worker, [node] in given[0]:
            assert isinstance(worker, int)  # the dispatcher hands back the workers it was given
            running[worker] = node
        assert [w.view.in_flight for w in walks] == [len(running)] * 2
        assert running, "stalled"
        first = rng.choice(sorted(running))
        node = running.pop(first)
        satisfied = node not in failing
        steps = [w.complete(first, node, satisfied) for w in walks]
    assert walks[1].done
    assert walks[0].view.skipped.keys() == walks[1].view.skipped.keys()
    return [
        (v, root, walks[1].view.skipped[v])
        for v, root in walks[0].view.skipped.items() if walks[1].view.skipped[v] != root
    ]


@settings(PROPERTIES, max_examples=max(1, PROPERTIES.max_examples // 3))
@given(walks())
def test_the_unreduced_graph_walks_like_the_reduced_one(case: tuple[Drawn, WalkPlan]) -> None:
    """Same order, same ready tests at every step, same skips: the reduction changes none of
    them. It may change which root cause a skip names when two failures lie upstream (each
    is a true one: see the test below), which is why the plan keeps the reduced graph."""
    drawn, plan = case
    full = drawn.graph
    reduced = transitive_reduction(full)
    requires = reachable(full, (R,))
    for v, root, reduced_root in _lockstep(full, reduced, plan):
        assert root != reduced_root and requires[v] >> root & 1 and requires[v] >> reduced_root & 1


def test_the_reduction_can_change_which_of_two_failures_a_skip_names() -> None:
    # 3 requires 2 and 0; 2 requires 0 and 1. 1 fails first, then 0: in the reduced graph
    # (3 -> 0 is implied by 3 -> 2 -> 0) test 3 hears of the failure from 2, whose first
    # failed dependency was 1; in the full graph it hears of 0 before 2 is resolved.
    full = make(4, [(3, 2, R), (3, 0, R), (2, 0, R), (2, 1, R)])
    reduced = transitive_reduction(full)
    assert reduced.edge_count == 3
    roots = []
    for graph in (full, reduced):
        walker = Walker(graph)
        for node in (1, 0):
            walker.start(node)
            walker.finish(node, False)
        roots.append(dict(walker.skipped))
    assert roots == [{2: 1, 3: 0}, {2: 1, 3: 1}]
