"""What one parallel walk starts from, as one object: built from a plan, or by hand in tests.

:func:`from_plan` is how the xdist scheduler makes it: the critical path first, each test
weighted by its previous run's seconds (:func:`weights`, :func:`priorities`), the bound, the
tests that cannot run, the pinned groups, the resources' claims, the cleanups' targets. The
tests of the walk make theirs with only what they test. :class:`WalkInputs` checks its own
sizes; the dispatcher (:mod:`pytest_depgraph.core.walk.dispatch`) reads it once. Pure: no
pytest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from pytest_depgraph.core.graph.paths import critical_path
from pytest_depgraph.core.graph.storage import Graph
from pytest_depgraph.core.plan import Plan
from pytest_depgraph.core.walk.claims import Claims, claims_of


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


def _no_clock() -> float:
    return 0.0


def _every_node_ran(node: int) -> bool:
    return True


@dataclass(frozen=True)
class WalkInputs:
    """The graph of one walk and every option of its dispatcher.

    ``priority``: higher runs first (default all 0; ties by node id); ``weight``: each node's
    expected seconds (what :func:`priorities` summed), for the queueing rule. ``group``: an
    int per node (e.g. its module) for affinity. ``limit``: most nodes running at once (None:
    no bound). ``unsatisfied``: nodes that will not run and count as failed. ``pinned``:
    disjoint groups of nodes bound to the worker that starts the first of them. ``hold``: most
    nodes one worker holds (1: nothing is queued). ``durations``: the previous run's seconds of
    the nodes that have one. ``claims``: the resources, slots and exclusive tests (blocks: by
    their index in ``pinned``); ``clock``: seconds, for the books' figures only. ``cleanups``
    and ``ran``: the cleanups' targets, and whether a finished node ran
    (:class:`~pytest_depgraph.core.walk.walker.Walker`). ValueError for a size that does not
    match the graph's, a bound or a hold below 1.
    """

    graph: Graph
    priority: Sequence[float] | None = None
    weight: Sequence[float] | None = None
    group: Sequence[int] | None = None
    limit: int | None = None
    unsatisfied: Iterable[int] = ()
    pinned: Sequence[Sequence[int]] = ()
    hold: int = 1
    durations: Mapping[int, float] | None = None
    claims: Claims | None = None
    clock: Callable[[], float] = _no_clock
    cleanups: Mapping[int, Sequence[int]] | None = None
    ran: Callable[[int], bool] = _every_node_ran

    def __post_init__(self) -> None:
        size = self.graph.size
        for values, what in ((self.priority, "priorities"), (self.weight, "weights"),
                             (self.group, "groups")):
            if values is not None and len(values) != size:
                raise ValueError(f"{len(values)} {what} for {size} nodes")
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"limit must be at least 1, not {self.limit}")
        if self.hold < 1:
            raise ValueError(f"hold must be at least 1, not {self.hold}")


def from_plan(
    plan: Plan,
    durations: dict[int, float],
    limit: int,
    hold: int,
    *,
    clock: Callable[[], float],
    ran: Callable[[int], bool],
) -> WalkInputs:
    """The walk of ``plan``: the critical path first, each test weighted by its previous run's
    seconds (``durations``), at most ``limit`` tests running, each worker holding up to
    ``hold``, the tests' resources granted by the books (on ``clock``); a cleanup runs if one
    of its targets ran (``ran``). O(V + E)."""
    size = len(plan.nodeids)
    weight = weights(durations, plan.item_count, size)
    group = plan.group
    return WalkInputs(
        plan.graph,
        # looked up in the module when called: the bench replaces it to measure plain
        # collection order (bench/xdist_bench.py)
        priority=priorities(plan.graph, weight),
        weight=weight,
        group=group + [-1] * (size - len(group)) if len(group) < size else group[:size],
        limit=limit,
        unsatisfied=[*plan.broken, *plan.external],
        pinned=plan.pinned,
        hold=hold,
        durations=durations,
        claims=claims_of(plan, limit) if plan.resources else None,
        clock=clock,
        cleanups={n: cleanup.targets for n, cleanup in plan.cleanups.items()},
        ran=ran,
    )
