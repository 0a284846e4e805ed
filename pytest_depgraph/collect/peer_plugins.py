"""The peer plugins (pytest-dependency, pytest-order) as a session meets them before any test is
read: their marker names and options, registered at configure time, pytest-order's ordinal
sorting for a suite run without pytest-order, and the names of the marks a session holds.

Their markers are read by :mod:`pytest_depgraph.collect.readers.pytest_dependency` and
:mod:`pytest_depgraph.collect.readers.pytest_order`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Callable

import pytest

from pytest_depgraph.collect import safe

DEPENDENCY = "dependency"
ORDER = "order"
DEPENDENCY_HELP = (
    "dependency(name=None, depends=[], scope='module'): pytest-dependency's marker; "
    "pytest-depgraph runs this test after the tests it depends on and skips it unless they "
    "passed (pytest-dependency itself is not installed)."
)
ORDER_HELP = (
    "order(index=None, before=None, after=None): pytest-order's marker; pytest-depgraph runs "
    "this test after the tests in after= and before the tests in before= (pytest-order itself "
    "is not installed)."
)

#: pytest-order's scopes, smallest first
ORDER_SCOPES = ("class", "module", "session")


class Settings:
    """pytest-dependency's and pytest-order's options, when they are installed, and
    ``--depgraph-strict``."""

    __slots__ = ("automark", "ignore_unknown", "order_group_scope", "order_scope",
                 "order_scope_level", "strict")

    def __init__(
        self, automark: bool = False, ignore_unknown: bool = False, strict: bool = False,
        order_scope: str = "session", order_scope_level: int = 0, order_group_scope: str = "",
    ) -> None:
        self.automark = automark
        self.ignore_unknown = ignore_unknown
        #: ``--depgraph-strict``: a name that matches no test is an error, not a warning
        self.strict = strict
        # pytest-order's ``--order-scope``, ``--order-scope-level`` and ``--order-group-scope``
        # as pytest-order reads them: an unknown scope is "session"; a level only with the
        # session scope; a group scope only when smaller than the scope
        if order_scope not in ORDER_SCOPES:
            order_scope = "session"
        self.order_scope = order_scope
        self.order_scope_level = order_scope_level if order_scope == "session" else 0
        group = order_group_scope
        if group not in ORDER_SCOPES or ORDER_SCOPES.index(group) > ORDER_SCOPES.index(
            order_scope
        ):
            group = order_scope
        self.order_group_scope = group


class Marks:
    """The names of the marks of the session: on its tests, and on their classes, modules and
    packages (:func:`marks_of`): they say which readers a session needs."""

    __slots__ = ("inherited", "own")

    def __init__(self, own: frozenset[str], inherited: frozenset[str]) -> None:
        self.own = own
        self.inherited = inherited

    def __contains__(self, name: object) -> bool:
        return name in self.own or name in self.inherited


def marks_of(items: Sequence[pytest.Item]) -> Marks:
    """The names of every mark on ``items`` and on their parents, each node looked at once.
    O(items + parents)."""
    own = {mark.name for item in items for mark in item.own_markers}
    inherited: set[str] = set()
    seen: set[int] = set()
    # each parent once (the tests of one module or class are consecutive), by identity
    for node in {id(item.parent): item.parent for item in items}.values():
        while node is not None and id(node) not in seen:
            seen.add(id(node))
            inherited.update(mark.name for mark in node.own_markers)
            node = node.parent
    return Marks(frozenset(own), frozenset(inherited))


def loaded_plugin(config: pytest.Config, module: str) -> Any:
    """The loaded plugin module called ``module`` (or one of its submodules), or None."""
    for plugin in config.pluginmanager.get_plugins():
        name = getattr(plugin, "__name__", "")
        if isinstance(name, str) and (name == module or name.startswith(module + ".")):
            return plugin
    return None


def register(
    config: pytest.Config, strict: bool = False,
    collected_marks: Callable[[], Marks | None] = lambda: None,
) -> Settings:
    """Register the other plugins' markers when they are absent, and return the
    :class:`Settings` (the session's state keeps them); ``strict``: names that match no test
    are errors (``--depgraph-strict``); ``collected_marks``: :func:`marks_of` every collected
    test, once the session has taken it (None before), for pytest-order's index sort.
    """
    dependency = loaded_plugin(config, "pytest_dependency")
    if dependency is None:
        config.addinivalue_line("markers", DEPENDENCY_HELP)
        found = Settings(strict=strict)
    else:
        found = Settings(
            automark=bool(_option(lambda: config.getini("automark_dependency"))),
            ignore_unknown=bool(
                _option(lambda: config.getoption("--ignore-unknown-dependency"))
            ),
            strict=strict,
        )
    if loaded_plugin(config, "pytest_order") is None:
        config.addinivalue_line("markers", ORDER_HELP)
        config.pluginmanager.register(OrderIndex(collected_marks), "depgraph-order-index")
    else:
        # (pytest-order's own options: without pytest-order they do not exist)
        level = _option(lambda: config.getoption("order_scope_level"))
        found = Settings(
            automark=found.automark, ignore_unknown=found.ignore_unknown, strict=strict,
            order_scope=str(_option(lambda: config.getoption("order_scope")) or "session"),
            order_scope_level=level if type(level) is int else 0,
            order_group_scope=str(_option(lambda: config.getoption("order_group_scope")) or ""),
        )
    return found


def _option(read: Callable[[], object]) -> object:
    try:
        return read()
    except (ValueError, KeyError, AttributeError):
        return False


class OrderIndex:
    """pytest-order's ``order(index)`` sorting, for suites run without pytest-order
    (:func:`sort_by_index`). It runs before the graph is built, so edges win where they
    contradict it. ``collected_marks``: as :func:`register` takes it."""

    def __init__(self, collected_marks: Callable[[], Marks | None]) -> None:
        self._collected_marks = collected_marks

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        # the marks of every collected test, when taken (the selected tests may have fewer:
        # then the sort keeps the order they have)
        marks = self._collected_marks()
        if ORDER in (marks_of(items) if marks is None else marks):
            sort_by_index(items)


#: pytest-order's words for positions
_ORDER_WORDS = {
    "first": 0, "second": 1, "third": 2, "fourth": 3, "fifth": 4, "sixth": 5, "seventh": 6,
    "eighth": 7, "last": -1, "second_to_last": -2, "third_to_last": -3, "fourth_to_last": -4,
    "fifth_to_last": -5, "sixth_to_last": -6, "seventh_to_last": -7, "eighth_to_last": -8,
}


def order_index(item: pytest.Item) -> int | None:
    """pytest-order's position of a test: ``order(1)``, ``order(index=1)``, ``"first"``..."""
    for mark in item.iter_markers(name=ORDER):
        value = index_of(mark)
        if value is not None:
            return value
    return None


def index_of(mark: pytest.Mark) -> int | None:
    """The position one ``order`` mark gives (None: it gives none)."""
    value = mark.args[0] if mark.args else mark.kwargs.get("index")
    if safe.is_str(value):  # a user object: read as a plain string, never compared itself
        value = _ORDER_WORDS.get(safe.exact_str(value))
    if type(value) is int:
        return value
    return None


#: the ordinal key of a test without a position (see :func:`ordinal_key`)
UNORDERED = (1, 0)


def ordinal_key(index: int | None) -> tuple[int, int]:
    """pytest-order's sort key: indexes >= 0 by index, then unordered tests, then negative
    indexes (``-1``/``"last"`` at the very end)."""
    if index is None:
        return UNORDERED
    return (0, index) if index >= 0 else (2, index)


def sort_by_index(items: list[pytest.Item]) -> None:
    """pytest-order's ``order(index)`` sorting, in place, for suites run without pytest-order.

    Tests with an index >= 0 come first, by index; then the tests without one; then those with
    a negative index (``-1``/``"last"`` at the very end). The sort is stable.
    """
    indexes = [order_index(item) for item in items]
    keyed = sorted(range(len(items)), key=lambda i: ordinal_key(indexes[i]))
    items[:] = [items[i] for i in keyed]
