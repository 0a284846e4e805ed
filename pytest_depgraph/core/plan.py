"""The plan of one session: the validated dependency graph of its tests, and its wire format.

A plan is built wherever tests are collected (the serial session, every xdist worker) and is
free of pytest objects, so an xdist worker can send it to the controller as one JSON string and
the controller can walk it without collecting. Node ``i`` is ``session.items[i]`` after the
plugin reordered the items; nodes at ``len(items)`` and beyond are *external*: dependencies that
are not part of this run (``--depgraph-no-deps``), which count as unsatisfied.

The JSON holds what the workers build, and only that: every worker of a run sends the same
text, so the controller compares the texts as they come. What only the controller knows (the
previous run's durations, the tests' locations, sent by one worker beside its plan) is kept by
the controller (:mod:`pytest_depgraph.run.controller`), not here.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pytest_depgraph.core.graph import Graph, Origin

#: What the controller and its workers must share to understand each other: the plan's JSON
#: below, the events and commands between them and the flags in ``workerinput``. A worker of
#: another version sends a plan the controller refuses with a clear error (both run different
#: pytest-depgraph versions), instead of one it would misread. Bumped with any of them.
PROTOCOL_VERSION = 7

# kinds travel as one string of digits, one per edge: "0" REQUIRES, "1" AFTER
_KIND_DIGITS = bytes.maketrans(b"\x00\x01", b"01")
_DIGIT_KINDS = bytes.maketrans(b"01", b"\x00\x01")


@dataclass(frozen=True)
class ShardInfo:
    """What ``--depgraph-shard K/N`` kept of the selected tests (for the summary)."""

    #: K (1-based) and N
    index: int
    count: int
    #: tests and components (groups) in this shard
    tests: int
    groups: int
    #: expected seconds of this shard and of every selected test
    expected: float
    total: float
    #: selected tests in all shards together
    selected: int
    #: (first test, tests, expected seconds) of each group of this shard that is heavier
    #: than the ideal share ``total / count``
    oversized: tuple[tuple[str, int, float], ...] = ()
    #: where the durations came from (a path, or "pytest's cache"), and how many of the
    #: selected tests had one
    source: str = ""
    known: int = 0

    def to_list(self) -> list[Any]:
        """The fields in order, for JSON."""
        return [self.index, self.count, self.tests, self.groups, self.expected, self.total,
                self.selected, [list(group) for group in self.oversized], self.source,
                self.known]


@dataclass
class Plan:
    """Everything the walk needs to know about one session's tests."""

    #: node id of every node (items first, then external nodes).
    nodeids: list[str]
    #: the reduced graph, over the same node numbers.
    graph: Graph
    #: an int per node naming its innermost scope, class or module (fixture affinity).
    group: list[int]
    #: number of nodes that are collected items; the rest are external.
    item_count: int
    #: errors that stop the run (cycles, bad targets), each a message for a person.
    errors: list[str] = field(default_factory=list)
    #: items that cannot run because of an error (``--continue-on-collection-errors``):
    #: node -> message. They are reported as errors; their REQUIRES-dependents too.
    broken: dict[int, str] = field(default_factory=dict)
    #: edges before reduction, by origin kind ("marker", "fixture", ...).
    edge_counts: dict[str, int] = field(default_factory=dict)
    #: edges removed by the transitive reduction.
    removed_edges: int = 0
    #: items pulled into the run because a selected test depends on them.
    added: list[int] = field(default_factory=list)
    #: pinned groups: items that run on one worker, one at a time, in plan order (the graph
    #: chains each group with AFTER edges); see :mod:`pytest_depgraph.collect.pinning`.
    pinned: list[list[int]] = field(default_factory=list)
    #: warnings for a parallel run (the controller shows each once; serial runs do not).
    warnings: list[str] = field(default_factory=list)
    #: the shard this plan is (``--depgraph-shard``), None when the run is not sharded
    shard: ShardInfo | None = None
    #: ``--dist loadgroup``: the ``xdist_group`` name of each item that has one (node -> name)
    xdist_groups: dict[int, str] = field(default_factory=dict)

    @property
    def needs_walk(self) -> bool:
        """Whether walking the graph changes anything: an edge to wait for, a test that cannot
        run, or a dependency outside the run. Without any, the tests run as they are (pytest's
        own loop serially, xdist's own scheduler on workers)."""
        return bool(self.graph.edge_count or self.broken or self.item_count < len(self.nodeids))

    @property
    def external(self) -> range:
        """Nodes that are dependencies outside this run."""
        return range(self.item_count, len(self.nodeids))

    def to_json(self, places: bool = True) -> str:
        """Serialise to one JSON string (cheap to send over an execnet channel).

        ``places=False`` leaves out where each edge was declared (an empty ``where``): finding
        a marker's ``file:line`` reads the source, and an xdist controller shows it only in
        the DOT file, the run report and the errors of ``--dist`` units."""
        payload: dict[str, Any] = {
            "version": PROTOCOL_VERSION,
            "nodeids": self.nodeids,
            **_edge_columns(self.graph, places),
            "group": self.group,
            "item_count": self.item_count,
            "errors": self.errors,
            "broken": {str(k): v for k, v in self.broken.items()},
            "edge_counts": self.edge_counts,
            "removed_edges": self.removed_edges,
            "added": self.added,
            "pinned": self.pinned,
            "warnings": self.warnings,
            "shard": None if self.shard is None else self.shard.to_list(),
            "xdist_groups": {str(k): v for k, v in self.xdist_groups.items()},
        }
        return json.dumps(payload, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> Plan:
        """Inverse of :meth:`to_json`; ValueError on a version mismatch."""
        data = json.loads(text)
        if data.get("version") != PROTOCOL_VERSION:
            raise ValueError(
                f"depgraph plan version {data.get('version')} != {PROTOCOL_VERSION}: "
                "controller and workers run different pytest-depgraph versions"
            )
        nodeids: list[str] = data["nodeids"]
        graph = Graph.from_arrays(
            len(nodeids),
            array("i", data["dependents"]),
            array("i", data["dependencies"]),
            bytearray(data["kinds"].encode("ascii").translate(_DIGIT_KINDS)),
            array("i", data["origin_of"]),
            [Origin(kind, where, name) for kind, where, name in data["origins"]],
        )
        graph.compact()
        return cls(
            nodeids=nodeids,
            graph=graph,
            group=data["group"],
            item_count=data["item_count"],
            errors=data["errors"],
            broken={int(k): v for k, v in data["broken"].items()},
            edge_counts=data["edge_counts"],
            removed_edges=data["removed_edges"],
            added=data["added"],
            pinned=data["pinned"],
            warnings=data["warnings"],
            shard=_shard_info(data.get("shard")),
            xdist_groups={int(k): v for k, v in data.get("xdist_groups", {}).items()},
        )


def _edge_columns(graph: Graph, places: bool = True) -> dict[str, Any]:
    """The edges as parallel columns, each edge's origin an index into the origins that
    the edges use (one per declaration): cheap to build and parse, and small. Without
    ``places`` every origin's ``where`` is left empty (and never looked up)."""
    dependents, dependencies, kinds = graph.columns()
    table, origin_of = graph.origin_indexes()
    used = dict.fromkeys(origin_of)  # in order of first use
    if len(used) != len(table) or list(used) != list(range(len(table))):
        index = {old: new for new, old in enumerate(used)}
        origin_of = list(map(index.__getitem__, origin_of))
    return {
        "dependents": dependents,
        "dependencies": dependencies,
        "kinds": bytes(kinds).translate(_KIND_DIGITS).decode("ascii"),
        "origin_of": origin_of,
        "origins": [
            [o.kind, o.where if places else "", o.name]
            for o in map(table.__getitem__, used)
        ],
    }


def _shard_info(fields: list[Any] | None) -> ShardInfo | None:
    if fields is None:
        return None
    index, count, tests, groups, expected, total, selected, oversized, source, known = fields
    return ShardInfo(
        index, count, tests, groups, expected, total, selected,
        tuple((first, size, seconds) for first, size, seconds in oversized), source, known,
    )


def edges_by_origin(origins: Iterable[Origin]) -> dict[str, int]:
    """Count edges per origin kind."""
    counts: dict[str, int] = {}
    for origin in origins:
        counts[origin.kind] = counts.get(origin.kind, 0) + 1
    return counts


def graph_edges_by_origin(graph: Graph) -> dict[str, int]:
    """:func:`edges_by_origin` of a graph's edges: counted per declaration (in C), then
    per kind."""
    counts: dict[str, int] = {}
    for origin, count in graph.origin_counts():
        counts[origin.kind] = counts.get(origin.kind, 0) + count
    return counts
