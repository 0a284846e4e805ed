"""The pytest plugin ``depgraph``: hooks and options only; the work is done elsewhere."""

from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Generator

import pytest

from pytest_depgraph import dot, report
from pytest_depgraph.build import build
from pytest_depgraph.markers import MARKER, MARKER_HELP
from pytest_depgraph.options import Settings, add_options, read_settings
from pytest_depgraph.outcomes import OutcomeRecorder
from pytest_depgraph.serial import SerialWalk
from pytest_depgraph.state import PLAN_KEY, RECORDER_KEY, SKIPS_KEY

SETTINGS_KEY = pytest.StashKey[Settings]()


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER_HELP)
    settings = read_settings(config)
    if settings.dot and dot.needs_graphviz(settings.dot) and shutil.which("dot") is None:
        raise pytest.UsageError(
            f"--depgraph-dot {settings.dot}: rendering to "
            f"{settings.dot.rsplit('.', 1)[-1].upper()} needs Graphviz's 'dot' program, which "
            "is not on PATH. Install Graphviz (e.g. apt-get install graphviz) or write a .dot file."
        )
    config.stash[SETTINGS_KEY] = settings
    recorder = config.stash[RECORDER_KEY] = OutcomeRecorder()
    config.stash[SKIPS_KEY] = {}
    config.pluginmanager.register(_Recorder(recorder), "depgraph-recorder")
    if importlib.util.find_spec("xdist") is not None and importlib.util.find_spec(
        "pytest_depgraph.xdist_hooks"
    ):
        from pytest_depgraph import xdist_hooks

        xdist_hooks.register(config)


def _is_xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> Generator[None]:
    # Outermost wrapper: -k/-m/--lf/--deselect have selected when the yield returns.
    collected = list(items)
    yield
    settings = config.stash[SETTINGS_KEY]
    result = build(collected, items, config.rootpath, pull_dependencies=not settings.no_deps)
    added = {result.plan.nodeids[n] for n in result.plan.added}
    items[:] = result.items
    if added:
        _undo_deselection(config, added)
    for problem in result.problems:
        config.hook.pytest_collectreport(
            report=pytest.CollectReport(
                problem.report_nodeid, "failed", longrepr=problem.message, result=[]
            )
        )
    config.stash[PLAN_KEY] = result.plan
    if not _is_xdist_worker(config) and not config.option.collectonly:
        config.pluginmanager.register(
            SerialWalk(result.plan, config.stash[RECORDER_KEY], config.stash[SKIPS_KEY]),
            "depgraph-serial",
        )


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, object, object]:
    report = yield
    # pytest >= 9 rejects marks on fixtures itself, at import; say what to use instead
    if (
        isinstance(report, pytest.CollectReport)
        and report.failed
        and "Marks cannot be applied to fixtures" in str(report.longrepr)
        and _mentions_marker(collector)
    ):
        report.sections.append(("depgraph", FIXTURE_MARK_HINT))
    return report


FIXTURE_MARK_HINT = (
    f"@pytest.mark.{MARKER} cannot declare a fixture's dependencies: pytest does not allow "
    "marks on fixtures.\nUse the decorator instead: `from pytest_depgraph import depends_on`, "
    "then `@depends_on(...)` above or below `@pytest.fixture`."
)


def _mentions_marker(collector: pytest.Collector) -> bool:
    path = getattr(collector, "path", None)
    try:
        return path is not None and f"mark.{MARKER}" in path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False


def _undo_deselection(config: pytest.Config, added: set[str]) -> None:
    """Tests pulled back in as dependencies are not 'deselected' in the terminal count."""
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    stats = getattr(terminal, "stats", None)
    if stats and stats.get("deselected"):
        stats["deselected"] = [i for i in stats["deselected"] if i.nodeid not in added]
        if not stats["deselected"]:
            del stats["deselected"]


class _Recorder:
    """Feeds every test report of this process (controller: of every worker) to the recorder."""

    def __init__(self, recorder: OutcomeRecorder) -> None:
        self.recorder = recorder

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.recorder.record(report)


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if _is_xdist_worker(config):
        return
    plan = config.stash.get(PLAN_KEY, None)
    settings = config.stash.get(SETTINGS_KEY, None)
    if plan is None or settings is None or not settings.dot:
        return
    recorder = None if config.option.collectonly else config.stash[RECORDER_KEY]
    try:
        dot.write(settings.dot, plan, recorder, config.stash[SKIPS_KEY])
    except dot.RenderError as error:
        terminal = config.pluginmanager.get_plugin("terminalreporter")
        if terminal is not None:
            terminal.write_line(f"depgraph: {error}", red=True)
        session.exitstatus = pytest.ExitCode.USAGE_ERROR


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    config = terminalreporter.config
    plan = config.stash.get(PLAN_KEY, None)
    if plan is None or _is_xdist_worker(config):
        return
    report.summary(terminalreporter, plan, config.stash[RECORDER_KEY], config.stash[SKIPS_KEY])
