"""Which test next, and where: the one place of every scheduling rule of a parallel walk.

Beside the walk state (:class:`~pytest_depgraph.core.walk.walker.Walker`: what is ready, what
skips), a :class:`Dispatcher` decides which ready test goes to which worker:

* **priority**: the longest remaining path to the end of the graph first, each test weighted
  by its expected duration (:func:`priorities`); with shared resources, a resource's queue of
  holders counts as a chain and exclusive tests go first
  (:mod:`~pytest_depgraph.core.walk.urgency`); ties in node order;
* **affinity**: a worker that finished a test takes a test that this test just made ready
  in the same group (class or module) before anything else -- it continues the chain it runs,
  so pytest keeps the class and module fixtures set up; otherwise a test of the group it ran
  last, when that costs no priority;
* **pinned groups**: once a test of a pinned group started on a worker, the group's other
  tests go only to that worker, first, until the whole group finished (or skipped) or the
  worker left (the books of the ready tests and the groups:
  :mod:`~pytest_depgraph.core.walk.ready`);
* **the bound**: at most ``limit`` tests *running* at once. A worker runs one test at a time;
  what it holds beyond that is queued behind it and is not running. Workers beyond what can
  ever run at once (the bound, or the graph's width: a chain keeps one busy) are of no use
  (:meth:`Dispatcher.surplus`);
* **shared resources**: a test that holds resources, weighs more than one slot of the bound
  or runs alone starts only once all of it is free for it, and while it waits the less urgent
  tests that would take it do not start; a block of tests that hold resources as one is a
  pinned group whose worker takes nothing else until it started all of it (the books and
  their rules: :mod:`~pytest_depgraph.core.walk.resource_books`);
* **queueing**: a worker may hold more than the test it runs (up to ``hold``), so that it
  never waits for the controller between two tests (which tests may wait behind another:
  :mod:`~pytest_depgraph.core.walk.queueing`). A test is handed out ready (every dependency
  finished), or, the next test of a pinned group, behind the one test it waits for; a queued
  test goes back to the walk (ready again, or waiting for that one) only when its worker
  leaves before it began (:meth:`Dispatcher.remove_worker`);
* **settling**: a test whose worker knew no next test when it ran it has the teardown of its
  class, module and session fixtures still to come (the worker tears down towards the test it
  runs next). Such a test is *held*: its worker is free, but its dependents start only once
  that teardown was reported (:meth:`Dispatcher.settle`), as serially; a worker that gets
  nothing else is asked to finish it towards the dependent that waits
  (:meth:`Dispatcher.teardowns`);
* **scopes torn down**: a block keeps its lock until its worker tore its class, module or
  package down (:meth:`Dispatcher.torn`); an idle worker is asked to when a test waits for
  it (:meth:`Dispatcher.scope_teardowns`); a block of the session keeps it until its worker
  ends (:meth:`Dispatcher.ends`) and that worker runs the lock's other holders.

One API drives it: :meth:`~Dispatcher.assign` hands out tests, :meth:`~Dispatcher.complete`
and :meth:`~Dispatcher.settle` say how they went, :meth:`~Dispatcher.teardowns` names the held
tests to settle now, :meth:`~Dispatcher.torn` says which scopes a worker tore down and
:meth:`~Dispatcher.scope_teardowns` names the ones to tear down now,
:meth:`~Dispatcher.remove_worker` (then :meth:`~Dispatcher.finish` for the test it ran) says a
worker left. Pure: no pytest; workers are any hashable values but None.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence

from pytest_depgraph.core.graph.storage import Graph
from pytest_depgraph.core.graph.toposort import chain_cover
from pytest_depgraph.core.walk.inputs import WalkInputs, priorities, weights
from pytest_depgraph.core.walk.queueing import MAX_HOLD, REFILL_AT, Queueing
from pytest_depgraph.core.walk.ready import ReadyTests
from pytest_depgraph.core.walk.resource_books import START, STOP, WAIT, Books
from pytest_depgraph.core.walk.resource_cost import Record
from pytest_depgraph.core.walk.urgency import with_resources
from pytest_depgraph.core.walk.walker import QueueingWalker, Skip, Step

#: how many of the most urgent ready tests a handover looks at, setting aside those that wait
#: (with every worker busy, none was asked yet)
_LOOK_AHEAD = 8

__all__ = [
    "MAX_HOLD", "Dispatcher", "Skip", "Step", "WalkInputs", "WalkView", "priorities", "weights",
    "width",
]

def width(graph: Graph, never: Iterable[int]) -> int:
    """How many tests of ``graph`` can ever run at once (a chain keeps one worker busy), but
    for the nodes that ``never`` run. O(V + E)."""
    return chain_cover(graph, range(graph.size), set(never))


class Dispatcher:
    """Hands out ready nodes to workers by priority, affinity, pinned groups and the bound."""

    def __init__(self, inputs: WalkInputs) -> None:
        """Prepare the walk of ``inputs``' acyclic graph with its options. O(V + E)."""
        graph, priority, weight = inputs.graph, inputs.priority, inputs.weight
        group, limit, pinned, claims = inputs.group, inputs.limit, inputs.pinned, inputs.claims
        durations = inputs.durations
        size = graph.size
        if claims is not None and priority is not None and weight is not None:
            # a resource's queue of holders is a chain of its own (urgency's docstring)
            priority = with_resources(priority, weight, claims, pinned, limit)
        self._walk = QueueingWalker(graph, unsatisfied=inputs.unsatisfied, cleanups=inputs.cleanups,
                           ran=inputs.ran)
        self._graph = graph
        self._width: int | None = None
        self._limit = limit
        self._group = group
        self._books = None if claims is None else Books(
            claims, limit=limit, priority=priority, pinned=pinned, clock=inputs.clock,
            expected=durations,
        )
        self._ready = ReadyTests(
            size, priority, group, pinned,
            self._walk.is_ready if self._books is None else self._startable,
        )
        self._queueing = Queueing(
            graph, self._walk, self._ready, priority=priority, weight=weight, group=group,
            hold=inputs.hold, durations=durations or {}, books=self._books,
        )
        # workers: what each holds (the first runs, the rest wait behind it), in the order
        # they were added; who holds a node; the group each ran last; the tests its last test
        # made ready (the chain it may continue)
        self._workers: dict[Hashable, deque[int]] = {}
        self._retired: set[Hashable] = set()
        self._owner: dict[int, Hashable] = {}
        self._busy = 0  # workers (or anonymous starts) holding a node: the running ones
        self._last_group: dict[Hashable, int] = {}
        self._chain: dict[Hashable, list[int]] = {}
        #: held tests (run, teardown deferred) -> the worker that ran them; they settle later
        self._unsettled: dict[int, Hashable] = {}
        #: held tests whose worker was asked to finish their teardown
        self._asked: set[int] = set()
        #: kept blocks whose worker was asked to tear their scopes down, by worker (until it
        #: takes another test)
        self._asked_scopes: dict[Hashable, set[int]] = {}

        initial = self._walk.initial
        for v in [*self._walk.unsatisfied, *(skip.node for skip in initial.skipped)]:
            self._ready.unpin(v)
            if self._books is not None:
                self._books.resolve(v)
        for v in initial.ready:
            self._ready.place(v)
        self.initial = Step(sorted(initial.ready, key=self._ready.order_key), initial.skipped)

    # -- the walk ------------------------------------------------------------------------------

    @property
    def view(self) -> WalkView:
        """The walk as it is now, read-only (what the tests check at every event)."""
        return WalkView(self)

    @property
    def done(self) -> bool:
        """Every node finished, skipped, or unsatisfied from the start."""
        return self._walk.done

    @property
    def finished(self) -> bool:
        """Nothing held by any worker, and nothing left that a worker could start.

        Ready nodes with no worker holding anything: a worker is still to come (a replacement
        of one that died), so the walk is not over. Nor is it while a held test has a dependent
        waiting for it: that one runs once it settled. A held test nothing waits for settles
        when its worker shuts down.
        """
        if self._busy:
            return False
        if any(self._walk.waiting_dependents(node) for node in self._unsettled):
            return False
        return self._walk.done or self._walk.ready_count == 0

    def _startable(self, node: int) -> bool:
        return self._walk.is_ready(node) and (self._books is None or not self._books.aside(node))

    def record(self) -> Record | None:
        """What the shared resources cost the walk so far (None: it has none)."""
        return None if self._books is None else self._books.record()

    def width(self) -> int:
        """How many tests can ever run at once, bound aside: the graph's :func:`width` without
        the tests that never run (unsatisfied from the start, skipped at once). O(V + E) the
        first time."""
        if self._width is None:
            never = {*self._walk.unsatisfied, *(skip.node for skip in self.initial.skipped)}
            self._width = width(self._graph, never)
        return self._width

    def at_once(self) -> int:
        """The most tests that can ever run at once: the bound, or :meth:`width`; at least
        one."""
        found = self.width()
        return max(1, found if self._limit is None else min(self._limit, found))

    # -- workers -------------------------------------------------------------------------------

    def surplus(self) -> list[Hashable]:
        """Retire the workers beyond :meth:`at_once` (the last ones added), and return them:
        they could never get a test. Asked before anything is handed out."""
        workers = [w for w in self._workers if w not in self._retired]
        surplus = workers[self.at_once():]
        self._retired.update(surplus)
        return surplus

    def add_worker(self, worker: Hashable) -> None:
        """A worker that may be given tests (after the ones added before it)."""
        self._workers.setdefault(worker, deque())

    def retire(self, worker: Hashable) -> None:
        """``worker`` gets no more tests (it shuts down); it finishes what it holds."""
        if worker in self._workers:
            self._retired.add(worker)

    def running_on(self, worker: Hashable) -> int | None:
        """The test ``worker`` runs now (the first it holds); None when it holds none."""
        held = self._workers.get(worker)
        return held[0] if held else None

    def unsettled(self, node: int) -> bool:
        """Whether ``node`` ran with its teardown deferred and has not settled yet."""
        return node in self._unsettled

    def _unsettled_on(self, worker: Hashable) -> int | None:
        """The held test of ``worker`` that has not settled yet (None when there is none)."""
        return next((n for n, w in self._unsettled.items() if w == worker), None)

    def remove_worker(self, worker: Hashable) -> int | None:
        """``worker`` left (finished or died): release its pinned groups, put the tests queued
        behind its running one back among the ready ones, and return the running one (None
        when it held nothing). The caller finishes that one (:meth:`finish`).

        A worker finishes the teardown of its held test before it begins its next one: when
        that held test has not settled, the worker left during that teardown. Then the held
        test is returned (the caller settles it, :meth:`settle`), and the running one never
        began: it goes back among the ready ones too."""
        self._ready.release(worker)
        if self._books is not None:
            self._books.drop_worker(worker)
        self._retired.discard(worker)
        self._last_group.pop(worker, None)
        self._chain.pop(worker, None)
        unsettled = self._unsettled_on(worker)
        held = self._workers.pop(worker, None)
        if not held:
            return unsettled
        self._busy -= 1
        running = held.popleft() if unsettled is None else unsettled
        for node in held:  # never began: another worker takes them
            del self._owner[node]
            self._queueing.forget(node)
            self._walk.unstart(node)
            if self._books is not None:
                self._books.unstart(node)
            if self._walk.is_ready(node):
                self._ready.place(node)
        return running

    def complete(
        self,
        worker: Hashable,
        node: int,
        satisfied: bool,
        seconds: float = 0.0,
        *,
        held: bool = False,
    ) -> Step:
        """``worker`` finished ``node`` in ``seconds``: say what became ready and what skips.
        The tests ``node`` made ready in ``worker``'s group are the chain it continues at the
        next :meth:`assign`.

        ``held``: the worker deferred the teardown of the test's class, module and session
        fixtures. The worker is free, but nothing is decided yet: the test settles when that
        teardown was reported (:meth:`settle`), and until then its dependents wait."""
        self._queueing.saw(seconds)
        if held:
            self._let_go(node)
            self._unsettled[node] = worker
            return Step()
        step = self.finish(node, satisfied)
        self._continue_after(worker, step)
        return step

    def settle(self, node: int, satisfied: bool) -> Step:
        """The deferred teardown of held ``node`` was reported (or its worker died): record its
        outcome, say what became ready and what skips, as :meth:`complete` does."""
        worker = self._unsettled.pop(node)
        self._asked.discard(node)
        step = self._resolve(node, satisfied)
        self._continue_after(worker, step)
        return step

    def teardowns(self) -> list[tuple[Hashable, int, int]]:
        """The held tests to settle now: ``(worker, test, towards)`` for each worker that holds
        nothing else and ran a held test that a dependent waits for; ``towards`` is the most
        urgent of those dependents, the test the teardown makes way for (the scopes both share
        stay set up; a test of the held test's own group that waits for it alone comes first).
        Each held test is named once."""
        asked = []
        for node, worker in self._unsettled.items():
            if node in self._asked or self._workers.get(worker) or worker in self._retired:
                continue  # its next test, or its shutdown, finishes the teardown anyway
            waiting = self._chain_after(node) or self._walk.waiting_dependents(node)
            if not waiting and self._books is not None:
                # the last test of a block: its settling frees what a waiting test needs
                awaited = self._books.awaited(node)
                waiting = [] if awaited is None else [awaited]
            if waiting:
                self._asked.add(node)
                asked.append((worker, node, min(waiting, key=self._ready.order_key)))
        return asked

    def torn(self, worker: Hashable, scopes: Sequence[str], by: int) -> None:
        """``worker`` tore down ``scopes`` (node ids; "" the session) in the teardown of test
        ``by`` (its own or a deferred one): the blocks kept for them give their resources
        back, and the next :meth:`assign` hands out what that woke."""
        if self._books is not None:
            self._books.torn(worker, scopes, by)

    def scope_teardowns(self) -> list[tuple[Hashable, int, tuple[str, ...]]]:
        """``(worker, towards, scopes)`` for each worker that holds nothing and keeps a block
        whose resources the waiting test ``towards`` needs (the most urgent): tear ``scopes``
        down now, towards it. After a :meth:`teardowns` request; once per kept block until
        its worker takes another test; one request per worker (the scopes of all its blocks
        asked at once, towards the most urgent of their waiters)."""
        asked: dict[Hashable, tuple[int, set[str]]] = {}
        for worker, block, waiter, scopes in self._books.kept_awaited() if self._books else ():
            mine = self._asked_scopes.setdefault(worker, set())
            if (self._workers.get(worker) or worker in self._retired or block in mine
                    or self._unsettled_on(worker) in self._asked):
                continue  # its next test or shutdown goes first, or it was asked
            mine.add(block)
            towards, wanted = asked.setdefault(worker, (waiter, set()))
            wanted.update(scopes)
            if self._ready.order_key(waiter) < self._ready.order_key(towards):
                asked[worker] = (waiter, wanted)
        return [(worker, towards, tuple(sorted(wanted)))
                for worker, (towards, wanted) in asked.items()]

    def ends(self, name: Callable[[Hashable], str] = str) -> list[Hashable]:
        """The worker to shut down now, retired (at most one; never the last): nothing runs, no
        teardown is asked, and a test waits for what a block of the session keeps there but
        cannot run there (a writer, readers of the session on two workers). The record of
        the walk names it (``name``: a worker's name there)."""
        books = self._books
        if books is None or self._busy or any(n in self._asked for n in self._unsettled):
            return []
        left = [w for w in self._workers if w not in self._retired]
        for worker, block, waiter, _scopes in books.kept_awaited(session=True):
            if worker in left and len(left) > 1 and not self._asked_scopes.get(worker):
                self._retired.add(worker)
                books.ended_early(name(worker), block, waiter)
                return [worker]
        return []

    def _continues_held(self, worker: Hashable) -> bool:
        """Whether ``worker``'s held test, once settled, makes a test of its own group ready:
        then the worker waits for that chain (it is asked to settle, :meth:`teardowns`) rather
        than take a test that would tear down the fixtures the chain shares."""
        held = self._unsettled_on(worker)
        return held is not None and bool(self._chain_after(held))

    def _chain_after(self, held: int) -> list[int]:
        """The tests of ``held``'s group that wait for ``held`` alone."""
        group = self._group
        if group is None:
            return []
        return [u for u in self._walk.released_by(held) if group[u] == group[held]]

    def _continue_after(self, worker: Hashable, step: Step) -> None:
        """The tests ``step`` made ready in the group ``worker`` ran last: its chain."""
        last = self._last_group.get(worker)
        if last is not None and self._group is not None:
            group = self._group
            self._chain[worker] = [v for v in step.ready if group[v] == last]

    def nothing_to_decide(self, first: Hashable = None) -> bool:
        """Whether the event of worker ``first`` (it finished a test) leaves nothing to
        decide: it still holds more than :data:`REFILL_AT` tests, and every worker holds
        something or gets nothing more. Then :meth:`assign` hands out nothing, and
        :meth:`teardowns`, :meth:`scope_teardowns` and :meth:`ends`, which only ever name a
        worker that holds nothing, name none (most events of a run of short tests)."""
        workers = self._workers
        if first is None or len(workers.get(first, ())) <= REFILL_AT:
            return False
        # every worker busy (``_busy`` counts those that hold a test) is the usual answer;
        # the retired ones are looked at only when some worker holds nothing
        return self._busy == len(workers) or all(
            held or w in self._retired for w, held in workers.items()
        )

    def assign(self, first: Hashable = None) -> list[tuple[Hashable, list[int]]]:
        """Hand out ready tests to the workers (``first`` first); return, per worker given
        any, the tests it was given, in the order it runs them. They count as started.

        Every worker that holds nothing gets the best test for it (the chain it runs, its
        pinned group, then priority and affinity), as long as fewer than ``limit`` run. A
        worker that runs one test gets behind it the test that waits for what that one frees,
        if it can start the moment it ends (a handover: :meth:`_hand_over`). Then, while more
        tests are ready than there are workers, a worker may queue more behind the test it
        runs, up to ``hold`` tests (:mod:`~pytest_depgraph.core.walk.queueing` says which).

        After ``first`` finished a test there may be nothing to decide
        (:meth:`nothing_to_decide`).
        """
        if self.nothing_to_decide(first):
            return []
        self._place_woken()
        order = [w for w in self._workers if w not in self._retired]
        if first in self._workers and first not in self._retired:
            order.remove(first)
            order.insert(0, first)
        given: dict[Hashable, list[int]] = {}
        for worker in order:
            if self._workers[worker] or self._continues_held(worker):
                continue
            node = self._continue_chain(worker)
            if node is None:
                node = self._best(worker)
            if node is None:
                if self._full():
                    break
                continue  # what is ready is pinned to other workers, or waits
            given[worker] = [node]
        if self._queueing.hold > 1:
            self._queue_behind(order, given)
        self._chain.clear()
        return list(given.items())

    def _queue_behind(self, order: list[Hashable], given: dict[Hashable, list[int]]) -> None:
        """While more tests are ready than the workers take, queue tests behind the running
        ones of the workers in ``order``, best first, one per worker per round (priority
        spreads), as queueing chooses; each one started here and added to ``given``. Only a
        worker that holds at most :data:`REFILL_AT` tests is topped up: in one go."""
        queueing, holds = self._queueing, self._workers
        self._hand_over(order, given)
        queueing.begin(len(order))
        candidates = [w for w in order if 0 < len(holds[w]) <= REFILL_AT]
        while candidates:
            still = []
            for worker in candidates:
                held = holds[worker]
                queued = queueing.choose(
                    worker, held, self._chain.get(worker, ()), self._last_group.get(worker)
                )
                if queued is None:
                    continue
                if queued.behind is None:
                    self._take(queued.node, worker)
                else:
                    self._behind(queued.node, queued.behind, worker)
                given.setdefault(worker, []).append(queued.node)
                if len(held) < queueing.hold:
                    still.append(worker)
            candidates = still

    def _hand_over(self, order: list[Hashable], given: dict[Hashable, list[int]]) -> None:
        """Behind the one test a worker runs, the test set aside for a resource that test
        holds that may start the moment it ends
        (:meth:`~pytest_depgraph.core.walk.resource_books.Books.handover`): it starts there
        without waiting for the report to reach the controller and come back."""
        books = self._books
        if books is None:
            return
        for worker in order:
            held = self._workers[worker]
            if len(held) != 1:
                continue
            self._set_aside_what_waits(worker)
            node = books.handover(held[0], worker)
            if node is not None and self._walk.is_ready(node) and self._ready.free_for(
                    node, worker):
                self._take(node, worker)
                given.setdefault(worker, []).append(node)

    def _set_aside_what_waits(self, worker: Hashable) -> None:
        """The most urgent ready tests that must wait (for a resource, slots), set aside
        into the books' wait lists, up to the first that may start: with every worker busy
        nobody asked yet, and a handover goes to the most urgent test that waits."""
        books = self._books
        assert books is not None
        self._place_woken()
        for _ in range(_LOOK_AHEAD):
            node = self._ready.best(worker, None, plain=True)
            if node is None or books.check(node, worker) != WAIT:
                return

    def _continue_chain(self, worker: Hashable) -> int | None:
        """A test the worker's last test made ready in its group, if it may take one now."""
        chain = self._chain.get(worker)
        if not chain or self._ready.bound_groups(worker):
            return None  # its pinned group (or --dist unit) comes first
        if self._full():
            return None
        for node in chain:  # best first
            if self._ready.may_start(node, worker) and (
                self._books is None or self._books.check(node, worker) == START
            ):
                self._take(node, worker)
                return node
        return None

    def _best(self, worker: Hashable) -> int | None:
        """Start and return the best ready node for idle ``worker``; None when none is ready
        for it or the bound is hit.

        A ready node of a pinned group bound to ``worker`` comes first (it keeps that group's
        fixtures alive); nodes of groups bound to other workers are never returned. Otherwise
        best is highest priority, then lowest id; a node of the group the worker ran last with
        the best priority wins over the rest. A test that must wait for resources is set
        aside on the way (:meth:`~pytest_depgraph.core.walk.resource_books.Books.check`). O(log n)
        amortised.
        """
        if self._full():
            return None
        books = self._books
        block = None if books is None else books.dedicated(worker)
        if books is not None and block is None:
            books.wake_lent(worker)
        plain = False
        while True:
            self._place_woken()
            node = (
                self._ready.best(worker, self._last_group.get(worker), plain) if block is None
                else self._ready.best_reserved(worker, block)  # its block's next test only
            )
            if node is None:
                return None
            verdict = START if books is None else books.check(node, worker)
            if verdict == STOP:
                if plain or block is not None:
                    return None
                # held back for a more urgent test: that one, if it may start, by priority
                # alone (not the worker's pinned group or group first)
                plain = True
            elif verdict == START:
                self._take(node, worker)
                return node

    def _full(self) -> bool:
        """Whether the bound keeps every test from starting (with resources the books say it
        per test: a block's next test takes no new slot)."""
        return self._books is None and self._limit is not None and self._busy >= self._limit

    def _place_woken(self) -> None:
        """The tests the books woke go back among the ready ones."""
        if self._books is not None:
            for node in self._books.woken():
                self._ready.place(node)

    def finish(self, node: int, satisfied: bool) -> Step:
        """Record the outcome of a started node whose worker left (:meth:`remove_worker`); say
        what became ready (best first) and what skips. O(k log n) for the k nodes resolved by
        this event."""
        self._let_go(node)
        return self._resolve(node, satisfied)

    def _let_go(self, node: int) -> None:
        """The worker holding ``node`` is done with it (the next one it holds runs now)."""
        self._queueing.forget(node)
        books = self._books
        if books is not None:
            books.stop(node)
        worker = self._owner.pop(node, None)
        held = self._workers.get(worker) if worker is not None else None
        if held is not None:
            if held and held[0] == node:
                held.popleft()
                if held and books is not None:
                    books.begin(held[0])
            elif node in held:
                held.remove(node)
            if not held:
                self._busy -= 1

    def _resolve(self, node: int, satisfied: bool) -> Step:
        """Tell the walk how ``node`` went; place what became ready."""
        step = self._walk.finish(node, satisfied)
        ready, books = self._ready, self._books
        if ready.pins or books is not None:
            for v in (node, *(skip.node for skip in step.skipped)):
                ready.unpin(v)
                if books is not None:
                    books.resolve(v)
        for v in step.ready:
            ready.place(v)
        if len(step.ready) > 1:
            step.ready.sort(key=ready.order_key)
        return step

    # -- internals -------------------------------------------------------------------------

    def _take(self, node: int, worker: Hashable) -> None:
        """Start ready ``node`` as the last one ``worker`` holds."""
        self._walk.start(node)
        self._hand(node, worker)

    def _behind(self, node: int, last: int, worker: Hashable) -> None:
        """Start ``node``, which waits for ``last`` alone, behind it on ``worker``."""
        self._walk.start_early(node, last)
        self._hand(node, worker)

    def _hand(self, node: int, worker: Hashable) -> None:
        """``worker`` holds the started ``node`` last."""
        self._owner[node] = worker
        self._asked_scopes.pop(worker, None)
        held = self._workers.setdefault(worker, deque())
        if self._books is not None:
            self._books.start(node, worker, running=not held, behind=held[-1] if held else None)
        if not held:
            self._busy += 1
        held.append(node)
        if self._group is not None:
            self._last_group[worker] = self._group[node]
        self._ready.bind(node, worker)



class WalkView:
    """A dispatcher's walk as it is now, read-only: what the tests of the walk check at every
    event, beside what the dispatcher's one API answers."""

    def __init__(self, dispatcher: Dispatcher) -> None:
        self._of = dispatcher

    @property
    def skipped(self) -> Mapping[int, int]:
        """Every skip so far: node -> root cause."""
        return self._of._walk.skipped

    @property
    def in_flight(self) -> int:
        """Nodes handed out and not finished (running or queued)."""
        return self._of._walk.in_flight

    @property
    def ready_count(self) -> int:
        """Nodes ready and not handed out."""
        return self._of._walk.ready_count

    @property
    def running(self) -> int:
        """Nodes running: one per worker that holds any (what the bound counts)."""
        return self._of._busy

    def is_ready(self, node: int) -> bool:
        """Whether ``node`` is ready and not handed out."""
        return self._of._walk.is_ready(node)

    def root_cause(self, node: int) -> int | None:
        """The root cause of a skipped node; None for a node that is not skipped."""
        return self._of._walk.root_cause(node)

    def may_start(self, node: int, worker: Hashable) -> bool:
        """Whether ``worker`` may start ``node`` now (the bound and resources aside)."""
        return self._of._ready.may_start(node, worker)

    def bound_groups(self, worker: Hashable) -> list[int]:
        """The pinned groups bound to ``worker`` now (indexes into ``pinned``)."""
        return self._of._ready.bound_groups(worker)

    def held(self, worker: Hashable) -> Sequence[int]:
        """What ``worker`` holds, the one it runs first."""
        return tuple(self._of._workers.get(worker, ()))

    def unsettled_on(self, worker: Hashable) -> int | None:
        """The held test of ``worker`` that has not settled yet (None when there is none)."""
        return self._of._unsettled_on(worker)
