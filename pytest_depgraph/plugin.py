"""The pytest plugin ``depgraph``: hooks and options only; the work is done elsewhere."""

from __future__ import annotations

import importlib.util
import re
import warnings
from collections.abc import Generator
from pathlib import Path
from types import FunctionType
from typing import TYPE_CHECKING

import pytest

from pytest_depgraph.collect import compat, safe, selection
from pytest_depgraph.collect.build import Result as BuildResult
from pytest_depgraph.collect.build import build
from pytest_depgraph.collect.context import function_of
from pytest_depgraph.collect.markers import (
    MARKER,
    MARKER_HELP,
    install_marker,
    stray_marker,
    uninstall_marker,
)
from pytest_depgraph.core.plan import Plan
from pytest_depgraph.options import add_options, dot_option, read_settings
from pytest_depgraph.run import dependency_runtime
from pytest_depgraph.run.role import Role, role, sends_locations
from pytest_depgraph.run.state import (
    SessionState,
    find_session_state,
    keep_collected,
    session_state,
    start_session_state,
)

if TYPE_CHECKING:
    from pytest_depgraph.values import DepGraph


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER_HELP)
    install_marker()
    settings = read_settings(config)
    state = start_session_state(config, settings, compat.register(config, strict=settings.strict))
    dependency_runtime.install(config)
    if settings.dot and not role(config).is_worker:  # workers never write the graph
        from pytest_depgraph.output import dot  # only --depgraph-dot needs it

        dot.check_path(settings.dot, dot_option(config, settings.dot))
        config.pluginmanager.register(dot.DotExport(settings.dot), "depgraph-dot")
    if settings.report and not role(config).is_worker:
        from pytest_depgraph.output import run_report  # only --depgraph-report needs it

        run_report.configure(config, settings.report)
    if settings.shard is not None or settings.store_durations:
        from pytest_depgraph.run import durations, sharding  # only shards and stored durations

        sharding.configure(config, settings)
        if settings.store_durations:
            durations.install(config)
    config.pluginmanager.register(_Recorder(state, config), "depgraph-recorder")
    config.pluginmanager.register(state.outputs, "depgraph-outputs")
    # pytest-xdist is a dependency, but a broken or partial install must not break serial runs
    if importlib.util.find_spec("xdist") is not None:
        from pytest_depgraph.run import xdist_hooks

        xdist_hooks.register(config)


@pytest.fixture
def depgraph(request: pytest.FixtureRequest) -> DepGraph:
    """Publish values from this test; read the values of the tests it depends on."""
    from pytest_depgraph.values import DepGraph, outputs_of  # only a test that uses it

    return DepGraph(outputs_of(request))


def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    config.pluginmanager.register(_Collection(), "depgraph-collection")
    if config.getoption("lf", False):
        # --lf narrows collection to the files and tests that failed, so the tests they depend
        # on would never be seen; collect everything and let --lf deselect instead.
        for name in ("lfplugin-collwrapper", "lfplugin-collskip"):
            plugin = config.pluginmanager.get_plugin(name)
            if plugin is not None:
                config.pluginmanager.unregister(plugin)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_collection(session: pytest.Session) -> Generator[None, object, object]:
    config = session.config
    # an xdist controller collects nothing: its workers do
    if role(config) is not Role.CONTROLLER:
        session_state(config).selection = selection.widen_node_id_args(config)
    return (yield)


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


class _Collection:
    """The graph is built here, in the outermost ``pytest_collection_modifyitems`` wrapper.

    Registered at session start, after every plugin that registers itself while configuring
    (``--lf`` does), so that it wraps them all: when its yield returns, every selection and
    reordering is done.
    """

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> Generator[None]:
        # Outermost wrapper: -k/-m/--lf/--deselect have selected when the yield returns.
        collected = list(items)
        state = session_state(config)
        keep_collected(state, collected)
        chosen = state.selection
        if chosen is not None:
            chosen.check_found(collected)
        yield
        # tests collected only because node ids were widened to files: never named by the user
        widened_only: list[pytest.Item] = []
        if chosen is not None:
            items[:], widened_only = chosen.apply(items)
        settings = state.settings
        result = build(
            collected,
            items,
            config.rootpath,
            pull_dependencies=not (settings.no_deps or settings.ignore_deps),
            with_locations=sends_locations(config),
            keep_unreduced=settings.shard is not None,
            verbosity=config.option.verbose,
            ignore_unselected=settings.ignore_deps,
            ignored_files=chosen.ignored if chosen is not None else (),
            compat_settings=state.compat,
        )
        if settings.timings:
            _print_timings(config, result)
        added = {result.plan.nodeids[n] for n in result.plan.added}
        items[:] = result.items
        if added:
            _undo_deselection(config, added)
        _uncount(config, [item for item in widened_only if item.nodeid not in added])
        if settings.shard is not None:  # split after selection and pull-in, before the walk
            from pytest_depgraph.run import sharding

            plan, kept, others = sharding.apply(
                config, result.plan, result.items, result.unreduced, *settings.shard
            )
            result.plan, result.items = plan, kept
            items[:] = kept
            if others:
                config.hook.pytest_deselected(items=others)
        for problem in result.problems:
            config.hook.pytest_collectreport(
                report=pytest.CollectReport(
                    problem.report_nodeid, "failed", longrepr=problem.message, result=[]
                )
            )
        state.plan = result.plan
        _warn_imported_targets(result.plan, result.items)
        previous = config.pluginmanager.get_plugin("depgraph-serial")
        if previous is not None:  # the hook ran again (some plugins call it themselves)
            config.pluginmanager.unregister(previous)
        if config.option.collectonly or role(config) is Role.WALKED_WORKER:
            return  # nothing runs, or the xdist controller decides what runs
        plan = result.plan
        if not plan.graph.edge_count and not plan.broken and plan.item_count == len(plan.nodeids):
            return  # nothing to wait for and nothing to skip: pytest's own loop as it is
        from pytest_depgraph.run.serial import SerialWalk  # only a run with dependencies needs it

        config.pluginmanager.register(
            SerialWalk(
                result.plan,
                state.recorder,
                state.skips,
                strict=not role(config).is_worker,
            ),
            "depgraph-serial",
        )


def _warn_imported_targets(plan: Plan, items: list[pytest.Item]) -> None:
    """A test function imported into another module to be named as a target is collected
    there as well and runs twice; warn at the importing module, once per copy.

    O(items) attribute reads, each module's name read once; the edges are looked at only
    when a test's function was defined in another module than the one it is collected in."""
    if not plan.graph.edge_count:
        return
    copies: set[int] = set()
    module_of: dict[int, str | None] = {}  # id(parent) -> name of the module collected in
    last_parent: object = object()  # (no parent yet: not even None)
    module: str | None = None
    in_class = False
    for n, item in enumerate(items):
        parent = item.parent
        if parent is not last_parent:  # a module's or class's tests come one after another
            last_parent = parent
            # a method inherited from a class of another module: usual and harmless (the
            # test of a class is never a copy, below)
            in_class = isinstance(parent, pytest.Class)
            module = None
            if not in_class:
                module = module_of.get(id(parent), "")
                if module == "":
                    module = module_of[id(parent)] = getattr(
                        getattr(item, "module", None), "__name__", None
                    )
        if in_class or module is None:
            continue
        function = function_of(item)
        # a test function's module name is a plain attribute: read it as such (the usual
        # case), anything else through safe
        defined_in = function.__module__ if type(function) is FunctionType else None
        if type(defined_in) is not str:
            defined_in = safe.text_attr(function, "__module__")
        if not defined_in or defined_in == module:
            continue
        if getattr(item, "cls", None) is not None:
            continue  # a method inherited from a class of another module: usual and harmless
        copies.add(n)
    if not copies:
        return
    warned: set[int] = set()
    for _dependent, dependency, _kind in plan.graph.triples():
        if dependency not in copies or dependency in warned:
            continue
        warned.add(dependency)
        item = items[dependency]
        function = getattr(item, "function", None)
        defined_in = getattr(function, "__module__", None)
        module = module_of[id(item.parent)]
        name = getattr(function, "__name__", item.name)
        original = next((other.nodeid for other in items if other is not item
                         and getattr(other, "function", None) is function),
                        f"path/to/test_file.py::{name}")
        warnings.warn_explicit(
            pytest.PytestWarning(
                f"depgraph: {name} is a test of {defined_in} imported into {module}, so pytest "
                f"collects it here too ({item.nodeid}) and runs it twice. Name it with a node "
                f"id instead ({original!r}), or import its module."
            ),
            pytest.PytestWarning, str(item.path), _import_line(item.path, name),
        )


def _import_line(path: Path, name: str) -> int:
    """The line of ``path`` that imports ``name`` (1 when it cannot be found)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return 1
    pattern = re.compile(rf"\bimport\b.*\b{re.escape(name)}\b")
    return next((n for n, line in enumerate(lines, 1) if pattern.search(line)), 1)


def _print_timings(config: pytest.Config, result: BuildResult) -> None:
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    if terminal is None:
        return
    plan = result.plan
    terminal.write_line(
        f"depgraph timings: {plan.item_count} tests, {plan.graph.edge_count} edges after "
        f"reduction: {_phases(result.timings)}"
    )
    # CPU time as well: on a loaded machine wall time says more about the others than us
    terminal.write_line(f"depgraph timings (CPU): {_phases(result.cpu_timings)}")


def _phases(timings: dict[str, float]) -> str:
    """``resolve 1.2 ms, ...; total 2.0 ms``."""
    phases = ", ".join(f"{name} {sec * 1000:.1f} ms" for name, sec in timings.items())
    return f"{phases}; total {sum(timings.values()) * 1000:.1f} ms"


def _undo_deselection(config: pytest.Config, added: set[str]) -> None:
    """Tests pulled back in as dependencies are not 'deselected' in the terminal count."""
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    stats = getattr(terminal, "stats", None)
    if stats and stats.get("deselected"):
        stats["deselected"] = [i for i in stats["deselected"] if i.nodeid not in added]
        if not stats["deselected"]:
            del stats["deselected"]


def _uncount(config: pytest.Config, hidden: list[pytest.Item]) -> None:
    """Tests collected only to find dependencies, and not needed, are not part of the run:
    the terminal's "collected N items" leaves them out, as pytest would never have collected
    them (they are not "deselected" either: the user did not select them)."""
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    if hidden and isinstance(getattr(terminal, "_numcollected", None), int):
        terminal._numcollected -= len(hidden)  # type: ignore[union-attr]


class _Recorder:
    """Feeds every test report of this process (controller: of every worker) to the recorder."""

    def __init__(self, state: SessionState, config: pytest.Config) -> None:
        # read once: the hook runs three times a test
        self.record = state.recorder.record
        self.skips = state.skips
        self.config = config

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.record(report)
        if self.skips and report.nodeid in self.skips:
            # skipped because of an upstream failure: not passed, so --lf must run it again
            lfplugin = self.config.pluginmanager.get_plugin("lfplugin")
            lastfailed = getattr(lfplugin, "lastfailed", None)
            if lastfailed is not None:
                lastfailed[report.nodeid] = True


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    state = find_session_state(config)
    if state is not None and state.settings.shard is not None and not role(config).is_worker:
        from pytest_depgraph.run import sharding

        sharding.exit_status(session, state.plan)


def pytest_unconfigure(config: pytest.Config) -> None:
    uninstall_marker()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    config = terminalreporter.config
    state = find_session_state(config)
    if state is None or state.plan is None or role(config).is_worker:
        return
    plan = state.plan
    if not (plan.graph.edge_count or plan.errors or state.skips or plan.shard):
        return  # nothing to say (pytest as usual): the summary's module is not even loaded
    from pytest_depgraph.output import report

    report.summary(terminalreporter, plan, state.recorder, state.skips)


#: read once: the hook below runs for every name of every test module
_MARK_DECORATOR = pytest.MarkDecorator


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: object) -> object:
    # a bare @pytest.mark.depends_on above a wrapping decorator left the marker in the test's
    # place: put the test back, as pytest's own marker would have left it (its marker names
    # no target, which is reported), instead of losing it
    if not issubclass(type(obj), _MARK_DECORATOR):
        return None  # called for every name of every test module: the usual case, inline
    inner = stray_marker(name, obj)
    if inner is None:
        return None
    try:
        # pytest reads the test from the module or class again
        setattr(getattr(collector, "obj", None), name, inner)
    except Exception:
        return None
    return collector.ihook.pytest_pycollect_makeitem(collector=collector, name=name, obj=inner)
