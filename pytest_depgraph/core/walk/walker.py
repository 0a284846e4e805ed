"""The walk of a dependency graph as a plain state machine: what is ready, what must skip.

Shaped like :class:`graphlib.TopologicalSorter`: the caller takes ready nodes, marks each one
started (:meth:`Walker.start`) and reports its outcome (:meth:`Walker.finish`); the walker
answers which nodes became ready and which will never run, with their root causes. It makes
no choice between ready nodes: which one runs next, and where, is the dispatch policy's
(:mod:`pytest_depgraph.core.walk.dispatch`). The serial run drives a walker directly; the xdist
scheduler drives it through the policy, as a :class:`QueueingWalker`: the same walk with the
verbs of workers that hold more than the test they run.

A node is resolved once *all* of its dependencies have finished, never earlier: then it is
skipped if one of its REQUIRES dependencies is unsatisfied (failed, skipped, or unsatisfied
from the start), and ready otherwise. Waiting for every dependency keeps the walk of a reduced
graph in the same order as the walk of the full one.

A *cleanup* (``cleanups``: node -> its targets) is skipped, as its own root cause, when none of
its targets ran: each was skipped, unsatisfied from the start, or finished without running
(the caller's ``ran`` says: a test skipped by its own marker did not).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from pytest_depgraph.core.graph.storage import Graph, Kind

_WAITING, _READY, _STARTED, _FINISHED, _SKIPPED, _UNSATISFIED = range(6)


@dataclass(frozen=True)
class Skip:
    """A node that will never run, and why."""

    node: int
    #: the first unsatisfied node up the graph; never a skipped one, but for a cleanup none of
    #: whose targets ran: itself
    root_cause: int


@dataclass
class Step:
    """What one event changed."""

    #: nodes that became ready (the walker: by node id; the dispatcher: best first)
    ready: list[int] = field(default_factory=list)
    #: nodes that will never run, dependencies before dependents
    skipped: list[Skip] = field(default_factory=list)


class Walker:
    """The state of a walk: which nodes wait, are ready, run, finished or skipped."""

    def __init__(
        self,
        graph: Graph,
        *,
        unsatisfied: Iterable[int] = (),
        cleanups: Mapping[int, Sequence[int]] | None = None,
        ran: Callable[[int], bool] = lambda node: True,
    ) -> None:
        """Prepare the walk of an acyclic ``graph``. O(V + E).

        ``unsatisfied``: nodes that will not run and count as failed; their REQUIRES-dependents
        are skipped with them as root cause (:attr:`initial` lists both). ``cleanups``: node ->
        its targets, each an ancestor of it in ``graph``; ``ran(node)``: whether a finished
        node really ran (asked when a cleanup is resolved).
        """
        size = graph.size
        self._cleanups = cleanups or {}
        self._ran = ran
        self._size = size
        self._state = bytearray(size)
        self._waiting = [0] * size
        requires: list[list[int]] = [[] for _ in range(size)]
        after: list[list[int]] = [[] for _ in range(size)]
        for dependent, dependency, kind in graph.triples():
            self._waiting[dependent] += 1
            (requires if kind is Kind.REQUIRES else after)[dependency].append(dependent)
        #: the REQUIRES- and AFTER-dependents of each node, in declaration order; tuples, as
        #: nothing changes them, which the cyclic garbage collector stops tracking once it sees
        #: they hold only numbers (lists it walks in every full collection of the run: rand10k's
        #: full serial run kept 20,000 more objects alive, its collector 25 M instructions more)
        self._requires_dependents: list[tuple[int, ...]] = [*map(tuple, requires)]
        self._after_dependents: list[tuple[int, ...]] = [*map(tuple, after)]
        # cause[v]: root cause recorded by the first unsatisfied REQUIRES dependency of v
        self._cause: list[int | None] = [None] * size
        self._skipped: dict[int, int] = {}
        self._in_flight = 0
        self._ready_count = 0
        self._finished = 0

        step = Step()
        causes = sorted(set(unsatisfied))
        for v in causes:
            if not 0 <= v < size:
                raise ValueError(f"unsatisfied node {v} outside a graph of {size} nodes")
            self._state[v] = _UNSATISFIED
            self._finished += 1
        #: the unsatisfied nodes given at construction, in node order
        self.unsatisfied = causes
        decided: list[tuple[int, int | None]] = [(v, v) for v in causes]
        for v in range(size):
            if not self._waiting[v] and self._state[v] == _WAITING:
                self._resolve(v, decided, step)
        self._propagate(decided, step)
        step.ready.sort()
        #: what was decided before anything ran: the first ready nodes and the first skips
        self.initial = step

    @property
    def size(self) -> int:
        """Nodes in the graph."""
        return self._size

    @property
    def skipped(self) -> Mapping[int, int]:
        """Every skip so far: node -> root cause."""
        return self._skipped

    @property
    def in_flight(self) -> int:
        """Nodes started and not finished."""
        return self._in_flight

    @property
    def ready_count(self) -> int:
        """Nodes ready and not started."""
        return self._ready_count

    @property
    def done(self) -> bool:
        """Every node finished, skipped, or unsatisfied from the start."""
        return self._finished == self._size

    def is_active(self) -> bool:
        """Whether anything can still happen: a node is ready or in flight
        (:meth:`graphlib.TopologicalSorter.is_active`)."""
        return bool(self._ready_count or self._in_flight)

    def is_ready(self, node: int) -> bool:
        """Whether ``node`` may start now."""
        return self._state[node] == _READY

    def root_cause(self, node: int) -> int | None:
        """The root cause of a skipped node; None for a node that is not skipped."""
        return self._skipped.get(node)

    def start(self, node: int) -> None:
        """Mark a ready node started. ValueError if it is not ready. O(1)."""
        if not 0 <= node < self._size or self._state[node] != _READY:
            raise ValueError(f"node {node} is not ready")
        self._state[node] = _STARTED
        self._in_flight += 1
        self._ready_count -= 1

    def finish(self, node: int, satisfied: bool) -> Step:
        """Record the outcome of a started node; say what became ready and what skips.

        O(k) for the k nodes resolved by this event (and their edges).
        """
        if not 0 <= node < self._size or self._state[node] != _STARTED:
            raise ValueError(f"node {node} is not running")
        self._state[node] = _FINISHED
        self._in_flight -= 1
        self._finished += 1
        step = Step()
        self._propagate([(node, None if satisfied else node)], step)
        return step

    def _make_ready(self, node: int, step: Step) -> None:
        self._state[node] = _READY
        self._ready_count += 1
        step.ready.append(node)

    def _propagate(self, finished: list[tuple[int, int | None]], step: Step) -> None:
        """Tell the dependents of finished nodes; ``(node, root cause or None if satisfied)``.

        Skipped nodes are finished too, so they join the queue; it is first in, first out,
        which lists skips after the skips they stem from. O(resolved nodes + their edges).
        """
        state, waiting, cause = self._state, self._waiting, self._cause
        for node, root in finished:
            for u in self._requires_dependents[node]:
                if root is not None and cause[u] is None:
                    cause[u] = root
                waiting[u] -= 1
                if not waiting[u] and state[u] == _WAITING:
                    self._resolve(u, finished, step)
            for u in self._after_dependents[node]:
                waiting[u] -= 1
                if not waiting[u] and state[u] == _WAITING:
                    self._resolve(u, finished, step)

    def _resolve(self, node: int, finished: list[tuple[int, int | None]], step: Step) -> None:
        """All dependencies of ``node`` are finished: skip it or make it ready."""
        root = self._cause[node]
        if root is None and node in self._cleanups and not self._target_ran(node):
            root = node  # a cleanup with nothing to clean up: its own root cause
        if root is None:
            self._make_ready(node, step)
            return
        self._state[node] = _SKIPPED
        self._finished += 1
        self._skipped[node] = root
        step.skipped.append(Skip(node, root))
        finished.append((node, root))

    def _target_ran(self, cleanup: int) -> bool:
        """Whether a target of ``cleanup`` finished and ran. O(targets)."""
        state, ran = self._state, self._ran
        return any(state[t] == _FINISHED and ran(t) for t in self._cleanups[cleanup])


class QueueingWalker(Walker):
    """The walk of workers that hold more than the test they run
    (:mod:`~pytest_depgraph.core.walk.queueing`): beside graphlib's verbs, the tests a started
    one will release, the next one started behind it before it is ready, a started test given
    back when its worker left before it began."""

    def early(self, node: int) -> list[int]:
        """The nodes that wait only for ``node`` (started), through an AFTER edge, and that no
        unsatisfied dependency holds back: they will be ready once ``node`` finished, whatever
        its outcome. A caller that runs them after ``node`` in one queue may start them now
        (:meth:`start_early`). O(AFTER-dependents of ``node``)."""
        if self._state[node] != _STARTED:
            return []
        state, waiting, cause = self._state, self._waiting, self._cause
        return [
            u for u in self._after_dependents[node]
            if waiting[u] == 1 and state[u] == _WAITING and cause[u] is None
            and (u not in self._cleanups or self._target_ran(u))
        ]

    def waiting_dependents(self, node: int) -> list[int]:
        """The dependents of ``node`` that still wait for their dependencies (``node`` among
        them, if it has not finished). O(dependents of ``node``)."""
        state = self._state
        return [
            u for dependents in (self._requires_dependents[node], self._after_dependents[node])
            for u in dependents if state[u] == _WAITING
        ]

    def released_by(self, node: int) -> list[int]:
        """The dependents of ``node`` that wait for ``node`` alone: they are decided (ready or
        skipped) when it finishes. O(dependents of ``node``)."""
        state, waiting = self._state, self._waiting
        return [
            u for dependents in (self._requires_dependents[node], self._after_dependents[node])
            for u in dependents if state[u] == _WAITING and waiting[u] == 1
        ]

    def start_early(self, node: int, after: int) -> None:
        """Start ``node`` before ``after`` finished, to run behind it (see :meth:`early`).
        ValueError if ``node`` does not wait for ``after`` alone. O(AFTER-dependents)."""
        if node not in self.early(after):
            raise ValueError(f"node {node} does not wait for {after} alone")
        self._state[node] = _STARTED
        self._in_flight += 1

    def unstart(self, node: int) -> None:
        """A started node that never began (its worker left first) waits again: it is ready
        again, or waits for the dependency it was started early behind. O(1)."""
        if not 0 <= node < self._size or self._state[node] != _STARTED:
            raise ValueError(f"node {node} is not running")
        self._in_flight -= 1
        if self._waiting[node]:
            self._state[node] = _WAITING
        else:
            self._state[node] = _READY
            self._ready_count += 1
