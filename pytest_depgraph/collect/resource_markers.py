"""Shared resources as declared: the ``resource_lock``, ``exclusive`` and ``weight`` markers, the
``resource_lock`` decorator (for fixtures, tests, classes and modules), and their arguments
validated.

As with ``depends_on``, validation happens when the plan is built: a bad argument is a
collection error that names the test, not an import-time traceback. What the tests hold is
turned into the plan's resources by :mod:`pytest_depgraph.collect.phases.assemble_resources`.
"""

from __future__ import annotations

import sys
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Callable, Literal, NamedTuple, Optional, TypeVar

from pytest_depgraph.collect import resource_problems, safe
from pytest_depgraph.collect.dependency_markers import wrapped_chain
from pytest_depgraph.collect.process_registry import REGISTRY

LOCK = "resource_lock"
EXCLUSIVE = "exclusive"
WEIGHT = "weight"
#: every marker of shared resources
MARKERS = (LOCK, EXCLUSIVE, WEIGHT)
#: attribute holding the locks made with :func:`resource_lock` on a fixture, a test, a class
#: or a module
ATTRIBUTE = "_depgraph_resource_lock"
MARKER_HELP = (
    "resource_lock(name, mode='write', scope='test'): on -n, never run this test beside "
    "another that holds the resource (mode='read': beside other readers only); "
    "scope='class' or 'module': the tests of that scope hold it as one block. "
    "See the 'Tests that must not run together' page of the pytest-depgraph docs.",
    "exclusive: on -n, run this test with no other test running.",
    "weight(k): on -n, this test counts k toward --depgraph-parallelism (it needs k cores).",
)

MODES = ("write", "read")
#: a lock's scopes, smallest first: the tests of one such scope hold the lock as one block
SCOPES = ("test", "class", "module", "package", "session")

F = TypeVar("F")


class Held(NamedTuple):
    """One lock as declared: what a test holds."""

    name: str
    mode: str
    #: one of :data:`SCOPES`
    scope: str
    #: ``file:line`` of the declaration
    where: str
    #: the fixture that declares it ("" for a marker)
    fixture: str = ""


class Weight(NamedTuple):
    """One ``weight(k)`` mark as declared."""

    k: int
    #: ``file:line`` of the mark
    where: str


class RawLock(NamedTuple):
    """A :func:`resource_lock` call on a fixture, before validation."""

    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]
    where: str


class LockError(Exception):
    """A marker or decorator of shared resources whose arguments are wrong; the message is
    for a person."""


def resource_lock(
    name: str,
    mode: Literal["write", "read"] = "write",
    # Optional, not ``| None``: typing.get_type_hints evaluates it, and Python 3.9 cannot
    scope: Optional[Literal["test", "class", "module", "package", "session"]] = None,  # noqa: UP045
    **unknown: object,
) -> Callable[[F], F]:
    """Declare a shared resource on a fixture: every test that uses the fixture (directly,
    through other fixtures, autouse) holds it while it runs. On a test function, a test
    class or a module object, it works as ``@pytest.mark.resource_lock`` there.

    Takes the arguments of ``@pytest.mark.resource_lock``; on a fixture the scope defaults to
    the fixture's (a module-scoped fixture's users hold the lock as one block, back to back
    on one worker). Works above or below ``@pytest.fixture``. Bad arguments are reported at
    collection, naming the test or the fixture.
    """
    frame = sys._getframe(1)
    kwargs: dict[str, Any] = {"mode": mode, **unknown}
    if scope is not None:
        kwargs["scope"] = scope
    raw = RawLock((name,), kwargs, f"{frame.f_code.co_filename}:{frame.f_lineno}")

    def decorate(obj: F) -> F:
        REGISTRY.resource_lock = True
        for target in wrapped_chain(obj):
            try:
                setattr(target, ATTRIBUTE, [*fixture_locks(target), raw])
            except Exception:  # an object that takes no attribute: its function carries it
                continue
        return obj

    return decorate


def fixture_locks(obj: object) -> list[RawLock]:
    """The :func:`resource_lock` calls on a fixture's function (or what it wraps)."""
    for target in wrapped_chain(obj):
        found = safe.attr(target, ATTRIBUTE)
        if type(found) is list:
            return [raw for raw in found if type(raw) is RawLock]
    return []


def validate_lock(
    args: Sequence[Any], kwargs: Mapping[str, Any], default_scope: str,
    known: Collection[str] | None,
) -> tuple[str, str, str]:
    """(name, mode, scope) of a lock written as ``resource_lock(*args, **kwargs)``;
    ``known``: the names ``depgraph_resources`` lists (None: any name). LockError says what
    is wrong and what to do."""
    unknown = sorted(str(k) for k in kwargs if k not in ("name", "mode", "scope"))
    if unknown:
        raise LockError(resource_problems.lock_keywords([safe.shorten(k) for k in unknown]))
    fields = ["name", "mode", "scope"]
    if len(args) > len(fields):
        raise LockError(resource_problems.lock_arguments(len(args)))
    given = dict(zip(fields, args))
    for key, value in kwargs.items():
        if key in given:
            raise LockError(resource_problems.lock_twice(str(key)))
        given[str(key)] = value
    if "name" not in given:
        raise LockError(resource_problems.lock_name(None))
    name = given["name"]
    if not safe.is_str(name) or not safe.exact_str(name).strip():
        raise LockError(resource_problems.lock_name(safe.describe(name)))
    name = safe.exact_str(name)
    if known is not None and name not in known:
        raise LockError(resource_problems.unlisted_resource(name, sorted(known)))
    mode = _one_of(given.get("mode", "write"), MODES, "mode")
    scope = _one_of(given.get("scope", default_scope), SCOPES, "scope")
    return name, mode, scope


def _one_of(value: object, allowed: Sequence[str], what: str) -> str:
    if safe.is_str(value) and safe.exact_str(value) in allowed:
        return safe.exact_str(value)
    raise LockError(resource_problems.not_one_of(what, safe.describe(value), allowed,
                                        safe.exact_str(value) if safe.is_str(value) else ""))


def validate_exclusive(args: Sequence[Any], kwargs: Mapping[str, Any]) -> None:
    """``exclusive`` takes no argument."""
    if args or kwargs:
        raise LockError(resource_problems.EXCLUSIVE_ARGUMENTS)


def validate_weight(args: Sequence[Any], kwargs: Mapping[str, Any]) -> int:
    """The ``k`` of ``weight(k)``: a whole number of at least 1."""
    if kwargs or len(args) != 1:
        raise LockError(resource_problems.bad_weight(None))
    k = args[0]
    if type(k) is not int or k < 1:
        raise LockError(resource_problems.bad_weight(safe.describe(k)))
    return k
