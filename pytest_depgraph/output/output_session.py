"""The output layer's part of a pytest session: the files checked before it, the summary after.

Each output's module is imported only when the session asks for it (``--depgraph-dot``,
``--depgraph-report``, a summary with something to say).
"""

from __future__ import annotations

import pytest

from pytest_depgraph.options import Settings, dot_option
from pytest_depgraph.run.role import role
from pytest_depgraph.run.state import find_session_state


def configure(config: pytest.Config, settings: Settings) -> None:
    """Check the paths of the files the run leaves (a usage error naming a bad one) and
    register what writes them; workers write none."""
    if role(config).is_worker:
        return
    if settings.dot:
        from pytest_depgraph.output import dot

        dot.check_path(settings.dot, dot_option(config, settings.dot))
        config.pluginmanager.register(dot.DotExport(settings.dot), "depgraph-dot")
    if settings.report:
        from pytest_depgraph.output import run_report

        run_report.configure(config, settings.report)


def terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The ``depgraph`` section of the terminal summary, when there is something to say."""
    config = terminalreporter.config
    state = find_session_state(config)
    if state is None or state.plan is None or role(config).is_worker:
        return
    plan = state.plan
    walk = state.walk
    weighed = walk is not None and bool(walk.weighed_by or walk.resources is not None)
    if not (plan.graph.edge_count or plan.errors or state.skips or plan.shard or weighed):
        return  # nothing to say (pytest as usual): the summary's module is not even loaded
    from pytest_depgraph.output import summary

    summary.summary(terminalreporter, plan, state.recorder, state.skips)
