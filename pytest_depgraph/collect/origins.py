"""What declares an edge: the kinds of origin, and how a person reads one.

The core keeps an edge's :class:`~pytest_depgraph.core.graph.storage.Origin` with an opaque kind (a
string it never compares); the words for it live here. ``OriginKind`` members are strings,
so an origin read back from a plan's JSON (a plain string) compares and hashes the same.
"""

from __future__ import annotations

import enum

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


_WHAT: dict[str, str] = {
    OriginKind.MARKER: "depends_on",
    OriginKind.CLEANUP: "cleanup_of",
    OriginKind.DEPENDENCY: "dependency marker",
    OriginKind.ORDER: "order marker",
    OriginKind.ORDINAL: "order marker",
}


def describe(origin: Origin) -> str:
    """Where an edge comes from, for a person: ``depends_on at tests/t.py:14``."""
    kind = origin.kind
    if kind == OriginKind.FIXTURE:
        return f"fixture '{origin.name}'"
    if kind == OriginKind.OUTPUT:
        return f"output fixture '{origin.name}'"
    if kind == OriginKind.PIN:
        return f"on one worker, in order: {origin.where}"
    if kind == OriginKind.UNIT:
        return origin.where
    what = _WHAT.get(kind, kind)
    where = origin.where
    return f"{what} at {where}" if where else what
