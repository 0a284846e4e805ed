"""A discovery session: collected as a run is, then orders run in child processes instead.

Called from ``plugin.py``: :func:`configure` registers, in a discovery (``--depgraph-discover``),
the plugin whose ``pytest_runtestloop`` takes the place of pytest's (xdist's worker sessions
are not started: ``-n N`` and ``--tx`` are the execnet gateways the lists run on, N at once,
:mod:`.gateways`; without them the lists run on this machine, ``--depgraph-parallelism`` at
once), and in a discovery's child (``--depgraph-discover-child``) the keeper of its order.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence

import pytest

from pytest_depgraph.core.graph.paths import reachable
from pytest_depgraph.core.graph.storage import Graph
from pytest_depgraph.discover import findings
from pytest_depgraph.discover.child import OrderKeeper
from pytest_depgraph.discover.children import ChildFailed, Children, LocalSlot, child_options
from pytest_depgraph.discover.gateways import open_children
from pytest_depgraph.discover.orders import Order
from pytest_depgraph.discover.search import Discovered, Outcomes, discover
from pytest_depgraph.hosts import xdist
from pytest_depgraph.plurals import tests
from pytest_depgraph.run.role import role
from pytest_depgraph.run.state import SessionState, session_state


def configure(config: pytest.Config, state: SessionState) -> None:
    """Register the discovery's plugin, or the child's; check the JSON path before anything
    runs. Runs before xdist's ``pytest_configure``, which then starts no worker."""
    settings = state.settings
    if settings.discover_child:
        config.pluginmanager.register(OrderKeeper(settings.discover_child),
                                      "depgraph-discover-child")
        return
    if not settings.discover or role(config).is_worker:
        return
    if settings.discover_json:
        check_path(settings.discover_json)
    specs: list[str] = []
    if config.pluginmanager.has_plugin("xdist"):
        specs = xdist.tx_specs(config)
        xdist.keep_workers_off(config)
    workers = len(specs) or settings.parallelism or 1
    settings.parallelism = None  # the discovery's processes, not a walk's slots
    config.pluginmanager.register(Discovery(workers, specs), "depgraph-discover")


def discovering(config: pytest.Config) -> bool:
    """Whether this session is a discovery (its summary replaces the run's)."""
    return config.pluginmanager.has_plugin("depgraph-discover")


def check_path(path: str) -> None:
    """Refuse, before anything runs, a JSON path that could not be written."""
    from pytest_depgraph.output.dot import unwritable

    option = f"--depgraph-discover-json {path}"
    if os.path.isdir(path) or path.endswith(("/", os.sep)):
        raise pytest.UsageError(
            f"{option}: {path} is a directory; give a file name, e.g. "
            f"{os.path.join(path, 'discovered.json')}"
        )
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise pytest.UsageError(
            f"{option}: the folder {parent} does not exist; create it first or choose another path"
        )
    problem = unwritable(path)
    if problem:
        raise pytest.UsageError(f"{option}: cannot write {path}: {problem}")


class Discovery:
    """The discovery's plugin: runs it in place of the tests, then reports it."""

    def __init__(self, workers: int, specs: list[str]) -> None:
        self.workers = workers
        #: the gateways' specs (``-n``, ``--tx``); none: ``workers`` slots on this machine
        self.specs = specs
        self.discovered: Discovered | None = None
        self.named: findings.Named | None = None
        self.processes = 0
        self.seconds = 0.0
        #: slot -> why its lists collected afresh (see :attr:`.children.Children.fallbacks`)
        self.fallbacks: dict[str, str] = {}

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool | None:
        config = session.config
        if config.option.collectonly or (
            session.testsfailed and not config.option.continue_on_collection_errors
        ):
            return None  # pytest's own loop stops there, as in a run
        started = time.perf_counter()
        plan = session_state(config).plan
        items = session.items
        count = len(items) if plan is None else plan.item_count
        graph = Graph(count) if plan is None else plan.graph
        nodeids = [item.nodeid for item in items[:count]]
        self.named = findings.Named(nodeids, [_location(item) for item in items[:count]])
        children = self._children(config, nodeids)
        position = {nodeid: at for at, nodeid in enumerate(nodeids)}

        def declared(tests: Sequence[str]) -> list[str]:
            starts = [position[n] for n in tests if n in position]
            return [nodeids[t] for t in reachable(graph, starts, "dependencies") if t < count]

        children.declared = declared

        def run(lists: Sequence[Order]) -> list[Outcomes]:
            found = children.run([[nodeids[t] for t in order] for order in lists])
            return [{position[n]: ok for n, ok in outcomes.items() if n in position}
                    for outcomes in found]

        terminal = config.pluginmanager.get_plugin("terminalreporter")
        if terminal is not None and config.get_verbosity() >= 0:
            where = (f"on {self.workers} gateway{'s' if self.workers != 1 else ''} at once "
                     f"({_specs(self.specs)})" if self.specs else
                     f"{self.workers} process{'es' if self.workers != 1 else ''} at once")
            terminal.write_line(
                f"depgraph discover: {tests(count)} in orders consistent with the declared "
                f"graph, {where}"
            )
        try:
            self.discovered = discover(graph, count, run, config.option.depgraph_discover_verify,
                                       children.workers)
        except ChildFailed as error:
            pytest.exit(f"depgraph discover: {error}", returncode=pytest.ExitCode.USAGE_ERROR)
        finally:
            # also on Ctrl-C or pytest.exit: nothing of a discovery stays in a temp folder
            children.close()
            self.processes = children.processes
            self.fallbacks = {slot: why for slot, why in children.fallbacks.items()
                              if why != "the system does not fork"}
            self.seconds = time.perf_counter() - started
        settings = session_state(config).settings
        if settings.discover_json:
            findings.write_json(settings.discover_json, self.discovered, self.named)
        if self.discovered.findings:
            session.testsfailed += 1
        return True

    def _children(self, config: pytest.Config, nodeids: list[str]) -> Children:
        """The slots: one a gateway of ``-n`` / ``--tx``, or ``workers`` on this machine."""
        options = child_options(config)
        files = list(dict.fromkeys(nodeid.split("::", 1)[0] for nodeid in nodeids))
        if self.specs:
            return open_children(config, self.specs, options, files)
        paths = [config.rootpath / file for file in files]
        return Children([LocalSlot(config, options, paths) for _ in range(self.workers)],
                        config.rootpath)

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.discovered is None or self.named is None:
            return
        config = terminalreporter.config
        findings.summary(terminalreporter, self.discovered, self.named, self.processes,
                       self.workers, self.seconds,
                       session_state(config).settings.discover_json, self.fallbacks)


def _specs(specs: Sequence[str]) -> str:
    """The gateways' specs as ``--tx`` takes them: ``2*popen, socket=host:8888``."""
    counts: dict[str, int] = {}
    for spec in specs:
        counts[spec] = counts.get(spec, 0) + 1
    return ", ".join(spec if n == 1 else f"{n}*{spec}" for spec, n in counts.items())


def _location(item: pytest.Item) -> str:
    """``file:line`` of a test (1-based, as an editor counts)."""
    try:
        path, line, _ = item.location
    except Exception:  # another plugin's item whose reportinfo raises
        return item.nodeid.split("::", 1)[0]
    return f"{path}:{line + 1}" if line is not None else path
