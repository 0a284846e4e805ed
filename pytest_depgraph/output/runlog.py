"""Collects when and where each test ran, and when the session around them did what.

Registered only with ``--depgraph-report``, on the process that sees every report (serial
session or xdist controller). pytest's reports carry ``start`` and ``stop`` (seconds of the
clock of the process that ran the phase) and, from xdist, ``worker_id``; the controller's own
clock at arrival lets :func:`~pytest_depgraph.core.timeline.clock_offset` put workers of other
machines on one time line. The session's phases (start-up, collection, the workers' start)
are marked on this process's clock, as their hooks run or their events arrive from the
workers.
"""

from __future__ import annotations

import os
import sys
import time

import pytest

from pytest_depgraph.core.timeline import (
    CONTROLLER_LANE,
    SERIAL_LANE,
    Phase,
    Span,
    clock_offset,
)
from pytest_depgraph.run.outcomes import SYNTHETIC


class SpanLog:
    """Folds the phase reports of each test into one :class:`Span`."""

    def __init__(self) -> None:
        self.spans: dict[str, Span] = {}
        #: per worker: (controller clock at arrival, report's stop on the worker's clock)
        self._arrivals: dict[str, list[tuple[float, float]]] = {}
        #: per node id: this process's clock when the test was said to start
        self._started: dict[str, float] = {}

    def started(self, nodeid: str) -> None:
        """The test started now (``pytest_runtest_logstart``, forwarded by xdist's workers)."""
        self._started.setdefault(nodeid, time.time())

    def record(self, report: pytest.TestReport) -> None:
        """Take one phase report (any process)."""
        if getattr(report, SYNTHETIC, False):
            return  # skipped on the controller because of an upstream test: it never ran
        arrived = time.time()
        stop = float(getattr(report, "stop", 0.0) or 0.0)
        start = float(getattr(report, "start", 0.0) or 0.0)
        worker = getattr(report, "worker_id", None) or _crashed_on(report)
        if not stop:
            # a report made without timestamps: xdist's, for the test a crashed worker was
            # running. The test ran from its start until now, when the crash was seen: on the
            # worker's clock, as its other reports (the ones that arrived before the crash)
            skew = clock_offset(self._arrivals.get(worker, [])) if worker else 0.0
            stop = arrived - skew
            start = self._started.get(report.nodeid, arrived - report.duration) - skew
        elif worker is not None:
            self._arrivals.setdefault(worker, []).append((arrived, stop))
        seen = self.spans.get(report.nodeid)
        if seen is not None:
            if seen.worker != worker:
                return  # --dist each runs a test on every worker: draw the first one's run
            start, stop = min(start, seen.start), max(stop, seen.stop)
        self.spans[report.nodeid] = Span(start, stop, worker)

    def clock_offsets(self) -> dict[str, float]:
        """Seconds to add to each worker's clock to read this process's clock."""
        return {worker: clock_offset(seen) for worker, seen in self._arrivals.items()}

    def lane_ends(self, offsets: dict[str, float]) -> dict[str, tuple[float, float]]:
        """Per lane, the first test's start and the last test's end, on this process's clock."""
        ends: dict[str, tuple[float, float]] = {}
        for span in self.spans.values():
            lane = span.worker or SERIAL_LANE
            shift = offsets.get(lane, 0.0)
            first, last = ends.get(lane, (span.start + shift, span.stop + shift))
            ends[lane] = (min(first, span.start + shift), max(last, span.stop + shift))
        return ends


class SessionLog:
    """The session's phases outside its tests, as marks on this process's clock.

    Serially: the start-up (from the process's start), the collection (which builds the
    plan), the finish (after the last test). On the xdist controller: its own start-up until
    it starts the workers, and per worker its start (until it is ready), its collection (until
    its collection arrives), its wait for its first test, and its finish (until it is down).
    """

    def __init__(self, started: float) -> None:
        self.started = started
        self.collection: list[float] = []  # its start, its end (serial)
        self.launched: float | None = None  # the controller started its workers
        #: per worker: when it was started, ready, collected, down
        self.workers: dict[str, dict[str, float]] = {}

    def worker_started(self, worker: str) -> None:
        """xdist made the worker's gateway. The first workers are started one after another
        from the moment the controller began (their start-up counts from then); a worker that
        comes later (replacing a crashed one) starts now."""
        replacing = any("ready" in marks for marks in self.workers.values())
        began = time.time() if replacing or self.launched is None else self.launched
        self.workers.setdefault(worker, {}).setdefault("started", began)

    def mark(self, worker: str, event: str) -> None:
        """A worker's ``event`` (``ready``, ``collected``, ``down``) happened now."""
        self.workers.setdefault(worker, {}).setdefault(event, time.time())

    def phases(self, end: float, ends: dict[str, tuple[float, float]]) -> list[Phase]:
        """The phases until ``end`` (the report is written), given each lane's first test's
        start and last test's end (:meth:`SpanLog.lane_ends`)."""
        out: list[Phase] = []
        last = max((stop for _, stop in ends.values()), default=None)
        if not self.workers:  # serial, or xdist started no worker
            lane = SERIAL_LANE if self.launched is None else CONTROLLER_LANE
            collected = self.collection[-1] if len(self.collection) == 2 else None
            up_to = (self.collection[0] if self.collection else self.launched)
            _add(out, lane, "start-up", self.started, up_to)
            if collected is not None:
                _add(out, lane, "collection", self.collection[0], collected)
            _add(out, lane, "finish", last, end)
            return out
        _add(out, CONTROLLER_LANE, "start-up", self.started, self.launched)
        _add(out, CONTROLLER_LANE, "finish", last, end)
        for worker, marks in self.workers.items():
            first, final = ends.get(worker, (None, None))
            down = marks.get("down", end)
            _add(out, worker, "start-up", marks.get("started"), marks.get("ready"))
            _add(out, worker, "collection", marks.get("ready"), marks.get("collected"))
            _add(out, worker, "waiting", marks.get("collected"), first or down)
            _add(out, worker, "finish", final, down)
        return out


def _crashed_on(report: pytest.TestReport) -> str | None:
    """The worker of xdist's report for a test whose worker crashed: that report has no
    ``worker_id``, but the controller's node of the worker (``node``, with its ``gateway.id``),
    as xdist's worker reports on the controller do."""
    gateway = getattr(getattr(report, "node", None), "gateway", None)
    found = getattr(gateway, "id", None)
    return found if isinstance(found, str) else None


def _add(out: list[Phase], lane: str, name: str, start: float | None,
         stop: float | None) -> None:
    if start is not None and stop is not None and stop >= start:
        out.append(Phase(lane, name, start, stop))


def process_start(args: tuple[str, ...]) -> float | None:
    """When this process started (``time.time()`` seconds), if pytest is its program.

    pytest's own timer starts at the session; the interpreter's and the plugins' start-up
    before it is real time too. Only Linux says when a process started (``/proc``, on the
    clock since boot); and only a process whose command line is this session's arguments is
    pytest's own (not a program or a test that calls ``pytest.main`` in a longer life).
    """
    if list(args) != sys.argv[1:]:
        return None
    try:
        with open("/proc/self/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - int(fields[19]) / os.sysconf(
            "SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None  # not Linux
    return time.time() - age if age >= 0 else None
