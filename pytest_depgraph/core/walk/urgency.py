"""How urgent each test of a walk with shared resources is: the critical path, lengthened by the
queue of tests that share a resource, and the exclusive tests first.

Without resources, a test's priority is the longest chain of expected seconds it heads
(:func:`~pytest_depgraph.core.graph.paths.critical_path`): the walk starts the longest chains first.
A resource is a chain of its own: its writers run at most ``capacity`` at once and its readers
never beside a writer, so from the start of a writer, the resource stays busy for at least the
writers still to come, over its capacity, and the readers' turn. A writer that heads that queue
is as urgent as a chain that long, even when no dependency follows it, and a lock that is the
bottleneck of the run is fed first, from the start. An exclusive test stops every worker for
its own time wherever it runs, and more when it waits for the running tests to end: it goes
first among the ready tests, when nothing runs yet.

Pure: no pytest. O(V + C log C) for the C claims.
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_depgraph.core.walk.claims import Claims


def readers_turn(seconds: Sequence[float], parallelism: int | None) -> float:
    """The least time a resource is held by readers that take ``seconds`` each, at most
    ``parallelism`` at once (None: no bound): the longest of them, or their total spread over
    the workers."""
    if not seconds:
        return 0.0
    return max(max(seconds), sum(seconds) / max(1, parallelism or len(seconds)))


def with_resources(
    priority: Sequence[float],
    weight: Sequence[float],
    claims: Claims,
    pinned: Sequence[Sequence[int]],
    parallelism: int | None,
) -> list[float]:
    """``priority`` (per node, the critical path it heads) raised for the tests that hold
    resources and for the exclusive tests of ``claims``, given each node's expected seconds
    ``weight``. A block (a pinned group that holds resources as one) counts as one holder,
    as long as its tests together; all its tests get its urgency."""
    raised = list(priority)
    # per resource: the holders (a test or a block: its nodes, its seconds), as writer or reader
    writers: list[list[tuple[list[int], float]]] = [[] for _ in claims.names]
    readers: list[list[tuple[list[int], float]]] = [[] for _ in claims.names]
    holders = [([node], found) for node, found in claims.tests.items()]
    holders += [(list(pinned[g]), found) for g, found in claims.blocks.items()]
    for nodes, found in holders:
        seconds = sum(weight[v] for v in nodes)
        for resource, writes in found:
            (writers if writes else readers)[resource].append((nodes, seconds))
    for resource, capacity in enumerate(claims.capacity):
        turn = readers_turn([seconds for _, seconds in readers[resource]], parallelism)
        for nodes, _ in readers[resource]:
            for v in nodes:
                raised[v] = max(raised[v], turn)
        # the most urgent writer heads the queue: each writer is as urgent as the writers'
        # time from it to the end of the queue, over the capacity, then the readers' turn
        queue = sorted(writers[resource], key=lambda h: (-max(priority[v] for v in h[0]), h[0]))
        rest = sum(seconds for _, seconds in queue)
        for nodes, seconds in queue:
            for v in nodes:
                raised[v] = max(raised[v], rest / capacity + turn)
            rest -= seconds
    if claims.exclusive:
        top = max(raised, default=0.0)
        for v in claims.exclusive:
            raised[v] = top + 1.0 + priority[v]
    return raised
