"""Collects when and where each test ran, from its reports, for the run report.

Registered only with ``--depgraph-report``, on the process that sees every report (serial
session or xdist controller). pytest's reports carry ``start`` and ``stop`` (seconds of the
clock of the process that ran the phase) and, from xdist, ``worker_id``; the controller's own
clock at arrival lets :func:`~pytest_depgraph.core.timeline.clock_offset` put workers of other
machines on one time line.
"""

from __future__ import annotations

import time

import pytest

from pytest_depgraph.core.timeline import Span, clock_offset
from pytest_depgraph.run.outcomes import SYNTHETIC


class SpanLog:
    """Folds the phase reports of each test into one :class:`Span`."""

    def __init__(self) -> None:
        self.spans: dict[str, Span] = {}
        #: per worker: (controller clock at arrival, report's stop on the worker's clock)
        self._arrivals: dict[str, list[tuple[float, float]]] = {}

    def record(self, report: pytest.TestReport) -> None:
        """Take one phase report (any process)."""
        if getattr(report, SYNTHETIC, False):
            return  # skipped on the controller because of an upstream test: it never ran
        arrived = time.time()
        stop = float(getattr(report, "stop", 0.0) or 0.0)
        start = float(getattr(report, "start", 0.0) or 0.0)
        worker = getattr(report, "worker_id", None)
        if not stop:
            # a report made without timestamps (a crashed worker's test): it ended just now
            stop, start = arrived, arrived - report.duration
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
