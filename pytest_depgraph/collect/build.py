"""Building the session's plan from collected items: declarations into a validated graph.

Input: every collected item (targets resolve against all of them) and the selected ones.
Output: the items to run, in order, and a :class:`~pytest_depgraph.core.plan.Plan` — or problems,
each a message for a person that names the test, the file and line, and what to do.
"""

from __future__ import annotations

import operator
import time
from array import array
from collections import deque
from collections.abc import Callable, Collection, Iterator, Sequence
from functools import partial
from itertools import repeat
from pathlib import Path
from types import FunctionType
from typing import TYPE_CHECKING, Any

import pytest

from pytest_depgraph.collect import compat, safe
from pytest_depgraph.collect.context import Context, Source, function_of
from pytest_depgraph.collect.locate import MarkOrigin, own_marks
from pytest_depgraph.collect.markers import (
    ATTRIBUTE,
    MARKER,
    Declaration,
    DeclarationError,
    RawDeclaration,
    declarations_made,
    declarations_of,
    describe_target,
    validate,
)
from pytest_depgraph.collect.origins import OriginKind
from pytest_depgraph.collect.problems import Problem, capped, cycle_message
from pytest_depgraph.collect.selection import uncollected_file
from pytest_depgraph.core.graph import Graph, Kind, Origin
from pytest_depgraph.core.order import positions_in, stable_topological_order
from pytest_depgraph.core.paths import reachable
from pytest_depgraph.core.plan import Plan, graph_edges_by_origin
from pytest_depgraph.core.reduction import transitive_reduction
from pytest_depgraph.core.tarjan import find_cycles

if TYPE_CHECKING:
    from _pytest.nodes import Node


class Result:
    """What :func:`build` returns."""

    # (a plain class: every pytest process imports this module, and a dataclass is made at
    # import by compiling its methods)
    __slots__ = ("cpu_timings", "items", "plan", "problems", "timings", "unreduced")

    def __init__(
        self,
        items: list[pytest.Item],
        plan: Plan,
        problems: list[Problem],
        timings: dict[str, float] | None = None,
        cpu_timings: dict[str, float] | None = None,
        unreduced: Graph | None = None,
    ) -> None:
        self.items = items
        self.plan = plan
        self.problems = problems
        #: seconds spent in each phase (resolve, validate, order, reduce)
        self.timings: dict[str, float] = {} if timings is None else timings
        #: CPU seconds of this process in each phase (``time.process_time``): unlike wall
        #: time, still telling on a loaded machine
        self.cpu_timings: dict[str, float] = {} if cpu_timings is None else cpu_timings
        #: the graph before transitive reduction, over the plan's numbers
        #: (``keep_unreduced``): a shard's edge counts are taken from it
        self.unreduced = unreduced


class _Builder(Context):
    def __init__(
        self,
        collected: Sequence[pytest.Item],
        rootpath: Path,
        verbosity: int = 0,
        compat_settings: compat.Settings | None = None,
    ) -> None:
        super().__init__(collected, rootpath, verbosity)
        self._files: set[str] | None = None
        #: files that declarations point to but pytest was told to ignore
        self.ignored: Collection[str] = ()
        self._fixture_sources: dict[tuple[int, str], _Found] = {}
        self._mark_sources: dict[tuple[int, int], _Found] = {}
        #: id(mark) -> (the function it is on, what it declares, the first test it was read
        #: for), for a test's own marks; the function is _UNKNOWN until the mark is seen again
        self._own_marks: dict[int, tuple[object, _Found, pytest.Item]] = {}
        #: the definition of the previous item read (see :meth:`sources`)
        self._definition = _Definition(None, None)
        #: id(parent) -> what the depends_on marks of a test's parents declare
        self._inherited_by_parent: dict[int, _Found] = {}
        #: id(parent) -> what @depends_on on the tests' class declares
        self._class_by_parent: dict[int, _Found] = {}
        self._parent_marks: dict[int, list[tuple[Node, pytest.Mark]]] = {}
        self._closure_sources: dict[int, _Found] = {}
        #: what ``depends_on`` written on a test function or class declares, by id
        self._declared: dict[int, _Found] = {}
        # one pass over the marks of every item and its parents says which sources can
        # appear at all; the others are never looked for
        inherited: set[str] = set()
        marked = compat.marker_names(self.collected, inherited)
        self._markers = MARKER in marked
        #: a class or module of some test carries the marker
        self._inherited_markers = MARKER in inherited
        #: a test function, class or fixture can carry ``@depends_on`` only once one was
        #: applied in this process
        self._decorated = declarations_made()
        self._fixtures: bool | None = None
        #: names of the fixtures that declare (None: unknown, look at every fixture)
        self._declaring: set[str] | None = None
        self.compat = compat.reader(self, compat_settings or compat.Settings(), marked)
        #: whether only the tests' own marks can declare (None: not known yet)
        self._own_only: bool | None = None

    def declares_nothing(self) -> bool:
        """Whether no test can have a declaration: no ``depends_on``, pytest-dependency or
        pytest-order marker on any test or its parents, no ``@depends_on`` or output fixture
        applied, no fixture marked. Then the plan has no edge and nothing to look up."""
        return (
            not self._markers and self.compat is None and not self._decorated
            and not self._fixtures_declare()
        )

    # -- declarations ------------------------------------------------------------------------

    def sources(self, position: int) -> Sequence[Source]:
        """Every dependency declaration that applies to one item (shared, read-only: a
        definition's cached sources when it alone declares, one empty sequence when nothing
        does -- the usual cases).

        What a test's definition declares (its parents' markers, ``@depends_on`` on it or its
        class, its fixtures' declarations) is read once per definition and shared by its
        parametrized instances; only the item's own marks are read per item
        (``pytest.param(..., marks=...)`` gives an instance marks of its own)."""
        item = self.collected[position]
        own_only = self._own_only
        if own_only is None:
            own_only = self._own_only = not (
                self._inherited_markers or self._decorated or self.compat is not None
                or self._fixtures_declare()
            )
        if own_only:
            # nothing but the tests' own marks declares in this session (no marker on a
            # class or module, no @depends_on, no declaring fixture, no peer plugin's marker):
            # the usual large suite, where a definition has nothing to share (and an item of
            # another plugin has nothing else to read either)
            own = self._own_sources(item, position)
            return _NO_SOURCES if own is None else own
        info = getattr(item, "_fixtureinfo", None)
        if info is None:
            return self._item_sources(item, position)  # not a pytest function: on its own
        definition = self._definition_of(item, info)
        own = self._own_sources(item, position) if self._markers else None
        shared = definition.found
        if shared is None:
            shared = definition.found = self._definition_sources(item, info, position, definition)
        sources, problems = shared
        for problem in problems:
            problem.items.add(position)
        if self.compat is not None:
            sources = [*sources, *self.compat.sources(position)]
        if not sources:
            return _NO_SOURCES if own is None else own
        return sources if own is None else [*own, *sources]

    def _definition_of(self, item: pytest.Item, info: object) -> _Definition:
        """What is known of the definition of ``item`` (a pytest function: ``info`` is its
        fixture info)."""
        # pytest makes one fixture info per definition, shared by its instances, which it
        # collects one after the other: the previous item's definition is the one to reuse
        definition = self._definition
        if definition.info is not info or definition.parent is not item.parent:
            definition = self._definition = _Definition(info, item.parent)
        return definition

    def _function_of(self, item: pytest.Item) -> object:
        """``function_of(item)``, or the item when it has no function; read once per
        definition."""
        info = getattr(item, "_fixtureinfo", None)
        if info is None:
            return function_of(item) or item  # not a pytest function: nothing shared
        definition = self._definition_of(item, info)
        function = definition.function
        if function is _UNKNOWN:
            function = definition.function = function_of(item)
        return function or item

    def _own_sources(self, item: pytest.Item, position: int) -> Sequence[Source] | None:
        """What the item's own ``depends_on`` marks declare (None: it has none)."""
        own: Sequence[Source] | None = None
        for mark in item.own_markers:
            if mark.name != MARKER:
                continue
            # by the mark alone first (no key tuple per marker); a Mark object shared by
            # several functions keeps the others under the pair
            entry = self._own_marks.get(id(mark))
            if entry is None:
                # the mark's first test (the usual case: one Mark per test function): whose
                # function it is, is read only if the mark is seen again
                cached = self._marker_sources(item, mark, position, False)
                self._own_marks[id(mark)] = (_UNKNOWN, cached, item)
            else:
                cached = self._seen_mark_found(
                    item, mark, position, self._function_of(item), entry
                )
            sources, problems = cached
            for problem in problems:
                problem.items.add(position)
            own = sources if own is None else [*own, *sources]
        return own

    def _seen_mark_found(
        self, item: pytest.Item, mark: pytest.Mark, position: int, function: object,
        entry: tuple[object, _Found, pytest.Item],
    ) -> _Found:
        """What one of the item's own ``depends_on`` marks declares, validated once per
        (function, mark): a test function's marker is shared by its parametrized instances
        and by the subclasses that inherit the test. ``entry``: what the mark is known for
        (:attr:`_own_marks`); ``function``: the item's function (the item without one)."""
        known, cached, first = entry
        if known is _UNKNOWN:
            known = function_of(first) or first
            self._own_marks[id(mark)] = (known, cached, first)
        if known is function:
            return cached
        key = (id(function), id(mark))
        found_pair = self._mark_sources.get(key)
        if found_pair is None:
            found_pair = self._mark_sources[key] = self._marker_sources(
                item, mark, position, False
            )
        return found_pair

    def _definition_sources(
        self, item: pytest.Item, info: Any, position: int, definition: _Definition
    ) -> _Found:
        """What applies to every item of ``item``'s definition, in the order
        :meth:`_item_sources` finds it: its parents' ``depends_on`` marks, ``@depends_on`` on
        its function and class, its fixtures' declarations."""
        parts: list[_Found] = []
        if self._markers:
            inherited = self._inherited_found(item, position)
            if inherited is not _NOTHING:
                parts.append(inherited)
        if self._decorated:
            function = definition.function
            if function is _UNKNOWN:
                function = definition.function = function_of(item)
            declared = self._declared_on(function, False, position)
            if declared is not _NOTHING:
                parts.append(declared)
            declared = self._class_declared(item, position)
            if declared is not _NOTHING:
                parts.append(declared)
        if self._fixtures_declare():
            closure = self._closure_found(info, remember=False)
            if closure is not _NOTHING:
                parts.append(closure)
        return _joined(parts)

    def _inherited_found(self, item: pytest.Item, position: int) -> _Found:
        """What the ``depends_on`` marks of the item's parents declare, closest first; read
        once per parent."""
        parent = item.parent
        found = self._inherited_by_parent.get(id(parent))
        if found is None:
            found = self._inherited_by_parent[id(parent)] = _joined(
                list(self._inherited_sources(item, position))
            )
        return found

    def _class_declared(self, item: pytest.Item, position: int) -> _Found:
        """What ``@depends_on`` on the item's class declares; read once per parent."""
        parent = item.parent
        found = self._class_by_parent.get(id(parent))
        if found is None:
            found = self._class_by_parent[id(parent)] = self._declared_on(
                _class_of(item), True, position
            )
        return found

    def _item_sources(self, item: pytest.Item, position: int) -> Sequence[Source]:
        """:meth:`sources` of an item that is not a pytest function (no fixture info to
        share): everything read for the item itself."""
        found: list[Sequence[Source]] = []
        if self._markers:
            own = self._own_sources(item, position)
            if own:
                found.append(own)
            for shared in self._inherited_sources(item, position):
                found.append(self._note(shared, position))
        if self._decorated:
            # pytest_depgraph.depends_on written on a test function or class works like the
            # marker
            owners = ((self.functions[position], False), (self.classes[position], True))
            for owner, inherited_owner in owners:
                declared = self._declared_on(owner, inherited_owner, position)
                if declared is not _NOTHING:
                    found.append(self._note(declared, position))
        if self._fixtures_declare():
            found.append(self._fixture_declarations(position))
        if self.compat is not None:
            found.append(list(self.compat.sources(position)))
        if len(found) == 1:
            return found[0]
        return [source for sources in found for source in sources] if found else _NO_SOURCES

    def _inherited_sources(self, item: pytest.Item, position: int) -> Iterator[_Found]:
        """What the ``depends_on`` marks of the item's parents declare, closest first."""
        parent = item.parent
        inherited = self._parent_marks.get(id(parent))
        if inherited is None:
            inherited = self._inherited_marks(item)
        for node, mark in inherited:
            # a class or module marker is one Mark shared by all its tests
            key = (id(node), id(mark))
            shared = self._mark_sources.get(key)
            if shared is None:
                shared = self._mark_sources[key] = self._marker_sources(
                    node, mark, position, not isinstance(node, pytest.Item)
                )
            yield shared

    def _declared_on(self, owner: object, inherited: bool, position: int) -> _Found:
        """What ``@depends_on`` written on a test function or class declares."""
        if owner is None:
            return _NOTHING
        if type(owner) is FunctionType and _UNDECLARED.isdisjoint(owner.__dict__):
            # a plain function carries or wraps a declaration only in its own attributes:
            # the usual test function, answered without reading them
            return _NOTHING
        declared = self._declared.get(id(owner))
        if declared is None:
            declared = self._declared[id(owner)] = self._decorator_sources(
                owner, inherited, position
            )
        return declared

    def _inherited_marks(self, item: pytest.Item) -> list[tuple[Node, pytest.Mark]]:
        """``depends_on`` marks of the item's parents, closest first, each parent's found
        once (pytest walks every test's whole chain of parents)."""
        parent = item.parent
        if parent is None:
            return []
        inherited = self._parent_marks[id(parent)] = list(
            parent.iter_markers_with_node(name=MARKER)
        )
        return inherited

    @staticmethod
    def _note(cached: _Found, position: int) -> Sequence[Source]:
        sources, problems = cached
        if problems:
            for problem in problems:
                problem.items.add(position)
        return sources

    def _fixtures_declare(self) -> bool:
        """Whether a fixture of the session may declare dependencies (or carry the marker,
        which is an error); found once, from the session's fixture definitions when pytest's
        table of them is readable."""
        if self._fixtures is None:
            self._declaring = self._declaring_fixtures()
            self._fixtures = self._declaring is None or bool(self._declaring)
        return self._fixtures

    def _declaring_fixtures(self) -> set[str] | None:
        """Names of the fixtures some definition of which declares dependencies or carries
        the marker; None when pytest's table of definitions cannot be read (then every
        test's fixtures are looked at)."""
        if not self.collected:
            return set()
        definitions = self.fixture_definitions()
        if definitions is None:
            return None
        decorated = self._decorated
        names: set[str] = set()
        for name, definition in definitions:
            if name in names:
                continue
            func = safe.attr(definition, "func")
            holder = _fixture_object(func)
            if (
                (decorated and declarations_of(func))
                or any(m.name == MARKER for m in own_marks(func))
                or (holder is not None and any(m.name == MARKER for m in own_marks(holder)))
            ):
                names.add(name)
        return names

    def _marker_sources(
        self, node: Node, mark: pytest.Mark, position: int, inherited: bool
    ) -> _Found:
        """What a ``depends_on`` mark on ``node`` declares (``inherited``: the node is a
        parent of the test, not the test itself: the caller knows, no type check per test)."""
        # the file:line is looked up only if a message or the DOT file shows it
        origin = MarkOrigin(self.locator, node, mark)
        args = mark.args
        if args and not mark.kwargs:
            for target in args:
                if type(target) is not str or not target or target.isspace():
                    break
            else:
                # the usual marker, names only: valid as it is (what validate() would say);
                # its tuples made in C (once per marker of the session)
                declaration = _tuple(Declaration, (args, _REQUIRES, ""))
                source = _tuple(Source, (declaration, origin, _MARKER_LABEL, inherited, None, None))
                return [source], ()
        raw = RawDeclaration(args, mark.kwargs, "")
        return self._validated(raw, origin, _MARKER_LABEL, position, inherited)

    def _decorator_sources(self, owner: object, inherited: bool, position: int) -> _Found:
        declared = declarations_of(owner)
        if not declared:
            return _NOTHING  # the usual test function: one shared empty result
        sources: list[Source] = []
        problems: list[Problem] = []
        for raw in declared:
            where = self.relative(raw.where)
            raw = RawDeclaration(raw.args, raw.kwargs, where)
            found, trouble = self._validated(raw, Origin(OriginKind.MARKER, where), "@depends_on",
                                             position, inherited)
            sources += found
            problems += trouble
        return sources, problems

    def _fixture_declarations(self, position: int) -> Sequence[Source]:
        info = getattr(self.collected[position], "_fixtureinfo", None)
        return _NO_SOURCES if info is None else self._note(self._closure_found(info), position)

    def _closure_found(self, info: Any, remember: bool = True) -> _Found:
        """What the fixtures of a test (its fixture info) declare, read once per closure
        (``remember``: kept here; the definitions :meth:`sources` reads keep their own)."""
        # one closure per test function, shared by its parametrized instances
        cached = self._closure_sources.get(id(info)) if remember else None
        if cached is None:
            sources: list[Source] = []
            problems: list[Problem] = []
            closure = info.names_closure
            declaring = self._declaring
            if declaring is not None and declaring.isdisjoint(closure):
                closure = ()  # no fixture it uses declares: the usual test
            for name in closure:
                if declaring is not None and name not in declaring:
                    continue
                for fixturedef in _used_definitions(name, info.name2fixturedefs.get(name, ())):
                    key = (id(fixturedef), name)
                    if key not in self._fixture_sources:
                        self._fixture_sources[key] = self._fixture_sources_of(fixturedef, name)
                    found, trouble = self._fixture_sources[key]
                    sources += found
                    problems += trouble
            cached = (sources, problems) if sources or problems else _NOTHING
            if remember:
                self._closure_sources[id(info)] = cached
        return cached

    def _fixture_sources_of(self, fixturedef: object, name: str) -> _Found:
        func = safe.attr(fixturedef, "func")
        sources: list[Source] = []
        problems: list[Problem] = []
        definition = self.locator.definition(func)
        if any(m.name == MARKER for m in [*own_marks(func), *own_marks(_fixture_object(func))]):
            where = definition
            problems.append(self.problem(
                f"depgraph: {where}: @pytest.mark.{MARKER} on fixture '{name}' has no "
                "effect: pytest ignores marks on fixtures.\n"
                "  Use the decorator instead: `from pytest_depgraph import depends_on`, then "
                f"`@depends_on(...)` above or below `@pytest.fixture` on '{name}'.",
                report_nodeid=where.rsplit(":", 1)[0],
            ))
        for raw in declarations_of(func):
            where = self.relative(raw.where)
            raw = RawDeclaration(raw.args, raw.kwargs, where)
            output = safe.attr(func, "_depgraph_output") is True
            kind = OriginKind.OUTPUT if output else OriginKind.FIXTURE
            label = f"output_fixture '{name}'" if output else f"@depends_on on fixture '{name}'"
            # the edge's origin is the fixture's definition (an output fixture's is the
            # output_fixture() call): a cycle report points there
            origin = Origin(kind, where if output else definition, name)
            found, trouble = self._validated(raw, origin, label, None, True, where)
            sources += found
            problems += trouble
        return (sources, problems) if sources or problems else _NOTHING

    def _validated(
        self,
        raw: RawDeclaration,
        origin: Origin,
        label: str,
        position: int | None,
        inherited: bool,
        where: str | None = None,
    ) -> _Found:
        """The declaration as a source, or the problem with it (for every test it is on).

        ``position`` is the first test the declaration is on; None for a fixture's, which
        applies to every test using the fixture. ``where`` is where it was written, when
        that is not its origin.
        """
        try:
            declaration = validate(raw)
        except DeclarationError as error:
            where = origin.where if where is None else where
            if position is None:
                message = f"depgraph: {where}: {error}\n  ({label})"
                report_nodeid = where.rsplit(":", 1)[0]
            else:
                nodeid = self.nodeids[position]
                message = f"depgraph: {where}: {error}\n  ({label}, declared for {nodeid}{{more}})"
                report_nodeid = _module_of(nodeid)
            return [], [self.problem(message, report_nodeid)]
        written = None if where is None or where == origin.where else where
        return [Source(declaration, origin, label, inherited, None, written)], []

    def declarations_read(self) -> None:
        """Let go of what only reading and resolving the declarations needed: the caches
        above, the items' positions, the targets' index (kept when a problem was found:
        its hints may ask it again). The graph's phases that follow are the build's peak of
        memory; whatever is asked again is read again."""
        self._fixture_sources, self._mark_sources, self._own_marks = {}, {}, {}
        self._definition = _Definition(None, None)
        self._inherited_by_parent, self._class_by_parent, self._parent_marks = {}, {}, {}
        self._closure_sources, self._declared = {}, {}
        self._position = None
        if not self.problems:
            self._index = None

    # -- problems ----------------------------------------------------------------------------

    def unresolved(self, source: Source, target: object, position: int) -> None:
        """A target of ``source`` matches nothing for the test at ``position``: one error per
        cause (a missing file, a target), listing the declarations that share it."""
        nodeid = self.nodeids[position]
        text = describe_target(target)
        missing = self.index.missing_path(target, nodeid) if isinstance(target, str) else ""
        key = ("file", missing) if missing else ("target", text)
        # a file that exists but is not collected: the target is right, the run leaves it out
        left_out = uncollected_file(target, nodeid, self.rootpath, self.files) if missing else None
        self.problems.grouped(
            key, (source.label, source.origin, source.written, text), nodeid, position,
            kind="unresolved", missing_path=safe.shorten(missing),
            hints=(partial(self._left_out, left_out) if left_out
                   else partial(self._hints, target, position)),
            advice="" if left_out else (
                UNRESOLVED_ADVICE if isinstance(target, str) else OBJECT_ADVICE
            ),
        )

    def _left_out(self, path: str) -> list[str]:
        """Why a target's existing file is not collected, and how to include it."""
        if path in self.ignored:
            return [f"  {path} is not collected: pytest is told to ignore it (--ignore, "
                    "--ignore-glob, collect_ignore); stop ignoring it to run this test."]
        return [f"  {path} is not collected in this run: add it to the command line "
                f"(pytest ... {path})."]

    def self_reference(self, source: Source, target: object, position: int) -> None:
        """A target of ``source`` contains the test at ``position`` itself."""
        text = describe_target(target)
        self.problems.grouped(
            ("self", text, str(id(source.origin))),
            (source.label, source.origin, source.written, text),
            self.nodeids[position], position, kind="self",
            advice=SELF_ADVICE_INHERITED if source.inherited else SELF_ADVICE,
        )

    def _hints(self, target: object, position: int) -> list[str]:
        """What the error about an unresolved target suggests (computed only if shown)."""
        if not isinstance(target, str):
            return []
        name = target.strip()
        if name in self._fixture_names(position):
            return [
                f"  {safe.quoted(name)} is a fixture, not a test. A test that uses a fixture gets "
                "the fixture's own dependencies: declare them on the fixture with `from "
                "pytest_depgraph import depends_on` and `@depends_on(...)` beside "
                "`@pytest.fixture`, and request the fixture in the test."
            ]
        nodeid = self.nodeids[position]
        # never the declaring test itself
        suggestions = [
            s for s in self.index.suggest(name, nodeid)
            if position not in self.index.resolve(s, nodeid)
        ]
        if not suggestions:
            return []
        return ["  Did you mean " + " or ".join(safe.quoted(s) for s in suggestions) + "?"]

    def _fixture_names(self, position: int) -> dict[str, object]:
        """Every fixture name of the session (empty when unknown: pytest's private table)."""
        manager = safe.attr(safe.attr(self.collected[position], "session"), "_fixturemanager")
        for table in ("_arg2node2fixturedefs", "_arg2fixturedefs"):  # pytest >= 9, < 9
            known = safe.attr(manager, table)
            if isinstance(known, dict):
                return known
        return {}

    @property
    def files(self) -> set[str]:
        """Rootdir-relative files of the collected tests (made on the first unresolved
        target)."""
        if self._files is None:
            self._files = {nodeid.split("::", 1)[0] for nodeid in self.nodeids}
        return self._files

    def finished_problems(self) -> list[Problem]:
        """The problems, each message saying how many tests share it."""
        return self.problems.finished()


UNRESOLVED_ADVICE = (
    "Name a test in the same class or module, or give a node id relative to the rootdir such "
    "as 'tests/test_other.py::test_name'; a test that is not collected cannot be a dependency."
)
OBJECT_ADVICE = (
    "A function or class target must be a test that pytest collects in this run (a test "
    "function, or a test class of a test module); for anything else, name the test as a string."
)
SELF_ADVICE = "A test cannot depend on itself: remove the target that names it."
SELF_ADVICE_INHERITED = (
    "A marker on a class or module applies to each of its tests, so a target that contains "
    "them names each test itself: name the other tests only, or move the marker to the tests "
    "that depend on the rest."
)


#: what a declaration source found for a definition: its sources and its problems
_Found = tuple[Sequence[Source], Sequence[Problem]]
#: the shared result of the many definitions that declare nothing
_NO_SOURCES: Sequence[Source] = ()
_MARKER_LABEL = f"@pytest.mark.{MARKER}"
#: a named tuple made from all its fields, without the Python call of its ``__new__``
_tuple = tuple.__new__
_REQUIRES = Kind.REQUIRES
#: the attributes through which :func:`declarations_of` finds a function's declarations
_UNDECLARED = frozenset((ATTRIBUTE, "_fixture_function", "__wrapped__"))
_NOTHING: _Found = ((), ())


class _Definition:
    """What is known of one test definition (one pytest fixture info): shared by its
    parametrized instances."""

    __slots__ = ("found", "function", "info", "parent")

    def __init__(self, info: object, parent: object) -> None:
        self.info = info
        self.parent = parent
        #: ``function_of(item)`` of its items; _UNKNOWN until read
        self.function: object = _UNKNOWN
        #: what its parents, its function and class and its fixtures declare; None until read
        self.found: _Found | None = None


_UNKNOWN = object()


def _joined(parts: list[_Found]) -> _Found:
    """Several declarations' sources and problems as one (one part: itself; none: nothing)."""
    if len(parts) < 2:
        return parts[0] if parts else _NOTHING
    return (
        [source for part in parts for source in part[0]],
        [problem for part in parts for problem in part[1]],
    )


def _class_of(item: pytest.Item) -> object:
    """The test class of an item (None outside a class), as :attr:`Context.classes` has it."""
    return None if isinstance(item.parent, pytest.Module) else safe.attr(item, "cls")


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


def _used_definitions(name: str, definitions: Sequence[object]) -> list[object]:
    """The fixture definitions a test really uses for ``name``: the closest override, and the
    ones it extends by requesting the same name."""
    used: list[object] = []
    for fixturedef in reversed(definitions):
        used.append(fixturedef)
        if name not in getattr(fixturedef, "argnames", ()):
            break
    return used


_FIRST = operator.itemgetter(0)


def _groups(nodeids: Sequence[str]) -> list[int]:
    """The affinity group of each node id, numbered in order of first appearance: its scope,
    the id up to its last ``::`` before any ``[`` (``f.py::C::t[x]`` -> ``f.py::C``,
    ``f.py::t`` -> ``f.py``), or the id itself without one. O(V), in C (a Python call per
    test costs more)."""
    names = map(_FIRST, map(str.partition, nodeids, repeat("[")))
    scopes = list(map(_FIRST, map(str.rpartition, names, repeat("::"))))
    if "" in scopes:  # an id without ``::`` is its own scope
        scopes = [scope or nodeid for scope, nodeid in zip(scopes, nodeids)]
    first = dict.fromkeys(scopes)
    return list(map(dict(zip(first, range(len(first)))).__getitem__, scopes))


def _scopes_of(
    collected: Sequence[pytest.Item], numbered: Sequence[int]
) -> Callable[[int], tuple[str, ...]]:
    """``scopes(node)``: the node ids of the collectors that hold the test of graph node
    ``node`` (``collected[numbered[node]]``) and own fixtures of their scope, outermost first:
    its packages, its module, its classes; not a plain folder (a ``package`` fixture outside a
    package is a session one) nor the session. One tuple per innermost collector, shared by
    its tests; O(depth) for the first of them."""
    known: dict[object, tuple[str, ...]] = {}

    def scopes(node: int) -> tuple[str, ...]:
        parent = collected[numbered[node]].parent
        chain = known.get(parent)
        if chain is None:
            found = []
            collector = parent
            while collector is not None and not isinstance(collector, pytest.Session):
                if not isinstance(collector, pytest.Dir):
                    found.append(collector.nodeid)
                collector = collector.parent
            chain = known[parent] = tuple(reversed(found))
        return chain

    return scopes


def _module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _without_declarations(
    builder: _Builder, selected: Sequence[pytest.Item], with_locations: bool
) -> Result | None:
    """The plan of a session where no test declares anything: the selected tests in their
    order, no edge -- what the whole build would make, without its graph algorithms, index
    and per-test tables. None when the selection holds a test twice (the build decides)."""
    collected = builder.collected
    if len(selected) == len(collected) and all(map(operator.is_, selected, collected)):
        items = list(collected)  # the usual case: every collected test runs, in its order
        nodeids = builder.nodeids
    else:
        position = builder.position
        positions = [position[item] for item in selected if item in position]
        if len(set(positions)) != len(positions):
            return None
        items = [collected[p] for p in positions]
        nodeids = [builder.nodeids[p] for p in positions]
    graph = Graph(len(items))
    graph.compact()  # as the build leaves the plan's graph: nothing kept per node
    plan = Plan(
        nodeids=nodeids,
        locations=[None] * len(items) if with_locations else [],
        graph=graph,
        group=_groups(nodeids),
        item_count=len(items),
        errors=[],
        broken={},
        edge_counts={},
        removed_edges=0,
        added=[],
        pinned=[],
        warnings=[],
    )
    return Result(items=items, plan=plan, problems=[])


def build(
    collected: Sequence[pytest.Item],
    selected: Sequence[pytest.Item],
    rootpath: Path,
    *,
    pull_dependencies: bool = True,
    with_locations: bool = True,
    keep_unreduced: bool = False,
    verbosity: int = 0,
    ignore_unselected: bool = False,
    ignored_files: Collection[str] = (),
    compat_settings: compat.Settings | None = None,
) -> Result:
    """Resolve every declaration of the selected items (and of the dependencies pulled in),
    validate the graph, reduce it and order the items.

    O(V + E) plus the reduction; targets resolve through a prefix index.
    """
    clock, cpu_clock = time.perf_counter(), time.process_time()
    timings: dict[str, float] = {}
    cpu_timings: dict[str, float] = {}

    def lap(phase: str) -> None:
        nonlocal clock, cpu_clock
        now, cpu_now = time.perf_counter(), time.process_time()
        timings[phase], cpu_timings[phase] = now - clock, cpu_now - cpu_clock
        clock, cpu_clock = now, cpu_now

    builder = _Builder(collected, rootpath, verbosity, compat_settings)
    builder.ignored = ignored_files
    if not keep_unreduced and builder.declares_nothing():
        plain = _without_declarations(builder, selected, with_locations)
        if plain is not None:
            lap("resolve")
            plain.timings.update(timings, validate=0.0, order=0.0, reduce=0.0)
            plain.cpu_timings.update(cpu_timings, validate=0.0, order=0.0, reduce=0.0)
            return plain
    if len(selected) == len(collected) and all(map(operator.is_, selected, collected)):
        selected_positions = list(range(len(collected)))  # every collected test, in its order
    else:
        positions = builder.position
        selected_positions = [positions[item] for item in selected if item in positions]
    in_run = set(selected_positions)
    added: list[int] = []
    external: list[int] = []
    # the edges as parallel columns over collection positions (no tuple per edge): dependent,
    # dependency, kind, and the index of the declaration's origin in ``table``
    dependents, dependencies, kinds = array("i"), array("i"), bytearray()
    origin_of = array("i")
    table: list[Origin] = []
    add_dependent, add_dependency = dependents.append, dependencies.append
    add_kind, add_origin = kinds.append, origin_of.append
    queue = deque(selected_positions)
    collected_ids = builder.nodeids
    # every collected test runs (the usual case): no test to pull in, none outside the run
    everything = len(in_run) == len(collected_ids)
    if everything:
        in_run.clear()  # never asked: no test can be outside the run
    # how each source resolves in the current scope (a class or module, whose tests pytest
    # collects one after another; a target resolves against the test's scope): a marker
    # shared by a class's tests or by a test's parametrized instances is resolved once
    scope = ""
    in_scope: dict[int, _Resolved] = {}
    while queue:
        position = queue.popleft()
        sources = builder.sources(position)
        if not sources:
            continue
        nodeid = collected_ids[position]
        # what resolving a target depends on: the test's module and classes (the part before
        # its last ``::``), or the id itself when it has none
        base = nodeid if "[" not in nodeid else nodeid[: nodeid.index("[")]
        current = base.rpartition("::")[0] or base
        if current != scope:
            scope, in_scope = current, {}
        for source in sources:
            found = in_scope.get(id(source))
            if found is None:
                found = in_scope[id(source)] = _resolve_source(builder, source, nodeid, table)
            _, o, kind, targets = found
            for target, matches in targets:
                if not matches:
                    builder.unresolved(source, target, position)
                    continue
                if position in matches:
                    # the test itself, or a class or file that contains it
                    builder.self_reference(source, target, position)
                    continue
                if everything:
                    for match in matches:
                        add_dependent(position)
                        add_dependency(match)
                        add_kind(kind)
                        add_origin(o)
                    continue
                for match in matches:
                    if match not in in_run:
                        if kind == _AFTER or ignore_unselected:
                            continue  # ordering against a test that does not run: nothing to do
                        if pull_dependencies:
                            in_run.add(match)
                            added.append(match)
                            queue.append(match)
                        else:
                            external.append(match)
                    add_dependent(position)
                    add_dependency(match)
                    add_kind(kind)
                    add_origin(o)

    del in_scope
    builder.declarations_read()
    # number the tests in the order pytest and the other plugins left them (--ff, randomisers,
    # pytest-order); the stable sort only ever moves a test down, so each pulled-in dependency
    # (it had no place in that order) is numbered just before its first dependent
    run = (
        _with_pulled_in(selected_positions, added, dependents, dependencies)
        if added else selected_positions
    )
    external_set = sorted(set(external) - in_run)
    numbered = [*run, *external_set]
    # number[position]: the graph node of a collection position, -1 when not in the graph
    number = [-1] * len(collected_ids)
    deque(map(number.__setitem__, numbered, range(len(numbered))), 0)
    if not (run == selected_positions == list(range(len(run))) and not external_set):
        # (else the whole collection in pytest's order: positions are the numbers)
        dependents = array("i", map(number.__getitem__, dependents))
        dependencies = array("i", map(number.__getitem__, dependencies))
    graph = Graph.from_arrays(len(numbered), dependents, dependencies, kinds, origin_of, table)

    lap("resolve")
    problems = builder.finished_problems()
    broken: dict[int, str] = {}
    for problem in problems:
        for position in problem.items:
            if number[position] >= 0:
                broken.setdefault(number[position], problem.message)
    nodeids = list(map(collected_ids.__getitem__, numbered))
    kahn: list[int] = []
    for cycle in find_cycles(graph, kahn):
        problem = Problem(
            cycle_message(cycle, nodeids, verbosity), _module_of(nodeids[cycle[0].dependent])
        )
        problems.append(problem)
        for edge in cycle:
            broken.setdefault(edge.dependent, problem.message)
    _break_dependents(graph, broken, nodeids)
    problems = capped(problems, verbosity)

    acyclic = graph.subgraph_without(set(broken))
    lap("validate")
    # a dependent collected before its dependency waits until the dependency's class, module
    # and package are done, rather than splitting them (their fixtures would be set up twice)
    order = stable_topological_order(acyclic, _scopes_of(builder.collected, numbered))
    # tests that must share a worker, chained in this order (AFTER edges added to acyclic)
    from pytest_depgraph.collect import pinning  # a session without declarations never pins

    pins = pinning.pin(builder, run, acyclic, order, broken, compat.computed_sites(builder.compat))
    run_order = order if len(run) == len(numbered) else [n for n in order if n < len(run)]
    # external nodes go last: they never run, and nothing in the run waits on their position
    final = [*run_order, *range(len(run), len(numbered))]
    # new_id[n]: the plan's number of graph node n, the one renumbering of the build
    new_id = positions_in(final)
    lap("order")
    # in Kahn's breadth-first order (it keeps the closures shorter than the serial order
    # would); the graph's, found with its cycles, is acyclic's when no edge went or came
    reduced = transitive_reduction(
        acyclic, kahn if not broken and acyclic.edge_count == graph.edge_count else None
    )
    removed_edges = acyclic.edge_count - reduced.edge_count
    # pytest-order's ordinal groups, tied for parallel runs by AFTER edges that follow this
    # order (so the serial order stays as it is). Added after the reduction: they tie every
    # unordered test to the ordered ones, and reducing such stars costs more than it saves.
    ordinal = compat.ordinal_edges(builder.compat, run, order, broken, reduced, acyclic)
    plan_graph = reduced.relabel(new_id)
    plan_graph.compact()
    lap("reduce")
    items = list(map(builder.collected.__getitem__, map(run.__getitem__, run_order)))
    plan_ids = list(map(nodeids.__getitem__, final))
    plan = Plan(
        nodeids=plan_ids,
        locations=_locations(items, plan_graph, broken, new_id) if with_locations else [],
        graph=plan_graph,
        # affinity groups are the innermost scope (class, else module): a worker that keeps
        # to one class keeps its class fixtures, which pytest sets up again after a switch
        group=_groups(plan_ids),
        item_count=len(items),
        errors=[p.message for p in problems],
        broken={new_id[n]: message for n, message in broken.items()},
        edge_counts={
            **graph_edges_by_origin(graph),
            **pins.counts(),
            **({OriginKind.ORDINAL: ordinal} if ordinal else {}),
        },
        removed_edges=removed_edges,
        added=sorted(new_id[number[p]] for p in added),
        pinned=[[new_id[n] for n in group] for group in pins.groups],
        warnings=pins.warnings,
    )
    unreduced = acyclic.relabel(new_id) if keep_unreduced else None
    if unreduced is not None:
        unreduced.compact()
    return Result(
        items=items, plan=plan, problems=problems, timings=timings, cpu_timings=cpu_timings,
        unreduced=unreduced,
    )


#: a source as resolved in one scope: the source (kept, so that its id stays its own), its
#: origin's index in the table, its kind, and each target with the positions it matches
_Resolved = tuple[Source, int, int, list[tuple[object, Sequence[int]]]]
_AFTER = int(Kind.AFTER)


def _resolve_source(
    builder: _Builder, source: Source, nodeid: str, table: list[Origin]
) -> _Resolved:
    """``source`` resolved for the test ``nodeid`` (and the other tests of its scope); its
    origin gets an entry in ``table``, shared by the edges of all of them."""
    o = len(table)
    table.append(source.origin)
    resolved = source.resolved
    if resolved is not None:
        return source, o, int(source.declaration.kind), [(None, resolved)]
    targets = builder.index.resolve_all(source.declaration.targets, nodeid)
    return source, o, int(source.declaration.kind), targets


def _with_pulled_in(
    selected: list[int], added: list[int], dependents: Sequence[int], dependencies: Sequence[int]
) -> list[int]:
    """The selected positions in order, each pulled-in dependency just before the first
    selected test that needs it (in collection order among those of one test). O(V + E)."""
    pulled = set(added)
    needs: dict[int, list[int]] = {}
    for dependent, dependency in zip(dependents, dependencies):
        if dependency in pulled:
            needs.setdefault(dependent, []).append(dependency)
    seen: set[int] = set()
    run: list[int] = []
    for position in selected:
        mine: list[int] = []
        stack = list(needs.get(position, ()))
        while stack:
            dependency = stack.pop()
            if dependency not in seen:
                seen.add(dependency)
                mine.append(dependency)
                stack.extend(needs.get(dependency, ()))
        run.extend(sorted(mine))
        run.append(position)
    return run


def _locations(
    items: Sequence[pytest.Item],
    graph: Graph,
    broken: dict[int, str],
    new_id: Sequence[int],
) -> list[tuple[str, int | None, str] | None]:
    """``item.location`` of the items the xdist controller may report itself: those that
    can be skipped (they require another test) and those that cannot run (broken).

    pytest computes a location on demand, and a worker runs only its share of the tests:
    computing it for every collected item cost more than the rest of the plan.
    """
    reported = {new_id[n] for n in broken}
    reported.update(graph.requiring())
    return [item.location if n in reported else None for n, item in enumerate(items)]


def _break_dependents(graph: Graph, broken: dict[int, str], nodeids: Sequence[str]) -> None:
    """Tests that require a broken test cannot run either; say which one."""
    for dependent, node in reachable(graph, list(broken), "dependents", (Kind.REQUIRES,)).items():
        broken[dependent] = (
            f"depgraph: {nodeids[dependent]} depends on {nodeids[node]}, "
            "which cannot run because of a dependency error reported above"
        )
