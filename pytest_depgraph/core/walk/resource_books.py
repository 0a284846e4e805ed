"""The books of a parallel walk's shared resources: who holds what, who waits for what, the cost.

Beside its dependencies, a test may need (:class:`~pytest_depgraph.core.walk.claims.Claims`, from
the plan's :class:`~pytest_depgraph.core.plan.Resources`): named resources, each as a
*writer* (one unit of the resource's capacity: at most that many writers at once) or a
*reader* (shared with other readers, never beside a writer); more than one *slot* of the bound
(``--depgraph-parallelism``, the dispatcher's ``limit``); or the whole run (*exclusive*:
nothing else runs meanwhile). A *block* -- a pinned group that holds resources as one, back to
back on one worker -- takes its resources and its slots when its first test starts, keeps the
slots while it has tests to start, and gives the resources back once every test of it is
resolved (finished and settled, or skipped) *and* its worker tore down the block's scopes (the
class, module or package whose fixtures the lock covers; :meth:`Books.torn`), or its worker
died; until it has started every test, its worker takes only its tests. A block that is
resolved and waits for its scope's teardown is *kept*. A session's scope lasts as long as its
worker: a block of the session is kept until its worker ends, and *lends* what it holds to the
tests of that worker (they run there beside its fixture, one at a time, never elsewhere).

The dispatcher (:mod:`pytest_depgraph.core.walk.dispatch`) asks :meth:`Books.check` whether a
ready test may start, and says when tests start, stop running and are resolved. The rules:

* **All at once.** A test starts only when everything it needs is free for it: nothing holds
  one resource while it waits for another, so no two tests ever wait for each other. (A
  block's later tests need only their block's slots and no exclusive test running, which
  running tests always free.)
* **Reservation.** A test that cannot start *waits*: it is set aside from the ready heaps,
  and while it waits no test of lower priority may take what it waits for -- a waiting writer
  holds back lower readers of its resource, and lower writers while they would leave fewer
  units than writers wait; a waiting reader holds back lower writers; a waiting exclusive or
  heavy test holds back every lower test. So a writer is never starved by a stream of
  readers, nor an exclusive or heavy test by a stream of small ones: it waits for the tests
  that hold what it needs and for those more urgent than it, no longer. Among the tests that
  may start, priority (the critical path) still decides, so a lock that is the bottleneck is
  fed first. A block's later tests are never held back: they take nothing new, and holding
  them back would keep their block's resources from the very test that waits for them.
* **Wake-ups.** A waiting test is looked at again only when something it needs was freed:
  the best waiter of that resource (or of the slots, or of an empty run) goes back among the
  ready tests, and when a waiter starts, the next one of each list it waited in. A block's
  next test is never held back, so it is not left to the wake-up of a more urgent waiter:
  when the run empties, the exclusive next tests of open blocks are woken too (the more
  urgent one may wait for a lock of the block, which only its next test can give back).
  Each event costs O(c log n) for the c claims of the tests it touches (and the open blocks
  when the run empties), never a scan of the waiting tests; a test is set aside at most once
  per wake-up it gets.

Pure: no pytest; workers are any hashable values. The clock only feeds the figures
(:class:`Record`): how long each resource was held and waited for, and what each test
waited for (:mod:`pytest_depgraph.core.walk.resource_cost`).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence

from pytest_depgraph.core.walk.claims import SESSION, Claim, Claims
from pytest_depgraph.core.walk.resource_cost import Ended, Record, Use, Wait

#: :meth:`Books.check`'s answers: the test may start; it waits (set aside: look further); or
#: nothing more may start on this worker now
START, WAIT, STOP = range(3)
#: what a test waited for, besides a named resource
SLOTS = "slots"
ALONE = "alone"
LOCK = "lock"

_Entry = tuple[tuple[float, int], int]


def shadow(needs: int, free: int, running: Iterable[tuple[float | None, int]]) -> float | None:
    """The earliest time at which ``needs`` slots are free, given ``free`` slots free now and
    the ``running`` tests as (expected end, slots it frees at its end); None when that time
    is unknown (a test it waits for has no known duration). O(r log r).

    Backfilling: a test that waits for several slots of the bound, or for every worker to be
    free (an exclusive test), holds back the less urgent tests so that it is not starved by a
    stream of small ones; meanwhile the slots that free up one by one stay idle. As in a batch
    scheduler's "EASY" backfilling, the running tests' expected ends say when enough slots
    will be free (this *shadow* time): a test expected to end by then delays nobody and may
    use an idle slot now (:meth:`Books._fits`). Only known durations count: without them,
    nothing is backfilled. A test expected to end a little *after* may go too (:func:`late`).
    """
    if free >= needs:
        return None  # it may start now: nothing to backfill before it
    ends = sorted(running, key=lambda run: float("inf") if run[0] is None else run[0])
    for end, slots in ends:
        if end is None:
            return None
        free += slots
        if free >= needs:
            return end
    return None


#: how late after the shadow time a backfilled test may end, at most (seconds): a few round
#: trips to a worker on a loaded machine, and the few milliseconds tests take beyond their
#: recorded durations. The resources bench's weights suite, walked on a clock of events where
#: each report and each test sent arrives 10 ms late, ends at 1.066 of its bound without it,
#: 1.014 with it (tests/test_resource_urgency.py); with tests 0-2% and 0-5 ms longer than
#: their durations too, 12 walks of 200 ended above 1.04 of it with 0.05 s, none with 0.08 s
ROUND_TRIPS = 0.1


def late(seconds: float, slots: int) -> float:
    """How late after the shadow time a test of ``seconds`` may end and still go ahead of a
    waiting test that takes ``slots``: the expected ends leave out the round trip to a worker
    (a test's report, the next test sent), so on a real run a test that ends exactly at the
    shadow time is already late, and one left out for that leaves its slot idle for its whole
    length. It may be late by the round trips it stands for (:data:`ROUND_TRIPS`), and by
    less than its own length divided among the ``slots`` the waiting test takes: then the
    slot-seconds it fills are more than those the waiting test's other reserved slots lose
    meanwhile. O(1)."""
    return min(ROUND_TRIPS, seconds / max(slots, 1))


class Books:
    """Grants, releases and reservations of one walk's :class:`Claims`."""

    def __init__(
        self,
        claims: Claims,
        *,
        limit: int | None,
        priority: Sequence[float] | None,
        pinned: Sequence[Sequence[int]],
        clock: Callable[[], float],
        expected: Mapping[int, float] | None = None,
    ) -> None:
        """``limit``: most slots in use at once (None: no bound); ``priority``: higher is
        more urgent (ties: the lower node); ``pinned``: the groups of the walk, the keys of
        ``claims.blocks``; ``expected``: the known seconds of tests, for backfilling
        (:func:`shadow`). ValueError for a capacity below 1."""
        if any(c < 1 for c in claims.capacity):
            raise ValueError(f"capacities must be at least 1: {list(claims.capacity)}")
        self._claims = claims
        self._limit = limit
        self._priority = priority
        self._clock = clock
        self._expected = expected or {}
        # when each running test began (on the clock), for the expected ends of backfilling
        self._began: dict[int, float] = {}
        self._block_of = {v: g for g in claims.blocks for v in pinned[g]}
        self._block_slots = {g: max([1, *(claims.slots.get(v, 1) for v in pinned[g])])
                             for g in claims.blocks}
        count = len(claims.names)
        self._writers = [0] * count
        self._readers = [0] * count
        # the waiting tests (from their first failed check until they start), the lists they
        # wait in (heaps of (order key, node); an entry of a test no longer waiting is stale),
        # and how many wait to write each resource
        self._waiting: set[int] = set()
        self._wait_write: list[list[_Entry]] = [[] for _ in range(count)]
        self._wait_read: list[list[_Entry]] = [[] for _ in range(count)]
        self._wait_slots: list[_Entry] = []
        self._wait_alone: list[_Entry] = []
        # the exclusive next tests of open blocks that wait for an empty run: each is woken
        # whenever the run empties, not only when it is the most urgent waiter (the one woken
        # instead may wait for a lock of its block, which only it can give back)
        self._alone_next: set[int] = set()
        self._want_write = [0] * count
        # set aside (out of the ready heaps until woken); woken since last asked
        self._aside: set[int] = set()
        self._woken: list[int] = []
        # what runs: slots in use, tests running, the exclusive one running
        self._used = 0
        self._running: set[int] = set()
        self._alone: int | None = None
        self._alone_since = 0.0
        # blocks: group -> the worker it is open on (its claims taken), its tests not started,
        # not resolved, started and still running or queued, and the slots it keeps; a
        # worker's block with tests to start
        self._open: dict[int, Hashable] = {}
        self._pending = {g: len(pinned[g]) for g in claims.blocks}
        self._left = dict(self._pending)
        self._active = dict.fromkeys(claims.blocks, 0)
        self._keeps: dict[int, int] = {}
        self._dedicated: dict[Hashable, int] = {}
        self._started: set[int] = set()
        # the scopes of each open block its worker has not torn down since the block's latest
        # test started, and when that was (the starts are counted: a teardown reported for an
        # earlier test tore down an earlier set-up); what the kept blocks of the session lend
        # to their worker's tests: resource -> whether a block writes it
        self._alive: dict[int, set[str]] = {}
        self._since: dict[int, int] = {}
        self._start_count: dict[int, int] = {}
        self._starts = 0
        self._lent: dict[Hashable, dict[int, bool]] = {}
        #: node -> the claims it took at its start (not those a kept block lends its worker)
        self._took: dict[int, list[Claim]] = {}
        # handed over (:meth:`handover`): a test queued behind the one that frees what it
        # waited for, its claims and extra slots promised until it begins: per resource the
        # writers and readers promised, the slots reserved, and per node what it was promised
        self._promised_w = [0] * count
        self._promised_r = [0] * count
        self._reserved = 0
        self._promises: dict[int, tuple[list[Claim], int]] = {}
        #: the workers shut down early for what their session's blocks kept
        self._ended: list[Ended] = []
        # the figures
        self._holders = [0] * count
        self._held_since = [0.0] * count
        self._held = [0.0] * count
        self._written = [0.0] * count
        self._grants: dict[tuple[int, int], float] = {}
        self._waits: dict[int, list[Wait]] = {}
        self._alone_total = 0.0

    # -- questions -----------------------------------------------------------------------------

    def aside(self, node: int) -> bool:
        """Whether ``node`` is set aside (waits, and is not among the ready tests)."""
        return node in self._aside

    def dedicated(self, worker: Hashable) -> int | None:
        """The block (pinned group) open on ``worker`` that has tests to start: the worker
        takes none but them. None when there is none."""
        return self._dedicated.get(worker)

    def check(self, node: int, worker: Hashable) -> int:
        """May ready ``node`` start on ``worker`` now? :data:`START`; :data:`WAIT` (it is set
        aside until something it needs is freed); or :data:`STOP` (nothing of this priority
        may start on this worker now: an exclusive test runs, the bound is reached, a more
        urgent exclusive or heavy test waits, or the worker's block has tests to start).
        O(c log n)."""
        if self._alone is not None:
            return STOP
        mine = self._dedicated.get(worker)
        block = self._block_of.get(node)
        if mine is not None and block != mine:
            return STOP
        follower = block is not None and block in self._open
        if not follower and (self._better(self._wait_alone, node)
                             or self._better(self._wait_slots, node)) and not self._fits(node):
            return STOP
        claims = () if follower else self._needs(node)
        lent = self._lent.get(worker)
        for resource, writes in claims:
            keeps = None if lent is None else lent.get(resource)
            if self._covered(keeps, writes):
                continue  # a block of the session keeps it on this worker: the test runs there
            if not self._free(resource, writes, node, own_reader=keeps is False):
                return self._wait(node, LOCK, resource)
        if node in self._claims.exclusive and self._running:
            return self._wait(node, ALONE, -1)
        take = 0 if follower else self._slots(node)
        used = self._used + self._reserved
        if self._limit is not None and used + take > self._limit:
            if take <= 1 or used >= self._limit:
                return STOP
            return self._wait(node, SLOTS, -1)
        return START

    def queueable(self, node: int, worker: Hashable) -> bool:
        """Whether ``node`` may wait behind the test ``worker`` runs, to start when that one
        ends without asking: it takes nothing then but one slot (it holds nothing of its own,
        or its block is open on ``worker``), is not exclusive, and no more urgent exclusive or
        heavy test waits."""
        block = self._block_of.get(node)
        if block is not None:
            if self._open.get(block) != worker:
                return False
        elif node in self._claims.tests or self._slots(node) > 1:
            return False
        mine = self._dedicated.get(worker)
        return (node not in self._claims.exclusive and (mine is None or mine == block)
                and not self._better(self._wait_alone, node)
                and not self._better(self._wait_slots, node))

    def holds_back(self, held: Sequence[int], node: int) -> bool:
        """Whether a test more urgent than ``node`` waits for something the tests ``held``
        (a worker's) will free: a resource one of them holds, slots, an empty run. Then
        ``node`` must not be queued behind them: the worker that frees it is the first one
        that could start that test."""
        key = self._key(node)
        heaps = [self._wait_slots, self._wait_alone]
        for v in held:
            for resource, writes in self._needs(v):
                heaps.append(self._wait_write[resource])
                if writes:
                    heaps.append(self._wait_read[resource])
        return any(top is not None and top[0] < key for top in map(self._top, heaps))

    def kept_awaited(
        self, session: bool = False
    ) -> list[tuple[Hashable, int, int, frozenset[str]]]:
        """``(worker, block, test, scopes)`` for each kept block whose scopes can be torn down
        (not the session's; ``session``: only the session's) and whose resources the waiting
        ``test`` needs, the most urgent such test: the teardown of ``scopes`` on ``worker``
        (for the session's, the worker's end) gives them back."""
        found = []
        for block, worker in self._open.items():
            alive = self._alive.get(block)
            if self._left[block] or not alive or (SESSION in alive) != session:
                continue
            waiter = self._waiter(block)
            if waiter is not None:
                found.append((worker, block, waiter, frozenset(alive)))
        return found

    def ended_early(self, worker: str, block: int, waiter: int) -> None:
        """``worker`` (its name) is shut down so that ``waiter`` gets what ``block``, of its
        session, keeps: the summary says so."""
        names = self._claims.names
        held = tuple(sorted({names[resource] for resource, _ in self._claims.blocks[block]}))
        self._ended.append(Ended(worker, waiter, held))

    def handover(self, running: int, worker: Hashable) -> int | None:
        """The test to queue behind ``running``, the one test ``worker`` holds: the most
        urgent test set aside for a resource ``running`` holds that may start the moment
        ``running`` ends. Queued there, it starts on that worker without waiting for a round
        trip to the controller; what it takes is promised to it until then (None: no such
        test). Not for a test that waits for slots alone (which running test ends first is
        only expected, and the slots promised meanwhile could not be backfilled), blocks,
        exclusive tests, nor a worker a kept block of the session lends to. O(c log n)."""
        if (self._alone is not None or running in self._claims.exclusive
                or running in self._block_of or self._dedicated.get(worker) is not None
                or worker in self._lent or running not in self._running):
            return None
        frees = dict(self._claims.tests.get(running, ()))
        heaps = [self._wait_write[r] for r in frees]  # a reader frees only for writers
        heaps += [self._wait_read[r] for r, writes in frees.items() if writes]
        tops = [top for top in map(self._top, heaps) if top is not None]
        if not tops:
            return None
        node = min(tops)[1]
        if node in self._block_of or node in self._claims.exclusive:
            return None
        if self._better(self._wait_slots, node) or self._better(self._wait_alone, node):
            return None
        if self._limit is not None and (
                self._used + self._reserved - self._slots(running) + self._slots(node)
                > self._limit):
            return None
        # what check() would grant it the moment ``running`` gave its claims back
        if all(self._free(resource, writes, node, leaving=frees.get(resource))
               for resource, writes in self._needs(node)):
            return node
        return None

    def _promise(self, node: int, claims: list[Claim], behind: int | None) -> None:
        """Hold ``claims`` and the slots of handed-over ``node`` for it until it begins
        (beyond those of ``behind``, the test it starts after on its worker)."""
        for resource, writes in claims:
            if writes:
                self._promised_w[resource] += 1
            else:
                self._promised_r[resource] += 1
        # the slots it takes beyond those of the test it starts behind
        slots = max(0, self._slots(node) - (0 if behind is None else self._slots(behind)))
        self._reserved += slots
        self._promises[node] = (claims, slots)
        if node in self._aside:  # it waits no longer
            self._aside.discard(node)
            last = self._waits[node][-1]
            self._waits[node][-1] = Wait(last.kind, last.name, last.since, self._clock())

    def _unpromise(self, node: int) -> None:
        claims, slots = self._promises.pop(node)
        for resource, writes in claims:
            if writes:
                self._promised_w[resource] -= 1
            else:
                self._promised_r[resource] -= 1
        self._reserved -= slots

    def wake_lent(self, worker: Hashable) -> None:
        """The tests that wait for what the kept blocks of the session on ``worker`` lend it
        (the most urgent writer and reader of each resource) go back among the ready tests:
        ``worker`` may start them."""
        for resource in self._lent.get(worker, ()):
            self._wake_list(self._wait_write[resource])
            self._wake_list(self._wait_read[resource])

    def awaited(self, node: int) -> int | None:
        """When resolving ``node`` frees a block that a waiting test needs: the most urgent
        such test (the held test's teardown goes towards it); else None."""
        block = self._block_of.get(node)
        if block is None or block not in self._open or self._left[block] != 1:
            return None
        return self._waiter(block)

    def _waiter(self, block: int) -> int | None:
        """The most urgent test that waits for a resource ``block`` holds (None: none)."""
        found: list[_Entry] = []
        for resource, writes in self._claims.blocks[block]:
            heaps = (self._wait_write[resource], self._wait_read[resource]) if writes else (
                self._wait_write[resource],)
            found.extend(heap[0] for heap in heaps if self._top(heap) is not None)
        return min(found)[1] if found else None

    def woken(self) -> list[int]:
        """The tests woken since last asked: back among the ready tests."""
        woken, self._woken = self._woken, []
        return woken

    # -- events ----------------------------------------------------------------------------

    def start(
        self, node: int, worker: Hashable, running: bool, behind: int | None = None
    ) -> None:
        """``worker`` took ``node`` (``running``: it runs now, else it is queued behind
        ``behind``, the last test the worker holds): grant what it needs (to a test handed
        over, promise it)."""
        now = self._clock()
        self._starts += 1
        self._start_count[node] = self._starts
        if node in self._waiting:
            self._waiting.discard(node)
            for resource, writes in self._needs(node):
                if writes:
                    self._want_write[resource] -= 1
                self._wake(resource)
            self._wake_list(self._wait_slots)
            self._wake_list(self._wait_alone)
        self._started.add(node)
        block = self._block_of.get(node)
        if block is None:
            # what a kept block of the session lends the worker is the block's: the test
            # holds it under the block's lock, not a second time
            lent = self._lent.get(worker, {})
            took = self._took[node] = [
                (resource, writes) for resource, writes in self._claims.tests.get(node, ())
                if not self._covered(lent.get(resource), writes)]
            if not running and (took or self._slots(node) > 1):
                self._promise(node, took, behind)  # handed over: granted when it begins
            else:
                for resource, writes in took:
                    self._take(resource, writes, node, now)
        else:
            if block not in self._open:
                self._open[block] = worker
                for resource, writes in self._claims.blocks[block]:
                    self._take(resource, writes, -1 - block, now)
                self._keeps[block] = self._block_slots[block]
                self._used += self._block_slots[block]
            self._pending[block] -= 1
            self._active[block] += 1
            # the test sets the block's scopes up (again, if they were torn down)
            self._alive[block] = set(self._claims.scopes.get(block, ()))
            self._since[block] = self._starts
            if self._pending[block]:
                self._dedicated[worker] = block
            else:
                self._dedicated.pop(worker, None)
        if running:
            self.begin(node)

    def begin(self, node: int) -> None:
        """``node``, queued until now, runs (its worker finished the test before it)."""
        if node in self._promises:
            self._unpromise(node)
            now = self._clock()
            for resource, writes in self._took.get(node, ()):
                self._take(resource, writes, node, now)
        self._running.add(node)
        self._began[node] = self._clock()
        if node not in self._block_of:
            self._used += self._slots(node)
        if node in self._claims.exclusive:
            self._alone, self._alone_since = node, self._clock()

    def stop(self, node: int) -> None:
        """``node`` no longer runs (it finished, held or not, or its worker died): give back
        what it held for its run. O(c log n)."""
        if node not in self._running:
            return
        self._running.discard(node)
        self._began.pop(node, None)
        now = self._clock()
        if node == self._alone:
            self._alone = None
            self._alone_total += now - self._alone_since
        block = self._block_of.get(node)
        if block is None:
            self._used -= self._slots(node)
            for resource, writes in self._took.pop(node, ()):
                self._give(resource, writes, node, now)
        else:
            self._active[block] -= 1
            self._let_slots_go(block)
        self._wake_list(self._wait_slots)
        if not self._running:
            self._wake_list(self._wait_alone)
            for waiter in self._alone_next:
                self._unset(waiter)
            self._alone_next.clear()

    def unstart(self, node: int) -> None:
        """``node`` never began (its worker left first): it is ready again. What was promised
        to it is free again: as when a test gives back what it held, the best waiter of each
        such resource (and of the slots) is woken -- a test set aside because of the promise
        would otherwise wait for ever, and the tests it holds back behind it."""
        queued = node not in self._running
        if node in self._promises:
            claims, slots = self._promises[node]
            self._unpromise(node)
            for resource, _writes in claims:
                self._wake(resource)
            if slots:
                self._wake_list(self._wait_slots)
        self.stop(node)
        if node in self._started:
            self._started.discard(node)
            block = self._block_of.get(node)
            if block is not None:
                self._pending[block] += 1
                self._active[block] -= queued

    def resolve(self, node: int) -> None:
        """``node`` finished and settled, or will never run: the last test of a block gives
        the block's resources back."""
        block = self._block_of.get(node)
        if block is None:
            return
        if node not in self._started:
            self._pending[block] -= 1
            worker = self._open.get(block)
            if not self._pending[block] and self._dedicated.get(worker) == block:
                del self._dedicated[worker]
            self._let_slots_go(block)
        self._left[block] -= 1
        if self._left[block]:
            return
        worker = self._open.get(block)
        if not self._alive.get(block):
            self._close(block)
        elif worker is not None and SESSION in self._alive[block]:
            self._lend(worker)  # kept until its worker ends

    def torn(self, worker: Hashable, scopes: Collection[str], by: int) -> None:
        """``worker`` tore down ``scopes`` (node ids) after test ``by`` started there (in its
        teardown, or in one it deferred): the blocks open on it whose scopes are all torn down
        since their latest test started give back what they hold once resolved.
        O(open blocks + c log n)."""
        count = self._start_count.get(by)
        if count is None:
            return
        for block in [g for g, w in self._open.items() if w == worker]:
            if count >= self._since.get(block, 0) and block in self._alive:
                self._alive[block].difference_update(scopes)
                if not self._left[block] and not self._alive[block]:
                    self._close(block)

    def drop_worker(self, worker: Hashable) -> None:
        """``worker`` died: its blocks give back what they hold (their tests left go to
        another worker, the first one started opening the block again)."""
        self._dedicated.pop(worker, None)
        for block in [g for g, w in self._open.items() if w == worker]:
            self._close(block)

    def record(self) -> Record:
        """The figures so far (what is still held counts until now)."""
        now = self._clock()
        waits = {
            v: tuple(Wait(w.kind, w.name, w.since, now if w.until < 0 else w.until) for w in ws)
            for v, ws in self._waits.items()
        }
        waited: dict[str, list[float]] = {}
        for seen in waits.values():
            for name in {w.name for w in seen if w.kind == LOCK}:
                seconds = sum(w.until - w.since for w in seen if w.kind == LOCK and w.name == name)
                waited.setdefault(name, []).append(seconds)
        uses = []
        for r, name in enumerate(self._claims.names):
            held = self._held[r] + (now - self._held_since[r] if self._holders[r] else 0.0)
            written = self._written[r] + sum(
                now - since for (resource, _), since in self._grants.items() if resource == r
            )
            times = waited.get(name, [])
            uses.append(Use(name, self._claims.capacity[r], held, written, sum(times),
                            len(times)))
        alone = self._alone_total + (now - self._alone_since if self._alone is not None else 0)
        return Record(tuple(uses), waits, alone, self._limit, self._claims.clamped,
                      tuple(self._ended))

    # -- internals -------------------------------------------------------------------------

    def _key(self, node: int) -> tuple[float, int]:
        return (-self._priority[node] if self._priority is not None else 0.0, node)

    def _slots(self, node: int) -> int:
        block = self._block_of.get(node)
        return self._block_slots[block] if block is not None else self._claims.slots.get(node, 1)

    def _needs(self, node: int) -> Sequence[Claim]:
        block = self._block_of.get(node)
        return self._claims.tests.get(node, ()) if block is None else self._claims.blocks[block]

    def _top(self, heap: list[_Entry]) -> _Entry | None:
        """The best entry of a wait list that still waits (stale ones dropped)."""
        while heap and heap[0][1] not in self._waiting:
            heapq.heappop(heap)
        return heap[0] if heap else None

    def _fits(self, node: int) -> bool:
        """Whether ``node`` (outside blocks, holding nothing) is expected to end before every
        more urgent test that waits for slots or for an empty run could start anyway."""
        seconds = self._expected.get(node)
        if seconds is None or node in self._block_of or self._needs(node):
            return False
        now = self._clock()
        ends = [(self._end(v, now), self._slots(v)) for v in self._running]
        starts = []  # (when the waiting test could start, the slots it will take)
        if self._better(self._wait_alone, node):
            # every running test ended; it takes the whole run
            starts.append((shadow(self._used, 0, ends), self._limit or len(ends) + 1))
        top = self._top(self._wait_slots)
        if top is not None and top[0] < self._key(node) and self._limit is not None:
            needs = self._slots(top[1])
            starts.append((shadow(needs, self._limit - self._used, ends), needs))
        return all(start is not None and now + seconds <= start + late(seconds, slots)
                   for start, slots in starts)

    def _end(self, node: int, now: float) -> float | None:
        """When running ``node`` is expected to end (None: unknown; a block's test keeps its
        block's slots past its end)."""
        seconds = self._expected.get(node)
        if seconds is None or node in self._block_of:
            return None
        return max(now, self._began[node] + seconds)

    def _better(self, heap: list[_Entry], node: int) -> bool:
        """Whether a test more urgent than ``node`` waits in ``heap``."""
        top = self._top(heap)
        return top is not None and top[0] < self._key(node)

    def _free(self, resource: int, writes: bool, node: int, own_reader: bool = False,
              leaving: bool | None = None) -> bool:
        """Whether ``node`` may take ``resource``: nobody holds it against it, and no more
        urgent test waits for it (the reservation). ``own_reader``: one of its readers is a
        block of the session on the test's own worker, which does not count against it;
        ``leaving``: a test about to end holds it (True: writes it, False: reads it), as if it
        had given it back."""
        writers = self._writers[resource] + self._promised_w[resource] - (leaving is True)
        readers = self._readers[resource] + self._promised_r[resource] - (leaving is False)
        capacity = self._claims.capacity[resource]
        if writes and (writers >= capacity or readers - own_reader):
            return False
        if not writes and writers:
            return False
        if self._better(self._wait_write[resource], node):
            if not writes:
                return False
            # a unit for each other writer that waits first
            others = self._want_write[resource] - (node in self._waiting)
            if capacity - writers <= others:
                return False
        return not (writes and self._better(self._wait_read[resource], node))

    def _wait(self, node: int, kind: str, resource: int) -> int:
        """Set ``node`` aside (``kind`` and ``resource`` say why); it waits in the list of
        each thing it needs."""
        key = self._key(node)
        if node not in self._waiting:
            self._waiting.add(node)
            for r, writes in self._needs(node):
                if writes:
                    self._want_write[r] += 1
        for r, writes in self._needs(node):
            heapq.heappush(self._wait_write[r] if writes else self._wait_read[r], (key, node))
        if self._slots(node) > 1:
            heapq.heappush(self._wait_slots, (key, node))
        if node in self._claims.exclusive:
            heapq.heappush(self._wait_alone, (key, node))
            if self._block_of.get(node) in self._open:
                self._alone_next.add(node)
        name = self._claims.names[resource] if kind == LOCK else kind
        self._aside.add(node)
        self._waits.setdefault(node, []).append(Wait(kind, name, self._clock(), -1.0))
        return WAIT

    def _wake(self, resource: int) -> None:
        """The best waiter for ``resource`` goes back among the ready tests."""
        found = [e for e in (self._top(self._wait_write[resource]),
                             self._top(self._wait_read[resource])) if e is not None]
        if found:
            self._unset(min(found)[1])

    def _wake_list(self, heap: list[_Entry]) -> None:
        top = self._top(heap)
        if top is not None:
            self._unset(top[1])

    def _unset(self, node: int) -> None:
        """``node`` is no longer set aside (it still waits until it starts)."""
        if node not in self._aside:
            return
        self._aside.discard(node)
        last = self._waits[node][-1]
        self._waits[node][-1] = Wait(last.kind, last.name, last.since, self._clock())
        self._woken.append(node)

    def _take(self, resource: int, writes: bool, holder: int, now: float) -> None:
        if writes:
            self._writers[resource] += 1
            self._grants[(resource, holder)] = now
        else:
            self._readers[resource] += 1
        if not self._holders[resource]:
            self._held_since[resource] = now
        self._holders[resource] += 1

    def _give(self, resource: int, writes: bool, holder: int, now: float) -> None:
        if writes:
            self._writers[resource] -= 1
            self._written[resource] += now - self._grants.pop((resource, holder))
        else:
            self._readers[resource] -= 1
        self._holders[resource] -= 1
        if not self._holders[resource]:
            self._held[resource] += now - self._held_since[resource]
        self._wake(resource)

    def _let_slots_go(self, block: int) -> None:
        """A block with no test left to start and none running or queued gives its slots
        back."""
        if not self._pending[block] and not self._active[block] and block in self._keeps:
            self._used -= self._keeps.pop(block)
            self._wake_list(self._wait_slots)

    @staticmethod
    def _covered(keeps: bool | None, writes: bool) -> bool:
        """Whether a claim (``writes``) is covered by what a kept block of the session lends
        the worker (``keeps``: it writes the resource; None: it lends none of it)."""
        return keeps is not None and (keeps or not writes)

    def _lend(self, worker: Hashable) -> None:
        """What the kept blocks of the session on ``worker`` lend its tests, anew."""
        lent: dict[int, bool] = {}
        for block, on in self._open.items():
            if on == worker and not self._left[block] and SESSION in self._alive.get(block, ()):
                for resource, writes in self._claims.blocks[block]:
                    lent[resource] = lent.get(resource, False) or writes
        if lent:
            self._lent[worker] = lent
        else:
            self._lent.pop(worker, None)

    def _close(self, block: int) -> None:
        """``block`` gives back all it holds."""
        worker = self._open.pop(block, None)
        self._alive.pop(block, None)
        self._since.pop(block, None)
        if worker is None:
            return
        if worker in self._lent:
            self._lend(worker)
        if self._dedicated.get(worker) == block:
            del self._dedicated[worker]
        if block in self._keeps:
            self._used -= self._keeps.pop(block)
            self._wake_list(self._wait_slots)
        now = self._clock()
        for resource, writes in self._claims.blocks[block]:
            self._give(resource, writes, -1 - block, now)
