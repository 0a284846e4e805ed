"""``--depgraph-report PATH.html``: check the path before the run, write the page after it.

Runs on the process that sees every report (serial session or xdist controller): the span log
collects when and where each test ran, the session log when the session started, collected and
started its workers, and at the end of the session the timeline
(:mod:`~pytest_depgraph.core.timeline`) and the page
(:mod:`~pytest_depgraph.output.html_page`) are made from them, the plan and the outcomes.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from typing import Any

import pytest

from pytest_depgraph.core import timeline
from pytest_depgraph.core.plan import Plan
from pytest_depgraph.options import report_option
from pytest_depgraph.output import html_page
from pytest_depgraph.output.runlog import SessionLog, SpanLog, process_start
from pytest_depgraph.output.summary import RAN
from pytest_depgraph.output.written import WrittenFile
from pytest_depgraph.run.outcomes import UPSTREAM
from pytest_depgraph.run.state import session_state

_PLUGIN_NAME = "depgraph-run-report"


def configure(config: pytest.Config, path: str) -> None:
    """Check ``path`` (a usage error naming it) and start logging the run."""
    try:
        full = html_page.check_path(path, report_option(config, path))
    except html_page.ReportError as error:
        raise pytest.UsageError(str(error)) from None
    if config.pluginmanager.get_plugin(_PLUGIN_NAME) is None:
        started = process_start(config.invocation_params.args)
        config.pluginmanager.register(RunReport(full, started or time.time()), _PLUGIN_NAME)


class RunReport(WrittenFile):
    """Writes the page at the end of the session and says where in the terminal summary."""

    def __init__(self, path: str, started: float) -> None:
        super().__init__()
        self.path = path
        self.log = SpanLog()
        #: the session around the tests; ``started``: the process's start, or this moment
        self.session_log = SessionLog(started)

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        self.log.started(nodeid)

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.log.record(report)

    @pytest.hookimpl(wrapper=True)
    def pytest_collection(self) -> Generator[None, object, object]:
        # serially the collection (and the plan built at its end); on the xdist controller
        # an instant, and the workers' collections are drawn instead
        collection = self.session_log.collection
        collection.append(time.time())
        try:
            return (yield)
        finally:
            collection.append(time.time())

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_setupnodes(self) -> None:
        self.session_log.launched = time.time()

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_newgateway(self, gateway: Any) -> None:
        self.session_log.worker_started(gateway.id)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodeready(self, node: Any) -> None:
        self.session_log.mark(node.gateway.id, "ready")

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any) -> None:
        self.session_log.mark(node.gateway.id, "down")

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self.session_log.mark(node.gateway.id, "collected")

    def _plan(self, config: pytest.Config) -> Plan | None:
        """The session's plan; on an xdist controller whose workers did not agree on one, the
        first worker's (its tests without edges, when it sent none that could be read)."""
        state = session_state(config)
        if state.plan is not None or state.controller is None:
            return state.plan
        return state.controller.first_plan()

    @pytest.hookimpl(trylast=True)  # after the xdist controller kept its walk's figures
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        config = session.config
        plan = self._plan(config)
        if plan is None or config.option.collectonly:
            return  # nothing was collected, or nothing ran: no run to picture
        state = session_state(config)
        recorder, skips = state.recorder, state.skips
        offsets = self.log.clock_offsets()
        end = time.time()
        run = timeline.build(
            plan,
            lambda nodeid: UPSTREAM if nodeid in skips else recorder.outcome(nodeid),
            self.log.spans,
            skips,
            lambda nodeid: recorder.outcome(nodeid) in RAN,
            clock_offsets=offsets,
            phases=self.session_log.phases(end, self.log.lane_ends(offsets)),
            end=end,
            # the workers the walk used (not those xdist started and the walk stopped unused)
            parallelism=None if state.walk is None else state.walk.parallelism,
            resources=None if state.walk is None else state.walk.resources,
        )
        svg, no_graph = html_page.graph_svg(plan, recorder, skips)
        args = " ".join(config.invocation_params.args)
        page = html_page.render(
            run, svg, no_graph,
            title=f"pytest-depgraph run report: {config.rootpath.name}",
            command=f"pytest {args}".strip(),
        )
        try:
            html_page.write(self.path, page)
        except html_page.ReportError as error:
            self.failed(session, str(error))
            return
        self.written(f"generated depgraph run report: {self.path}")
