"""``@pytest_depgraph.depends_on`` written on a test function or a test class: it works as the
marker would there."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from pytest_depgraph.collect.context import Context, Source, class_of, function_of
from pytest_depgraph.collect.dependency_markers import (
    RawDeclaration,
    declarations_made,
    declarations_of,
)
from pytest_depgraph.collect.origins import OriginKind
from pytest_depgraph.collect.peer_plugins import Marks
from pytest_depgraph.collect.problems import Problem
from pytest_depgraph.collect.readers.base import NOTHING, Found, Place, Reader, Sharing
from pytest_depgraph.collect.readers.depends_on import as_source
from pytest_depgraph.core.graph.storage import Origin

#: what an error calls the decorator
LABEL = "@depends_on"


class Decorated(Reader):
    """``@depends_on`` on a test's function (or what it wraps) and on its class."""

    sharing = Sharing.DEFINITION
    calls = frozenset({"depends_on"})
    kinds = frozenset({OriginKind.MARKER})

    def __init__(self, context: Context) -> None:
        self.context = context

    def declares(self, marks: Marks) -> bool:
        # a declaration exists only on objects it was attached to in this process
        return declarations_made()

    def places(self, item: pytest.Item, position: int) -> Sequence[Place]:
        owners = ((function_of(item), False), (class_of(item), True))
        return [Place(id(owner), owner, inherited) for owner, inherited in owners
                if owner is not None]

    def read(self, place: Place, position: int) -> Found:
        declared = declarations_of(place.node)
        if not declared:
            return NOTHING  # the usual test function
        sources: list[Source] = []
        problems: list[Problem] = []
        for raw in declared:
            where = self.context.relative(raw.where)
            found = as_source(self.context, RawDeclaration(raw.args, raw.kwargs, where),
                              Origin(OriginKind.MARKER, where), LABEL, position, place.what)
            sources += found.sources
            problems += found.problems
        return Found(sources, problems)
