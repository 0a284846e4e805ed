"""pytest-dependency's internals behind one door each: its skip check and its books of results.

pytest-dependency keeps each test's results in a ``DependencyManager`` on the collection node
of the test's scope, and skips a test from ``DependencyManager.checkDepend`` (for its marker
and for ``depends()``) unless every name it depends on is recorded there as passed. Checked
against pytest-dependency 0.5 and 0.6; a release without what a door needs is named by
:func:`wrap_check`, which then changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

#: what :func:`wrap_check` calls before pytest-dependency's check: (manager, names, item)
Before = Callable[[Any, Any, Any], None]


def wrap_check(module: Any, before: Before) -> Callable[[], None] | None:
    """Have ``DependencyManager.checkDepend(depends, item)`` call ``before(manager, depends,
    item)`` first, then itself; return what undoes it. None when this pytest-dependency has
    no ``DependencyManager`` with ``checkDepend``, ``addResult`` and ``ScopeCls`` (nothing is
    changed then)."""
    manager: Any = getattr(module, "DependencyManager", None)
    check = getattr(manager, "checkDepend", None)
    if check is None or not (hasattr(manager, "addResult") and hasattr(manager, "ScopeCls")):
        return None

    def checkDepend(manager_self: Any, depends: Any, item: Any) -> Any:
        before(manager_self, depends, item)
        return check(manager_self, depends, item)

    manager.checkDepend = checkDepend

    def undo() -> None:
        manager.checkDepend = check

    return undo


def version(module: Any) -> str:
    """The installed pytest-dependency's ``__version__`` ("?" when it has none)."""
    return str(getattr(module, "__version__", "?"))


def manager_scope(manager: Any) -> str | None:
    """The scope of a manager's books (``scope``: "session", "package", "module", "class"),
    None when it cannot be read."""
    scope = getattr(manager, "scope", None)
    return scope if isinstance(scope, str) else None


def has_passed(manager: Any, name: str) -> bool:
    """Whether the manager's books (``results``) record ``name`` as passed in every phase
    (``DependencyItemStatus.isSuccess``)."""
    results = getattr(manager, "results", None)
    status = results.get(name) if isinstance(results, dict) else None
    return status is not None and bool(getattr(status, "isSuccess", lambda: False)())


def record_passed(manager: Any, item: Any, name: str) -> None:
    """Record in the manager's books that test ``item`` (known as ``name``) passed: its
    ``addResult`` for setup, call and teardown, each with a report of that phase (it reads
    the report's ``when`` and ``outcome``)."""
    for when in ("setup", "call", "teardown"):
        manager.addResult(item, name, _Passed(when))


@dataclass(frozen=True)
class _Passed:
    """A report-like value with the two attributes pytest-dependency's ``addResult`` reads."""

    when: str
    outcome: str = "passed"
