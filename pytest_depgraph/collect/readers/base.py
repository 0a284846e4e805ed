"""What every declaration source is: the :class:`Reader` protocol, the places it names, and
what it finds there.

A reader answers two questions about a session (:mod:`pytest_depgraph.collect.declarations`
asks them; :mod:`pytest_depgraph.collect.readers` lists the readers):

* :meth:`Reader.declares`: may any test of the session declare something through it? One pass
  over the names of the marks of the tests and of their classes, modules and packages tells,
  with what the reader knows of its own (a decorator applied in this process, a declaring
  fixture). A session in which no reader declares skips the graph's work.
* :meth:`Reader.read_tests`: what many tests declare through it, as :class:`Columns` (a test's
  position and a :class:`Found` per place that declares something): edges to resolve
  (:class:`~pytest_depgraph.collect.context.Source`), problems, and claims (facts about the
  test that are not edges). Each place is read once, for the first test it applies to, and
  what it found is shared by every test it applies to: a class marker is validated once for
  all the tests of the class, a function's marker once for its parametrized instances.

Most readers name places and read each (:class:`PlaceReader`: :meth:`~PlaceReader.places`,
:meth:`~PlaceReader.read`), which gives them :meth:`~Reader.read_tests`, the places shared by
a test definition or a parent as their :attr:`~PlaceReader.sharing` says. A reader asked for
every test of a large suite may read its columns in one loop instead (the test's own
``depends_on`` marks).

A reader may also add edges once the serial order is known (:meth:`Reader.order_edges`:
pytest-order's ordinal groups), and its declarations may reach past their targets
(:meth:`Reader.reaches_dependents`: ``cleanup_of``).
"""

from __future__ import annotations

import enum
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, Protocol

import pytest

from pytest_depgraph.hosts.pytest import fixture_info

if TYPE_CHECKING:
    from pytest_depgraph.collect.context import Context, Source
    from pytest_depgraph.collect.origins import OriginKind
    from pytest_depgraph.collect.peer_plugins import Marks
    from pytest_depgraph.collect.problems import Problem
    from pytest_depgraph.core.graph.storage import Graph


class Sharing(enum.Enum):
    """Which tests share the places a reader names for one of them."""

    #: each test its own (a test's own marks, a peer plugin's marker)
    TEST = "test"
    #: the parametrized instances of one test definition (its function, its fixtures)
    DEFINITION = "definition"
    #: the tests of one class or module (their parents' marks, their class)
    PARENT = "parent"


class Place(NamedTuple):
    """Where a declaration is written, as a reader names it for a test."""

    #: what identifies the place (ids of the objects that hold it): read once per key
    key: Hashable
    #: what holds the declaration: the test, its class or module, a function, a fixture's
    #: definition
    node: Any
    #: what the reader reads there: a mark, a fixture's name...
    what: Any = None


class ClaimKind(str, enum.Enum):
    """The kinds of :class:`Claim`."""

    #: a ``depends()`` call of pytest-dependency whose names cannot be read from the source
    #: (``value``: its ``file:line``); the module's tests share one worker
    COMPUTED_NAMES = "computed names"
    #: a shared resource the test holds (``value``: a
    #: :class:`~pytest_depgraph.collect.resource_markers.Held`)
    LOCK = "lock"
    #: the test runs with no other test running (``value``: None)
    EXCLUSIVE = "exclusive"
    #: the slots of ``--depgraph-parallelism`` the test counts (``value``: an int)
    WEIGHT = "weight"


class Claim(NamedTuple):
    """A fact a declaration states about its test that is not an edge."""

    kind: ClaimKind
    #: what it states, as its kind says
    value: Any


class Found(NamedTuple):
    """What one place declares."""

    sources: Sequence[Source] = ()
    problems: Sequence[Problem] = ()
    claims: Sequence[Claim] = ()


#: what most places declare
NOTHING = Found()


class Ordered(NamedTuple):
    """The run once its serial order is known, for :meth:`Reader.order_edges`."""

    #: ``run[n]``: the collection position of graph node ``n``
    run: Sequence[int]
    #: the graph's nodes in serial order
    order: Sequence[int]
    #: nodes that cannot run
    broken: dict[int, str]
    #: the reduced graph, to add edges to
    graph: Graph
    #: the graph before reduction
    declared: Graph


class Columns(NamedTuple):
    """What tests declare through one reader, as parallel columns: one entry per test and
    place that declares something, in the order the tests were asked, a test's entries in the
    order of its places. A place's :class:`Found` is one object, shared by its tests."""

    positions: list[int]
    found: list[Found]


class Reader(Protocol):
    """One way to declare dependencies: made for a session's context, asked for what the
    tests declare."""

    #: the names of the calls in a test file whose string arguments may name tests, of other
    #: files too: selection reads the files they name (empty: its declarations name no test)
    calls: ClassVar[frozenset[str]]
    #: the origin kinds of the edges it declares (empty: claims only), each with its words in
    #: :data:`~pytest_depgraph.collect.origins.WORDS`
    kinds: ClassVar[frozenset[OriginKind]]

    def __init__(self, context: Context) -> None: ...

    def declares(self, marks: Marks) -> bool:
        """Whether any test of the session may declare something through this reader."""

    def read_tests(self, positions: Sequence[int]) -> Columns:
        """What the tests at ``positions`` (in the collection) declare. Asked once for each
        test, in the order the run reaches them: a place is read for the first test it
        applies to."""

    def release(self) -> None:
        """Let go of what reading kept to share (places, what they declare): the graph's
        phases that follow are the build's peak of memory. :meth:`order_edges` may still be
        asked."""
        return None

    def reaches_dependents(self) -> bool:
        """Whether each declaration of this reader reaches past its targets: its test is pulled
        into the run by a target that runs, and runs after every test that depends on a
        target, directly or not (a cleanup). Such declarations are read for every collected
        test, and resolved by a phase of their own
        (:mod:`pytest_depgraph.collect.phases.follow_cleanups`), not with the others."""
        return False

    def order_edges(self, ordered: Ordered) -> dict[str, int]:
        """AFTER edges added to ``ordered.graph`` once the serial order is known, following
        it; their count by origin kind."""
        return {}


class PlaceReader(Reader):
    """A reader that names the places of a test's declarations (:meth:`places`) and reads
    each (:meth:`read`).

    :meth:`read_tests` asks :meth:`places` once per test, test definition or parent, as
    :attr:`sharing` says, and :meth:`read` once per place; what the places of a test
    definition (the parametrized instances of one function) declare is kept for it when they
    are shared: its other tests cost one look-up.
    """

    #: which tests share the places :meth:`places` names for one of them
    sharing: ClassVar[Sharing]

    def __init__(self, context: Context) -> None:
        self.context = context
        #: sharing key -> the places of the tests that share it
        self._shared_places: dict[Hashable, Sequence[Place]] = {}
        #: place key -> what it declares
        self._place_found: dict[Hashable, Found] = {}
        #: (fixture info, parent) of a test definition -> what its places declare
        self._definition_found: dict[tuple[int, int], list[Found]] = {}

    def places(self, item: pytest.Item, position: int) -> Sequence[Place]:
        """Where the declarations that apply to ``item`` (at ``position`` in the collection)
        are written."""
        raise NotImplementedError

    def read(self, place: Place, position: int) -> Found:
        """What ``place`` declares, read for the test at ``position`` (the first it applies
        to)."""
        raise NotImplementedError

    def read_tests(self, positions: Sequence[int]) -> Columns:
        collected = self.context.collected
        shared = self.sharing is not Sharing.TEST
        found, definitions = self._place_found, self._definition_found
        columns = Columns([], [])
        for position in positions:
            item = collected[position]
            key = None
            if shared:
                # pytest makes one fixture info per test definition, shared by its instances
                info = fixture_info(item)
                if info is not None:
                    key = (id(info), id(item.parent))
                    known = definitions.get(key)
                    if known is not None:
                        _add(columns, position, known)
                        continue
            parts: list[Found] = []
            for place in self._places_of(item, position, key):
                part = found.get(place.key)
                if part is None:
                    part = found[place.key] = self.read(place, position)
                if part is not NOTHING:
                    parts.append(part)
            if key is not None:
                definitions[key] = parts
            _add(columns, position, parts)
        return columns

    def _places_of(
        self, item: pytest.Item, position: int, definition: tuple[int, int] | None
    ) -> Sequence[Place]:
        """The places of ``item``'s declarations, asked once per test, test definition or
        parent, as the reader shares them. ``definition``: the key of the test's definition
        (None: not a pytest function, whose places are its own)."""
        sharing = self.sharing
        key: Hashable
        if sharing is Sharing.PARENT:
            key = id(item.parent)
        elif sharing is Sharing.DEFINITION and definition is not None:
            key = definition
        else:
            return self.places(item, position)
        places = self._shared_places.get(key)
        if places is None:
            places = self._shared_places[key] = self.places(item, position)
        return places

    def release(self) -> None:
        self._shared_places, self._place_found, self._definition_found = {}, {}, {}


def _add(columns: Columns, position: int, parts: Sequence[Found]) -> None:
    for part in parts:
        columns.positions.append(position)
        columns.found.append(part)
