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
  more or runs alone is never queued
  (:meth:`~pytest_depgraph.core.walk.resource_books.Books.queueable`), and nothing is queued while a
  more urgent test that may not be queued is ready (it gets the next idle worker), nor behind tests
  that will free what a more urgent test waits for (it gets their worker the moment they finish).

Only a ready test (every dependency finished) is ever queued, so a queued test never needs
recalling. Pure: no pytest.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable, Mapping, Sequence

from pytest_depgraph.core.graph.storage import Graph
from pytest_depgraph.core.walk.ready import ReadyTests
from pytest_depgraph.core.walk.resource_books import Books
from pytest_depgraph.core.walk.walker import Walker

#: most tests a worker holds at once (the one it runs and those queued behind it)
MAX_HOLD = 16
#: a worker is topped up only once it holds at most this many (one message for several tests;
#: one still queued behind the running one while the message travels)
REFILL_AT = 2
#: more than one test is queued behind a running one only while the tests a worker holds are
#: expected to take less than this together (seconds): then a round trip per test would cost
#: a noticeable share of the run, and committing the tests early costs little
QUEUE_SECONDS = 0.05


class Queueing:
    """The queueing rule of one walk, and what it knows of the tests' expected seconds."""

    def __init__(
        self,
        graph: Graph,
        walk: Walker,
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

    def saw(self, seconds: float) -> None:
        """A test took ``seconds`` in this run."""
        # clipped: a few slow outliers (a loaded machine) must not hide that tests are short
        self._seen_total += min(seconds, QUEUE_SECONDS)
        self._seen += 1

    def fill(
        self,
        order: list[Hashable],
        given: dict[Hashable, list[int]],
        holds: Mapping[Hashable, deque[int]],
        *,
        chain: Mapping[Hashable, list[int]],
        last_group: Mapping[Hashable, int],
        early: set[int],
        may_start: Callable[[int, Hashable], bool],
        take: Callable[[int, Hashable], None],
        behind: Callable[[int, int, Hashable], None],
    ) -> None:
        """Queue tests behind the running ones of the workers in ``order`` (each holds what
        ``holds`` says), adding them to ``given``. ``chain``: per worker, the tests its last
        test made ready in its group; ``last_group``: the group it ran last; ``early``: the
        tests started behind the one they wait for; ``take(node, worker)`` starts a ready
        test, ``behind(follower, last, worker)`` one that waits for ``last`` alone."""
        candidates = [w for w in order if 0 < len(holds[w]) <= REFILL_AT]
        # per worker, what its held tests add up to, kept up to date as tests are queued
        tallies: dict[Hashable, list[float | None]] = {w: [None, None] for w in candidates}
        while candidates:
            still = []
            for worker in candidates:
                held = holds[worker]
                node = self._pick(
                    worker, held, len(order), tallies[worker], chain.get(worker, ()),
                    last_group.get(worker), early, may_start,
                )
                if node is None:
                    continue
                if node in early:
                    behind(node, held[-1], worker)
                else:
                    take(node, worker)
                given.setdefault(worker, []).append(node)
                if len(held) < self.hold:
                    still.append(worker)
            candidates = still

    def _pick(
        self,
        worker: Hashable,
        held: deque[int],
        workers: int,
        tally: list[float | None],
        chain: Sequence[int],
        last_group: int | None,
        early: set[int],
        may_start: Callable[[int, Hashable], bool],
    ) -> int | None:
        """The best test to queue behind ``held`` (added to ``early`` when it may start
        behind the last one at once); None if none may.

        ``tally``: the expected seconds of the tests it holds and their :meth:`_bar` (None:
        not known yet); kept up to date here, so that a top-up of many tests does not add
        up the same tests again for each."""
        if len(held) >= self.hold:
            return None
        walk, ready, books = self._walk, self._ready, self._books
        last = held[-1]
        group = ready.pinned_group(last)
        if group is not None:
            # the next test of its pinned group (a --dist unit) waits for ``last`` alone, by
            # an ordering edge: it runs behind it, on this worker, whatever ``last`` does
            for follower in walk.early(last):
                if ready.pinned_group(follower) == group and (
                    books is None or books.queueable(follower, worker)
                ):
                    early.add(follower)
                    tally[:] = None, None  # ``last`` made its chain's way: add up again
                    return follower
        if not walk.ready_count:
            return None
        expected = tally[0]
        if expected is None:
            expected = 0.0
            for v in held:
                seconds = self._expected(v)
                if seconds is None:
                    expected = QUEUE_SECONDS
                    break
                expected += seconds
            tally[0] = expected
        short = expected < QUEUE_SECONDS
        # beyond one queued test only short ones; one queued behind a long test only while
        # there is more ready than the workers take (else an idle worker may want it soon)
        if not short and (len(held) >= 2 or walk.ready_count < workers):
            return None
        node: int | None = None
        for candidate in chain:
            if may_start(candidate, worker):
                node = candidate
                break
        if node is None:
            if not self._continues[last]:
                node = ready.best(worker, last_group)
            elif group is None:
                # its chain goes on once it finished: only a test of its own group goes in
                # between, which keeps the fixtures that chain shares set up
                node = ready.best_of_group(last, worker)
        if node is None or (books is not None and (
            not books.queueable(node, worker) or books.holds_back(held, node)
        )):
            # a more urgent test that may not queue gets the next idle worker, and one that
            # waits for what the worker's tests will free gets this one when they finish
            return None
        bar = tally[1]
        if bar is None:
            bar = tally[1] = self._bar(held, early)
        if ready.priority(node) < bar:
            return None  # it would hold back something more urgent
        seconds = self._expected(node)
        tally[0] = QUEUE_SECONDS if seconds is None else expected + seconds
        tally[1] = max(bar, self._after[node])
        return node

    def _bar(self, held: deque[int], early: set[int]) -> float:
        """The most urgent priority the tests ``held`` can make ready once they finished (a
        test whose follower is queued behind it already made its chain's way)."""
        bar = float("-inf")
        following = None
        for v in reversed(held):
            if following not in early:
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
