"""Which test next, and where: the one place of every scheduling rule of a parallel walk.

Beside the walk state (:class:`~pytest_depgraph.core.walker.Walker`: what is ready, what
skips), a :class:`Dispatcher` decides which ready test goes to which worker:

* **priority**: the longest remaining path to the end of the graph first, each test weighted
  by its expected duration (:func:`priorities`); ties in node order;
* **affinity**: a worker that finished a test takes a test that this test just made ready
  in the same group (class or module) before anything else -- it continues the chain it runs,
  so pytest keeps the class and module fixtures set up; otherwise a test of the group it ran
  last, when that costs no priority;
* **pinned groups**: once a test of a pinned group started on a worker, the group's other
  tests go only to that worker, first, until the whole group finished (or skipped) or the
  worker left (the books of the ready tests and the groups: :mod:`~pytest_depgraph.core.ready`);
* **the bound**: at most ``limit`` tests *running* at once. A worker runs one test at a time;
  what it holds beyond that is queued behind it and is not running. Workers beyond what can
  ever run at once (the bound, or the graph's width: a chain keeps one busy) are of no use
  (:meth:`Dispatcher.surplus`);
* **queueing**: a worker may hold more than the test it runs (up to ``hold``), so that it
  never waits for the controller between two tests -- see :meth:`Dispatcher.assign` for when
  a test is queued behind another. Only a ready test (every dependency finished) is ever
  handed out, so a queued test never needs recalling;
* **settling**: a test whose worker knew no next test when it ran it has the teardown of its
  class, module and session fixtures still to come (the worker tears down towards the test it
  runs next). Such a test is *held*: its worker is free, but its dependents start only once
  that teardown was reported (:meth:`Dispatcher.settle`), as serially; a worker that gets
  nothing else is asked to finish it towards the dependent that waits
  (:meth:`Dispatcher.teardowns`).

One API drives it: :meth:`~Dispatcher.assign` hands out tests, :meth:`~Dispatcher.complete`
and :meth:`~Dispatcher.settle` say how they went, :meth:`~Dispatcher.teardowns` names the held
tests to settle now, :meth:`~Dispatcher.remove_worker` (then :meth:`~Dispatcher.finish` for the
test it ran) says a worker left. Pure: no pytest; workers are any hashable values but None.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Iterable, Mapping, Sequence

from pytest_depgraph.core.graph import Graph
from pytest_depgraph.core.order import chain_cover
from pytest_depgraph.core.paths import critical_path
from pytest_depgraph.core.ready import ReadyTests
from pytest_depgraph.core.walker import Skip, Step, Walker

__all__ = ["Dispatcher", "Skip", "Step", "priorities", "weights", "width"]

#: most tests a worker holds at once (the one it runs and those queued behind it)
MAX_HOLD = 16
#: a worker is topped up only once it holds at most this many (one message for several tests;
#: one still queued behind the running one while the message travels)
REFILL_AT = 2
#: more than one test is queued behind a running one only while the tests a worker holds are
#: expected to take less than this together (seconds): then a round trip per test would cost
#: a noticeable share of the run, and committing the tests early costs little
QUEUE_SECONDS = 0.05


def weights(durations: Mapping[int, float], item_count: int, size: int) -> list[float]:
    """Expected seconds per node: the previous run's, else their mean (1 without any); 0 for
    the nodes beyond the items (unselected: they never run)."""
    default = sum(durations.values()) / len(durations) if durations else 1.0
    found = [durations.get(n, default) for n in range(item_count)]
    return found + [0.0] * (size - item_count)


def priorities(graph: Graph, weight: Sequence[float]) -> list[float]:
    """Per node, the expected seconds from its start to the end of the longest chain it
    heads (itself included). O(V + E)."""
    return critical_path(graph, weight)


def width(graph: Graph, never: Iterable[int]) -> int:
    """How many tests of ``graph`` can ever run at once (a chain keeps one worker busy), but
    for the nodes that ``never`` run. O(V + E)."""
    return chain_cover(graph, range(graph.size), set(never))


class Dispatcher:
    """Hands out ready nodes to workers by priority, affinity, pinned groups and the bound."""

    def __init__(
        self,
        graph: Graph,
        *,
        priority: Sequence[float] | None = None,
        weight: Sequence[float] | None = None,
        group: Sequence[int] | None = None,
        limit: int | None = None,
        unsatisfied: Iterable[int] = (),
        pinned: Sequence[Sequence[int]] = (),
        hold: int = 1,
        durations: Mapping[int, float] | None = None,
    ) -> None:
        """Prepare the walk of an acyclic ``graph``. O(V + E).

        ``priority``: higher runs first (default all 0; ties by node id); ``weight``: each
        node's expected seconds (what :func:`priorities` summed), for the queueing rule.
        ``group``: an int per node (e.g. its module) for affinity. ``limit``: most nodes
        running at once (None: no bound). ``unsatisfied``: nodes that will not run and count
        as failed. ``pinned``: disjoint groups of nodes bound to the worker that starts the
        first of them. ``hold``: most nodes one worker holds (1: nothing is queued).
        ``durations``: the previous run's seconds of the nodes that have one.
        """
        size = graph.size
        if priority is not None and len(priority) != size:
            raise ValueError(f"{len(priority)} priorities for {size} nodes")
        if weight is not None and len(weight) != size:
            raise ValueError(f"{len(weight)} weights for {size} nodes")
        if group is not None and len(group) != size:
            raise ValueError(f"{len(group)} groups for {size} nodes")
        if limit is not None and limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")
        if hold < 1:
            raise ValueError(f"hold must be at least 1, not {hold}")
        self.walk = Walker(graph, unsatisfied=unsatisfied)
        self._graph = graph
        self._width: int | None = None
        self._limit = limit
        self._hold = hold
        # the most urgent priority a node can make ready once it finished
        if priority is None:
            self._after = [0.0] * size
        elif weight is None:
            self._after = list(priority)
        else:
            self._after = [p - w for p, w in zip(priority, weight)]
        self._group = group
        self._known = durations or {}
        self._ready = ReadyTests(size, priority, group, pinned, self.walk.is_ready)
        # continues[v]: v has a dependent in its own group or pinned group, so a test of
        # another one queued behind v would tear down the fixtures that chain shares
        self._continues = bytearray(size)
        for dependent, dependency, _ in graph.triples():
            if (group is not None and group[dependent] == group[dependency]) or (
                self._ready.pinned_group(dependency) is not None
                and self._ready.pinned_group(dependent) == self._ready.pinned_group(dependency)
            ):
                self._continues[dependency] = 1
        # workers: what each holds (the first runs, the rest wait behind it), in the order
        # they were added; who holds a node; the group each ran last; the tests its last test
        # made ready (the chain it may continue)
        self._workers: dict[Hashable, deque[int]] = {}
        self._retired: set[Hashable] = set()
        self._owner: dict[int, Hashable] = {}
        self._busy = 0  # workers (or anonymous starts) holding a node: the running ones
        self._last_group: dict[Hashable, int] = {}
        #: nodes started behind the test they wait for (a unit's next test), not yet finished
        self._early: set[int] = set()
        self._chain: dict[Hashable, list[int]] = {}
        # this run's seconds per test, for the expected duration of tests without one
        self._seen_total = 0.0
        self._seen = 0
        #: held tests (run, teardown deferred) -> the worker that ran them; they settle later
        self._unsettled: dict[int, Hashable] = {}
        #: held tests whose worker was asked to finish their teardown
        self._asked: set[int] = set()

        initial = self.walk.initial
        for v in self.walk.unsatisfied:
            self._ready.unpin(v)
        for skip in initial.skipped:
            self._ready.unpin(skip.node)
        for v in initial.ready:
            self._ready.place(v)
        self.initial = Step(sorted(initial.ready, key=self._ready.order_key), initial.skipped)

    # -- the walk ------------------------------------------------------------------------------

    @property
    def skipped(self) -> Mapping[int, int]:
        """Every skip so far: node -> root cause."""
        return self.walk.skipped

    @property
    def in_flight(self) -> int:
        """Nodes handed out and not finished (running or queued)."""
        return self.walk.in_flight

    @property
    def running(self) -> int:
        """Nodes running: one per worker that holds any (what the bound counts)."""
        return self._busy

    @property
    def ready_count(self) -> int:
        """Nodes ready and not handed out."""
        return self.walk.ready_count

    @property
    def done(self) -> bool:
        """Every node finished, skipped, or unsatisfied from the start."""
        return self.walk.done

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
        if any(self.walk.waiting_dependents(node) for node in self._unsettled):
            return False
        return self.walk.done or self.walk.ready_count == 0

    def may_start(self, node: int, worker: Hashable) -> bool:
        """Whether ``worker`` may start ``node`` now (bound aside): it is ready, and its pinned
        group, if any, is free or bound to ``worker``."""
        return self.walk.is_ready(node) and self._ready.free_for(node, worker)

    def bound_groups(self, worker: Hashable) -> list[int]:
        """The pinned groups bound to ``worker`` now (indexes into ``pinned``)."""
        return self._ready.bound_groups(worker)

    def width(self) -> int:
        """How many tests can ever run at once, bound aside: the graph's :func:`width` without
        the tests that never run (unsatisfied from the start, skipped at once). O(V + E) the
        first time."""
        if self._width is None:
            never = {*self.walk.unsatisfied, *(skip.node for skip in self.initial.skipped)}
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

    def held(self, worker: Hashable) -> Sequence[int]:
        """What ``worker`` holds, the one it runs first."""
        return tuple(self._workers.get(worker, ()))

    def running_on(self, worker: Hashable) -> int | None:
        """The test ``worker`` runs now (the first it holds); None when it holds none."""
        held = self._workers.get(worker)
        return held[0] if held else None

    def unsettled(self, node: int) -> bool:
        """Whether ``node`` ran with its teardown deferred and has not settled yet."""
        return node in self._unsettled

    def unsettled_on(self, worker: Hashable) -> int | None:
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
        self._retired.discard(worker)
        self._last_group.pop(worker, None)
        self._chain.pop(worker, None)
        unsettled = self.unsettled_on(worker)
        held = self._workers.pop(worker, None)
        if not held:
            return unsettled
        self._busy -= 1
        running = held.popleft() if unsettled is None else unsettled
        for node in held:  # never began: another worker takes them
            del self._owner[node]
            self._early.discard(node)
            self.walk.unstart(node)
            if self.walk.is_ready(node):
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
        # clipped: a few slow outliers (a loaded machine) must not hide that tests are short
        self._seen_total += min(seconds, QUEUE_SECONDS)
        self._seen += 1
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
            waiting = self._chain_after(node) or self.walk.waiting_dependents(node)
            if waiting:
                self._asked.add(node)
                asked.append((worker, node, min(waiting, key=self._ready.order_key)))
        return asked

    def _continues_held(self, worker: Hashable) -> bool:
        """Whether ``worker``'s held test, once settled, makes a test of its own group ready:
        then the worker waits for that chain (it is asked to settle, :meth:`teardowns`) rather
        than take a test that would tear down the fixtures the chain shares."""
        held = self.unsettled_on(worker)
        return held is not None and bool(self._chain_after(held))

    def _chain_after(self, held: int) -> list[int]:
        """The tests of ``held``'s group that wait for ``held`` alone."""
        group = self._group
        if group is None:
            return []
        return [u for u in self.walk.released_by(held) if group[u] == group[held]]

    def _continue_after(self, worker: Hashable, step: Step) -> None:
        """The tests ``step`` made ready in the group ``worker`` ran last: its chain."""
        last = self._last_group.get(worker)
        if last is not None and self._group is not None:
            group = self._group
            self._chain[worker] = [v for v in step.ready if group[v] == last]

    def assign(self, first: Hashable = None) -> list[tuple[Hashable, list[int]]]:
        """Hand out ready tests to the workers (``first`` first); return, per worker given
        any, the tests it was given, in the order it runs them. They count as started.

        Every worker that holds nothing gets the best test for it (the chain it runs, its
        pinned group, then priority and affinity), as long as fewer than ``limit`` run. Then,
        while more tests are ready than there are workers, a worker may queue more behind the
        test it runs, best first, up to ``hold`` tests; a test is queued only when

        * it is at least as urgent as anything the tests the worker holds can make ready, so
          a test on the critical path never waits behind it;
        * for a third test and more: the tests the worker holds are expected to take less than
          :data:`QUEUE_SECONDS` together (the previous run's durations, else this run's mean);
        * the worker holds at most :data:`REFILL_AT` tests: it is topped up in one go;
        * behind a test whose chain goes on in its own group (it has a dependent there), only
          a test of that group, so nothing in between tears down the fixtures the chain shares
          (behind a test of a pinned group, only that group's next test).

        After ``first`` finished a test and still holds more than that while every worker
        holds something, there is nothing to decide (most events of a run of short tests).
        """
        workers = self._workers
        if first is not None and len(workers.get(first, ())) > REFILL_AT and all(
            held or w in self._retired for w, held in workers.items()
        ):
            return []
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
                if self._limit is not None and self._busy >= self._limit:
                    break
                continue  # what is ready is pinned to other workers
            given[worker] = [node]
        if self._hold > 1:
            self._queue(order, given)
        self._chain.clear()
        return list(given.items())

    def _queue(self, order: list[Hashable], given: dict[Hashable, list[int]]) -> None:
        """Queue tests behind the running ones, one per worker per round (priority spreads)."""
        workers = self._workers
        candidates = [w for w in order if 0 < len(workers[w]) <= REFILL_AT]
        # per worker, what its held tests add up to, kept up to date as tests are queued
        tallies: dict[Hashable, list[float | None]] = {w: [None, None] for w in candidates}
        while candidates:
            still = []
            for worker in candidates:
                node = self._queueable(worker, len(order), tallies[worker])
                if node is None:
                    continue
                given.setdefault(worker, []).append(node)
                if len(workers[worker]) < self._hold:
                    still.append(worker)
            candidates = still

    def _queueable(
        self, worker: Hashable, workers: int, tally: list[float | None]
    ) -> int | None:
        """The best test to queue behind what ``worker`` holds, started; None if none may.

        ``tally``: the expected seconds of the tests it holds and their :meth:`_bar` (None:
        not known yet); kept up to date here, so that a top-up of many tests does not add
        up the same tests again for each."""
        held = self._workers[worker]
        if len(held) >= self._hold:
            return None
        last = held[-1]
        group = self._ready.pinned_group(last)
        if group is not None:
            # the next test of its pinned group (a --dist unit) waits for ``last`` alone, by
            # an ordering edge: it runs behind it, on this worker, whatever ``last`` does
            for follower in self.walk.early(last):
                if self._ready.pinned_group(follower) == group:
                    self.walk.start_early(follower, last)
                    self._early.add(follower)
                    self._hand(follower, worker)
                    tally[:] = None, None  # ``last`` made its chain's way: add up again
                    return follower
        if not self.walk.ready_count:
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
        if not short and (len(held) >= 2 or self.walk.ready_count < workers):
            return None
        node: int | None = None
        for candidate in self._chain.get(worker, ()):
            if self.may_start(candidate, worker):
                node = candidate
                break
        if node is None:
            if not self._continues[last]:
                node = self._ready.best(worker, self._last_group.get(worker))
            elif group is None:
                # its chain goes on once it finished: only a test of its own group goes in
                # between, which keeps the fixtures that chain shares set up
                node = self._ready.best_of_group(last, worker)
        if node is None:
            return None
        bar = tally[1]
        if bar is None:
            bar = tally[1] = self._bar(held)
        if self._ready.priority(node) < bar:
            return None  # it would hold back something more urgent
        self._take(node, worker)
        seconds = self._expected(node)
        tally[0] = QUEUE_SECONDS if seconds is None else expected + seconds
        tally[1] = max(bar, self._after[node])
        return node

    def _bar(self, held: deque[int]) -> float:
        """The most urgent priority the tests ``held`` can make ready once they finished (a
        test whose follower is queued behind it already made its chain's way)."""
        bar = float("-inf")
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

    def _continue_chain(self, worker: Hashable) -> int | None:
        """A test the worker's last test made ready in its group, if it may take one now."""
        chain = self._chain.get(worker)
        if not chain or self.bound_groups(worker):
            return None  # its pinned group (or --dist unit) comes first
        if self._limit is not None and self._busy >= self._limit:
            return None
        for node in chain:  # best first
            if self.may_start(node, worker):
                self._take(node, worker)
                return node
        return None

    def _best(self, worker: Hashable) -> int | None:
        """Start and return the best ready node for idle ``worker``; None when none is ready
        for it or the bound is hit.

        A ready node of a pinned group bound to ``worker`` comes first (it keeps that group's
        fixtures alive); nodes of groups bound to other workers are never returned. Otherwise
        best is highest priority, then lowest id; a node of the group the worker ran last with
        the best priority wins over the rest. O(log n) amortised.
        """
        if self._limit is not None and self._busy >= self._limit:
            return None
        node = self._ready.best(worker, self._last_group.get(worker))
        if node is not None:
            self._take(node, worker)
        return node

    def finish(self, node: int, satisfied: bool) -> Step:
        """Record the outcome of a started node whose worker left (:meth:`remove_worker`); say
        what became ready (best first) and what skips. O(k log n) for the k nodes resolved by
        this event."""
        self._let_go(node)
        return self._resolve(node, satisfied)

    def _let_go(self, node: int) -> None:
        """The worker holding ``node`` is done with it (the next one it holds runs now)."""
        self._early.discard(node)
        worker = self._owner.pop(node, None)
        held = self._workers.get(worker) if worker is not None else None
        if held is not None:
            if held and held[0] == node:
                held.popleft()
            elif node in held:
                held.remove(node)
            if not held:
                self._busy -= 1

    def _resolve(self, node: int, satisfied: bool) -> Step:
        """Tell the walk how ``node`` went; place what became ready."""
        step = self.walk.finish(node, satisfied)
        self._ready.unpin(node)
        for skip in step.skipped:
            self._ready.unpin(skip.node)
        for v in step.ready:
            self._ready.place(v)
        step.ready.sort(key=self._ready.order_key)
        return step

    # -- internals -------------------------------------------------------------------------

    def _take(self, node: int, worker: Hashable) -> None:
        """Start ready ``node`` as the last one ``worker`` holds."""
        self.walk.start(node)
        self._hand(node, worker)

    def _hand(self, node: int, worker: Hashable) -> None:
        """``worker`` holds the started ``node`` last."""
        self._owner[node] = worker
        held = self._workers.setdefault(worker, deque())
        if not held:
            self._busy += 1
        held.append(node)
        if self._group is not None:
            self._last_group[worker] = self._group[node]
        self._ready.bind(node, worker)
