"""What each test of this process does as it happens: which test runs, and its reports folded.

One plugin object per session (``plugin.py`` registers it, but on a walked xdist worker): it
keeps the running test in the session's state -- read by the values between tests and by
pytest-dependency's runtime check -- and feeds every test report to the outcome recorder (on
the xdist controller: the reports of every worker, and the ones it makes up itself).
"""

from __future__ import annotations

from collections.abc import Generator

import pytest

from pytest_depgraph.hosts.pytest import keep_last_failed
from pytest_depgraph.run.outcomes import idle_cleanups
from pytest_depgraph.run.state import SessionState


class Recording:
    """The running test and the outcomes of one session (not of a walked xdist worker's).

    A walked worker's outcomes are read by nobody there -- the controller folds every report
    itself, the worker writes no summary, no file, no durations, keeps no ``--lf`` cache, walks
    nothing serially and gets its values sent (so never asks what ran) -- so it records none
    (measured, callgrind: 6,000 reports -- a random 2,000-test DAG walked on ``-n 4`` --
    through the hook, 1,006 -> 925 M instructions; 18-35 -> 9-16 ms of CPU at load 22), and
    its loop names the running test itself (:mod:`pytest_depgraph.run.xdist.worker`).
    """

    def __init__(self, state: SessionState, config: pytest.Config) -> None:
        self.state = state
        self.config = config

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, object, object]:
        # outermost: every plugin's part of the protocol sees it
        self.state.running = item
        try:
            return (yield)
        finally:
            self.state.running = None

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        state = self.state
        state.recorder.record(report)
        # pytest 9.2's ``report.nodeid`` is a property that makes a string of the report's
        # NodeId at each read; a run that skipped nothing reads it once (callgrind of
        # bench/controller_drive.py, the xdist controller's path over the random 2,000-test
        # DAG, 6,000 reports: 874.4 -> 863.8 M instructions a walk, spread 0.6 M)
        if state.skips and report.nodeid in state.skips and not (
            state.plan is not None and idle_cleanups(state.plan, state.recorder, [report.nodeid])
        ):
            # skipped because of an upstream failure: not passed, so --lf must run it again
            # (not a cleanup that nothing needed: none of its targets ran)
            keep_last_failed(self.config, report.nodeid)
