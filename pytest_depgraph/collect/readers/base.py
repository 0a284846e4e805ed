"""What every declaration source is: the :class:`Reader` protocol, the places it names, and
what it finds there.

A reader answers three questions about a session (:mod:`pytest_depgraph.collect.declarations`
asks them; :mod:`pytest_depgraph.collect.readers` lists the readers):

* :meth:`Reader.declares`: may any test of the session declare something through it? One pass
  over the names of the marks of the tests and of their classes, modules and packages tells,
  with what the reader knows of its own (a decorator applied in this process, a declaring
  fixture). A session in which no reader declares skips the graph's work.
* :meth:`Reader.places`: where the declarations that apply to a test are written -- its own
  marks, the marks of its class or module, its function, a fixture it uses. Asked once per
  test, per test definition (the parametrized instances of one function) or per class or
  module, as the reader's :attr:`~Reader.sharing` says.
* :meth:`Reader.read`: what one place declares, as a :class:`Found`: edges to resolve
  (:class:`~pytest_depgraph.collect.context.Source`), problems, and claims (facts about the
  test that are not edges). Asked once per place, for the first test it applies to: a class
  marker is validated once for all the tests of the class, a function's marker once for its
  parametrized instances.

A reader may also add edges once the serial order is known (:meth:`Reader.order_edges`:
pytest-order's ordinal groups), and its declarations may reach past their targets
(:meth:`Reader.reaches_dependents`: ``cleanup_of``).
"""

from __future__ import annotations

import enum
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, Protocol

import pytest

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


class Reader(Protocol):
    """One way to declare dependencies: made for a session's context, asked for what each
    test declares."""

    #: which tests share the places :meth:`places` names for one of them
    sharing: Sharing
    #: the names of the calls in a test file whose string arguments may name tests, of other
    #: files too: selection reads the files they name (empty: its declarations name no test)
    calls: ClassVar[frozenset[str]]
    #: the origin kinds of the edges it declares (empty: claims only), each with its words in
    #: :data:`~pytest_depgraph.collect.origins.WORDS`
    kinds: ClassVar[frozenset[OriginKind]]

    def __init__(self, context: Context) -> None: ...

    def declares(self, marks: Marks) -> bool:
        """Whether any test of the session may declare something through this reader."""

    def places(self, item: pytest.Item, position: int) -> Sequence[Place]:
        """Where the declarations that apply to ``item`` (at ``position`` in the collection)
        are written."""

    def read(self, place: Place, position: int) -> Found:
        """What ``place`` declares, read for the test at ``position`` (the first it applies
        to)."""

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
