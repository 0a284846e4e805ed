"""``cleanup_of``: a test that cleans up after others, declared with the marker (on the test, its
classes, modules and packages) or with ``@pytest_depgraph.cleanup_of`` on its function or class.

Its declarations reach past their targets (:meth:`Cleanups.reaches_dependents`): the build's
phase :mod:`pytest_depgraph.collect.phases.follow_cleanups` resolves them, not the resolve phase.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from pytest_depgraph.collect import problems
from pytest_depgraph.collect.context import Context, Source, class_of, function_of
from pytest_depgraph.collect.dependency_markers import (
    CLEANUP_ATTRIBUTE,
    CLEANUP_MARKER,
    DeclarationError,
    RawDeclaration,
    declarations_of,
    validate_cleanup,
)
from pytest_depgraph.collect.locate import marker_origin
from pytest_depgraph.collect.origins import OriginKind
from pytest_depgraph.collect.peer_plugins import Marks
from pytest_depgraph.collect.problems import Problem
from pytest_depgraph.collect.process_registry import REGISTRY
from pytest_depgraph.collect.readers.base import NOTHING, Found, Place, PlaceReader, Sharing
from pytest_depgraph.core.graph.storage import Origin

#: what an error calls the marker and the decorator
MARK_LABEL = f"@pytest.mark.{CLEANUP_MARKER}"
DECORATOR_LABEL = f"@{CLEANUP_MARKER}"

#: what a place holds: a mark (its node: the test or a parent) or decorations (their owner)
_MARK, _DECORATED = "mark", "decorated"


class Cleanups(PlaceReader):
    """The ``cleanup_of`` declarations that apply to a test: its own marks, its parents',
    and the decorator on its function and class."""

    sharing = Sharing.TEST
    calls = frozenset({"cleanup_of"})
    kinds = frozenset({OriginKind.CLEANUP})

    def __init__(self, context: Context) -> None:
        super().__init__(context)
        self._decorated = False

    def declares(self, marks: Marks) -> bool:
        # a decorator's declaration exists only on objects it was attached to in this process
        self._decorated = REGISTRY.cleanup_of
        return self._decorated or CLEANUP_MARKER in marks

    def reaches_dependents(self) -> bool:
        return True

    def places(self, item: pytest.Item, position: int) -> Sequence[Place]:
        places = [
            Place((id(function_of(item) or item), id(mark)), item, (_MARK, mark))
            for mark in item.own_markers if mark.name == CLEANUP_MARKER
        ]
        parent = item.parent
        if parent is not None:
            places += [Place((id(node), id(mark)), node, (_MARK, mark))
                       for node, mark in parent.iter_markers_with_node(name=CLEANUP_MARKER)]
        if self._decorated:
            owners = ((function_of(item), False), (class_of(item), True))
            places += [Place(id(owner), owner, (_DECORATED, inherited))
                       for owner, inherited in owners if owner is not None]
        return places

    def read(self, place: Place, position: int) -> Found:
        what, detail = place.what
        if what == _MARK:
            mark: pytest.Mark = detail
            raw = RawDeclaration(mark.args, mark.kwargs, "")
            origin = marker_origin(self.context.locator, place.node, mark, OriginKind.CLEANUP)
            inherited = not isinstance(place.node, pytest.Item)
            return self._found([(raw, origin)], MARK_LABEL, position, inherited)
        declared = declarations_of(place.node, CLEANUP_ATTRIBUTE)
        if not declared:
            return NOTHING  # the usual test function
        made = []
        for raw in declared:
            where = self.context.relative(raw.where)
            made.append((RawDeclaration(raw.args, raw.kwargs, where),
                         Origin(OriginKind.CLEANUP, where)))
        return self._found(made, DECORATOR_LABEL, position, bool(detail))

    def _found(
        self,
        declared: Sequence[tuple[RawDeclaration, Origin]],
        label: str,
        position: int,
        inherited: bool,
    ) -> Found:
        """The declarations as sources, or the problem with each (for the test at
        ``position``, the first it applies to)."""
        sources: list[Source] = []
        found: list[Problem] = []
        for raw, origin in declared:
            try:
                declaration = validate_cleanup(raw)
            except DeclarationError as error:
                nodeid = self.context.nodeids[position]
                message = problems.declaration_error(origin.where, error, label, nodeid)
                found.append(self.context.problem(message, nodeid.split("::", 1)[0]))
                continue
            sources.append(Source(declaration, origin, label, inherited))
        return Found(sources, found)
