"""The pytest plugin ``depgraph``: hooks and options only; the work is done elsewhere."""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING

import pytest

from pytest_depgraph.collect import file_warnings, strays
from pytest_depgraph.collect.dependency_markers import (
    CLEANUP_HELP,
    MARKER_HELP,
    install_marker,
    uninstall_marker,
)
from pytest_depgraph.collect.resource_markers import MARKER_HELP as LOCK_HELP
from pytest_depgraph.options import add_options
from pytest_depgraph.run import plan_producer, run_session
from pytest_depgraph.run.role import role
from pytest_depgraph.run.state import session_state

if TYPE_CHECKING:
    from pytest_depgraph.values import DepGraph


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER_HELP)
    config.addinivalue_line("markers", CLEANUP_HELP)
    for line in LOCK_HELP:
        config.addinivalue_line("markers", line)
    install_marker()
    strays.watch(config)
    state = run_session.configure(config)
    if state.settings.discover or state.settings.discover_child:
        from pytest_depgraph.discover import discovery  # only a discovery

        discovery.configure(config, state)
    # the files first: their plugins' hooks run after the run's (the order of registration);
    # an xdist worker writes none and shows no summary: it does not even import their module
    # (measured, callgrind: 1.0 M instructions of a worker, spread 0.7 M; -X importtime 0.45 ms)
    if not role(config).is_worker:
        from pytest_depgraph.output import output_session

        output_session.configure(config, state.settings)
    run_session.register(config, state)


@pytest.fixture
def depgraph(request: pytest.FixtureRequest) -> DepGraph:
    """Publish values from this test; read the values of the tests it depends on."""
    from pytest_depgraph.values import DepGraph, outputs_of  # only a test that uses it

    return DepGraph(outputs_of(request))


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.pluginmanager.register(_Collection(), "depgraph-collection")
    run_session.start(session)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_collection(session: pytest.Session) -> Generator[None, object, object]:
    plan_producer.widen(session.config)
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, object, object]:
    report = yield
    file_warnings.explain_marked_fixture(collector, report)
    return report


class _Collection:
    """The plan is made here, in the outermost ``pytest_collection_modifyitems`` wrapper.

    Registered at session start, after every plugin that registers itself while configuring
    (``--lf`` does), so that it wraps them all: when its yield returns, every selection and
    reordering is done.
    """

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> Generator[None]:
        collected = plan_producer.collected(config, items)
        yield
        plan_producer.session_plan(config, collected, items)
        run_session.walk_serially(config, session_state(config))


def pytest_sessionfinish(session: pytest.Session) -> None:
    run_session.finish(session)


def pytest_unconfigure(config: pytest.Config) -> None:
    uninstall_marker()
    run_session.release(config)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    config = terminalreporter.config
    if not config.pluginmanager.has_plugin("depgraph-discover") and not role(config).is_worker:
        from pytest_depgraph.output import output_session  # not a worker's (above)

        output_session.terminal_summary(terminalreporter)  # a discovery ran no test

