"""What the run looked like in time: when and where each test ran, what it waited for, why.

Pure data, free of pytest objects, for the HTML run report
(:mod:`pytest_depgraph.output.html_report`): from the plan, each test's outcome and the span
its reports covered, it works out

* each test's start and end, in seconds since the first test started, and its lane (worker);
* the dependencies it waited for, and the one that finished last (what held it back);
* the critical path over this run's durations (the chain the terminal summary names);
* the summary figures: wall time, the lower bound ``max(critical path, total / N)``, and
  how busy each worker was.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from pytest_depgraph.core.graph import Graph, critical_path
from pytest_depgraph.core.plan import Plan

#: the lane of a serial run (no xdist worker)
SERIAL_LANE = "main"


@dataclass(frozen=True)
class WalkStats:
    """How long the run took beside how fast it could have been."""

    #: seconds from the first test started (xdist: sent) to the last test finished
    wall: float
    #: longest dependency chain, weighted with this run's durations (seconds)
    critical_path: float
    #: sum of this run's test durations (seconds)
    total: float
    #: at most this many tests in flight
    parallelism: int

    @property
    def lower_bound(self) -> float:
        """No schedule can finish sooner: ``max(critical path, total / N)``."""
        return max(self.critical_path, self.total / self.parallelism)


def walk_stats(
    graph: Graph, seconds: Mapping[int, float], wall: float, parallelism: int
) -> WalkStats:
    """A parallel walk's figures: its ``wall`` time beside the bound of ``graph`` weighted by
    this run's ``seconds`` per node (absent: 0), with at most ``parallelism`` tests at once."""
    weights = [seconds.get(n, 0.0) for n in range(graph.size)]
    remaining = critical_path(graph, weights)
    return WalkStats(
        wall=wall,
        critical_path=max(remaining, default=0.0),
        total=sum(weights),
        parallelism=max(1, parallelism),
    )


def critical_chain(
    plan: Plan, duration: Callable[[str], float] | None
) -> tuple[list[int], float]:
    """The longest chain of items, dependencies first, and its length in seconds.

    ``duration`` gives each test's seconds in this run; None weighs every test 1 (a chain by
    test count, before anything ran). Empty for a plan without items. O(V + E).
    """
    if not plan.item_count:
        return [], 0.0
    # a millisecond per test, so that among chains of instant tests the longest one shows
    weights = [
        duration(nodeid) + 0.001 if duration is not None else 1.0 for nodeid in plan.nodeids
    ]
    remaining = critical_path(plan.graph, weights)
    node = max(range(plan.item_count), key=lambda n: (remaining[n], -n))
    path = [node]
    while True:
        nexts = [e.dependent for e in plan.graph.dependents(node)]
        if not nexts:
            break
        node = max(nexts, key=lambda n: (remaining[n], -n))
        path.append(node)
    return path, remaining[path[0]]


@dataclass(frozen=True)
class Span:
    """What the reports of one test say about when and where it ran.

    ``start``/``stop``: clock seconds (the worker's clock) of its first phase's start and its
    last phase's end. ``worker``: the xdist worker id, or None in a serial run.
    """

    start: float
    stop: float
    worker: str | None = None


@dataclass(frozen=True)
class TestTime:
    """One test of the run, on the timeline."""

    node: int
    nodeid: str
    outcome: str
    #: seconds since the run's first test started; None for a test that did not run
    start: float | None
    end: float | None
    lane: str | None
    #: the dependencies of the test (reduced graph: the direct ones), in plan order
    waits: tuple[int, ...]
    #: the dependency that finished last before this test started: what held it back
    held_by: int | None
    #: the test up the graph whose failure made this one skip (skipped by upstream only)
    root_cause: str | None = None

    @property
    def duration(self) -> float:
        """Seconds from the start of its setup to the end of its teardown (0 if it did not run)."""
        if self.start is None or self.end is None:
            return 0.0
        return self.end - self.start


@dataclass
class Timeline:
    """The run in time: every selected test, the lanes, the critical path, the figures."""

    tests: list[TestTime]
    #: worker lanes in name order (``[SERIAL_LANE]`` serially); empty when nothing ran
    lanes: list[str]
    #: nodes of the critical path, dependencies first
    critical: list[int]
    stats: WalkStats
    #: seconds from the first test's start to the last test's end, on the timeline
    span: float = 0.0
    #: seconds each lane spent running tests
    busy: dict[str, float] = field(default_factory=dict)
    #: root cause node id -> the tests skipped because of it, in plan order
    skipped: dict[str, list[str]] = field(default_factory=dict)

    def busy_share(self, lane: str) -> float:
        """Share of the timeline's span that ``lane`` spent running tests (0..1)."""
        return self.busy.get(lane, 0.0) / self.span if self.span > 0 else 0.0


def build(
    plan: Plan,
    outcome: Callable[[str], str],
    spans: Mapping[str, Span],
    skips: Mapping[str, str],
    durations: Mapping[str, float],
    *,
    clock_offsets: Mapping[str, float] | None = None,
    walk: WalkStats | None = None,
) -> Timeline:
    """Lay the run out in time. O(V + E) plus sorting the lanes.

    ``outcome``: the folded outcome of a node id (:mod:`~pytest_depgraph.run.outcomes`).
    ``spans``: per node id, from its reports. ``skips``: node id -> root cause, for tests
    skipped by an upstream test.
    ``durations``: seconds per node id (setup + call + teardown), the weights of the critical
    path. ``clock_offsets``: seconds to add to a worker's clock to read the controller's
    (workers on other machines); ``walk``: the parallel walk's own figures, when it kept them.
    """
    offsets = clock_offsets or {}
    shifted = {
        nodeid: (span.start + offsets.get(span.worker or "", 0.0),
                 span.stop + offsets.get(span.worker or "", 0.0),
                 span.worker or SERIAL_LANE)
        for nodeid, span in spans.items()
    }
    items = plan.nodeids[: plan.item_count]
    ran = [shifted[nodeid] for nodeid in items if nodeid in shifted]
    origin = min((start for start, _, _ in ran), default=0.0)
    ends: list[float | None] = []
    for nodeid in plan.nodeids:
        found = shifted.get(nodeid)
        ends.append(None if found is None else found[1] - origin)
    tests: list[TestTime] = []
    busy: dict[str, float] = {}
    for node, nodeid in enumerate(items):
        waits = tuple(plan.graph.dependency_ids(node))
        finished = [(ends[d], d) for d in waits if ends[d] is not None]
        held_by = max(finished)[1] if finished else None
        found = shifted.get(nodeid)
        if found is None or nodeid in skips:  # skipped before its setup: no bar
            tests.append(TestTime(node, nodeid, outcome(nodeid), None, None, None, waits,
                                  held_by, skips.get(nodeid)))
            continue
        start, stop, lane = found
        busy[lane] = busy.get(lane, 0.0) + (stop - start)
        tests.append(TestTime(node, nodeid, outcome(nodeid), start - origin, stop - origin, lane,
                              waits, held_by))
    critical: list[int] = []
    chain_seconds = 0.0
    if ran:
        critical, chain_seconds = critical_chain(plan, lambda n: durations.get(n, 0.0))
    span = max((stop for _, stop, _ in ran), default=origin) - origin
    if walk is None:
        walk = WalkStats(
            wall=span,
            critical_path=chain_seconds,
            total=sum(durations.get(nodeid, 0.0) for nodeid in items),
            parallelism=max(1, len(busy)),
        )
    skipped: dict[str, list[str]] = {}
    for nodeid in items:
        root = skips.get(nodeid)
        if root is not None:
            skipped.setdefault(root, []).append(nodeid)
    return Timeline(
        tests=tests,
        lanes=sorted(busy, key=_lane_order),
        critical=critical,
        stats=walk,
        span=span,
        busy=busy,
        skipped=skipped,
    )


def clock_offset(received: Sequence[tuple[float, float]]) -> float:
    """Seconds to add to a worker's clock to read the controller's, from its reports.

    ``received``: (controller clock when a report arrived, the report's stop on the worker's
    clock). A report cannot arrive before it was made, so the smallest difference is the
    clock skew plus the shortest transit time: shifting by it puts every test of the worker
    after its cause on the controller's clock, whatever machine it ran on. 0.0 without reports.
    """
    return min((arrived - stop for arrived, stop in received), default=0.0)


def _lane_order(lane: str) -> tuple[str, int, str]:
    """gw2 before gw10: xdist's worker ids in number order."""
    head = lane.rstrip("0123456789")
    digits = lane[len(head):]
    return (head, int(digits) if digits else -1, lane)
