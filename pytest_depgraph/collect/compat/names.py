"""The peer plugins' marker names and the session's settings for them: all that a session
without their markers ever loads of :mod:`pytest_depgraph.collect.compat`."""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter
from typing import Any

import pytest

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

    # (a plain class: every pytest process imports this module, and a dataclass is made at
    # import by compiling its methods)
    __slots__ = ("automark", "ignore_unknown", "order_group_scope", "order_scope",
                 "order_scope_level", "strict")

    def __init__(
        self, automark: bool = False, ignore_unknown: bool = False, strict: bool = False,
        order_scope: str = "session", order_scope_level: int = 0,
        order_group_scope: str | None = None,
    ) -> None:
        self.automark = automark
        self.ignore_unknown = ignore_unknown
        #: ``--depgraph-strict``: a name that matches no test is an error, not a warning
        self.strict = strict
        #: pytest-order's ``--order-scope``, ``--order-scope-level`` and ``--order-group-scope``
        #: as pytest-order reads them: an unknown scope is "session"; a level only with the
        #: session scope; a group scope only when smaller than the scope
        self.order_scope = order_scope if order_scope in ORDER_SCOPES else "session"
        self.order_scope_level = order_scope_level if self.order_scope == "session" else 0
        group = order_group_scope if order_group_scope in ORDER_SCOPES else self.order_scope
        if ORDER_SCOPES.index(group) > ORDER_SCOPES.index(self.order_scope):
            group = self.order_scope
        self.order_group_scope = group


def loaded_plugin(config: pytest.Config, module: str) -> Any:
    """The loaded plugin module called ``module`` (or one of its submodules), or None."""
    for plugin in config.pluginmanager.get_plugins():
        name = getattr(plugin, "__name__", "")
        if isinstance(name, str) and (name == module or name.startswith(module + ".")):
            return plugin
    return None


def marker_names(items: Sequence[pytest.Item], inherited: set[str] | None = None) -> set[str]:
    """Names of every mark on the items and their parents; each node is looked at once.
    ``inherited``, when given, also gets the names of the marks on the parents (the marks
    the tests inherit from their classes and modules).

    O(items), each item's marks read in one comprehension and its parent taken in C: on a
    large suite this pass is bound by reading the items from memory."""
    names = {mark.name for item in items for mark in item.own_markers}
    parents: set[str] = set() if inherited is None else inherited
    seen: set[int] = set()
    # each parent once (the tests of one module or class are consecutive), by identity
    for node in {id(parent): parent for parent in map(_PARENT, items)}.values():
        while node is not None and id(node) not in seen:
            seen.add(id(node))
            for mark in node.own_markers:
                parents.add(mark.name)
            node = node.parent
    names.update(parents)
    return names


_PARENT = attrgetter("parent")
