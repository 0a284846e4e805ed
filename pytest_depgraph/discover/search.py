"""The search: orders run, victims minimised to the one test that explains them, verified.

Pure: the tests are node numbers, the declared graph a :class:`~pytest_depgraph.core.graph.storage.
Graph`, and running is an injected function that runs lists of tests (each in a fresh process,
as many at once as it likes) and answers, for each list, which of its tests passed. Each
victim's search is a generator that yields the lists it wants run and receives their
outcomes, so :func:`discover` runs the lists of every victim's current step together (the
``-n`` pool bisects independent victims at once) while each search reads as straight code.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from pytest_depgraph.core.graph.paths import reachable
from pytest_depgraph.core.graph.storage import Graph
from pytest_depgraph.core.graph.toposort import positions_in
from pytest_depgraph.discover.orders import (
    Order,
    arrange,
    before,
    joined,
    pytest_order,
    requirements,
    reversals,
    shuffled_order,
    sublist,
)

_T = TypeVar("_T")

NEEDS = "needs"
CONFLICTS = "conflicts"
FLAKY = "flaky"

#: the most tests a chain narrowed from the orders may hold before the search stops
#: following its links (past it, the wider sets are as short)
_CHAIN_LIMIT = 16

#: which tests of a list passed (True) or not (False); a test absent did not run
Outcomes = Mapping[int, bool]
#: runs each list in a fresh process and answers its outcomes, list by list
Runner = Callable[[Sequence[Order]], Sequence[Outcomes]]
#: a search: yields the lists it wants run, receives their outcomes, returns its findings
Search = Generator[list[Order], list[Outcomes], list["Finding"]]


@dataclass(frozen=True)
class Finding:
    """One hidden dependency (or a flaky test), verified."""

    kind: str
    #: the test that fails (the victim)
    test: int
    #: the test it needs, or that breaks it (None for a flaky test)
    other: int | None
    #: tests that ran before the pair when it was verified: what ``other`` needs in turn
    #: (the rest of a chain)
    context: tuple[int, ...] = ()
    #: test executions spent finding and verifying it (the shared orders not counted)
    executions: int = 0


@dataclass
class Discovered:
    """What a discovery found, and what it cost."""

    findings: list[Finding] = field(default_factory=list)
    #: tests that did not pass in the serial run's order (reported, not analysed)
    failing: list[int] = field(default_factory=list)
    #: whole orders run (the serial one, its reversal, and their repeats)
    orders: int = 0
    #: lists run (each one process, unless a test ended its process)
    lists: int = 0
    #: test executions, all lists together
    executions: int = 0


def passed(outcomes: Outcomes, test: int) -> bool:
    return outcomes.get(test, False)


def discover(graph: Graph, count: int, run: Runner, verify: int = 3) -> Discovered:
    """Find the hidden dependencies among tests ``0..count-1`` (the serial order).

    1. The serial order and its reversals (:func:`~.orders.reversals`) at once; when a
       test's outcome differs between them, or a test fails, all again: a test whose outcome
       changed within one order is flaky.
    2. Each test that passed in the serial order and failed in another one is a victim:
       alone it fails (it *needs* a test that ran before it) or passes (a test before it in
       the reversed order *conflicts* with it); the other test is found by bisection, a chain
       by delta debugging, and each pair verified ``verify`` times both ways.
    """
    result = Discovered()
    engine = _Engine(graph, count, run, verify, result)
    first = pytest_order(count)
    others = reversals(graph, count)
    orders = [first, *others]
    outcomes = engine.run(orders)
    result.orders = len(orders)
    serial = outcomes[0]
    differ = {t for t in range(count) for o in outcomes[1:] if passed(serial, t) != passed(o, t)}
    unpassed = [t for t in range(count) if not passed(serial, t)]
    flaky: set[int] = set()
    if differ or unpassed:
        again = engine.run(orders)
        result.orders += len(orders)
        flaky = {t for t in range(count) for o, p in zip(outcomes, again)
                 if passed(o, t) != passed(p, t)}
    result.failing = [t for t in unpassed if t not in flaky]
    if differ - flaky:
        # victims to search: a few random orders first, whose outcomes narrow each victim's
        # suspects (and may expose pairs a third test masked in the reversal)
        extra = [shuffled_order(graph, count, seed) for seed in range(evidence_orders(count))]
        orders += extra
        outcomes += engine.run(extra)
        result.orders += len(extra)
    engine.evidence = list(zip(orders, outcomes))
    searches = []
    for t in range(count):
        if t in flaky or not passed(serial, t):
            continue
        exposing = next((o for o, out in zip(orders[1:], outcomes[1:]) if not passed(out, t)),
                        None)
        if exposing is not None:
            searches.append(engine.examine(t, first, exposing))
    findings = [Finding(FLAKY, t, None) for t in sorted(flaky)]
    findings += engine.drive(searches)
    result.findings = _unique(findings)
    return result


def evidence_orders(count: int) -> int:
    """How many random orders a discovery with victims runs: each costs ``count`` test
    executions and halves, for every victim, the suspects a bisection goes through (a test
    before the victim in every order it passed in, and after it in every order it failed in),
    so they pay once the suspects are many -- none below 16 tests, 4 from 128 on."""
    return min(4, max(0, count.bit_length() - 4))


def _unique(findings: Iterable[Finding]) -> list[Finding]:
    """One finding per (kind, test, other); a test found flaky has no other finding."""
    flaky = {f.test for f in findings if f.kind == FLAKY}
    kept: dict[tuple[str, int, int | None], Finding] = {}
    for finding in findings:
        if finding.kind != FLAKY and finding.test in flaky:
            continue
        kept.setdefault((finding.kind, finding.test, finding.other), finding)
    return sorted(kept.values(), key=lambda f: (f.test, f.kind != FLAKY, f.other or 0))


class _Engine:
    """The searches' shared means: the runner, the graph, the books of what ran."""

    def __init__(
        self, graph: Graph, count: int, run: Runner, verify: int, result: Discovered
    ) -> None:
        self.graph = graph
        self.count = count
        self._run = run
        self.verify = verify
        self.result = result
        self._positions: dict[Order, list[int]] = {}
        #: the whole orders run, with their outcomes: what narrows each victim's suspects
        self.evidence: list[tuple[Order, Outcomes]] = []

    def run(self, lists: Sequence[Order]) -> list[Outcomes]:
        self.result.lists += len(lists)
        self.result.executions += sum(map(len, lists))
        return list(self._run(lists))

    def drive(self, searches: list[Search]) -> list[Finding]:
        """Step every search at once: the lists of all their current steps run together."""
        found: list[Finding] = []
        waiting: list[tuple[Search, list[Order]]] = []
        for search in searches:
            self._advance(search, None, waiting, found)
        while waiting:
            lists = [order for _, wanted in waiting for order in wanted]
            outcomes = self.run(lists)
            stepping, waiting, at = waiting, [], 0
            for search, wanted in stepping:
                self._advance(search, outcomes[at: at + len(wanted)], waiting, found)
                at += len(wanted)
        return found

    @staticmethod
    def _advance(
        search: Search,
        outcomes: list[Outcomes] | None,
        waiting: list[tuple[Search, list[Order]]],
        found: list[Finding],
    ) -> None:
        try:
            wanted = next(search) if outcomes is None else search.send(outcomes)
        except StopIteration as stop:
            found.extend(stop.value)
            return
        waiting.append((search, wanted))

    def arrange(self, wanted: Iterable[int]) -> Order:
        return arrange(wanted, self.graph, self.count)

    def passes(
        self, test: int, wanted: Iterable[int], reference: Order | None = None
    ) -> Generator[list[Order], list[Outcomes], bool]:
        """Whether ``test`` passes with ``wanted`` (each before it in ``reference``) run before
        it, in ``reference``'s order with what they require and what it depends on (one
        list)."""
        wanted = [*self.declared_before(test), *wanted, test]
        order = self.arrange(wanted) if reference is None else self.sublist(wanted, reference)
        (outcomes,) = yield [order]
        return passed(outcomes, test)

    def declared_before(self, test: int) -> list[int]:
        """Every test ``test`` depends on, either kind of edge, transitively: a run of the
        suite always runs them before it, so every list that holds it does too."""
        return sorted(t for t in reachable(self.graph, [test], "dependencies") if t < self.count)

    def _position(self, order: Order) -> list[int]:
        """Where each test is in ``order`` (kept: the searches ask again and again)."""
        position = self._positions.get(order)
        if position is None:
            position = self._positions[order] = positions_in(order)
        return position

    def sublist(self, wanted: Iterable[int], reference: Order) -> Order:
        return sublist(wanted, self.graph, self.count, self._position(reference))

    # -- a victim ---------------------------------------------------------------------------

    def examine(self, test: int, first: Order, second: Order) -> Search:
        """A test that passed in ``first`` and failed in ``second``: what explains it."""
        spent = _Spent()
        return (yield from spent.count(self._examine(test, first, second, spent)))

    def _examine(self, test: int, first: Order, second: Order, spent: _Spent) -> Search:
        declared = joined(self.graph, test)
        if (yield from self.passes(test, ())):  # passes alone: something before it breaks it
            suspects = [t for t in before(second, test) if t not in declared]
            polluters: list[int] = []
            for group in self.narrowed(test, suspects, breaks=True):
                polluters = yield from self.minimal(test, group, False, second)
                if polluters:
                    break
            if len(polluters) != 1:
                return []  # several tests together, or none reproduced: not one to name
            return (yield from self.verified(CONFLICTS, test, polluters[0], (), second, spent))
        earlier = before(first, test)
        not_earlier = set(before(second, test))
        suspects = [t for t in earlier if t not in not_earlier and t not in declared]
        wider = [t for t in earlier if t not in declared]
        # ``wider``: what it needs ran before it in the second order too, and something
        # masked it there
        groups = [*self.narrowed(test, suspects, breaks=False), wider]
        needed: list[int] = []
        for at, group in enumerate(groups):
            if group and (at == 0 or group != groups[at - 1]):
                needed = yield from self.minimal(test, group, True, first)
                if needed:
                    break
        if not needed:
            return []
        return (yield from self.explain(test, needed, first, spent))

    def narrowed(self, test: int, suspects: list[int], breaks: bool) -> list[list[int]]:
        """``suspects``, narrowed by the whole orders' outcomes of ``test``, tightest first.
        A search tries each in turn until one explains the test, so a narrowing that a third
        test misled costs a short list, never a finding:

        * the suspects whose place matches its outcome in every order: a test it needs
          passed before it exactly where it passed; one that breaks it ran before it exactly
          where it failed;
        * for a need, those with the tests they need in turn, found the same way (a chain
          c -> b -> a: c passes where b passed before it, and b where a ran before b);
        * those that match where a single cause must: before it in every order it passed in
          (for a need), in every order it failed in (for a conflict);
        * every suspect.
        """
        suspected = set(suspects)
        strict = [t for t in suspects if self._matches(t, test, breaks, strict=True)]
        groups = [strict]
        if not breaks:
            chain = set(strict)
            links = list(strict)
            while links and len(chain) <= _CHAIN_LIMIT:
                link = links.pop()
                if all(passed(outcomes, link) for _, outcomes in self.evidence):
                    continue  # passed wherever it ran: no need of its own to follow
                for t in before(self.evidence[0][0], link):
                    if t in suspected and t not in chain and self._matches(t, link, False, True):
                        chain.add(t)
                        links.append(t)
            if len(chain) <= _CHAIN_LIMIT:
                groups.append([t for t in suspects if t in chain])
        groups.append([t for t in suspects if self._matches(t, test, breaks, strict=False)])
        groups.append(suspects)
        return [group for at, group in enumerate(groups) if group and group not in groups[:at]]

    def _matches(self, suspect: int, test: int, breaks: bool, strict: bool) -> bool:
        """Whether ``suspect``'s place in each whole order fits ``test``'s outcome there (see
        :meth:`narrowed`); not ``strict``: only in the orders where a single cause must."""
        for order, outcomes in self.evidence:
            if test not in outcomes:
                continue
            ok = passed(outcomes, test)
            if not strict and ok == breaks:
                continue  # the outcome a chain or a second cause may also give
            position = self._position(order)
            ran_before = position[suspect] < position[test]
            if not breaks:  # a need counts where it passed before the test
                ran_before = ran_before and passed(outcomes, suspect)
            if ran_before != (ok != breaks):
                return False
        return True

    def explain(self, test: int, needed: list[int], first: Order, spent: _Spent) -> Search:
        """``test`` passes with the minimal set ``needed`` before it: the members that no
        other member needs are its own needs, each verified with the rest of the set before
        it. A member that fails alone has needs of its own, looked for among the members
        before it and what ``test`` declares it depends on (which runs before ``test`` in
        every list, not always before the member), and explained the same way: a chain
        c -> b -> a gives "c needs b" and "b needs a"."""
        position = self._position(first)
        declared = self.declared_before(test)
        needs_of: dict[int, list[int]] = {}
        for at, member in enumerate(needed):
            if (yield from self.passes(member, (), first)):
                needs_of[member] = []
                continue
            own = set(self.declared_before(member))
            pool = {*needed[:at], *(d for d in declared if position[d] < position[member])}
            needs_of[member] = yield from self.minimal(
                member, sorted(pool - own, key=position.__getitem__), True, first)
        indirect = {n for member in needed for n in needs_of[member]}
        indirect |= yield from self.needed_by_others(test, needed, first)
        findings: list[Finding] = []
        for member in needed:
            if member not in indirect:
                context = tuple(n for n in needed if n != member)
                findings += yield from self.verified(NEEDS, test, member, context, first, spent)
        for member in needed:
            if needs_of[member]:
                findings += yield from self.explain(member, needs_of[member], first, spent)
        return findings

    def needed_by_others(
        self, test: int, needed: list[int], first: Order
    ) -> Generator[list[Order], list[Outcomes], set[int]]:
        """The members of ``needed`` that another member needs: without one of them, a
        member that passed with the whole set fails (one list per member, all at once). A
        chain may run through a test ``test`` declares, which its lists always hold: ``test``
        needs b, b needs a declared d, d needs a; then ``test`` passes with {a, b} only, and
        a is d's need, not ``test``'s. (A declared test that fails without a member says
        nothing: ``test`` may need that member too.)"""
        if len(needed) < 2:
            return set()
        whole = self.sublist([*self.declared_before(test), *needed, test], first)
        # the whole list less the member alone, what it requires kept (another member may
        # need that); a member the rest requires cannot leave the list: not asked
        members = [m for m in needed
                   if m not in requirements(self.graph, [t for t in whole if t != m],
                                            self.count)]
        outcomes, *without = yield [whole, *(tuple(t for t in whole if t != m) for m in members)]
        witnesses = [t for t in needed if passed(outcomes, t)]
        return {member for member, ran in zip(members, without)
                if any(t != member and not passed(ran, t) for t in witnesses)}

    def minimal(
        self, test: int, suspects: list[int], want_pass: bool, reference: Order
    ) -> Generator[list[Order], list[Outcomes], list[int]]:
        """A smallest list of ``suspects`` whose running before ``test`` makes it pass
        (``want_pass``) or fail: bisection while one half alone does it (one list a step),
        then, for a set of several, a binary search over prefixes for each of its tests.
        Each list is a sub-sequence of ``reference`` with what its tests require; when a test
        found requires tests of its own and those do it in its place, the search goes on
        among them (the state came from one of those). Empty when even all of them do not."""

        def works(tests: list[int]) -> Generator[list[Order], list[Outcomes], bool]:
            return (yield from self.passes(test, tests, reference)) == want_pass

        found = yield from self._minimal(works, suspects)
        position = self._position(reference)
        settled = requirements(self.graph, [test], self.count)  # in every list anyway
        refined = True
        while refined:
            refined = False
            for member in found:
                own = requirements(self.graph, [member], self.count) - settled
                if not own:
                    continue
                instead = sorted((set(found) - {member}) | own, key=position.__getitem__)
                if (yield from works(instead)):
                    found = yield from self._minimal(works, instead)
                    refined = True
                    break
        return found

    @staticmethod
    def _minimal(
        works: Callable[[list[int]], Generator[list[Order], list[Outcomes], bool]],
        suspects: list[int],
    ) -> Generator[list[Order], list[Outcomes], list[int]]:
        known = False  # whether ``suspects`` is known to do it
        while len(suspects) > 1:
            half = len(suspects) // 2
            low, high = suspects[:half], suspects[half:]
            if (yield from works(low)):
                suspects, known = low, True
            elif (yield from works(high)):
                suspects, known = high, True
            else:
                break
        else:
            if not suspects or not (known or (yield from works(suspects))):
                return []
            return suspects
        # neither half alone: several tests together (a chain of needs), or none at all
        if not (yield from works(suspects)):
            return []
        # one needed test at a time, the last first: the shortest prefix of the rest that
        # does it with the tests found ends in a needed one (binary search over prefixes:
        # log2(m) lists for each of the k tests found, where ddmin's chunks took up to m^2)
        found: list[int] = []
        rest = suspects
        while rest and not (found and (yield from works(found))):
            short, long = 0, len(rest)  # found + rest[:short] does not do it, [:long] does
            while long - short > 1:
                middle = (short + long) // 2
                if (yield from works([*found, *rest[:middle]])):
                    long = middle
                else:
                    short = middle
            found.append(rest[long - 1])
            rest = rest[: long - 1]
        chosen = set(found)
        return [t for t in suspects if t in chosen]  # in their order: a chain's links first

    def verified(
        self, kind: str, test: int, other: int, context: tuple[int, ...], reference: Order,
        spent: _Spent,
    ) -> Search:
        """The pair run both ways ``verify`` times at once: the finding when each way gave the
        same outcome every time as expected; the test flaky when one way's outcome changed."""
        own = self.declared_before(test)
        if kind == NEEDS:  # passes after the other, fails before it
            expected = (self.sublist([*own, *context, other, test], reference),
                        self.arrange([*own, test, *self.sublist([*context, other], reference)]))
        else:  # fails after the other, passes before it
            expected = (self.sublist([*own, other, test], reference),
                        self.arrange([*own, test, other]))
        lists = [expected[0]] * self.verify + [expected[1]] * self.verify
        outcomes = yield lists
        after = {passed(o, test) for o in outcomes[: self.verify]}
        first = {passed(o, test) for o in outcomes[self.verify:]}
        if len(after) > 1 or len(first) > 1:
            return [Finding(FLAKY, test, None, executions=spent.executions)]
        if after == {kind == NEEDS} and first == {kind != NEEDS}:
            return [Finding(kind, test, other, context, spent.executions)]
        return []


class _Spent:
    """Counts the test executions of one victim's search (the lists it yields)."""

    def __init__(self) -> None:
        self.executions = 0

    def count(self, search: Generator[list[Order], list[Outcomes], _T]) -> Generator[
            list[Order], list[Outcomes], _T]:
        outcomes: list[Outcomes] | None = None
        while True:
            try:
                wanted = next(search) if outcomes is None else search.send(outcomes)
            except StopIteration as stop:
                value: _T = stop.value
                return value
            self.executions += sum(map(len, wanted))
            outcomes = yield wanted
