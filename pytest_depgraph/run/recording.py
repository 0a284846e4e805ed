"""What each test of this process does as it happens: which test runs, and its reports folded.

One plugin object per session (``plugin.py`` registers it): it keeps the running test in the
session's state -- read by the values between tests and by pytest-dependency's runtime check
-- and feeds every test report to the outcome recorder (on the xdist controller: the reports
of every worker, and the ones it makes up itself).
"""

from __future__ import annotations

from collections.abc import Generator

import pytest

from pytest_depgraph.hosts.pytest import keep_last_failed
from pytest_depgraph.run.outcomes import idle_cleanups
from pytest_depgraph.run.state import SessionState


class Recording:
    """The running test and the outcomes of one session."""

    def __init__(self, state: SessionState, config: pytest.Config) -> None:
        self.state = state
        self.config = config

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, object, object]:
        # outermost: every plugin's part of the protocol sees it, a worker's deferred
        # teardown of a held test included (it runs inside a protocol call of that test)
        self.state.running = item
        try:
            return (yield)
        finally:
            self.state.running = None

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        state = self.state
        state.recorder.record(report)
        if report.nodeid in state.skips and not (
            state.plan is not None and idle_cleanups(state.plan, state.recorder, [report.nodeid])
        ):
            # skipped because of an upstream failure: not passed, so --lf must run it again
            # (not a cleanup that nothing needed: none of its targets ran)
            keep_last_failed(self.config, report.nodeid)
