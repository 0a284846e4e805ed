"""The ready tests of a parallel walk, best first, and the pinned groups that reserve them.

:class:`ReadyTests` keeps each test the walk made ready in a heap by priority (ties by node
id), and in one heap per group (a class or module) for affinity. A pinned group is bound to
the worker that starts its first test: its ready tests are then reserved for that worker until
the whole group finished (or skipped), or the worker left. A test that started stays in the
heaps until it reaches the top, where it is dropped (it is no longer ready). The dispatcher
(:mod:`pytest_depgraph.core.walk.dispatch`) decides which worker asks; this says what is best for
it. Pure: no pytest; workers are any hashable values but None.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable, Sequence

#: a heap entry: (minus the priority, node)
_Entry = tuple[float, int]


class ReadyTests:
    """The ready tests by priority and group, and the pinned groups bound to workers."""

    def __init__(
        self,
        size: int,
        priority: Sequence[float] | None,
        group: Sequence[int] | None,
        pinned: Sequence[Sequence[int]],
        is_ready: Callable[[int], bool],
    ) -> None:
        """``priority``: higher first (all 0 when None); ``group``: an int per node (None: no
        affinity); ``pinned``: disjoint groups of nodes; ``is_ready``: the walk's answer,
        which decides what is stale. ValueError for a pinned node outside the nodes or in
        two groups."""
        self._key = [-p for p in priority] if priority is not None else [0.0] * size
        self._group = group
        self._is_ready = is_ready
        self._heap: list[_Entry] = []
        self._group_heaps: dict[int, list[_Entry]] = {}
        # pinned groups: node -> group, nodes not finished per group, group -> worker bound to
        # it, and per worker the ready nodes only it may start
        self._pin: dict[int, int] = {}
        self._pin_left: list[int] = []
        self._bound: dict[int, Hashable] = {}
        self._reserved: dict[Hashable, list[_Entry]] = {}
        for g, members in enumerate(pinned):
            for v in members:
                if not 0 <= v < size or v in self._pin:
                    raise ValueError(f"pinned node {v} outside the graph or in two groups")
                self._pin[v] = g
            self._pin_left.append(len(members))
        #: whether any node is pinned (without, every node is free for every worker)
        self.pins = bool(self._pin)

    def order_key(self, node: int) -> _Entry:
        """Best first: the highest priority, then the lowest node id."""
        return (self._key[node], node)

    def priority(self, node: int) -> float:
        """The priority ``node`` was given."""
        return -self._key[node]

    def pinned_group(self, node: int) -> int | None:
        """The pinned group of ``node`` (an index into ``pinned``), None when it has none."""
        return self._pin.get(node)

    def bound_groups(self, worker: Hashable) -> list[int]:
        """The pinned groups bound to ``worker`` now."""
        return [g for g, w in self._bound.items() if w == worker]

    def free_for(self, node: int, worker: Hashable) -> bool:
        """Whether ``node``'s pinned group, if any, is free or bound to ``worker``."""
        group = self._pin.get(node)
        return group is None or self._bound.get(group, worker) == worker

    def may_start(self, node: int, worker: Hashable) -> bool:
        """Whether ``worker`` may start ``node`` now (the bound and resources aside): it is
        ready and not set aside, and its pinned group, if any, is free or bound to
        ``worker``."""
        return self._is_ready(node) and (not self.pins or self.free_for(node, worker))

    def place(self, node: int) -> None:
        """``node`` became ready: into the heaps, or reserved for the worker its pinned group
        is bound to."""
        entry = self.order_key(node)
        group = self._pin.get(node)
        if group is not None and group in self._bound:
            self._reserve(entry)
        else:
            self._push(entry)

    def best(
        self, worker: Hashable, prefer_group: int | None, plain: bool = False
    ) -> int | None:
        """The best ready node ``worker`` may start (not started here): a node reserved for it
        first, else the highest priority, a node of ``prefer_group`` before the others at the
        same priority; ``plain``: by priority alone. O(log n) amortised."""
        reserved = None if plain else self._reserved.get(worker)
        if reserved:
            while reserved and not self._is_ready(reserved[0][1]):
                heapq.heappop(reserved)
            if reserved:
                return reserved[0][1]
        heap, pinned = self._heap, self.pins
        while heap:
            node = heap[0][1]
            if not self._is_ready(node):
                heapq.heappop(heap)
            elif pinned and not self.free_for(node, worker):
                # bound to another worker since it was queued: it waits for that one
                self._reserve(heapq.heappop(heap))
            else:
                break
        if not heap:
            return None
        if prefer_group is not None and not plain:
            top = self._group_top(prefer_group)
            if top is not None and top[0] == heap[0][0] and (
                not pinned or self.free_for(top[1], worker)
            ):
                return top[1]
        return heap[0][1]

    def best_reserved(self, worker: Hashable, group: int) -> int | None:
        """The best ready node of pinned ``group`` reserved for ``worker`` (not started here).
        O(r) for the r entries reserved for it, which drops those no longer ready: a pinned
        group is a chain, so each group bound to ``worker`` has one ready node at most."""
        reserved = self._reserved.get(worker)
        if not reserved:
            return None
        reserved[:] = [entry for entry in reserved if self._is_ready(entry[1])]
        heapq.heapify(reserved)
        found = [entry for entry in reserved if self._pin.get(entry[1]) == group]
        return min(found)[1] if found else None

    def best_of_group(self, node: int, worker: Hashable) -> int | None:
        """The best ready node of ``node``'s group that ``worker`` may start (not started
        here); None without groups, or when that one is pinned to another worker."""
        top = self._group_top(self._group[node]) if self._group is not None else None
        return top[1] if top is not None and self.free_for(top[1], worker) else None

    def bind(self, node: int, worker: Hashable) -> None:
        """``worker`` started ``node``: its pinned group, if any, is bound to ``worker``."""
        group = self._pin.get(node)
        if group is not None:
            self._bound[group] = worker

    def unpin(self, node: int) -> None:
        """A node of a pinned group finished or skipped: the last one frees the group."""
        group = self._pin.get(node)
        if group is not None:
            self._pin_left[group] -= 1
            if not self._pin_left[group]:
                self._bound.pop(group, None)

    def release(self, worker: Hashable) -> None:
        """Unbind every pinned group bound to ``worker`` (it died or left): their remaining
        nodes may go to any worker, the first one started binding the group again."""
        for group in self.bound_groups(worker):
            del self._bound[group]
        for entry in self._reserved.pop(worker, ()):
            if self._is_ready(entry[1]):
                self._push(entry)

    def _group_top(self, group: int) -> _Entry | None:
        """The best ready entry of ``group``'s heap (entries of nodes no longer ready are
        dropped on the way); None when none of its nodes is ready."""
        mine = self._group_heaps.get(group)
        while mine and not self._is_ready(mine[0][1]):
            heapq.heappop(mine)
        return mine[0] if mine else None

    def _reserve(self, entry: _Entry) -> None:
        """Queue a ready node of a bound pinned group for the worker its group is bound to."""
        worker = self._bound[self._pin[entry[1]]]
        heapq.heappush(self._reserved.setdefault(worker, []), entry)

    def _push(self, entry: _Entry) -> None:
        heapq.heappush(self._heap, entry)
        if self._group is not None:
            heapq.heappush(self._group_heaps.setdefault(self._group[entry[1]], []), entry)
