"""Fixtures that declare: ``@depends_on`` on a fixture and ``output_fixture`` apply to every test
that uses the fixture; one of this plugin's marks on a fixture, which pytest ignores, and
``@cleanup_of`` on a fixture (a cleanup is a test) are errors that say what to use instead."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from pytest_depgraph.collect import problems, safe
from pytest_depgraph.collect.context import Context, Source
from pytest_depgraph.collect.dependency_markers import (
    CLEANUP_ATTRIBUTE,
    CLEANUP_MARKER,
    MARKER,
    RawDeclaration,
    declarations_of,
)
from pytest_depgraph.collect.locate import own_marks
from pytest_depgraph.collect.origins import OriginKind
from pytest_depgraph.collect.peer_plugins import Marks
from pytest_depgraph.collect.process_registry import REGISTRY
from pytest_depgraph.collect.readers.base import NOTHING, Found, Place, PlaceReader, Sharing
from pytest_depgraph.collect.readers.depends_on import as_source
from pytest_depgraph.collect.resource_markers import MARKERS as LOCK_MARKERS
from pytest_depgraph.core.graph.storage import Origin
from pytest_depgraph.hosts.pytest import (
    fixture_arguments,
    fixture_closure,
    fixture_function,
    fixture_info,
    fixtures_by_name,
)


class Fixtures(PlaceReader):
    """The declarations of the fixtures a test uses: of the definition it uses for each name
    (the closest override, and the ones it extends by requesting the same name)."""

    sharing = Sharing.DEFINITION
    calls = frozenset({"depends_on", "output_fixture"})
    kinds = frozenset({OriginKind.FIXTURE, OriginKind.OUTPUT})

    def __init__(self, context: Context) -> None:
        super().__init__(context)
        #: names of the fixtures that declare (None: unknown, look at every fixture)
        self._declaring: set[str] | None = set()

    def declares(self, marks: Marks) -> bool:
        """Whether a fixture of the session may declare dependencies (or carry the marker,
        which is an error), from the session's fixture definitions when pytest's table of
        them is readable."""
        self._declaring = self._declaring_fixtures()
        return self._declaring is None or bool(self._declaring)

    def _declaring_fixtures(self) -> set[str] | None:
        """Names of the fixtures some definition of which declares dependencies or carries
        the marker; None when pytest's table of definitions cannot be read (then every
        test's fixtures are looked at)."""
        definitions = self.context.fixture_definitions()
        if definitions is None:
            return None
        decorated = REGISTRY.depends_on
        cleanups = REGISTRY.cleanup_of
        names: set[str] = set()
        for name, definition in definitions:
            if name in names:
                continue
            func = fixture_function(definition)
            if (
                (decorated and declarations_of(func))
                or (cleanups and declarations_of(func, CLEANUP_ATTRIBUTE))
                or _marked(func)
            ):
                names.add(name)
        return names

    def places(self, item: pytest.Item, position: int) -> Sequence[Place]:
        info = fixture_info(item)
        if info is None:
            return ()  # not a pytest function: no fixtures
        declaring = self._declaring
        closure = fixture_closure(info)
        if declaring is not None and declaring.isdisjoint(closure):
            return ()  # the usual test: none of its fixtures declares
        by_name = fixtures_by_name(info)
        return [
            Place((id(definition), name), definition, name)
            for name in closure
            if declaring is None or name in declaring
            for definition in used_definitions(name, by_name.get(name, ()))
        ]

    def read(self, place: Place, position: int) -> Found:
        definition, name = place.node, place.what
        func = fixture_function(definition)
        context = self.context
        trouble: list[problems.Problem] = []
        where = context.locator.definition(func)
        marker = _marked(func)
        if marker is not None:
            trouble.append(context.problem(problems.marked_fixture(where, name, marker),
                                           report_nodeid=where.rsplit(":", 1)[0]))
        if declarations_of(func, CLEANUP_ATTRIBUTE):
            trouble.append(context.problem(problems.cleanup_fixture(where, name),
                                           report_nodeid=where.rsplit(":", 1)[0]))
        sources: list[Source] = []
        for raw in declarations_of(func):
            written = context.relative(raw.where)
            output = safe.attr(func, "_depgraph_output") is True
            kind = OriginKind.OUTPUT if output else OriginKind.FIXTURE
            # the edge's origin is the fixture's definition (an output fixture's is the
            # output_fixture() call): a cycle report points there
            origin = Origin(kind, written if output else where, name)
            found = as_source(context, RawDeclaration(raw.args, raw.kwargs, written), origin,
                              problems.fixture_label(name, output), None, True, written)
            sources += found.sources
            trouble += found.problems
        return Found(sources, trouble) if sources or trouble else NOTHING


#: this plugin's marks, which pytest ignores on a fixture
FIXTURE_MARKS = (MARKER, CLEANUP_MARKER, *LOCK_MARKERS)


def _marked(func: object) -> str | None:
    """The first of this plugin's marks that a fixture's function carries, below or above
    ``@pytest.fixture`` (None: none)."""
    marks = [*own_marks(func), *own_marks(_fixture_object(func))]
    return next((m.name for m in marks if m.name in FIXTURE_MARKS), None)


def _fixture_object(func: object) -> object:
    """What ``@pytest.fixture`` returned for ``func`` (its module attribute), which holds the
    marks written above ``@pytest.fixture``: pytest 8 keeps them there and ignores them with
    only a deprecation warning. None when it is ``func`` itself or not found."""
    namespace = safe.attr(func, "__globals__")
    name = safe.attr(func, "__name__")
    if type(namespace) is not dict or type(name) is not str:
        return None
    holder = namespace.get(name)
    return None if holder is func else holder


def used_definitions(name: str, definitions: Sequence[object]) -> list[object]:
    """The fixture definitions a test really uses for ``name``: the closest override, and the
    ones it extends by requesting the same name."""
    used: list[object] = []
    for fixturedef in reversed(definitions):
        used.append(fixturedef)
        if name not in fixture_arguments(fixturedef):
            break
    return used
