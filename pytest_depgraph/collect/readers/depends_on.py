"""``depends_on`` on a test: its own marks (:class:`OwnMarks`), those of its classes, modules and
packages (:class:`ParentMarks`), ``@pytest_depgraph.depends_on`` on its function or class
(:class:`Decorated`, which works as the marker would there); and :func:`as_source`, a
``depends_on`` declaration of any kind validated into a source.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import pytest

from pytest_depgraph.collect import problems
from pytest_depgraph.collect.context import Context, Source, class_of, function_of
from pytest_depgraph.collect.dependency_markers import (
    MARKER,
    Declaration,
    DeclarationError,
    RawDeclaration,
    declarations_of,
    validate,
    wrapped_chain,
)
from pytest_depgraph.collect.locate import marker_origin
from pytest_depgraph.collect.origins import OriginKind
from pytest_depgraph.collect.peer_plugins import Marks
from pytest_depgraph.collect.process_registry import REGISTRY
from pytest_depgraph.collect.readers.base import (
    NOTHING,
    Columns,
    Found,
    Place,
    PlaceReader,
    Reader,
    Sharing,
)
from pytest_depgraph.core.graph.storage import Kind, Origin
from pytest_depgraph.hosts.pytest import fixture_function

#: what an error calls the marker
LABEL = f"@pytest.mark.{MARKER}"
#: what an error calls the decorator
DECORATOR_LABEL = "@depends_on"
#: the kind of the usual mark's edges, read once: an enum member read from its class is a
#: Python call (0.19 us more than this name, once per mark)
_REQUIRES = Kind.REQUIRES


class OwnMarks(Reader):
    """The ``depends_on`` marks of a test itself: written on its function (shared by its
    parametrized instances and by the subclasses that inherit it), given to one instance
    (``pytest.param(..., marks=...)``) or added by a plugin.

    Asked for every test of the run, it reads its columns in one loop over the tests' own
    marks rather than place by place: the usual large suite declares nothing else.
    """

    calls = frozenset({"depends_on"})
    kinds = frozenset({OriginKind.MARKER})

    def __init__(self, context: Context) -> None:
        self.context = context
        #: the place of a mark (:meth:`_key`) -> what it declares
        self._found: dict[Hashable, Found] = {}
        #: id of a mark -> the first test it was seen on
        self._first: dict[int, pytest.Item] = {}
        #: id of a mark seen on a second test -> the function of its first test (that test
        #: when it has none)
        self._owner: dict[int, object] = {}

    def declares(self, marks: Marks) -> bool:
        return MARKER in marks.own

    def read_tests(self, positions: Sequence[int]) -> Columns:
        # measured (rand10k, 10,000 tests each with its own mark, best of 15, the cyclic
        # garbage collector paused as in the build): the declarations read in 59 -> 42 ms,
        # place by place -> this loop
        collected, found, context = self.context.collected, self._found, self.context
        first = self._first
        columns = Columns([], [])
        add_position, add_found = columns.positions.append, columns.found.append
        for position in positions:
            item = collected[position]
            for mark in item.own_markers:
                if mark.name != MARKER:
                    continue
                # the usual mark, on one test, is keyed by itself (:meth:`_key`), here (the test
                # kept in _first keeps its id unique)
                # (measured, callgrind: onefile10k's marks read, 10,000 marks, 234 -> 222 M
                # instructions: _key() for every mark -> for a mark seen on another test)
                mark_id = id(mark)
                key: Hashable = mark_id
                if first.setdefault(mark_id, item) is not item:
                    key = self._key(item, mark)
                part = found.get(key)
                if part is None:
                    part = found[key] = marker_found(context, item, mark, position,
                                                     inherited=False)
                add_position(position)
                add_found(part)
        return columns

    def _key(self, item: pytest.Item, mark: pytest.Mark) -> Hashable:
        """The place of ``mark`` on ``item``, a test other than the first one the mark was
        seen on (:meth:`read_tests` keys the usual mark, on one test, by itself): one Mark
        object may mark several functions, each a place of its own. The function of the first
        test keys it by the mark alone, read only here."""
        # measured: rand100k's resolve phase spent 0.4 of its 2.2 s (profiled) reading the
        # function of every test
        first = self._first[id(mark)]
        known = self._owner.get(id(mark))
        if known is None:
            known = self._owner[id(mark)] = function_of(first) or first
        owner = function_of(item) or item
        return id(mark) if owner is known else (id(owner), id(mark))

    def release(self) -> None:
        self._found, self._first, self._owner = {}, {}, {}


class ParentMarks(PlaceReader):
    """The ``depends_on`` marks of a test's classes, modules and packages, closest first:
    each applies to every test below it."""

    sharing = Sharing.PARENT
    calls = frozenset({"depends_on"})
    kinds = frozenset({OriginKind.MARKER})

    def declares(self, marks: Marks) -> bool:
        return MARKER in marks.inherited

    def places(self, item: pytest.Item, position: int) -> Sequence[Place]:
        parent = item.parent
        if parent is None:
            return ()
        return [Place((id(node), id(mark)), node, mark)
                for node, mark in parent.iter_markers_with_node(name=MARKER)]

    def read(self, place: Place, position: int) -> Found:
        node = place.node
        return marker_found(self.context, node, place.what, position,
                            inherited=not isinstance(node, pytest.Item))


def marker_found(
    context: Context, node: Any, mark: pytest.Mark, position: int, inherited: bool
) -> Found:
    """What a ``depends_on`` mark on ``node`` declares (``inherited``: the node is a class,
    module or package of the test); its ``file:line`` is looked up only if shown."""
    origin = marker_origin(context.locator, node, mark)
    args = mark.args
    if args and not mark.kwargs:
        for target in args:
            if type(target) is not str or not target.strip():
                break
        else:
            # the usual mark, names only, is valid as written: what validate() finds, without
            # its steps (measured, callgrind: onefile10k's resolve phase, 10,000 marks, 794 ->
            # 677 M instructions; 3.2 -> 2.0 us a mark)
            return Found((Source(Declaration(args, _REQUIRES, ""), origin, LABEL, inherited),))
    return as_source(context, RawDeclaration(args, mark.kwargs, ""), origin, LABEL, position,
                     inherited)


def as_source(
    context: Context,
    raw: RawDeclaration,
    origin: Origin,
    label: str,
    position: int | None,
    inherited: bool,
    where: str | None = None,
) -> Found:
    """The declaration as a source, or the problem with it (for every test it is on).

    ``position`` is the first test the declaration is on; None for a fixture's, which
    applies to every test using the fixture. ``where`` is where it was written, when that is
    not its origin.
    """
    try:
        declaration = validate(raw)
    except DeclarationError as error:
        where = origin.where if where is None else where
        if position is None:
            message = problems.declaration_error(where, error, label, None)
            report_nodeid = where.rsplit(":", 1)[0]
        else:
            nodeid = context.nodeids[position]
            message = problems.declaration_error(where, error, label, nodeid)
            report_nodeid = nodeid.split("::", 1)[0]
        return Found(problems=[context.problem(message, report_nodeid)])
    written = None if where is None or where == origin.where else where
    return Found((Source(declaration, origin, label, inherited, None, written),))


class Decorated(PlaceReader):
    """``@depends_on`` on a test's function (or what it wraps) and on its class."""

    sharing = Sharing.DEFINITION
    calls = frozenset({"depends_on"})
    kinds = frozenset({OriginKind.MARKER})

    def declares(self, marks: Marks) -> bool:
        # a declaration exists only on objects it was attached to in this process; when each
        # of them is (or wraps) a fixture function of the session, no test's function or
        # class carries one (measured: real10k, whose conftest decorates fixtures, read its
        # 7,300 test definitions for nothing in 36-46 ms of a 300-500 ms build)
        if not REGISTRY.depends_on:
            return False
        definitions = self.context.fixture_definitions()
        if definitions is None:
            return True
        fixtures = {id(fixture_function(definition)) for _, definition in definitions}
        return any(
            all(id(inner) not in fixtures for inner in wrapped_chain(obj))
            for obj in REGISTRY.depends_on_objects
        )

    def places(self, item: pytest.Item, position: int) -> Sequence[Place]:
        owners = ((function_of(item), False), (class_of(item), True))
        return [Place(id(owner), owner, inherited) for owner, inherited in owners
                if owner is not None]

    def read(self, place: Place, position: int) -> Found:
        declared = declarations_of(place.node)
        if not declared:
            return NOTHING  # the usual test function
        sources: list[Source] = []
        found_problems: list[problems.Problem] = []
        for raw in declared:
            where = self.context.relative(raw.where)
            found = as_source(
                self.context, RawDeclaration(raw.args, raw.kwargs, where),
                Origin(OriginKind.MARKER, where), DECORATOR_LABEL, position, place.what,
            )
            sources += found.sources
            found_problems += found.problems
        return Found(sources, found_problems)
