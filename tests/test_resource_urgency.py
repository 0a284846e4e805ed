"""How urgent tests that hold resources are: a resource's queue of holders counts as a chain, an
exclusive test goes first; checked on the dispatcher with known durations, on a clock of its
own (no wall time: the makespan of a simulated walk against its lower bound)."""

from __future__ import annotations

import heapq
from collections.abc import Hashable

import pytest

from pytest_depgraph.core.graph.storage import Graph
from pytest_depgraph.core.plan import READ, WRITE, Plan, Resources
from pytest_depgraph.core.timeline import resource_bound
from pytest_depgraph.core.walk.claims import Claims, claims_of
from pytest_depgraph.core.walk.dispatch import Dispatcher, WalkInputs, priorities, weights
from pytest_depgraph.core.walk.resource_books import shadow
from pytest_depgraph.core.walk.urgency import readers_turn, with_resources

from .helpers import R, make

W, RD = True, False


def test_a_resource_queue_is_a_chain_and_an_exclusive_test_heads_everything() -> None:
    """Writers 0, 1, 2 of db (capacity 1, 1 s each), readers 3 and 4 (1 s), a free chain
    5 -> 6 (2 s), and exclusive 7 (1 s) on 2 workers."""
    claims = Claims(names=["db"], capacity=[1],
                    tests={0: [(0, W)], 1: [(0, W)], 2: [(0, W)], 3: [(0, RD)], 4: [(0, RD)]},
                    exclusive=frozenset({7}))
    graph = make(8, [(6, 5, R)])
    weight = [1.0] * 8
    plain = priorities(graph, weight)
    assert plain == [1, 1, 1, 1, 1, 2, 1, 1]
    urgent = with_resources(plain, weight, claims, (), 2)
    # the readers' turn: 2 s of readers over 2 workers; the first writer heads 3 s of writers
    assert readers_turn([1.0, 1.0], 2) == 1.0 and readers_turn([], 2) == 0.0
    assert urgent[:5] == [4.0, 3.0, 2.0, 1.0, 1.0]
    assert urgent[5:7] == [2.0, 1.0]  # the free chain keeps its critical path
    assert urgent[7] > max(urgent[:7])
    # capacity 3: the writers' queue is a third as long
    wide = Claims(names=["db"], capacity=[3], tests=claims.tests)
    assert with_resources(plain, weight, wide, (), 2)[:3] == pytest.approx([2.0, 5 / 3, 4 / 3])


def simulate(plan: Plan, seconds: list[float], workers: int) -> float:
    """The makespan of the xdist walk of ``plan`` (tests taking ``seconds``) on ``workers``
    workers, each test handed out the moment its worker is free: a clock of events, not time."""
    weight = weights(dict(enumerate(seconds)), len(seconds), len(seconds))
    now = [0.0]
    walk = Dispatcher(WalkInputs(
        plan.graph, priority=priorities(plan.graph, weight), weight=weight, limit=workers,
        claims=claims_of(plan, workers), pinned=plan.pinned, durations=dict(enumerate(seconds)),
        clock=lambda: now[0],
    ))
    names = [f"w{i}" for i in range(workers)]
    for name in names:
        walk.add_worker(name)
    ends: list[tuple[float, int]] = []
    runs_on: dict[int, Hashable] = {}
    while not walk.done:
        for worker, nodes in walk.assign():
            assert len(nodes) == 1  # one test at a time: nothing is queued (hold 1)
            heapq.heappush(ends, (now[0] + seconds[nodes[0]], nodes[0]))
            runs_on[nodes[0]] = worker
        assert ends, "stalled"
        now[0], node = heapq.heappop(ends)
        walk.complete(runs_on.pop(node), node, True, seconds[node])
    return now[0]


def test_a_walk_with_locks_readers_an_exclusive_test_and_weights_ends_near_its_bound() -> None:
    """The bench's suite of shared resources on 4 workers: 8 writers of db (0.5 s), the
    bottleneck; 6 readers of db (0.3 s); an exclusive test (0.5 s); 2 tests of weight 2 (1 s);
    a chain of 3 (0.4 s) whose middle test writes net beside 2 more writers of net; 14 free
    tests (0.3 s). Its walk ends within 5% of the bound (it took 1.49 times the bound when
    the bottleneck's writers waited behind longer chains and the exclusive test came last)."""
    seconds: list[float] = []
    claims: dict[int, dict[str, str]] = {}
    slots: dict[int, int] = {}

    def add(duration: float, **claimed: str) -> int:
        seconds.append(duration)
        if claimed:
            claims[len(seconds) - 1] = claimed
        return len(seconds) - 1

    for _ in range(14):
        add(0.3)
    for _ in range(8):
        add(0.5, db=WRITE)
    for _ in range(6):
        add(0.3, db=READ)
    alone = add(0.5)
    for _ in range(2):
        slots[add(1.0)] = 2
    first, middle, last = add(0.4), add(0.4, net=WRITE), add(0.4)
    for _ in range(2):
        add(0.4, net=WRITE)
    size = len(seconds)
    plan = Plan(nodeids=[f"t.py::t{i}" for i in range(size)],
                graph=make(size, [(middle, first, R), (last, middle, R)]),
                group=[0] * size, item_count=size,
                resources=Resources(capacity={"db": 1, "net": 1}, claims=claims, slots=slots,
                                    exclusive=[alone]))
    bound = resource_bound(plan, seconds, 4)
    assert bound.bottleneck == "db"
    assert round(bound.value, 6) == round(0.5 + 8 * 0.5 + max(0.3, 6 * 0.3 / 4), 6)
    makespan = simulate(plan, seconds, 4)
    assert makespan <= 1.05 * bound.value, (makespan, bound.value)


def test_without_resources_the_priorities_are_the_critical_path() -> None:
    graph = Graph(3)
    plan = Plan(nodeids=["a", "b", "c"], graph=graph, group=[0] * 3, item_count=3)
    assert simulate(plan, [1.0, 1.0, 1.0], 3) == 1.0


def test_the_shadow_is_when_enough_slots_are_free() -> None:
    # 1 slot free, 3 needed: the test ending at 2.0 frees 2 more
    assert shadow(3, 1, [(5.0, 1), (2.0, 2)]) == 2.0
    assert shadow(3, 1, [(5.0, 1), (2.0, 1)]) == 5.0
    assert shadow(2, 2, [(5.0, 1)]) is None  # it may start now
    assert shadow(3, 1, [(None, 2), (5.0, 1)]) is None  # an unknown end


def test_a_heavy_test_waiting_for_slots_lets_short_known_tests_use_the_idle_ones() -> None:
    """On 4 slots, 0 (1 s) and 1 (weight 2, 1 s) start; 2 (weight 3) waits for three slots,
    which are free at 1 s. Test 3 (0.5 s) ends before then: it takes the idle slot at once;
    test 4 (2 s) would delay 2: it waits. Without known durations, nothing goes ahead."""
    seconds = [1.0, 1.0, 1.0, 0.5, 2.0]
    graph = Graph(5)
    claims = Claims(names=[], capacity=[], slots={1: 2, 2: 3})
    known = dict(enumerate(seconds))
    for durations, started in ((known, [0, 1, 3]), (None, [0, 1])):
        weight = weights(dict(enumerate(seconds)), 5, 5)
        priority = [3.0, 2.9, 2.8, 1.0, 0.5]  # urgency in node order
        walk = Dispatcher(WalkInputs(graph, priority=priority, weight=weight, limit=4,
                                     claims=claims, durations=durations, clock=lambda: 0.0))
        for name in ("w0", "w1", "w2", "w3"):
            walk.add_worker(name)
        given = sorted(v for _, nodes in walk.assign() for v in nodes)
        assert given == started, (durations, given)


def test_a_walk_with_weights_packs_its_slots() -> None:
    """4 tests of weight 2 and 2 of weight 3 (1 s each) among 16 short tests (0.25 s) on 4
    workers: the heavy tests wait for their slots without leaving the others idle (4.75 s, 1.06
    times the bound, when the waiting test held back every less urgent one)."""
    seconds = [1.0] * 6 + [0.25] * 16
    size = len(seconds)
    plan = Plan(nodeids=[f"t.py::t{i}" for i in range(size)], graph=Graph(size),
                group=[0] * size, item_count=size,
                resources=Resources(slots={0: 2, 1: 2, 2: 2, 3: 2, 4: 3, 5: 3}))
    bound = resource_bound(plan, seconds, 4)
    assert bound.value == (8 + 6 + 4) / 4
    makespan = simulate(plan, seconds, 4)
    assert makespan <= 1.05 * bound.value, (makespan, bound.value)


def simulate_round_trips(plan: Plan, seconds: list[float], workers: int, delay: float) -> float:
    """As :func:`simulate`, with a real run's round trips: a test's report reaches the
    dispatcher ``delay`` / 2 after the test ended, a test handed out reaches its worker
    ``delay`` / 2 after; a worker holds up to 16 tests (as on xdist) and starts the next it
    received the moment it is free."""
    weight = weights(dict(enumerate(seconds)), len(seconds), len(seconds))
    now = [0.0]
    walk = Dispatcher(WalkInputs(
        plan.graph, priority=priorities(plan.graph, weight), weight=weight, limit=workers,
        claims=claims_of(plan, workers), pinned=plan.pinned, durations=dict(enumerate(seconds)),
        clock=lambda: now[0], hold=16,
    ))
    received: dict[Hashable, list[int]] = {f"w{i}": [] for i in range(workers)}
    running: dict[Hashable, int] = {}
    for name in received:
        walk.add_worker(name)
    events: list[tuple[float, int, str, Hashable, int]] = []
    order = iter(range(1 << 30))

    def hand_out() -> None:
        for worker, nodes in walk.assign():
            for node in nodes:
                heapq.heappush(events, (now[0] + delay / 2, next(order), "sent", worker, node))

    def next_test(worker: Hashable) -> None:
        if received[worker] and worker not in running:
            node = running[worker] = received[worker].pop(0)
            heapq.heappush(events, (now[0] + seconds[node], next(order), "end", worker, node))

    hand_out()
    last = 0.0
    while events:
        now[0], _, what, worker, node = heapq.heappop(events)
        if what == "sent":
            received[worker].append(node)
            next_test(worker)
        elif what == "end":
            del running[worker]
            last = now[0]
            next_test(worker)
            heapq.heappush(events, (now[0] + delay / 2, next(order), "report", worker, node))
        else:
            walk.complete(worker, node, True, seconds[node])
            hand_out()
    assert walk.done, "stalled"
    return last


def test_with_round_trips_a_walk_with_weights_stays_near_its_bound() -> None:
    """The weights suite above, each report and each test sent 10 ms late (what a worker's
    round trip costs on a loaded machine): a short test whose expected end is a round trip
    past the moment a heavy test could start still fills the idle slot (it ended at 1.066 of
    the bound when such a test was held back: 4.80 s against 4.50 s, a slot idle for 0.24 s
    each time)."""
    seconds = [1.0] * 6 + [0.25] * 16
    size = len(seconds)
    plan = Plan(nodeids=[f"t.py::t{i}" for i in range(size)], graph=Graph(size),
                group=[0] * size, item_count=size,
                resources=Resources(slots={0: 2, 1: 2, 2: 2, 3: 2, 4: 3, 5: 3}))
    bound = resource_bound(plan, seconds, 4).value
    assert simulate_round_trips(plan, seconds, 4, 0.0) == pytest.approx(bound)
    assert simulate_round_trips(plan, seconds, 4, 0.01) <= 1.05 * bound


def test_with_round_trips_a_lock_goes_from_holder_to_holder_without_a_gap() -> None:
    """The resources bench's chained suite: a chain of 3 (0.4 s) whose middle test writes
    net, 4 more writers of net (0.4 s), a chain of 3 behind a writer of db (0.3, 0.6, 0.6 s),
    8 free tests (0.3 s), on 4 workers, each report and each test sent 10 ms late. net is the
    bound (2.0 s): each next writer is queued behind the one that holds it, on its worker, and
    starts there the moment it ends (1.022 of the bound when each waited for a round trip;
    on real runs 1.06 when the chain's last test took the worker the next writer needed)."""
    seconds = [0.4] * 7 + [0.3, 0.6, 0.6] + [0.3] * 8
    write = {"net": WRITE}
    claims = {1: write, 3: write, 4: write, 5: write, 6: write, 7: {"db": WRITE}}
    size = len(seconds)
    plan = Plan(nodeids=[f"t.py::t{i}" for i in range(size)],
                graph=make(size, [(1, 0, R), (2, 1, R), (8, 7, R), (9, 8, R)]),
                group=[0] * size, item_count=size,
                resources=Resources(capacity={"net": 1, "db": 1}, claims=claims))
    bound = resource_bound(plan, seconds, 4).value
    assert bound == pytest.approx(2.0)
    assert simulate_round_trips(plan, seconds, 4, 0.0) == pytest.approx(bound)
    assert simulate_round_trips(plan, seconds, 4, 0.01) <= 1.01 * bound
