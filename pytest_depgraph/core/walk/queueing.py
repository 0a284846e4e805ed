"""Queueing: which ready tests a worker holds behind the one it runs, so that it never waits.

A worker may hold more than the test it runs (up to ``hold``), so that it never waits for the
controller between two tests. The dispatcher (:mod:`pytest_depgraph.core.walk.dispatch`) first
gives every idle worker its best test, then, while more tests are ready than there are
workers, :meth:`Queueing.fill` queues more behind the running ones, best first, one per
worker per round (priority spreads); a test is queued only when

* it is at least as urgent as anything the tests the worker holds can make ready, so a test
  on the critical path never waits behind it;
* for a third test and more: the tests the worker holds are expected to take less than
  :data:`QUEUE_SECONDS` together (the previous run's durations, else this run's mean);
* the worker holds at most :data:`REFILL_AT` tests: it is topped up in one go;
* behind a test whose chain goes on in its own group (it has a dependent there), only a test
  of that group, so nothing in between tears down the fixtures the chain shares (behind a test
  of a pinned group, only that group's next test, which waits for it alone and may start
  behind it at once);
* it takes nothing at its start but its worker's slot: a test that holds resources, weighs
  more or runs alone is never queued (but for the one handed over, right behind the test
  that frees what it waits for: the dispatcher's
  :meth:`~pytest_depgraph.core.walk.dispatch.Dispatcher.assign` does that before queueing)
  (:meth:`~pytest_depgraph.core.walk.resource_books.Books.queueable`), and nothing is queued while a
  more urgent test that may not be queued is ready (it gets the next idle worker), nor behind tests
  that will free what a more urgent test waits for (it gets their worker the moment they finish).

A queued test is a ready one (every dependency finished), but for the next test of a pinned
group, which waits for the test it is queued behind alone and starts behind it (the walk's
:meth:`~pytest_depgraph.core.walk.walker.QueueingWalker.start_early`). Either goes back to the
walk only when its worker leaves before it began
(:meth:`~pytest_depgraph.core.walk.walker.QueueingWalker.unstart`).

:class:`Queueing` chooses, one test at a time (:meth:`Queueing.choose`); the dispatcher applies
each choice and tells it which tests it queued behind another finished or went back
(:meth:`Queueing.forget`). Pure: no pytest.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from pytest_depgraph.core.graph.storage import Graph
from pytest_depgraph.core.walk.ready import ReadyTests
from pytest_depgraph.core.walk.resource_books import Books
from pytest_depgraph.core.walk.walker import QueueingWalker

#: most tests a worker holds at once (the one it runs and those queued behind it)
MAX_HOLD = 16
#: a worker is topped up only once it holds at most this many (one message for several tests;
#: one still queued behind the running one while the message travels)
REFILL_AT = 2
#: more than one test is queued behind a running one only while the tests a worker holds are
#: expected to take less than this together (seconds): then a round trip per test would cost
#: a noticeable share of the run, and committing the tests early costs little
QUEUE_SECONDS = 0.05
#: below every priority: the bar of tests that can make nothing ready
_LOWEST = float("-inf")


class Queued(NamedTuple):
    """A test to queue behind the ones a worker holds."""

    node: int
    #: the test it waits for alone and starts behind (the last one the worker holds: the next
    #: test of its pinned group), or None: it is ready
    behind: int | None = None


@dataclass
class _Tally:
    """What a worker's held tests add up to in one round of :meth:`Queueing.choose`, kept up
    to date as tests are queued, so that a top-up of many tests does not add up the same tests
    again for each (None: not known yet)."""

    #: their expected seconds
    seconds: float | None = None
    #: the most urgent priority they can make ready (:meth:`Queueing._bar`)
    bar: float | None = None


class Queueing:
    """The queueing rule of one walk, what it knows of the tests' expected seconds, and the
    tests it queued behind the one they wait for."""

    def __init__(
        self,
        graph: Graph,
        walk: QueueingWalker,
        ready: ReadyTests,
        *,
        priority: Sequence[float] | None,
        weight: Sequence[float] | None,
        group: Sequence[int] | None,
        hold: int,
        durations: Mapping[int, float],
        books: Books | None,
    ) -> None:
        """The rule for ``graph``'s ``walk``, whose ``ready`` tests it queues. O(V + E)."""
        size = graph.size
        self.hold = hold
        self._walk = walk
        self._ready = ready
        self._books = books
        self._known = durations
        # the most urgent priority a node can make ready once it finished
        if priority is None:
            self._after = [0.0] * size
        elif weight is None:
            self._after = list(priority)
        else:
            self._after = [p - w for p, w in zip(priority, weight)]
        # continues[v]: v has a dependent in its own group or pinned group, so a test of
        # another one queued behind v would tear down the fixtures that chain shares
        self._continues = bytearray(size)
        pinned = ready.pinned_group
        for dependent, dependency, _ in graph.triples():
            if (group is not None and group[dependent] == group[dependency]) or (
                pinned(dependency) is not None and pinned(dependent) == pinned(dependency)
            ):
                self._continues[dependency] = 1
        # this run's seconds per test, for the expected duration of tests without one
        self._seen_total = 0.0
        self._seen = 0
        #: tests queued behind the one they wait for, not finished yet
        self._early: set[int] = set()
        #: the round: how many workers take tests, and what each one's held tests add up to
        self._workers = 0
        self._tallies: dict[Hashable, _Tally] = {}

    def saw(self, seconds: float) -> None:
        """A test took ``seconds`` in this run."""
        # clipped: a few slow outliers (a loaded machine) must not hide that tests are short
        self._seen_total += min(seconds, QUEUE_SECONDS)
        self._seen += 1

    def forget(self, node: int) -> None:
        """``node`` finished, or went back to the walk: it is no longer queued behind
        another."""
        self._early.discard(node)

    def begin(self, workers: int) -> None:
        """A round of choices among ``workers`` workers: what their held tests add up to is
        worked out afresh."""
        self._workers = workers
        self._tallies = {}

    def choose(
        self,
        worker: Hashable,
        held: Sequence[int],
        chain: Sequence[int],
        last_group: int | None,
    ) -> Queued | None:
        """The best test to queue behind the tests ``worker`` holds (``held``, the one it
        runs first; at least one), or None if none may. ``chain``: the tests its last test
        made ready in its group, best first; ``last_group``: the group it ran last.

        The rules, in order: a worker holds at most :attr:`hold` tests; the next test of a
        pinned group goes behind the group's test before it at once; then, only while tests
        are ready, :meth:`_may_queue_more` (short tests, or more ready than the workers
        take), :meth:`_candidate` (the chain, else the best test the fixtures allow),
        :meth:`_resources_allow` and :meth:`_urgent_enough`."""
        if len(held) >= self.hold:
            return None
        tally = self._tallies.get(worker)
        if tally is None:
            tally = self._tallies[worker] = _Tally()
        last = held[-1]
        group = self._ready.pinned_group(last)
        follower = None if group is None else self._next_of_pinned_group(worker, last, group)
        if follower is not None:
            self._early.add(follower)
            tally.seconds = tally.bar = None  # ``last`` made its chain's way: add up again
            return Queued(follower, behind=last)
        if not self._walk.ready_count:
            return None
        seconds = self._held_seconds(held, tally) if tally.seconds is None else tally.seconds
        if not self._may_queue_more(held, short=seconds < QUEUE_SECONDS):
            return None
        node = self._candidate(worker, last, group, chain, last_group)
        if node is None or not self._resources_allow(node, held, worker):
            return None
        if not self._urgent_enough(node, held, tally):
            return None
        expected = self._expected(node)
        tally.seconds = QUEUE_SECONDS if expected is None else seconds + expected
        tally.bar = max(tally.bar if tally.bar is not None else _LOWEST, self._after[node])
        return Queued(node)

    # -- the rules -----------------------------------------------------------------------------

    def _next_of_pinned_group(self, worker: Hashable, last: int, group: int) -> int | None:
        """The next test of ``last``'s pinned ``group`` (a ``--dist`` unit), which waits for
        ``last`` alone by an ordering edge: it runs behind it, on this worker, whatever
        ``last`` does (None: no such test may queue)."""
        ready, books = self._ready, self._books
        for follower in self._walk.early(last):
            if ready.pinned_group(follower) == group and (
                books is None or books.queueable(follower, worker)
            ):
                return follower
        return None

    def _held_seconds(self, held: Sequence[int], tally: _Tally) -> float:
        """The expected seconds of the tests ``held`` (:data:`QUEUE_SECONDS` when one of
        them is not known), added up into ``tally``."""
        total = 0.0
        for v in held:
            seconds = self._expected(v)
            if seconds is None:
                total = QUEUE_SECONDS
                break
            total += seconds
        tally.seconds = total
        return total

    def _may_queue_more(self, held: Sequence[int], *, short: bool) -> bool:
        """Beyond one queued test only short ones; one queued behind a long test only while
        there is more ready than the workers take (else an idle worker may want it soon)."""
        return short or (len(held) < 2 and self._walk.ready_count >= self._workers)

    def _candidate(
        self, worker: Hashable, last: int, group: int | None, chain: Sequence[int],
        last_group: int | None,
    ) -> int | None:
        """The test to queue behind ``last`` (of pinned ``group``, if any): the first of the
        chain ``worker`` may start; else the best ready test, unless ``last``'s chain goes on
        once it finished -- then only a test of its own group goes in between, which keeps the
        fixtures that chain shares set up (and none behind a test of a pinned group)."""
        for candidate in chain:
            if self._ready.may_start(candidate, worker):
                return candidate
        if not self._continues[last]:
            return self._ready.best(worker, last_group)
        if group is None:
            return self._ready.best_of_group(last, worker)
        return None

    def _resources_allow(self, node: int, held: Sequence[int], worker: Hashable) -> bool:
        """A test that takes more than its worker's slot at its start is never queued, nor one
        behind tests that will free what a more urgent test waits for: a more urgent test that
        may not queue gets the next idle worker, and one that waits for what the worker's
        tests will free gets this one when they finish."""
        books = self._books
        return books is None or (books.queueable(node, worker) and not books.holds_back(held, node))

    def _urgent_enough(self, node: int, held: Sequence[int], tally: _Tally) -> bool:
        """``node`` is at least as urgent as anything the tests ``held`` can make ready: it
        would hold back nothing more urgent."""
        if tally.bar is None:
            tally.bar = self._bar(held)
        return self._ready.priority(node) >= tally.bar

    def _bar(self, held: Sequence[int]) -> float:
        """The most urgent priority the tests ``held`` can make ready once they finished (a
        test whose follower is queued behind it already made its chain's way)."""
        bar = _LOWEST
        following = None
        for v in reversed(held):
            if following not in self._early:
                bar = max(bar, self._after[v])
            following = v
        return bar

    def _expected(self, node: int) -> float | None:
        """The expected seconds of ``node``: the previous run's, else this run's mean so far
        (each duration counted up to :data:`QUEUE_SECONDS`); None before anything is known."""
        known = self._known.get(node)
        if known is not None:
            return known
        return self._seen_total / self._seen if self._seen else None
