"""The collection context every declaration source reads: the collected items, their indexes
and the problems found so far; and :class:`Source`, a declaration before resolution.

The build (:mod:`~pytest_depgraph.collect.build`) makes one per session; the readers
(:mod:`~pytest_depgraph.collect.readers`) and the worker pins
(:mod:`~pytest_depgraph.collect.pinning`) read it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

import pytest

from pytest_depgraph.collect import safe
from pytest_depgraph.collect.dependency_markers import Declaration
from pytest_depgraph.collect.locate import Locator
from pytest_depgraph.collect.peer_plugins import Settings
from pytest_depgraph.collect.problems import Problem, Problems
from pytest_depgraph.collect.targets import TargetIndex
from pytest_depgraph.core.graph.storage import Origin
from pytest_depgraph.hosts.pytest import session_fixture_names, session_fixtures


class Source(NamedTuple):
    """A declaration with where it came from, before resolution (one per declaration)."""

    declaration: Declaration
    origin: Origin
    #: what the error message calls the declaration (``@pytest.mark.depends_on``)
    label: str
    #: declared on a class or module and inherited by the test
    inherited: bool
    #: positions (into all collected items) already resolved by the declaring plugin's own
    #: naming rules (pytest-dependency, pytest-order); None: resolve the targets here
    resolved: tuple[int, ...] | None = None
    #: where the declaration was written, when that is not its origin's place (a fixture's
    #: edges point at the fixture's definition)
    written: str | None = None


class Context:
    """The collected items by position, what is known about each, and the problems."""

    def __init__(
        self,
        collected: Sequence[pytest.Item],
        rootpath: Path,
        verbosity: int = 0,
        settings: Settings | None = None,
        ignored: Collection[str] = (),
        capacity: Mapping[str, int] | None = None,
    ) -> None:
        self.collected = list(collected)
        #: the shared resources ``depgraph_resources`` lists, with their capacities (None: not
        #: set; any name, capacity 1)
        self.capacity = capacity
        self.rootpath = rootpath
        #: pytest-dependency's and pytest-order's options, and ``--depgraph-strict``
        self.settings = Settings() if settings is None else settings
        #: files that declarations point to but pytest was told to ignore
        self.ignored = ignored
        #: (where, name) of the stale names of the peer plugins' markers already warned about
        #: (one warning per marker and name, whichever reader found it)
        self.warned: set[tuple[str, str]] = set()
        #: warnings found while reading tests, each with its test's position, given in the
        #: order of the tests once they are read (:meth:`warn_in_order`)
        self.warnings: list[tuple[int, Callable[[], None]]] = []
        self.nodeids = [item.nodeid for item in self.collected]
        self._files: set[str] | None = None
        self._objects = _Objects(self.collected)
        self._index: TargetIndex | None = None
        #: every fixture definition with its name, once read (None: pytest's tables cannot be
        #: read)
        self._definitions: list[tuple[str, object]] | None = None
        self._definitions_read = False
        self.problems = Problems(verbosity)
        # the lazy file:line of every marker origin holds the locator, not the context: the
        # context and its indexes are garbage once the plan is built
        self.locator = Locator(rootpath)
        self.relative = self.locator.relative

    # the tables below are made when first read: a session without declarations reads none

    def positions_of(self, items: Sequence[pytest.Item]) -> list[int]:
        """The positions in :attr:`collected` of those of ``items`` that were collected, in
        the order of ``items``. Items are told apart by identity, so the table is keyed by
        ``id()``: an item's own hash is a Python call (its node id's hash)."""
        collected = self.collected
        # the usual run, every collected test in collection order, needs no table (measured:
        # 100,000 items, 26.6 -> 6.3 ms CPU, median of 7 in one process)
        if len(items) == len(collected) and all(
            item is known for item, known in zip(items, collected)
        ):
            return list(range(len(collected)))
        position = dict(zip(map(id, collected), range(len(collected))))
        return [position[key] for key in map(id, items) if key in position]

    @property
    def functions(self) -> list[object | None]:
        """The test function of each item (None for an item without one)."""
        return self._objects.functions()

    @property
    def classes(self) -> list[object | None]:
        """The test class of each item (None outside a class)."""
        return self._objects.classes()

    @property
    def index(self) -> TargetIndex:
        """The targets' index, made when the first target is resolved (a suite without
        dependencies never needs it)."""
        if self._index is None:
            # the functions and classes are read only if a target is one (the index holds
            # the tables, not the context: no reference cycle keeps the context alive)
            objects = self._objects
            self._index = TargetIndex(self.nodeids, objects.functions, objects.classes)
        return self._index

    def fixture_definitions(self) -> list[tuple[str, object]] | None:
        """Every fixture definition of the session with its name, read once from pytest's
        private tables (None when they cannot be read: another pytest version)."""
        if not self._definitions_read:
            self._definitions_read = True
            self._definitions = (
                session_fixtures(safe.attr(self.collected[0], "session"))
                if self.collected else []
            )
        return self._definitions

    def fixture_names(self) -> Collection[str]:
        """Every fixture name of the session (empty when pytest's tables cannot be read)."""
        if not self.collected:
            return ()
        return session_fixture_names(safe.attr(self.collected[0], "session"))

    @property
    def files(self) -> set[str]:
        """Rootdir-relative files of the collected tests (made when first asked for)."""
        if self._files is None:
            self._files = {nodeid.split("::", 1)[0] for nodeid in self.nodeids}
        return self._files

    def warn_in_order(self, positions: Sequence[int]) -> None:
        """Give the warnings found while the tests at ``positions`` were read, in the order
        of their tests (those of one test in the order found): as if each test had been read
        alone, in turn."""
        if not self.warnings:
            return
        rank = {position: n for n, position in enumerate(positions)}
        found, self.warnings = self.warnings, []
        for _, warn in sorted(found, key=lambda entry: rank.get(entry[0], len(rank))):
            warn()

    def problem(self, message: str, report_nodeid: str) -> Problem:
        """The problem with this message, made once however many tests share it."""
        return self.problems.add(message, report_nodeid)

    def release(self) -> None:
        """Let go of what only reading and resolving the declarations needed: the targets'
        index (kept when a problem was found: its hints may ask it again). The graph's phases
        that follow are the build's peak of memory."""
        if not self.problems:
            self._index = None


def function_of(item: pytest.Item) -> object:
    """``item.function`` (None when it has none)."""
    return safe.attr(item, "function")


def class_of(item: pytest.Item) -> object:
    """The test class of ``item`` (None outside a class)."""
    return None if isinstance(item.parent, pytest.Module) else safe.attr(item, "cls")


class _Objects:
    """The test function and class of every item, each list made when first asked for."""

    def __init__(self, collected: list[pytest.Item]) -> None:
        self._collected = collected
        self._functions: list[object | None] | None = None
        self._classes: list[object | None] | None = None

    def functions(self) -> list[object | None]:
        if self._functions is None:
            self._functions = [function_of(item) for item in self._collected]
        return self._functions

    def classes(self) -> list[object | None]:
        if self._classes is None:
            # pytest computes item.cls by walking up the tree: once per item is enough
            self._classes = [class_of(item) for item in self._collected]
        return self._classes
