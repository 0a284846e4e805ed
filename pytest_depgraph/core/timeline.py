"""What the run looked like in time: when and where each test ran, what it waited for, why.

Pure data, free of pytest objects, for the HTML run report
(:mod:`pytest_depgraph.output.html_page`) and the terminal summary: from the plan, each
test's outcome, the span its reports covered and the session's phases, it works out

* each test's start and end, in seconds since the session started, and its lane (worker);
* the session around the tests: start-up, collection, the wait for the first test, the finish;
* the dependencies each test waited for, and the one that finished last (what held it back);
  the shared resources it waited for once ready, from the walk's books;
* the critical path: the longest chain of tests that ran, over this run's durations;
* the summary figures: wall time, the lower bound ``max(critical path, total / N)`` (with
  shared resources, exclusive tests and weights: :class:`Bound`), and how busy each worker
  was, all from the one clock of the bars.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from pytest_depgraph.core.graph.paths import critical_path
from pytest_depgraph.core.graph.storage import Graph
from pytest_depgraph.core.plan import WRITE, Plan
from pytest_depgraph.core.walk.resource_cost import Record, Wait
from pytest_depgraph.core.walk.urgency import readers_turn

#: the lane of a serial run (no xdist worker)
SERIAL_LANE = "main"
#: the lane of the xdist controller's own start-up and finish
CONTROLLER_LANE = "controller"
#: the weight of a test that did not run: no chain of a run goes through it
_NOT_RAN = float("-inf")


@dataclass(frozen=True)
class Bound:
    """No walk with shared resources, exclusive tests or weights finishes sooner than
    ``alone + max(chain, work / N, for each resource: written / capacity + read)``.

    Nothing runs beside an exclusive test, so their seconds (``alone``) add to every term.
    ``chain``: the longest chain of dependencies, the exclusive tests weighing nothing;
    ``work``: the seconds of the other tests, each times the slots it counts toward the bound
    (its weight, at most N); ``written``: per resource, its writers' seconds outside exclusive
    tests (a block's writers: the seconds of its tests), at most ``capacity`` of them at once;
    ``read``: per resource, its readers' turn (they never run beside a writer, so it adds to
    the writers' time): the longest reader, or the readers' seconds over N
    (:func:`~pytest_depgraph.core.walk.urgency.readers_turn`). Without any of it:
    ``max(chain, total / N)``.
    """

    alone: float
    chain: float
    work: float
    parallelism: int
    #: (resource name, writers' seconds, capacity) of each resource that has writers
    written: tuple[tuple[str, float, int], ...] = ()
    #: whether a test weighs more than one slot
    weighted: bool = False
    #: (resource name, readers' turn in seconds) of each resource that has readers
    read: tuple[tuple[str, float], ...] = ()

    def resource_terms(self) -> list[tuple[str, float]]:
        """Per resource (by name), the least time it is busy: its writers' time over its
        capacity, then its readers' turn."""
        terms = dict(self.read)
        for name, seconds, capacity in self.written:
            terms[name] = seconds / capacity + terms.get(name, 0.0)
        return sorted(terms.items())

    @property
    def value(self) -> float:
        """The bound, in seconds."""
        return self.alone + max(self.chain, self.work / self.parallelism,
                                *(term for _, term in self.resource_terms()))

    @property
    def bottleneck(self) -> str | None:
        """The resource whose term is the largest, when it is above the chain's and the work's
        (the resource that bound the run); None otherwise."""
        floor = max(self.chain, self.work / self.parallelism)
        best = max(self.resource_terms(), key=lambda term: term[1], default=None)
        return best[0] if best is not None and best[1] > floor else None


def resource_bound(plan: Plan, seconds: Sequence[float], parallelism: int) -> Bound:
    """The :class:`Bound` of ``plan``'s tests that took ``seconds`` each (per node; 0 for a
    test that did not run) on at most ``parallelism`` at once. A block's tests are those of
    the pinned group that holds it on the xdist controller (which joined it with its
    ``--dist`` unit or pinned group), else its own. O(V + E)."""
    declared = plan.resources
    n = max(1, parallelism)
    alone = set(declared.exclusive)
    chain = critical_path(plan.graph, [0.0 if v in alone else s for v, s in enumerate(seconds)])
    work = sum(min(declared.slots.get(v, 1), n) * s for v, s in enumerate(seconds)
               if v not in alone)
    group_of = {v: members for members in plan.pinned for v in members}
    writers: dict[str, set[int]] = {}
    # readers: per resource, the seconds of each holder (a test, or a block as one)
    readers: dict[str, list[float]] = {}

    def seconds_of(nodes: Iterable[int]) -> float:
        return sum(seconds[v] for v in nodes if v not in alone and v < len(seconds))

    for node, claims in declared.claims.items():
        for name, mode in claims.items():
            if mode == WRITE:
                writers.setdefault(name, set()).add(node)
            elif node not in alone:
                readers.setdefault(name, []).append(seconds_of([node]))
    for block in declared.blocks:
        joined = group_of.get(block.tests[0], ())
        members = joined if set(block.tests) <= set(joined) else block.tests
        for name, mode in block.claims:
            if mode == WRITE:
                writers.setdefault(name, set()).update(members)
            else:
                readers.setdefault(name, []).append(seconds_of(members))
    return Bound(
        alone=sum(seconds[v] for v in alone if v < len(seconds)),
        chain=max(chain, default=0.0),
        work=work,
        parallelism=n,
        written=tuple(
            (name, seconds_of(nodes), declared.capacity.get(name, 1))
            for name, nodes in sorted(writers.items())
        ),
        weighted=bool(declared.slots),
        read=tuple((name, readers_turn(found, n)) for name, found in sorted(readers.items())),
    )


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
    #: where the durations that ordered the walk came from, for a person ("": none known)
    weighed_by: str = ""
    #: the bound with shared resources, exclusive tests and weights (None: the run has none)
    bound: Bound | None = None
    #: what the shared resources cost the walk, from its books (None: it has none)
    resources: Record | None = None

    @property
    def lower_bound(self) -> float:
        """No schedule can finish sooner: ``max(critical path, total / N)``, or the
        :class:`Bound` of a run with shared resources."""
        if self.bound is not None:
            return self.bound.value
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
    plan: Plan, duration: Callable[[str], float | None] | None
) -> tuple[list[int], float]:
    """The longest chain of tests that ran, dependencies first, and its length in seconds.

    ``duration`` gives a test's seconds in this run, or None for a test that did not run
    (skipped, not started): the chain of a run goes through tests that ran only, and is empty
    when none did. ``duration`` None weighs every test 1: the planned chain, by test count,
    before anything ran (its length is then its count). O(V + E).
    """
    items = plan.item_count
    if not items:
        return [], 0.0
    if duration is None:
        seconds: list[float | None] = [1.0] * items
        weights = [1.0] * len(plan.nodeids)
    else:
        seconds = [duration(nodeid) for nodeid in plan.nodeids[:items]]
        # a millisecond more per test, so that among chains of instant tests the longest one
        # shows; a test that did not run weighs minus infinity, so no chain goes through it
        # (nor through the plan's dependencies that were not selected, past ``items``)
        weights = [_NOT_RAN if s is None else s + 0.001 for s in seconds]
        weights += [_NOT_RAN] * (len(plan.nodeids) - items)
    remaining = critical_path(plan.graph, weights)
    node = max(range(items), key=lambda n: (remaining[n], -n))
    if remaining[node] == _NOT_RAN:
        return [], 0.0
    path = [node]
    while True:
        nexts = list(plan.graph.dependents_of(node))
        if not nexts:
            break
        node = max(nexts, key=lambda n: (remaining[n], -n))
        if remaining[node] == _NOT_RAN:
            break
        path.append(node)
    # the real seconds, without the tie-breaking milliseconds
    return path, sum(seconds[n] or 0.0 for n in path)


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
class Phase:
    """A stretch of the session outside its tests, on one lane: ``name`` is ``start-up``,
    ``collection``, ``waiting`` (collected, no test yet) or ``finish``.

    ``start``/``stop``: clock seconds of the process that writes the report (the xdist
    controller's) as :func:`build` takes them, seconds since the timeline's origin in a
    :class:`Timeline`.
    """

    lane: str
    name: str
    start: float
    stop: float


@dataclass(frozen=True)
class TestTime:
    """One test of the run, on the timeline."""

    node: int
    nodeid: str
    outcome: str
    #: seconds since the timeline's origin (the session's start); None for a test without a bar
    start: float | None
    end: float | None
    lane: str | None
    #: the dependencies of the test (reduced graph: the direct ones), in plan order
    waits: tuple[int, ...]
    #: the dependency that finished last before this test started: what held it back
    held_by: int | None
    #: the test up the graph whose failure made this one skip (skipped by upstream only)
    root_cause: str | None = None
    #: what it waited for once ready, besides its dependencies: a shared resource, slots of
    #: the bound, an empty run (seconds since the origin)
    lock_waits: tuple[Wait, ...] = ()

    @property
    def duration(self) -> float:
        """Seconds from the start of its setup to the end of its teardown (0 if it did not run)."""
        if self.start is None or self.end is None:
            return 0.0
        return self.end - self.start


@dataclass
class Timeline:
    """The run in time: every selected test, the session around them, the lanes, the critical
    path, the figures. Every time in it comes from one clock: the tests' reports (setup's
    start to teardown's end) and the session's phases, on the reporting process's clock."""

    tests: list[TestTime]
    #: lanes in name order (``controller``, then the workers; ``[SERIAL_LANE]`` serially)
    lanes: list[str]
    #: nodes of the critical path, dependencies first: tests that ran only
    critical: list[int]
    #: the tests' figures: ``wall`` from the first test's start to the last test's end; the
    #: critical path and the total weighted by the tests' bars
    stats: WalkStats
    #: the session outside its tests, in seconds since the origin
    phases: list[Phase] = field(default_factory=list)
    #: seconds from the origin (the session's start) to the end (the report written)
    span: float = 0.0
    #: seconds from the origin to the first test's start (the whole span when none ran)
    first_test: float = 0.0
    #: seconds each lane spent running tests
    busy: dict[str, float] = field(default_factory=dict)
    #: root cause node id -> the tests skipped because of it, in plan order
    skipped: dict[str, list[str]] = field(default_factory=dict)

    def busy_share(self, lane: str) -> float:
        """Share of the tests' wall time that ``lane`` spent running tests (0..1)."""
        wall = self.stats.wall
        return self.busy.get(lane, 0.0) / wall if wall > 0 else 0.0


def build(
    plan: Plan,
    outcome: Callable[[str], str],
    spans: Mapping[str, Span],
    skips: Mapping[str, str],
    ran: Callable[[str], bool],
    *,
    clock_offsets: Mapping[str, float] | None = None,
    phases: Sequence[Phase] = (),
    end: float | None = None,
    parallelism: int | None = None,
    resources: Record | None = None,
) -> Timeline:
    """Lay the run out in time. O(V + E) plus sorting the lanes.

    ``outcome``: the folded outcome of a node id (:mod:`~pytest_depgraph.run.outcomes`).
    ``spans``: per node id, from its reports. ``skips``: node id -> root cause, for tests
    skipped by an upstream test. ``ran``: whether a test ran (not skipped): the critical path
    goes through those only. ``clock_offsets``: seconds to add to a worker's clock to read the
    reporting process's (workers on other machines). ``phases``: the session outside its
    tests; ``end``: when the session ended (default: its last bar's end), both on the
    reporting process's clock. ``parallelism``: the N of ``total / N`` (default: the lanes
    that ran tests). ``resources``: the walk's books, whose waits are on the reporting
    process's clock.
    """
    bars = _bars(plan, spans, skips, clock_offsets or {})
    first = min((start for start, _, _ in bars.values()), default=None)
    last = max((stop for _, stop, _ in bars.values()), default=None)
    # the session's first moment, on the reporting process's clock: every time is from it
    origin = min([p.start for p in phases] + ([] if first is None else [first]), default=0.0)
    tests, busy = _test_times(plan, bars, _ends(plan, spans, clock_offsets or {}, origin),
                              outcome, skips, resources, origin)
    if end is None:
        end = max([p.stop for p in phases] + ([] if last is None else [last]), default=origin)
    # each test's seconds from its own span, not its bar moved onto this clock: the same
    # figures as the summary's, to the last bit (the shifted ends can differ in the last
    # digits, and so the critical path's rounding, 0.07 s against 0.08 s)
    critical, chain_seconds = ([], 0.0) if not bars else critical_chain(
        plan, lambda n: spans[n].stop - spans[n].start if n in bars and ran(n) else None
    )
    workers = max(1, parallelism or len(busy))
    stats = WalkStats(
        wall=0.0 if first is None or last is None else last - first,
        critical_path=chain_seconds,
        total=sum(busy.values()),
        parallelism=workers,
        bound=_bound_with_resources(plan, tests, ran, workers),
        resources=resources,
    )
    return Timeline(
        tests=tests,
        lanes=sorted(set(busy) | {p.lane for p in phases}, key=_lane_order),
        critical=critical,
        stats=stats,
        phases=[Phase(p.lane, p.name, p.start - origin, p.stop - origin) for p in phases],
        span=max(0.0, end - origin),
        first_test=(end if first is None else first) - origin,
        busy=busy,
        skipped=_skipped_by_root(plan, skips),
    )


#: a test's bar: (start, stop, lane) on the reporting process's clock
_Bar = tuple[float, float, str]


def _on_reporting_clock(span: Span, offsets: Mapping[str, float]) -> _Bar:
    """``span`` read on the reporting process's clock, in its lane (a worker, or the serial
    lane)."""
    shift = offsets.get(span.worker or "", 0.0)
    return span.start + shift, span.stop + shift, span.worker or SERIAL_LANE


def _bars(
    plan: Plan, spans: Mapping[str, Span], skips: Mapping[str, str],
    offsets: Mapping[str, float],
) -> dict[str, _Bar]:
    """The bar of each collected test that has a span, by node id. A test skipped before its
    setup has none (``--dist each`` runs them on the workers, but then the controller skipped
    nothing)."""
    return {nodeid: _on_reporting_clock(spans[nodeid], offsets)
            for nodeid in plan.nodeids[: plan.item_count]
            if nodeid in spans and nodeid not in skips}


def _ends(
    plan: Plan, spans: Mapping[str, Span], offsets: Mapping[str, float], origin: float
) -> list[float | None]:
    """Per node (external ones too), when its span ended, from ``origin``; None without
    one."""
    return [
        None if nodeid not in spans else _on_reporting_clock(spans[nodeid], offsets)[1] - origin
        for nodeid in plan.nodeids
    ]


def _test_times(
    plan: Plan,
    bars: Mapping[str, _Bar],
    ends: Sequence[float | None],
    outcome: Callable[[str], str],
    skips: Mapping[str, str],
    resources: Record | None,
    origin: float,
) -> tuple[list[TestTime], dict[str, float]]:
    """Each collected test in time, from ``origin``: its bar, what it waited for and the one
    that finished last, the resources it waited for once ready; and each lane's busy
    seconds."""
    tests: list[TestTime] = []
    busy: dict[str, float] = {}
    for node, nodeid in enumerate(plan.nodeids[: plan.item_count]):
        waits = tuple(plan.graph.dependencies_of(node))
        finished = [(ends[d], d) for d in waits if ends[d] is not None]
        held_by = max(finished)[1] if finished else None
        found = bars.get(nodeid)
        if found is None:
            tests.append(TestTime(node, nodeid, outcome(nodeid), None, None, None, waits,
                                  held_by, skips.get(nodeid)))
            continue
        start, stop, lane = found
        busy[lane] = busy.get(lane, 0.0) + (stop - start)
        tests.append(TestTime(node, nodeid, outcome(nodeid), start - origin, stop - origin, lane,
                              waits, held_by, lock_waits=_lock_waits(resources, node, origin)))
    return tests, busy


def _lock_waits(resources: Record | None, node: int, origin: float) -> tuple[Wait, ...]:
    """What ``node`` waited for once ready, from the walk's books, from ``origin``."""
    if resources is None:
        return ()
    return tuple(Wait(w.kind, w.name, w.since - origin, w.until - origin)
                 for w in resources.waits.get(node, ()))


def _bound_with_resources(
    plan: Plan, tests: Sequence[TestTime], ran: Callable[[str], bool], workers: int
) -> Bound | None:
    """The lower bound with the plan's shared resources, over this run's durations of the
    tests that ran (None: the plan has none, and ``max(chain, total / N)`` is the bound)."""
    if not plan.resources:
        return None
    seconds = [0.0] * len(plan.nodeids)
    for test in tests:
        if test.start is not None and ran(test.nodeid):
            seconds[test.node] = test.duration
    return resource_bound(plan, seconds, workers)


def _skipped_by_root(plan: Plan, skips: Mapping[str, str]) -> dict[str, list[str]]:
    """The tests skipped by an upstream test, by root cause, in plan order."""
    skipped: dict[str, list[str]] = {}
    for nodeid in plan.nodeids[: plan.item_count]:
        root = skips.get(nodeid)
        if root is not None:
            skipped.setdefault(root, []).append(nodeid)
    return skipped


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
