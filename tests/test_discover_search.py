"""Discovery's orders and search, in-process: a fake suite with planted needs, conflicts,
chains, declared edges and flaky tests, run by an injected runner instead of processes."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from hypothesis import given
from hypothesis import strategies as st

from pytest_depgraph.core.graph.paths import reachable
from pytest_depgraph.core.graph.storage import Graph
from pytest_depgraph.discover.orders import (
    Order,
    arrange,
    pytest_order,
    reversals,
    reversed_order,
    uncovered,
)
from pytest_depgraph.discover.search import CONFLICTS, FLAKY, NEEDS, Outcomes, discover

from .graph_strategies import PROPERTIES
from .helpers import A, R, make


@dataclass
class FakeSuite:
    """Tests ``0..size-1`` whose outcome depends on what ran before them in the same list."""

    size: int
    #: victim -> the test it needs (it passes only after that test passed, in one process)
    needs: dict[int, int] = field(default_factory=dict)
    #: victim -> the test that breaks it (it fails after that test ran, in one process)
    conflicts: dict[int, int] = field(default_factory=dict)
    #: victim -> tests any one of which it needs (each sets the state it reads)
    needs_any: dict[int, set[int]] = field(default_factory=dict)
    flaky: set[int] = field(default_factory=set)
    failing: set[int] = field(default_factory=set)
    seed: int = 0
    lists: list[Order] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def run(self, lists: Sequence[Order]) -> list[Outcomes]:
        results: list[Outcomes] = []
        for order in lists:
            self.lists.append(order)
            assert len(set(order)) == len(order), "a test twice in one list"
            ran: set[int] = set()
            good: set[int] = set()
            outcomes: dict[int, bool] = {}
            for test in order:
                ok = test not in self.failing
                if test in self.needs:
                    ok = ok and self.needs[test] in good
                if test in self.needs_any:
                    ok = ok and bool(self.needs_any[test] & good)
                if test in self.conflicts:
                    ok = ok and self.conflicts[test] not in ran
                if test in self.flaky:
                    ok = self.rng.random() < 0.5
                outcomes[test] = ok
                ran.add(test)
                if ok:
                    good.add(test)
            results.append(outcomes)
        return results


def consistent(order: Sequence[int], graph: Graph) -> bool:
    """Every dependency in the list comes before its dependent, and every requires edge's
    dependency is in it."""
    at = {test: i for i, test in enumerate(order)}
    for test in order:
        for dependency in graph.dependencies_of(test):
            if dependency in at and at[dependency] > at[test]:
                return False
            if graph.kind(test, dependency) == R and dependency not in at:
                return False
    return True


def test_reversal_turns_every_pair_round_without_edges() -> None:
    assert reversed_order(Graph(4), 4) == (3, 2, 1, 0)
    assert reversals(Graph(4), 4) == [(3, 2, 1, 0)]


def test_reversal_keeps_declared_edges_and_covers_what_the_first_misses() -> None:
    """3 requires 0: the reversal puts 2 and 1 before 3, so a second order is needed where 3
    comes before them (0 first)."""
    graph = make(4, [(3, 0, R)])
    orders = reversals(graph, 4)
    assert orders == [(2, 1, 0, 3), (0, 3, 2, 1)]
    assert not any(uncovered(graph, 4, orders))


def test_arrange_pulls_in_what_a_test_requires_and_keeps_the_list_order() -> None:
    graph = make(5, [(4, 1, R), (1, 0, R), (3, 2, A)])
    assert arrange([4, 2], graph, 5) == (0, 1, 4, 2)
    # an after edge orders only what is in the list
    assert arrange([3, 2], graph, 5) == (2, 3)
    assert arrange([3], graph, 5) == (3,)


@given(st.integers(2, 30), st.integers(0, 2**32), st.floats(0, 0.3))
@PROPERTIES
def test_orders_are_consistent_with_the_declared_graph(size: int, seed: int,
                                                       density: float) -> None:
    rng = random.Random(seed)
    edges = [(b, a, rng.choice([R, A])) for b in range(size) for a in range(b)
             if rng.random() < density]
    graph = make(size, edges)
    orders = [pytest_order(size), *reversals(graph, size)]
    for order in orders:
        assert sorted(order) == list(range(size))
        assert consistent(order, graph)
    wanted = rng.sample(range(size), rng.randint(1, size))
    arranged = arrange(wanted, graph, size)
    assert consistent(arranged, graph)
    assert set(wanted) <= set(arranged)


def test_needs_conflicts_chain_and_flaky() -> None:
    suite = FakeSuite(10, needs={5: 2, 7: 6, 6: 3}, conflicts={8: 9}, flaky={4}, seed=1)
    found = discover(Graph(10), 10, suite.run, verify=3)
    kinds = {(f.kind, f.test, f.other) for f in found.findings}
    assert kinds == {
        (NEEDS, 5, 2), (NEEDS, 7, 6), (NEEDS, 6, 3), (CONFLICTS, 8, 9), (FLAKY, 4, None),
    }
    chain = next(f for f in found.findings if f.test == 7)
    assert chain.context == (3,)  # verified with what 6 needs before it
    assert all(f.executions > 0 for f in found.findings if f.kind != FLAKY)
    assert found.executions == sum(map(len, suite.lists))
    assert found.lists == len(suite.lists)


def test_a_need_two_tests_satisfy_is_found_by_the_victims_run_alone() -> None:
    """5 needs 2 or 8 (both set what it reads): pytest's order has 2 before it, the reversal
    8, so no order makes it fail; alone it fails, and the tests before it in pytest's order
    explain it: one need, on 2, verified (no order found it before the runs alone)."""
    suite = FakeSuite(10, needs_any={5: {2, 8}})
    found = discover(Graph(10), 10, suite.run)
    assert [(f.kind, f.test, f.other) for f in found.findings] == [(NEEDS, 5, 2)]
    assert found.orders == 2
    assert (5,) in suite.lists


def test_a_declared_pair_is_never_reported_and_lists_keep_requires() -> None:
    """1 needs 0 and says so (requires); 3 needs 2 through an after edge: ordered, so 3 never
    runs without 2 before it in a list that has both, but it may run without 2 -- still a
    declared pair, not a hidden one."""
    graph = make(4, [(1, 0, R), (3, 2, A)])
    suite = FakeSuite(4, needs={1: 0, 3: 2})
    found = discover(graph, 4, suite.run)
    assert found.findings == []
    for order in suite.lists:
        assert consistent(order, graph)


def test_failing_in_pytests_order_is_listed_not_analysed() -> None:
    suite = FakeSuite(3, failing={1}, conflicts={0: 2})  # 0 passes serially, fails reversed
    found = discover(Graph(3), 3, suite.run)
    assert found.failing == [1]
    assert {(f.kind, f.test, f.other) for f in found.findings} == {(CONFLICTS, 0, 2)}


def test_nothing_hidden_costs_two_orders_and_each_test_alone() -> None:
    """Two orders of six, then each test alone but the two that began an order: 12 + 4."""
    suite = FakeSuite(6)
    found = discover(Graph(6), 6, suite.run)
    assert (found.findings, found.failing, found.orders, found.executions) == ([], [], 2, 16)
    assert sorted(order for order in suite.lists if len(order) == 1) == [
        (1,), (2,), (3,), (4,)]


@given(st.integers(4, 40), st.integers(0, 2**32), st.floats(0, 0.15))
@PROPERTIES
def test_every_planted_dependency_is_found_and_nothing_else(
    size: int, seed: int, density: float
) -> None:
    """Planted at random: declared edges, needs (some in chains), conflicts and flaky tests,
    each test the victim of one at most. Every planted need whose pair some order ran the
    other way round is found, every conflict too; nothing that was not planted is reported
    (but of a flaky test)."""
    rng = random.Random(seed)
    edges = [(b, a, rng.choice([R, A])) for b in range(size) for a in range(b)
             if rng.random() < density]
    graph = make(size, edges)

    def joined(a: int, b: int) -> bool:
        return b in reachable(graph, [a], "dependencies") or a in reachable(
            graph, [b], "dependencies")

    suite = FakeSuite(size, seed=seed, flaky=set(rng.sample(range(size), size // 12)))
    used = set(suite.flaky)
    for victim in rng.sample(range(size), size // 3):
        if victim in used:
            continue
        kind = rng.choice([NEEDS, NEEDS, CONFLICTS])
        # a chain: the needed test may itself need one (planted later as a victim)
        others = [t for t in range(size) if t not in used and t != victim
                  and not joined(t, victim) and (t < victim) == (kind == NEEDS)]
        if not others:
            continue
        other = rng.choice(others)
        if kind == NEEDS:
            suite.needs[victim] = other
            used.add(victim)
        else:
            suite.conflicts[victim] = other
            used.update((victim, other))
    # a needed test is never a conflict's victim (its failure would be its dependents' too)
    for victim in list(suite.conflicts):
        if victim in suite.needs.values():
            del suite.conflicts[victim]
    found = discover(graph, size, suite.run, verify=2)
    orders = [pytest_order(size), *reversals(graph, size)]

    def exposed(victim: int, other: int) -> bool:
        """Whether an order ran ``victim`` before a test it needs, or after one that breaks
        it (the serial order runs a conflict's victim first); a need is always exposed, by
        the victim's run alone."""
        return other < victim or any(o.index(victim) > o.index(other) for o in orders[1:])

    # a flaky test may pass verification by chance (2 ** -(2 * verify) of the time): the
    # price of a finite K, said in the docs
    reported = {(f.kind, f.test, f.other) for f in found.findings
                if f.kind != FLAKY and f.test not in suite.flaky}
    planted = {(NEEDS, t, s) for t, s in suite.needs.items()} | {
        (CONFLICTS, t, p) for t, p in suite.conflicts.items()}
    assert reported <= planted
    for kind, test, other in planted:
        if test in suite.flaky or other in suite.flaky:
            continue
        if exposed(test, other) and not _masked(suite, test):
            assert (kind, test, other) in reported, (suite, found)
    for finding in found.findings:
        if finding.kind == FLAKY:
            assert finding.test in suite.flaky
    assert not set(found.failing) - suite.flaky


def _masked(suite: FakeSuite, test: int) -> bool:
    """Whether the need of ``test`` sits on a chain through a flaky test or a conflict's
    victim (then its failing shows something else first)."""
    seen = set()
    while test in suite.needs and test not in seen:
        seen.add(test)
        test = suite.needs[test]
        if test in suite.flaky or test in suite.conflicts:
            return True
    return False


def test_a_chain_member_needs_what_the_victim_declares_not_what_that_needs() -> None:
    """3 requires 1 (declared) and needs 2; 2 needs 1, 1 needs 0. Explaining 3's chain, 2's
    own need is 1 -- which 3's lists always hold, working only because 0 ran before it --
    not 0 (found by the property test: "2 needs 0" was reported)."""
    graph = make(4, [(3, 1, R)])
    suite = FakeSuite(4, needs={3: 2, 2: 1, 1: 0})
    found = discover(graph, 4, suite.run)
    assert {(f.kind, f.test, f.other) for f in found.findings} == {
        (NEEDS, 1, 0), (NEEDS, 2, 1), (NEEDS, 3, 2),
    }


def test_a_chain_through_a_declared_test_names_the_victims_own_need_only() -> None:
    """3 runs after 1 (declared) and needs 2; 2 runs after 0 (declared) and needs 1; 1
    needs 0. 3 passes with {0, 2} before it: 0 is what 1 needs, and 1 is what 2 needs --
    through a test 3 declares, so no member's own search sees it (2's lists always hold 0).
    Without 0 in 3's list, 2 fails: 0 is another member's need, not 3's (found by the
    property test: "3 needs 0" was reported)."""
    graph = make(4, [(2, 0, A), (3, 1, A)])
    suite = FakeSuite(4, needs={3: 2, 2: 1, 1: 0})
    found = discover(graph, 4, suite.run, verify=2)
    assert {(f.kind, f.test, f.other) for f in found.findings} == {
        (NEEDS, 1, 0), (NEEDS, 2, 1), (NEEDS, 3, 2),
    }


def test_victims_cost_no_whole_order_beyond_the_first_two() -> None:
    """The victims' suspects are narrowed by lists they share, each holding half of what is
    still suspected: a chain's head, a need and two conflicts among 200 tests cost the two
    orders and less than three more orders' worth of short lists (they cost six orders again
    and more: the two orders repeated, four random orders, and a bisection of the chain's
    head through all of its 180 suspects)."""
    suite = FakeSuite(200, needs={180: 100, 100: 10, 150: 20}, conflicts={30: 120, 40: 199})
    found = discover(Graph(200), 200, suite.run)
    assert {(f.kind, f.test, f.other) for f in found.findings} == {
        (NEEDS, 180, 100), (NEEDS, 100, 10), (NEEDS, 150, 20),
        (CONFLICTS, 30, 120), (CONFLICTS, 40, 199),
    }
    assert found.orders == 2
    assert found.executions < 5 * 200 + 200  # and each test alone once
    assert sum(len(order) == 200 for order in suite.lists) == 2


def test_the_shared_lists_of_a_round_run_one_a_slot_and_find_the_same() -> None:
    """On two slots, each round of the narrowing asks for two shared lists at once, drawn
    each on its own (-n 2 ran one, a slot idle): fewer rounds, the same findings, and about
    the executions of one list a round."""
    needs, conflicts = {180: 100, 100: 10, 150: 20}, {30: 120, 40: 199}
    one, two = FakeSuite(200, needs, conflicts), FakeSuite(200, needs, conflicts)
    rounds: dict[int, list[int]] = {1: [], 2: []}

    def counted(suite: FakeSuite, width: int) -> Callable[[Sequence[Order]], list[Outcomes]]:
        def run(lists: Sequence[Order]) -> list[Outcomes]:
            rounds[width].append(len(lists))
            return suite.run(lists)
        return run

    alone = discover(Graph(200), 200, counted(one, 1), width=1)
    paired = discover(Graph(200), 200, counted(two, 2), width=2)
    assert {(f.kind, f.test, f.other) for f in paired.findings} == {
        (f.kind, f.test, f.other) for f in alone.findings} == {
        (NEEDS, 180, 100), (NEEDS, 100, 10), (NEEDS, 150, 20),
        (CONFLICTS, 30, 120), (CONFLICTS, 40, 199)}
    shared = [n for n in rounds[2] if n == 2]
    assert len(shared) >= 3 and len(rounds[2]) < len(rounds[1])
    assert paired.executions < 1.1 * alone.executions


def test_a_flaky_victim_is_told_by_its_runs_alone_not_by_whole_orders() -> None:
    """A test failing at random that passed in pytest's order and failed in the reversal:
    the narrowing finds nothing consistent, its runs alone disagree, and it is reported
    flaky (or nothing, when chance agreed) -- never a dependency, and never at the price of
    a bisection through every test before it (once 1,600 executions and more); each test
    alone costs 200 more."""
    for seed in range(12):
        suite = FakeSuite(200, flaky={150}, seed=seed)
        found = discover(Graph(200), 200, suite.run)
        assert {(f.kind, f.test) for f in found.findings} <= {(FLAKY, 150)}
        assert found.failing in ([], [150])
        assert found.executions < 4 * 200, seed
