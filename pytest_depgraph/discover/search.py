"""The search: orders run, victims minimised to the one test that explains them, verified.

Pure: the tests are node numbers, the declared graph a :class:`~pytest_depgraph.core.graph.storage.
Graph`, and running is an injected function that runs lists of tests (each in a fresh process,
as many at once as it likes) and answers, for each list, which of its tests passed. Each
victim's search is a generator that yields the lists it wants run and receives their
outcomes, so :func:`discover` runs the lists of every victim's current step together (the
``-n`` pool bisects independent victims at once) while each search reads as straight code.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from pytest_depgraph.core.graph.paths import reachable
from pytest_depgraph.core.graph.storage import Graph
from pytest_depgraph.discover.orders import (
    Order,
    arrange,
    before,
    joined,
    pytest_order,
    requirements,
    reversals,
    sublist,
)

_T = TypeVar("_T")

NEEDS = "needs"
CONFLICTS = "conflicts"
FLAKY = "flaky"

#: the most tests a chain narrowed from the lists may hold before the search stops
#: following its links: 16, or an eighth of the suspects (past it, the wider sets are as
#: short as a bisection goes)
_CHAIN_LIMIT = 16

#: a victim's suspects that fit every list so far, at most this many, end the narrowing: a
#: bisection over two costs about what another shared list would
_NARROW = 2

#: the share of a victim's suspects that one shared list runs before it: a list holding a
#: share f tells H(f) bits of which suspect it is, for a cost of f; a third tells 0.92 bits
#: for two thirds of a half's cost (the bench's suites in-process: 5-9% fewer executions than
#: halves, and as many lists)
_SHARE = 1 / 3

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
    #: test executions spent finding and verifying it (the lists victims share not counted)
    executions: int = 0


@dataclass
class Discovered:
    """What a discovery found, and what it cost."""

    findings: list[Finding] = field(default_factory=list)
    #: tests that did not pass in the serial run's order (reported, not analysed)
    failing: list[int] = field(default_factory=list)
    #: whole orders run (the serial one and its reversals)
    orders: int = 0
    #: lists run (each one process, unless a test ended its process)
    lists: int = 0
    #: of those, the lists that ran a test alone (first in its process, with only what it
    #: declares it depends on before it)
    alone: int = 0
    #: test executions, all lists together
    executions: int = 0


def passed(outcomes: Outcomes, test: int) -> bool:
    return outcomes.get(test, False)


def discover(graph: Graph, count: int, run: Runner, verify: int = 3, width: int = 1
             ) -> Discovered:
    """Find the hidden dependencies among tests ``0..count-1`` (the serial order); ``width``:
    how many lists ``run`` runs at once (the shared lists of one round, see
    :meth:`_Engine.narrow`).

    1. The serial order and its reversals (:func:`~.orders.reversals`) at once; then each
       test that passed there alone (first in a fresh process, only what it declares before
       it), and, when a test failed in the serial order, that order again up to it: a test
       whose outcome changed is flaky, one that failed twice is failing.
    2. Each test that passed in the serial order and failed in another one, or alone, is a
       victim: alone it fails (it *needs* a test that ran before it in the serial order --
       also when, in every order, one of two tests that satisfy it ran before it) or passes
       (a test before it in the other order *conflicts* with it). Lists shared by every
       victim narrow their suspects
       (:meth:`_Engine.narrow`); then the other test is found by bisection, a chain by a
       binary search over prefixes, and each pair verified ``verify`` times both ways (an
       outcome that changes there makes the test flaky).
    """
    result = Discovered()
    engine = _Engine(graph, count, run, verify, result, width)
    first = pytest_order(count)
    orders = [first, *reversals(graph, count)]
    outcomes = engine.run(orders)
    result.orders = len(orders)
    serial = outcomes[0]
    unpassed = [t for t in range(count) if not passed(serial, t)]
    candidates = [t for t in range(count) if passed(serial, t)]
    # each test that passed first in a fresh process of its own, at once with the serial
    # order again up to its last failure when one failed (what ran before a test in a list
    # is all that reaches it: the prefix is the order)
    prefix = first[: first.index(unpassed[-1]) + 1] if unpassed else ()
    alone, alone_lists = engine.alone(candidates, list(zip(orders, outcomes)),
                                      [prefix] if prefix else [])
    flaky: set[int] = set()
    if prefix:
        again = alone_lists.pop()
        flaky = {t for t in prefix if passed(serial, t) != passed(again, t)}
    result.failing = [t for t in unpassed if t not in flaky]
    engine.evidence = list(zip(orders, outcomes))
    exposing: dict[int, Order] = {}
    for t in candidates:
        if t in flaky:
            continue
        other = next((o for o, out in zip(orders[1:], outcomes[1:]) if not passed(out, t)),
                     None)
        if other is None and not alone[t]:
            # it passed in every order and fails with nothing before it: a test before it
            # in each order satisfied its need (two tests that set the same state)
            other = engine.arrange([*engine.declared_before(t), t])
        if other is not None:
            exposing[t] = other
    suspects = {t: engine.suspects(t, first, exposing[t], alone[t]) for t in exposing}
    engine.narrow(suspects, alone)
    searches = [engine.examine(t, first, exposing[t], alone[t], suspects[t]) for t in exposing]
    findings = [Finding(FLAKY, t, None) for t in sorted(flaky)]
    findings += engine.drive(searches)
    result.findings = _unique(findings)
    return result


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
        self, graph: Graph, count: int, run: Runner, verify: int, result: Discovered,
        width: int = 1,
    ) -> None:
        self.graph = graph
        self.count = count
        self._run = run
        self.verify = verify
        self.result = result
        #: how many shared lists one round of the narrowing runs (one a slot)
        self.width = max(1, width)
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
        """Where each test is in ``order``, ``count`` for a test not in it (kept: the searches
        ask again and again)."""
        position = self._positions.get(order)
        if position is None:
            position = self._positions[order] = [self.count] * self.count
            for at, test in enumerate(order):
                position[test] = at
        return position

    def sublist(self, wanted: Iterable[int], reference: Order) -> Order:
        return sublist(wanted, self.graph, self.count, self._position(reference))

    # -- a victim ---------------------------------------------------------------------------

    def alone(self, tests: list[int], known: Sequence[tuple[Order, Outcomes]],
              more: Sequence[Order] = ()) -> tuple[dict[int, bool], list[Outcomes]]:
        """Whether each test passes alone -- first in a fresh process, with only what it
        declares it depends on before it: one list each, all at once with the lists
        ``more`` (their outcomes are returned too). A test whose list began an order
        already run (``known``) is not run again."""
        lists = {t: self.arrange([*self.declared_before(t), t]) for t in tests}
        firsts = {lists[t]: outcomes for t in tests for order, outcomes in known
                  if order[: len(lists[t])] == lists[t]}
        wanted = [t for t in tests if lists[t] not in firsts]
        asked = [*(lists[t] for t in wanted), *more]
        self.result.alone += len(wanted)
        ran = self.run(asked) if asked else []
        firsts.update(zip((lists[t] for t in wanted), ran))
        return {t: passed(firsts[lists[t]], t) for t in tests}, ran[len(wanted):]

    def suspects(self, test: int, first: Order, second: Order, alone: bool) -> list[int]:
        """The tests that can explain a victim that passed in ``first`` and failed in
        ``second``: passing ``alone``, those before it in ``second`` (one breaks it); failing
        alone, those before it in ``first`` and not in ``second`` (it needs one). Never a test
        joined to it by declared edges."""
        declared = joined(self.graph, test)
        if alone:
            return [t for t in before(second, test) if t not in declared]
        not_earlier = set(before(second, test))
        return [t for t in before(first, test) if t not in not_earlier and t not in declared]

    def narrow(self, suspects: Mapping[int, list[int]], alone: Mapping[int, bool]) -> None:
        """Lists every victim shares, until each one's suspects that fit every list run (see
        :meth:`narrowed`) are at most :data:`_NARROW`: for each victim in turn, the fewest
        suspects first, a third (:data:`_SHARE`) of its suspects goes before the victims,
        counting those already placed there, and the rest stays out (a test absent ran before
        nobody); then the victims, in a random order. Each list costs a third of the
        suspects still open plus the victims, and tells for every victim at once whether its
        cause is in that third -- one bisection for all of them, where each victim's own
        costs as many executions as its suspects. (Whole random orders cut the suspects by a
        third only, for the cost of every test: the victim's place decides both its outcome
        and which suspects ran before it.) Pure evidence: a third test that misleads it costs
        the search a wider set, never a finding."""
        rng = random.Random(len(suspects))
        left = {t: [s for s in suspects[t] if self._matches(s, t, alone[t], strict=True)]
                for t in suspects}
        for _ in range(2 * self.count.bit_length() + 4):
            victims = sorted((t for t in left if len(left[t]) > _NARROW),
                             key=lambda t: (len(left[t]), t))
            if not victims:
                return
            block = set(victims)
            # one list a slot, each drawn on its own from the same suspects: they tell as much
            # each as one after the other would, and run at once
            orders = [self._shared(victims, left, alone, rng) for _ in range(self.width)]
            for order, outcomes in zip(orders, self.run(orders)):
                self.evidence.append((order, outcomes))
                position = self._position(order)
                for t in block:
                    left[t] = [s for s in left[t]
                               if self._fits(position, outcomes, s, t, alone[t], strict=True)]

    def _shared(self, victims: list[int], left: Mapping[int, list[int]],
                alone: Mapping[int, bool], rng: random.Random) -> Order:
        """One shared list (see :meth:`narrow`): for each victim, a third of its suspects
        ``left`` before the victims, the rest out; the victims in a random order."""
        block = set(victims)
        early: set[int] = set()
        placed: set[int] = set()
        for t in victims:
            free = [s for s in left[t] if s not in placed and s not in block]
            # a victim among the suspects runs before ``t`` half the time
            have = sum(1 for s in left[t] if s in early) + sum(
                1 for s in left[t] if s in block) / 2
            rng.shuffle(free)
            early.update(free[: max(0, round(len(left[t]) * _SHARE - have))])
            placed.update(free)
        # a victim that needs a test passes only after it: what its narrowing left goes
        # before it (a chain c -> b -> a: b placed early without a would fail, and c
        # with it, whichever test was before c)
        support = [s for s in early if s in left and not alone[s]]
        while support:
            for s in left[support.pop()]:
                if s not in early and s not in block:
                    early.add(s)
                    if s in left and not alone[s]:
                        support.append(s)
        shuffled = list(victims)
        rng.shuffle(shuffled)
        return self.arrange([*sorted(early), *shuffled])

    def examine(self, test: int, first: Order, second: Order, alone: bool,
                suspects: list[int]) -> Search:
        """A test that passed in ``first`` and failed in ``second``, and ``alone`` (or not):
        what explains it among its ``suspects``."""
        spent = _Spent()
        return (yield from spent.count(
            self._examine(test, first, second, alone, suspects, spent)))

    def _examine(self, test: int, first: Order, second: Order, alone: bool,
                 suspects: list[int], spent: _Spent) -> Search:
        tight, loose = self.narrowed(test, suspects, breaks=alone)
        if not alone:
            # what it needs ran before it in the second order too, and something masked it
            declared = joined(self.graph, test)
            wider = [t for t in before(first, test) if t not in declared]
            if wider not in tight and wider not in loose:
                loose.append(wider)
        reference = second if alone else first
        found: list[int] = []
        for at, group in enumerate([*tight, *loose]):
            if at == len(tight) and (yield from self.unsteady(test, alone)):
                # the narrowing explained nothing, and alone its outcome changed: flaky
                return [Finding(FLAKY, test, None, executions=spent.executions)]
            found = yield from self.minimal(test, group, not alone, reference, not alone)
            if found:
                break
        if not alone:
            return (yield from self.explain(test, found, first, spent)) if found else []
        if len(found) != 1:
            return []  # several tests together, or none reproduced: not one to name
        return (yield from self.verified(CONFLICTS, test, found[0], (), second, spent))

    def unsteady(self, test: int, alone: bool) -> Generator[list[Order], list[Outcomes], bool]:
        """Whether ``test``'s outcome alone changes over ``2 * verify`` runs (it was
        ``alone``): asked before a search goes through the wide sets of suspects, which a
        flaky test would send it through for nothing."""
        order = self.arrange([*self.declared_before(test), test])
        outcomes = yield [order] * (2 * self.verify)
        return any(passed(out, test) != alone for out in outcomes)

    def narrowed(self, test: int, suspects: list[int], breaks: bool) -> tuple[
            list[list[int]], list[list[int]]]:
        """``suspects``, narrowed by ``test``'s outcomes in the lists run so far, tightest
        first: the tight groups, then the loose ones. A search tries each in turn until one
        explains the test, so a narrowing that a third test misled costs a longer list, never
        a finding. Tight:

        * the suspects whose place matches its outcome in every list: a test it needs passed
          before it exactly where it passed; one that breaks it ran before it exactly where
          it failed;
        * for a need, those with the tests they need in turn, found the same way (a chain
          c -> b -> a: c passes where b passed before it, and b where a ran before b).

        Loose:

        * those that match where a single cause must: before it in every list it passed in
          (for a need), in every list it failed in (for a conflict);
        * every suspect.
        """
        suspected = set(suspects)
        strict = [t for t in suspects if self._matches(t, test, breaks, strict=True)]
        groups = [strict]
        if not breaks:
            chain = set(strict)
            links = list(strict)
            limit = max(_CHAIN_LIMIT, len(suspects) // 8)
            while links and len(chain) <= limit:
                link = links.pop()
                if all(passed(outcomes, link) for _, outcomes in self.evidence
                       if link in outcomes):
                    continue  # passed wherever it ran: no need of its own to follow
                for t in before(self.evidence[0][0], link):
                    if t in suspected and t not in chain and self._matches(t, link, False, True):
                        chain.add(t)
                        links.append(t)
            if len(chain) <= limit:
                groups.append([t for t in suspects if t in chain])
        tight = len(groups)
        groups.append([t for t in suspects if self._matches(t, test, breaks, strict=False)])
        groups.append(suspects)
        kept = [(at, group) for at, group in enumerate(groups)
                if group and group not in groups[:at]]
        return ([g for at, g in kept if at < tight], [g for at, g in kept if at >= tight])

    def _matches(self, suspect: int, test: int, breaks: bool, strict: bool) -> bool:
        """Whether ``suspect``'s place in each list of the evidence fits ``test``'s outcome
        there (see :meth:`narrowed`); not ``strict``: only in the lists where a single cause
        must."""
        return all(self._fits(self._position(order), outcomes, suspect, test, breaks, strict)
                   for order, outcomes in self.evidence)

    def _fits(self, position: Sequence[int], outcomes: Outcomes, suspect: int, test: int,
              breaks: bool, strict: bool) -> bool:
        """:meth:`_matches` for one list (``position``: where each test is in it, past its
        end when absent)."""
        if test not in outcomes:
            return True
        ok = passed(outcomes, test)
        if not strict and ok == breaks:
            return True  # the outcome a chain or a second cause may also give
        ran_before = position[suspect] < position[test]
        if not breaks:  # a need counts where it passed before the test
            ran_before = ran_before and passed(outcomes, suspect)
        return ran_before == (ok != breaks)

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
        self, test: int, suspects: list[int], want_pass: bool, reference: Order,
        several: bool = True,
    ) -> Generator[list[Order], list[Outcomes], list[int]]:
        """A smallest list of ``suspects`` whose running before ``test`` makes it pass
        (``want_pass``) or fail: bisection while one half alone does it (one list a step),
        then, for a set of several (unless not ``several``: a conflict names one test), a
        binary search over prefixes for each of its tests.
        Each list is a sub-sequence of ``reference`` with what its tests require; when a test
        found requires tests of its own and those do it in its place, the search goes on
        among them (the state came from one of those). Empty when even all of them do not."""

        def works(tests: list[int]) -> Generator[list[Order], list[Outcomes], bool]:
            return (yield from self.passes(test, tests, reference)) == want_pass

        found = yield from self._minimal(works, suspects, several)
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
                    found = yield from self._minimal(works, instead, several)
                    refined = True
                    break
        return found

    @staticmethod
    def _minimal(
        works: Callable[[list[int]], Generator[list[Order], list[Outcomes], bool]],
        suspects: list[int],
        several: bool,
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
        if not several or not (yield from works(suspects)):
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
