"""What declares an edge: the kinds of origin, and how a person reads one.

The core keeps an edge's :class:`~pytest_depgraph.core.graph.storage.Origin` with an opaque kind (a
string it never compares); the words for it live here. ``OriginKind`` members are strings,
so an origin read back from a plan's JSON (a plain string) compares and hashes the same.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

from pytest_depgraph.core.graph.storage import Origin


class OriginKind(str, enum.Enum):
    """The kinds of origin, and the plan's edge-count keys."""

    #: a ``depends_on`` marker or decorator
    MARKER = "marker"
    #: a fixture that declares dependencies (``Origin.name``: the fixture)
    FIXTURE = "fixture"
    #: an output fixture read by the test (``Origin.name``: the fixture)
    OUTPUT = "output"
    #: a ``cleanup_of`` marker or decorator: the cleanup runs after each target and after
    #: every test that depends on one
    CLEANUP = "cleanup_of"
    #: pytest-dependency's marker or a ``depends()`` call
    DEPENDENCY = "dependency"
    #: pytest-order's ``before=``/``after=``
    ORDER = "order"
    #: between pytest-order's position groups: they order tests, they do not make tests one
    #: group (shards ignore them)
    ORDINAL = "ordinal"
    #: chains the tests that must share a worker (``collect.pinning``; ``where`` says why)
    PIN = "pin"
    #: keeps a ``--dist`` work unit whole (``where`` says it all)
    UNIT = "unit"

    def __str__(self) -> str:
        return str.__str__(self.value)


class Words(NamedTuple):
    """How a person reads the edges of one origin kind."""

    #: what :func:`describe` says of one edge: a template of the origin's ``{name}`` and
    #: ``{where}``, or a noun that ``at {where}`` follows when the origin has a place
    what: str
    #: what the summary counts them as (``3 explicit``); kinds of one label count together
    label: str
    #: the summary shows the count when it is 0 too
    always: bool = False
    #: the summary counts them after a parallel walk only (serially they mean nothing)
    parallel_only: bool = False


#: every origin kind's words, in the order the summary lists their counts
#: (``tests/test_origins.py`` fails on a kind without them)
WORDS: dict[str, Words] = {
    OriginKind.MARKER: Words("depends_on", "explicit", always=True),
    OriginKind.FIXTURE: Words("fixture '{name}'", "from fixtures", always=True),
    OriginKind.OUTPUT: Words("output fixture '{name}'", "from fixtures", always=True),
    OriginKind.CLEANUP: Words("cleanup_of", "from cleanup_of"),
    OriginKind.DEPENDENCY: Words(
        "dependency marker", "from pytest-dependency/pytest-order markers"
    ),
    OriginKind.ORDER: Words("order marker", "from pytest-dependency/pytest-order markers"),
    OriginKind.ORDINAL: Words("order marker", "keeping pytest-order's positions apart"),
    OriginKind.PIN: Words(
        "on one worker, in order: {where}", "to keep pinned tests on one worker",
        parallel_only=True,
    ),
    OriginKind.UNIT: Words("{where}", "keeping --dist work units whole"),
}

#: the kinds the build and the walk add (pinned groups, work units); every other kind is
#: declared through a reader, whose ``kinds`` name it
BUILT = frozenset({OriginKind.PIN, OriginKind.UNIT})

#: the edge-count key of the edges that keep resource blocks whole when the run has no
#: ``--dist`` units (their origin kind is ``UNIT``), and what the summary counts them as
BLOCK_EDGES = "block"
BLOCK_LABEL = "keeping resource blocks whole"


def describe(origin: Origin) -> str:
    """Where an edge comes from, for a person: ``depends_on at tests/t.py:14``."""
    words = WORDS.get(origin.kind)
    what = origin.kind if words is None else words.what
    if "{" in what:  # a fixture's name only: its place is found on demand, not read here
        return what.format(
            name=origin.name, where=origin.where if "{where}" in what else ""
        )
    where = origin.where
    return f"{what} at {where}" if where else what
