"""The pytest plugin ``depgraph``: hooks and options only; the work is done elsewhere."""

from __future__ import annotations

import re
import warnings
from collections.abc import Generator
from pathlib import Path
from types import FunctionType
from typing import TYPE_CHECKING

import pytest

from pytest_depgraph.collect import safe, selection
from pytest_depgraph.collect.build import Result as BuildResult
from pytest_depgraph.collect.build import build
from pytest_depgraph.collect.context import function_of
from pytest_depgraph.collect.markers import (
    MARKER,
    MARKER_HELP,
    install_marker,
    repair_stray,
    uninstall_marker,
)
from pytest_depgraph.core.plan import Plan
from pytest_depgraph.hosts import pytest as host
from pytest_depgraph.options import add_options
from pytest_depgraph.output import session as output_session
from pytest_depgraph.run import session as run_session
from pytest_depgraph.run.role import Role, role, sends_locations
from pytest_depgraph.run.state import session_state

if TYPE_CHECKING:
    from pytest_depgraph.values import DepGraph


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER_HELP)
    install_marker()
    state = run_session.configure(config)
    # the files first: their plugins' hooks run after the run's (the order of registration)
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
            settings=state.peers,
        )
        if settings.timings:
            _print_timings(config, result)
        added = {result.plan.nodeids[n] for n in result.plan.added}
        items[:] = result.items
        if added:
            # tests pulled back in as dependencies are not 'deselected' in the terminal count
            host.undo_deselection(config, added)
        # tests collected only to find dependencies, and not needed, are not part of the run:
        # the terminal's "collected N items" leaves them out, as pytest would never have
        # collected them (they are not "deselected" either: the user did not select them)
        host.uncount_collected(
            config, sum(1 for item in widened_only if item.nodeid not in added)
        )
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
        run_session.walk_serially(config, state)


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


def pytest_sessionfinish(session: pytest.Session) -> None:
    run_session.finish(session)


def pytest_unconfigure(config: pytest.Config) -> None:
    uninstall_marker()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    output_session.terminal_summary(terminalreporter)


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: object) -> object:
    return repair_stray(collector, name, obj)
