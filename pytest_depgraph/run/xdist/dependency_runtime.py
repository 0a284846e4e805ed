"""pytest-dependency on walked xdist workers: its skip check told what passed elsewhere.

When pytest-dependency is installed and tests run on workers driven by the depgraph
scheduler, its skip check (``DependencyManager.checkDepend``, used by the marker and by
``depends()``) is told about every dependency that passed on another worker: the scheduler only
sends a test once its requires dependencies passed.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, Callable

import pytest

from pytest_depgraph.collect.peer_plugins import Settings, loaded_plugin
from pytest_depgraph.core.graph.paths import reachable
from pytest_depgraph.core.graph.storage import Kind
from pytest_depgraph.hosts import dependency
from pytest_depgraph.run.role import Role, role
from pytest_depgraph.run.state import session_state

if TYPE_CHECKING:
    from pytest_depgraph.collect.readers.pytest_dependency import DependencyNames


def install(config: pytest.Config) -> None:
    """On a walked xdist worker where pytest-dependency is loaded, wrap its skip check (after
    the session's state is made)."""
    plugin = loaded_plugin(config, "pytest_dependency")
    if plugin is not None and role(config) is Role.WALKED_WORKER:
        runtime = DependencyRuntime(config, plugin, session_state(config).peers)
        if runtime.install():
            config.pluginmanager.register(runtime, "depgraph-dependency-runtime")


class DependencyRuntime:
    """Tells pytest-dependency, on a walked xdist worker, which dependencies passed elsewhere.

    pytest-dependency keeps results on the collection nodes of the process that ran each test,
    so on a worker a dependency that ran on another worker is unknown and its dependent is
    skipped. The depgraph scheduler sends a test only when all its requires dependencies
    passed, so before pytest-dependency checks a name, every test of that name that is a
    requires ancestor of the running test is recorded as passed in the checking manager.
    """

    def __init__(self, config: pytest.Config, module: Any, settings: Settings) -> None:
        self.config = config
        self.module = module
        self.settings = settings
        self._names: DependencyNames | None = None
        self._node_of: dict[str, int] | None = None
        self._ancestors: dict[int, set[int]] = {}
        self._undo: Callable[[], None] | None = None

    def install(self) -> bool:
        """Wrap pytest-dependency's skip check; False (with a warning) on unknown internals."""
        self._undo = dependency.wrap_check(self.module, self._before_check)
        if self._undo is None:
            warnings.warn(pytest.PytestWarning(
                f"pytest-depgraph: this pytest-dependency ({dependency.version(self.module)}) "
                "has no DependencyManager.checkDepend/addResult; on xdist workers its own skip "
                "check cannot see dependencies that ran on another worker. Use depends_on "
                "markers or pytest-dependency 0.5/0.6."
            ), stacklevel=1)
            return False
        return True

    def pytest_unconfigure(self) -> None:
        if self._undo is not None:
            self._undo()

    def _before_check(self, manager: Any, depends: Any, node: Any) -> None:
        try:
            self.fill(manager, depends, node)
        except Exception as error:  # never break the test run
            warnings.warn(pytest.PytestWarning(
                f"pytest-depgraph could not pass results to pytest-dependency: {error!r}"
            ), stacklevel=1)

    def fill(self, manager: Any, depends: Any, node: Any) -> None:
        """Record as passed each name in ``depends`` whose tests are requires ancestors."""
        # pytest-dependency's naming rules, loaded only where pytest-dependency runs
        from pytest_depgraph.collect.readers.pytest_dependency import (
            SCOPES,
            DependencyNames,
            scope_key,
        )

        state = session_state(self.config)
        item, plan = state.running, state.plan
        scope = dependency.manager_scope(manager)
        if item is None or plan is None or scope not in SCOPES:
            return
        if self._node_of is None:
            self._node_of = {n: i for i, n in enumerate(plan.nodeids[: plan.item_count])}
        me = self._node_of.get(item.nodeid)
        if me is None:
            return
        if self._names is None:
            self._names = DependencyNames(item.session.items, self.settings.automark)
        key = scope_key(node, scope)
        if key is None:
            return
        ancestors = self._required_ancestors(plan, me)
        for name in [depends] if isinstance(depends, str) else list(depends):
            if dependency.has_passed(manager, name):
                continue
            tests = [self._names.items[p] for p in self._names.lookup(scope, key, str(name))]
            nodes = [self._node_of.get(t.nodeid) for t in tests]
            if tests and all(n is not None and n in ancestors for n in nodes):
                for test in tests:
                    dependency.record_passed(manager, test, name)

    def _required_ancestors(self, plan: Any, node: int) -> set[int]:
        """Tests reached from ``node`` through requires edges: all passed before it was sent."""
        found = self._ancestors.get(node)
        if found is None:
            found = set(reachable(plan.graph, (node,), "dependencies", (Kind.REQUIRES,)))
            self._ancestors[node] = found
        return found

