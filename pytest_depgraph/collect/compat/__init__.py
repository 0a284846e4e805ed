"""The peer plugins' markers (pytest-dependency, pytest-order) as the builder sees them.

One module per peer plugin, each a reader with the same small interface
(:class:`~pytest_depgraph.collect.compat.shared.Reader`: the sources of the test at a
position): :mod:`.dependency` (``@pytest.mark.dependency`` and ``depends()`` calls) and
:mod:`.order` (``@pytest.mark.order``); what they share is in :mod:`.shared`. This module
registers the markers and reads the settings at configure time (:mod:`.names`), and gives
the builder the readers the session needs -- none, and nothing of theirs imported, when no
test carries their markers.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Callable

import pytest

from pytest_depgraph.collect.compat.names import (
    DEPENDENCY,
    DEPENDENCY_HELP,
    ORDER,
    ORDER_HELP,
    Settings,
    loaded_plugin,
    marker_names,
)

if TYPE_CHECKING:
    from pytest_depgraph.collect.compat.dependency import DependencyReader
    from pytest_depgraph.collect.compat.order import OrderReader
    from pytest_depgraph.collect.context import Context, Source

__all__ = ["Readers", "Settings", "computed_sites", "marker_names", "ordinal_edges", "reader",
           "register"]


class Readers:
    """The readers of the peer plugins whose markers occur in the session."""

    def __init__(self, dependency: DependencyReader | None, order: OrderReader | None) -> None:
        self.dependency = dependency
        self.order = order

    def sources(self, position: int) -> Iterator[Source]:
        """Sources from ``dependency`` and ``order`` markers on the item at ``position``."""
        if self.dependency is not None:
            yield from self.dependency.sources(position)
        if self.order is not None:
            yield from self.order.sources(position)


def reader(
    context: Context, settings: Settings, marked: set[str] | None = None
) -> Readers | None:
    """What reads ``dependency`` and ``order`` markers for ``context``; None when the session
    has neither (the common case: then nothing of theirs is imported). ``marked``: the names
    of the marks on the collected items and their parents, when the caller has them."""
    if marked is None:
        marked = marker_names(context.collected)
    has_dependency = DEPENDENCY in marked or settings.automark
    has_order = ORDER in marked
    if not (has_dependency or has_order):
        return None
    warned: set[tuple[str, str]] = set()  # one warning per marker and name, across readers
    dependency = order = None
    if has_dependency:
        from pytest_depgraph.collect.compat.dependency import DependencyReader

        dependency = DependencyReader(context, settings, warned)
    if has_order:
        from pytest_depgraph.collect.compat.order import OrderReader

        order = OrderReader(context, settings, warned)
    return Readers(dependency, order)


def computed_sites(readers: Readers | None) -> Mapping[int, list[str]]:
    """Position -> sites of the ``depends()`` calls whose names cannot be read, found while
    the builder read the dependency sources (nothing when pytest-dependency is not used)."""
    if readers is None or readers.dependency is None:
        return {}
    return readers.dependency.computed


def ordinal_edges(
    readers: Readers | None, run: Sequence[int], order: Sequence[int], broken: Any, graph: Any,
    declared: Any = None,
) -> int:
    """AFTER edges between pytest-order's ordinal groups, added to ``graph``; their number
    (:meth:`~pytest_depgraph.collect.compat.order.OrderReader.ordinal_edges`; ``declared``:
    the graph before reduction)."""
    if readers is None or readers.order is None:
        return 0
    return readers.order.ordinal_edges(run, order, broken, graph, declared)


def register(config: pytest.Config, strict: bool = False) -> Settings:
    """Register the other plugins' markers when they are absent, and return the
    :class:`Settings` (the session's state keeps them); ``strict``: names that match no test
    are errors (``--depgraph-strict``).
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
        config.pluginmanager.register(OrderIndex(), "depgraph-order-index")
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
    (:func:`~pytest_depgraph.collect.compat.order.sort_by_index`). It runs before the graph
    is built, so edges win where they contradict it."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        if ORDER not in marker_names(items):
            return
        from pytest_depgraph.collect.compat.order import sort_by_index

        sort_by_index(items)
