"""Shared resources: the ``resource_lock``, ``exclusive`` and ``weight`` marks of a test and of its
classes and modules (:class:`ResourceMarks`), ``@resource_lock`` on its function, class or
module (:class:`DecoratedLocks`) and on the fixtures it uses (:class:`FixtureLocks`). What they
declare are claims, not edges (:mod:`pytest_depgraph.collect.phases.assemble_resources` makes them
the plan's resources).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from pytest_depgraph.collect import problems, resource_problems, safe
from pytest_depgraph.collect.context import Context, class_of, function_of
from pytest_depgraph.collect.peer_plugins import Marks
from pytest_depgraph.collect.process_registry import REGISTRY
from pytest_depgraph.collect.readers.base import (
    NOTHING,
    Claim,
    ClaimKind,
    Found,
    Place,
    PlaceReader,
    Sharing,
)
from pytest_depgraph.collect.readers.fixtures import used_definitions
from pytest_depgraph.collect.resource_markers import (
    EXCLUSIVE,
    LOCK,
    MARKERS,
    WEIGHT,
    Held,
    LockError,
    Weight,
    fixture_locks,
    validate_exclusive,
    validate_lock,
    validate_weight,
)
from pytest_depgraph.hosts.pytest import (
    fixture_closure,
    fixture_function,
    fixture_info,
    fixtures_by_name,
)

#: what an error calls the decorator on a test, its class or module
DECORATOR_LABEL = f"@{LOCK}"

#: a lock's scope on a fixture, by the fixture's scope
_FIXTURE_SCOPES = {"function": "test", "class": "class", "module": "module",
                   "package": "package", "session": "session"}


class ResourceMarks(PlaceReader):
    """The marks of shared resources on a test (its own first), then on its classes, modules
    and packages, closest first: each applies to every test below it."""

    sharing = Sharing.TEST
    calls = frozenset()
    kinds = frozenset()

    def declares(self, marks: Marks) -> bool:
        return any(name in marks for name in MARKERS)

    def places(self, item: pytest.Item, position: int) -> Sequence[Place]:
        # one Mark object may mark several functions: each is a place of its own
        owner = function_of(item) or item
        places = [Place((id(owner), id(mark)), item, mark)
                  for mark in item.own_markers if mark.name in MARKERS]
        parent = item.parent
        if parent is not None:
            places += [Place((id(node), id(mark)), node, mark)
                       for node, mark in parent.iter_markers_with_node()
                       if mark.name in MARKERS]
        return places

    def read(self, place: Place, position: int) -> Found:
        node, mark = place.node, place.what
        where = self.context.locator.mark(node, mark)
        try:
            claim = _claim(mark.name, mark.args, mark.kwargs, where, self.context)
        except LockError as error:
            nodeid = self.context.nodeids[position]
            label = resource_problems.lock_label(mark.name)
            message = problems.declaration_error(where, error, label, nodeid)
            return Found(problems=[self.context.problem(message, nodeid.split("::", 1)[0])])
        return Found(claims=[claim])


def _claim(name: str, args: Any, kwargs: Any, where: str, context: Context) -> Claim:
    if name == LOCK:
        lock = validate_lock(args, kwargs, "test", context.capacity)
        return Claim(ClaimKind.LOCK, Held(*lock, where))
    if name == EXCLUSIVE:
        validate_exclusive(args, kwargs)
        return Claim(ClaimKind.EXCLUSIVE, None)
    assert name == WEIGHT
    return Claim(ClaimKind.WEIGHT, Weight(validate_weight(args, kwargs), where))


class FixtureLocks(PlaceReader):
    """``@resource_lock`` on the fixtures a test uses, each definition it uses for a name (the
    closest override, and the ones it extends)."""

    sharing = Sharing.DEFINITION
    calls = frozenset()
    kinds = frozenset()

    def declares(self, marks: Marks) -> bool:
        # a lock exists only on fixtures it was attached to in this process
        return REGISTRY.resource_lock

    def places(self, item: pytest.Item, position: int) -> Sequence[Place]:
        info = fixture_info(item)
        if info is None:
            return ()  # not a pytest function: no fixtures
        by_name = fixtures_by_name(info)
        return [Place(id(definition), definition, name)
                for name in fixture_closure(info)
                for definition in used_definitions(name, by_name.get(name, ()))
                if fixture_locks(fixture_function(definition))]

    def read(self, place: Place, position: int) -> Found:
        definition, fixture = place.node, place.what
        context = self.context
        scope = _FIXTURE_SCOPES.get(str(safe.attr(definition, "scope", "function")), "test")
        claims: list[Claim] = []
        trouble: list[problems.Problem] = []
        for raw in fixture_locks(fixture_function(definition)):
            where = context.relative(raw.where)
            try:
                lock = validate_lock(raw.args, raw.kwargs, scope, context.capacity)
            except LockError as error:
                message = problems.declaration_error(where, error,
                                                     resource_problems.lock_label(LOCK, fixture),
                                                     context.nodeids[position])
                trouble.append(context.problem(message, where.rsplit(":", 1)[0]))
                continue
            claims.append(Claim(ClaimKind.LOCK, Held(*lock, where, fixture)))
        return Found(problems=trouble, claims=claims) if claims or trouble else NOTHING


class DecoratedLocks(PlaceReader):
    """``@resource_lock`` on a test's function (or what it wraps), on its class and on its
    module object: as the marker there, every test below it holds the lock (scope ``"test"``
    unless it says otherwise)."""

    sharing = Sharing.DEFINITION
    calls = frozenset()
    kinds = frozenset()

    def declares(self, marks: Marks) -> bool:
        # a lock exists only on objects it was attached to in this process
        return REGISTRY.resource_lock

    def places(self, item: pytest.Item, position: int) -> Sequence[Place]:
        owners = (function_of(item), class_of(item), safe.attr(item, "module"))
        return [Place(id(owner), owner, None) for owner in owners if owner is not None]

    def read(self, place: Place, position: int) -> Found:
        declared = fixture_locks(place.node)
        if not declared:
            return NOTHING  # the usual test function
        context = self.context
        claims: list[Claim] = []
        trouble: list[problems.Problem] = []
        for raw in declared:
            where = context.relative(raw.where)
            try:
                lock = validate_lock(raw.args, raw.kwargs, "test", context.capacity)
            except LockError as error:
                message = problems.declaration_error(where, error, DECORATOR_LABEL,
                                                     context.nodeids[position])
                trouble.append(context.problem(message, where.rsplit(":", 1)[0]))
                continue
            claims.append(Claim(ClaimKind.LOCK, Held(*lock, where)))
        return Found(problems=trouble, claims=claims)
