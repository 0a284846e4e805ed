"""The walk of a dependency graph as a plain state machine: what is ready, what must skip.

The caller drives (like :class:`graphlib.TopologicalSorter`): it asks :meth:`Walker.next` for a
node to run and reports each outcome with :meth:`Walker.finish`; the walker answers which nodes
became ready and which will never run. The serial loop and the xdist scheduler share it.

A node is resolved once *all* of its dependencies have finished, never earlier: then it is
skipped if one of its REQUIRES dependencies is unsatisfied (failed, skipped, or unsatisfied
from the start), and ready otherwise. Waiting for every dependency keeps the walk of a reduced
graph in the same order as the walk of the full one.

*Pinned groups* are sets of nodes that must run on one worker: once a node of a group started
on a worker, the group's other nodes go only to that worker, until every node of the group
finished (or skipped) or :meth:`Walker.release` frees the worker's groups (it died). The walker
does not order a group: the plan chains its nodes with AFTER edges, so one runs at a time.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from pytest_depgraph.core.graph import Graph, Kind

_WAITING, _READY, _STARTED, _FINISHED, _SKIPPED, _UNSATISFIED = range(6)


@dataclass(frozen=True)
class Skip:
    """A node that will never run, and why."""

    node: int
    #: the first unsatisfied node up the graph; never a skipped one
    root_cause: int


@dataclass
class Step:
    """What one event changed."""

    #: nodes that became ready, highest priority first, then by node id
    ready: list[int] = field(default_factory=list)
    #: nodes that will never run, dependencies before dependents
    skipped: list[Skip] = field(default_factory=list)


class Walker:
    """Hands out ready nodes by priority, with group affinity and a bound on nodes in flight."""

    def __init__(
        self,
        graph: Graph,
        *,
        priority: Sequence[float] | None = None,
        group: Sequence[int] | None = None,
        limit: int | None = None,
        unsatisfied: Iterable[int] = (),
        pinned: Sequence[Sequence[int]] = (),
    ) -> None:
        """Prepare the walk of an acyclic ``graph``. O(V + E).

        ``priority``: higher runs first (default all 0; ties by node id). ``group``: an int per
        node (e.g. its module); :meth:`next` prefers a node of the caller's group when that
        costs no priority. ``limit``: most nodes in flight (None: no bound). ``unsatisfied``:
        nodes that will not run and count as failed; their REQUIRES-dependents are skipped
        with them as root cause. ``pinned``: disjoint groups of nodes bound to the worker that
        starts the first of them (see :meth:`next`).
        """
        size = graph.size
        if priority is not None and len(priority) != size:
            raise ValueError(f"{len(priority)} priorities for {size} nodes")
        if group is not None and len(group) != size:
            raise ValueError(f"{len(group)} groups for {size} nodes")
        if limit is not None and limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")
        self._size = size
        self._limit = limit
        self._key = [-p for p in priority] if priority is not None else [0.0] * size
        self._group = group
        self._state = bytearray(size)
        self._waiting = [0] * size
        self._requires_dependents: list[list[int]] = [[] for _ in range(size)]
        self._after_dependents: list[list[int]] = [[] for _ in range(size)]
        for dependent, dependency, kind in graph.triples():
            self._waiting[dependent] += 1
            if kind is Kind.REQUIRES:
                self._requires_dependents[dependency].append(dependent)
            else:
                self._after_dependents[dependency].append(dependent)
        # cause[v]: root cause recorded by the first unsatisfied REQUIRES dependency of v
        self._cause: list[int | None] = [None] * size
        self._skipped: dict[int, int] = {}
        self._heap: list[tuple[float, int]] = []
        self._group_heaps: dict[int, list[tuple[float, int]]] = {}
        self._in_flight = 0
        self._ready_count = 0
        self._finished = 0
        # pinned groups: node -> group, nodes not finished per group, group -> worker bound to
        # it, and per worker the ready nodes only it may start
        self._pin: dict[int, int] = {}
        self._pin_left: list[int] = []
        self._bound: dict[int, Hashable] = {}
        self._reserved: dict[Hashable, list[tuple[float, int]]] = {}
        for g, members in enumerate(pinned):
            for v in members:
                if not 0 <= v < size or v in self._pin:
                    raise ValueError(f"pinned node {v} outside the graph or in two groups")
                self._pin[v] = g
            self._pin_left.append(len(members))

        step = Step()
        causes = sorted(set(unsatisfied))
        for v in causes:
            if not 0 <= v < size:
                raise ValueError(f"unsatisfied node {v} outside a graph of {size} nodes")
            self._state[v] = _UNSATISFIED
            self._finished += 1
            self._unpin(v)
        for v in range(size):
            if not self._waiting[v] and self._state[v] == _WAITING:
                self._make_ready(v, step)
        self._propagate([(v, v) for v in causes], step)
        step.ready.sort(key=self._order_key)
        self.initial = step

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

    def is_ready(self, node: int) -> bool:
        """Whether ``node`` may start now (limit aside)."""
        return self._state[node] == _READY

    def may_start(self, node: int, worker: Hashable = None) -> bool:
        """Whether ``worker`` may start ``node`` now (limit aside): it is ready, and its pinned
        group, if any, is free or bound to ``worker``."""
        return self._state[node] == _READY and self._free_for(node, worker)

    def bound_groups(self, worker: Hashable) -> list[int]:
        """The pinned groups bound to ``worker`` now (indexes into ``pinned``)."""
        return [g for g, w in self._bound.items() if w == worker]

    def release(self, worker: Hashable) -> None:
        """Unbind every pinned group bound to ``worker`` (it died or left): their remaining
        nodes may go to any worker, the first one started binding the group again."""
        for group in self.bound_groups(worker):
            del self._bound[group]
        for entry in self._reserved.pop(worker, ()):
            if self._state[entry[1]] == _READY:
                self._push(entry)

    def root_cause(self, node: int) -> int | None:
        """The root cause of a skipped node; None for a node that is not skipped."""
        return self._skipped.get(node)

    def next(self, prefer_group: int | None = None, worker: Hashable = None) -> int | None:
        """Start and return the best ready node for ``worker``; None when none is ready for
        it or the limit is hit.

        A ready node of a pinned group bound to ``worker`` comes first (it keeps that group's
        fixtures alive); nodes of groups bound to other workers are never returned. Otherwise
        best is highest priority, then lowest id; a node of ``prefer_group`` with the best
        priority wins over the rest. Stale heap entries (nodes started through the other
        heap or :meth:`start`) are dropped as met. O(log n) amortised.
        """
        if self._limit is not None and self._in_flight >= self._limit:
            return None
        heap, state = self._heap, self._state
        reserved = self._reserved.get(worker)
        if reserved:
            while reserved and state[reserved[0][1]] != _READY:
                heapq.heappop(reserved)
            if reserved:
                node = heapq.heappop(reserved)[1]
                self._start(node, worker)
                return node
        while heap:
            node = heap[0][1]
            if state[node] != _READY:
                heapq.heappop(heap)
            elif not self._free_for(node, worker):
                # bound to another worker since it was queued: it waits for that one
                self._reserve(heapq.heappop(heap))
            else:
                break
        if not heap:
            return None
        if prefer_group is not None:
            mine = self._group_heaps.get(prefer_group)
            if mine:
                while mine and state[mine[0][1]] != _READY:
                    heapq.heappop(mine)
                if mine and mine[0][0] == heap[0][0] and self._free_for(mine[0][1], worker):
                    node = heapq.heappop(mine)[1]
                    self._start(node, worker)
                    return node
        node = heapq.heappop(heap)[1]
        self._start(node, worker)
        return node

    def start(self, node: int, worker: Hashable = None) -> None:
        """Start a given ready node (the serial path) on ``worker``. ValueError if it is not
        ready, its pinned group is bound to another worker, or the limit is hit. O(1); its
        heap entries go stale."""
        if not 0 <= node < self._size or self._state[node] != _READY:
            raise ValueError(f"node {node} is not ready")
        if not self._free_for(node, worker):
            raise ValueError(f"node {node} is pinned to another worker")
        if self._limit is not None and self._in_flight >= self._limit:
            raise ValueError(f"{self._in_flight} nodes in flight already (limit {self._limit})")
        self._start(node, worker)

    def finish(self, node: int, satisfied: bool) -> Step:
        """Record the outcome of a started node; say what became ready and what skips.

        O(k log n) for the k nodes resolved by this event.
        """
        if not 0 <= node < self._size or self._state[node] != _STARTED:
            raise ValueError(f"node {node} is not running")
        self._state[node] = _FINISHED
        self._in_flight -= 1
        self._finished += 1
        self._unpin(node)
        step = Step()
        self._propagate([(node, None if satisfied else node)], step)
        step.ready.sort(key=self._order_key)
        return step

    def _order_key(self, node: int) -> tuple[float, int]:
        return (self._key[node], node)

    def _free_for(self, node: int, worker: Hashable) -> bool:
        group = self._pin.get(node)
        return group is None or self._bound.get(group, worker) == worker

    def _start(self, node: int, worker: Hashable = None) -> None:
        self._state[node] = _STARTED
        self._in_flight += 1
        self._ready_count -= 1
        group = self._pin.get(node)
        if group is not None:
            self._bound[group] = worker

    def _unpin(self, node: int) -> None:
        """A node of a pinned group finished or skipped: the last one frees the group."""
        group = self._pin.get(node)
        if group is not None:
            self._pin_left[group] -= 1
            if not self._pin_left[group]:
                self._bound.pop(group, None)

    def _make_ready(self, node: int, step: Step) -> None:
        self._state[node] = _READY
        self._ready_count += 1
        entry = (self._key[node], node)
        group = self._pin.get(node)
        if group is not None and group in self._bound:
            self._reserve(entry)
        else:
            self._push(entry)
        step.ready.append(node)

    def _reserve(self, entry: tuple[float, int]) -> None:
        """Queue a ready node of a bound pinned group for the worker its group is bound to."""
        worker = self._bound[self._pin[entry[1]]]
        heapq.heappush(self._reserved.setdefault(worker, []), entry)

    def _push(self, entry: tuple[float, int]) -> None:
        heapq.heappush(self._heap, entry)
        if self._group is not None:
            heapq.heappush(self._group_heaps.setdefault(self._group[entry[1]], []), entry)

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
        if root is None:
            self._make_ready(node, step)
            return
        self._state[node] = _SKIPPED
        self._finished += 1
        self._unpin(node)
        self._skipped[node] = root
        step.skipped.append(Skip(node, root))
        finished.append((node, root))
