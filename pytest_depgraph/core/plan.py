"""The plan of one session: the validated dependency graph of its tests, and its wire format.

A plan is built wherever tests are collected (the serial session, every xdist worker) and is
free of pytest objects, so an xdist worker can send it to the controller as one JSON string and
the controller can walk it without collecting. Node ``i`` is ``session.items[i]`` after the
plugin reordered the items; nodes at ``len(items)`` and beyond are *external*: dependencies that
are not part of this run (``--depgraph-no-deps``), which count as unsatisfied.

The JSON holds what the workers build, and only that: every worker of a run sends the same
text, so the controller compares the texts as they come. What only the controller knows (the
previous run's durations, the tests' locations, sent by one worker beside its plan) is kept by
the controller (:mod:`pytest_depgraph.run.xdist.controller`), not here.
"""

from __future__ import annotations

import json
from array import array
from collections import Counter
from collections.abc import Iterable
from typing import Any, NamedTuple

from pytest_depgraph.core.graph.storage import Graph, Origin

#: What the controller and its workers must share to understand each other: the plan's JSON
#: below, the events and commands between them and the flags in ``workerinput``. A worker of
#: another version sends a plan the controller refuses with a clear error (both run different
#: pytest-depgraph versions), instead of one it would misread. Bumped with any of them.
PROTOCOL_VERSION = 11

# kinds travel as one string of digits, one per edge: "0" REQUIRES, "1" AFTER
_KIND_DIGITS = bytes.maketrans(b"\x00\x01", b"01")
_DIGIT_KINDS = bytes.maketrans(b"01", b"\x00\x01")


class ShardInfo:
    """What ``--depgraph-shard K/N`` kept of the selected tests (for the summary). A plain
    class, as :class:`Plan` says why."""

    __slots__ = ("count", "expected", "groups", "index", "known", "oversized", "selected",
                 "source", "tests", "total")

    def __init__(
        self,
        index: int,
        count: int,
        tests: int,
        groups: int,
        expected: float,
        total: float,
        selected: int,
        oversized: tuple[tuple[str, int, float], ...] = (),
        source: str = "",
        known: int = 0,
    ) -> None:
        #: K (1-based) and N
        self.index = index
        self.count = count
        #: tests and components (groups) in this shard
        self.tests = tests
        self.groups = groups
        #: expected seconds of this shard and of every selected test
        self.expected = expected
        self.total = total
        #: selected tests in all shards together
        self.selected = selected
        #: (first test, tests, expected seconds) of each group of this shard that is heavier
        #: than the ideal share ``total / count``
        self.oversized = oversized
        #: where the durations came from (a path, or "pytest's cache"), and how many of the
        #: selected tests had one
        self.source = source
        self.known = known

    def with_durations(self, source: str, known: int) -> ShardInfo:
        """A copy that says where the durations came from and how many tests had one."""
        return ShardInfo(self.index, self.count, self.tests, self.groups, self.expected,
                         self.total, self.selected, self.oversized, source, known)

    def to_dict(self) -> dict[str, Any]:
        """The fields by name, for JSON."""
        return {
            "index": self.index,
            "count": self.count,
            "tests": self.tests,
            "groups": self.groups,
            "expected": self.expected,
            "total": self.total,
            "selected": self.selected,
            "oversized": [list(group) for group in self.oversized],
            "source": self.source,
            "known": self.known,
        }

    @classmethod
    def from_dict(cls, fields: dict[str, Any] | None) -> ShardInfo | None:
        """Inverse of :meth:`to_dict` (None: the run is not sharded)."""
        if fields is None:
            return None
        oversized = tuple((first, size, seconds) for first, size, seconds in fields["oversized"])
        return cls(**{**fields, "oversized": oversized})


#: a claim's modes: a writer holds one unit of the resource's capacity; readers share it with
#: each other and never with a writer
WRITE = "write"
READ = "read"


class Block(NamedTuple):
    """Tests that hold resources as one: back to back on one worker, the claims taken when the
    first of them starts and given back once the last one settled (its deferred teardown
    reported) and its worker tore its ``scope`` down, so that a class, module or fixture that a
    lock covers is covered for its life."""

    #: the tests (nodes), ascending: plan order, the order they run in
    tests: tuple[int, ...]
    #: (resource name, mode) pairs, one per name
    claims: tuple[tuple[str, str], ...]
    #: what it is in a user's words, e.g. ``class tests/test_db.py::TestDb``
    name: str
    #: ``file:line`` of the declaration that made it ("" when not known)
    where: str = ""
    #: the node id of the class, module or package whose teardown ends it ("": the session's,
    #: which lasts as long as its worker)
    scope: str = ""


class Resources:
    """What the tests of a plan hold besides a worker: named resources, slots of
    ``--depgraph-parallelism``, the whole run. Empty unless a test declares any; a serial walk
    ignores it (it changes nothing there), the parallel walk's dispatcher obeys it. A plain
    class, as :class:`Plan` says why; compared by value."""

    __slots__ = ("blocks", "capacity", "claims", "exclusive", "slots")

    def __init__(
        self,
        capacity: dict[str, int] | None = None,
        claims: dict[int, dict[str, str]] | None = None,
        slots: dict[int, int] | None = None,
        exclusive: list[int] | None = None,
        blocks: list[Block] | None = None,
    ) -> None:
        #: every resource name a claim or block uses -> its capacity (most writers at once,
        #: >= 1)
        self.capacity: dict[str, int] = {} if capacity is None else capacity
        #: node -> the claims it holds while it runs: resource name -> mode (WRITE or READ)
        self.claims: dict[int, dict[str, str]] = {} if claims is None else claims
        #: node -> the slots of the bound it counts (``weight(k)``, k >= 2; absent: 1)
        self.slots: dict[int, int] = {} if slots is None else slots
        #: nodes that run with no other test running (ascending)
        self.exclusive: list[int] = [] if exclusive is None else exclusive
        #: tests that hold resources as one (blocks that share a test are one block in the
        #: walk)
        self.blocks: list[Block] = [] if blocks is None else blocks

    def _fields(self) -> tuple[object, ...]:
        return self.capacity, self.claims, self.slots, self.exclusive, self.blocks

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Resources):
            return NotImplemented
        return self._fields() == other._fields()

    def __repr__(self) -> str:
        return (f"Resources(capacity={self.capacity!r}, claims={self.claims!r}, "
                f"slots={self.slots!r}, exclusive={self.exclusive!r}, "
                f"blocks={self.blocks!r})")

    def __bool__(self) -> bool:
        return bool(self.claims or self.slots or self.exclusive or self.blocks)

    def renumbered(self, new_id: dict[int, int]) -> Resources:
        """The declarations of the nodes ``new_id`` keeps, under their new numbers (a shard's
        plan; a block keeps the tests the shard has)."""
        blocks = []
        for block in self.blocks:
            kept = tuple(sorted(new_id[n] for n in block.tests if n in new_id))
            if kept:
                blocks.append(Block(kept, block.claims, block.name, block.where, block.scope))
        return Resources(
            capacity=dict(self.capacity),
            claims={new_id[n]: c for n, c in self.claims.items() if n in new_id},
            slots={new_id[n]: k for n, k in self.slots.items() if n in new_id},
            exclusive=sorted(new_id[n] for n in self.exclusive if n in new_id),
            blocks=blocks,
        )

    def to_dict(self) -> dict[str, Any]:
        """The fields by name, for JSON: node-keyed maps as [node, value] pairs (JSON's object
        keys are strings), and each block as a list of its fields in order (a plan may have
        many)."""
        return {
            "capacity": self.capacity,
            "claims": [[n, c] for n, c in self.claims.items()],
            "slots": [[n, k] for n, k in self.slots.items()],
            "exclusive": self.exclusive,
            "blocks": [[list(b.tests), [list(c) for c in b.claims], b.name, b.where, b.scope]
                       for b in self.blocks],
        }

    @classmethod
    def from_dict(cls, fields: dict[str, Any] | None) -> Resources:
        """Inverse of :meth:`to_dict` (None: none declared)."""
        if not fields:
            return cls()
        return cls(
            capacity=fields["capacity"],
            claims={n: c for n, c in fields["claims"]},
            slots={n: k for n, k in fields["slots"]},
            exclusive=fields["exclusive"],
            blocks=[Block(tuple(tests), tuple((name, mode) for name, mode in held), name, where,
                          scope) for tests, held, name, where, scope in fields["blocks"]],
        )


class Cleanup(NamedTuple):
    """What a cleanup (``cleanup_of``) cleans up after: it runs when one of its targets ran,
    and is skipped when none did (the walk decides, :class:`~pytest_depgraph.core.walk.walker.
    Walker`)."""

    #: its targets in the run (nodes, ascending)
    targets: tuple[int, ...]
    #: the node ids of its targets outside the run (not selected, or left out)
    absent: tuple[str, ...] = ()

    def to_list(self) -> list[Any]:
        """The fields in order, for JSON."""
        return [list(self.targets), list(self.absent)]


class Plan:
    """Everything the walk needs to know about one session's tests.

    A plain class, as :class:`Resources` and :class:`ShardInfo` are: every pytest process
    imports this module, and the three as dataclasses had their methods written and compiled
    there each time (measured, callgrind, ``PYTHONHASHSEED=0``: this module's import 15.5 ->
    2.5 M instructions, two runs within 0.1 M). No plan is compared; :meth:`replace` is the
    one copy the plugin makes of one."""

    __slots__ = ("added", "broken", "cleanups", "edge_counts", "errors", "graph", "group",
                 "item_count", "nodeids", "pinned", "removed_edges", "resources", "shard",
                 "warnings", "xdist_groups")

    def __init__(
        self,
        nodeids: list[str],
        graph: Graph,
        group: list[int],
        item_count: int,
        errors: list[str] | None = None,
        broken: dict[int, str] | None = None,
        edge_counts: dict[str, int] | None = None,
        removed_edges: int = 0,
        added: list[int] | None = None,
        pinned: list[list[int]] | None = None,
        warnings: list[str] | None = None,
        shard: ShardInfo | None = None,
        xdist_groups: dict[int, str] | None = None,
        resources: Resources | None = None,
        cleanups: dict[int, Cleanup] | None = None,
    ) -> None:
        #: node id of every node (items first, then external nodes).
        self.nodeids = nodeids
        #: the reduced graph, over the same node numbers.
        self.graph = graph
        #: an int per node naming its innermost scope, class or module (fixture affinity).
        self.group = group
        #: number of nodes that are collected items; the rest are external.
        self.item_count = item_count
        #: errors that stop the run (cycles, bad targets), each a message for a person.
        self.errors: list[str] = [] if errors is None else errors
        #: items that cannot run because of an error (``--continue-on-collection-errors``):
        #: node -> message. They are reported as errors; their REQUIRES-dependents too.
        self.broken: dict[int, str] = {} if broken is None else broken
        #: edges before reduction, by origin kind ("marker", "fixture", ...).
        self.edge_counts: dict[str, int] = {} if edge_counts is None else edge_counts
        #: edges removed by the transitive reduction.
        self.removed_edges = removed_edges
        #: items pulled into the run because a selected test depends on them.
        self.added: list[int] = [] if added is None else added
        #: pinned groups: items that run on one worker, one at a time, in plan order (the
        #: graph chains each group with AFTER edges); see :mod:`pytest_depgraph.collect.pinning`.
        self.pinned: list[list[int]] = [] if pinned is None else pinned
        #: warnings for a parallel run (the controller shows each once; serial runs do not).
        self.warnings: list[str] = [] if warnings is None else warnings
        #: the shard this plan is (``--depgraph-shard``), None when the run is not sharded
        self.shard = shard
        #: ``--dist loadgroup``: the ``xdist_group`` name of each item that has one (node ->
        #: name)
        self.xdist_groups: dict[int, str] = {} if xdist_groups is None else xdist_groups
        #: shared resources, exclusive tests and weights (:class:`Resources`); empty: none
        self.resources = Resources() if resources is None else resources
        #: the cleanups (``cleanup_of``): node -> what it cleans up after (:class:`Cleanup`)
        self.cleanups: dict[int, Cleanup] = {} if cleanups is None else cleanups

    def replace(self, **changes: Any) -> Plan:
        """A copy of this plan with the fields named in ``changes`` set to their values (the
        others shared, as ``dataclasses.replace`` would)."""
        unknown = changes.keys() - set(Plan.__slots__)
        if unknown:
            raise TypeError(f"Plan has no field {', '.join(sorted(unknown))}")
        copy = Plan.__new__(Plan)
        for name in Plan.__slots__:
            setattr(copy, name, changes[name] if name in changes else getattr(self, name))
        return copy

    @property
    def needs_walk(self) -> bool:
        """Whether walking the graph changes anything: an edge to wait for, a test that cannot
        run, a dependency outside the run, or a cleanup (it may have to skip). Without any,
        the tests run as they are (pytest's own loop serially, xdist's own scheduler on
        workers)."""
        return bool(self.graph.edge_count or self.broken or self.item_count < len(self.nodeids)
                    or self.cleanups)

    @property
    def needs_parallel_walk(self) -> bool:
        """Whether a parallel run must be walked by the plugin: :attr:`needs_walk`, or tests
        that hold resources, run alone or weigh more than one (xdist's own schedulers know
        nothing of those; serially they change nothing)."""
        return self.needs_walk or bool(self.resources)

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
            "shard": None if self.shard is None else self.shard.to_dict(),
            "xdist_groups": {str(k): v for k, v in self.xdist_groups.items()},
            "resources": self.resources.to_dict() if self.resources else None,
            "cleanups": [[n, *c.to_list()] for n, c in self.cleanups.items()],
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
            shard=ShardInfo.from_dict(data.get("shard")),
            xdist_groups={int(k): v for k, v in data.get("xdist_groups", {}).items()},
            resources=Resources.from_dict(data.get("resources")),
            cleanups={n: Cleanup(tuple(targets), tuple(absent))
                      for n, targets, absent in data.get("cleanups", ())},
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


def edges_by_origin(origins: Iterable[Origin]) -> dict[str, int]:
    """Count edges per origin kind."""
    counts: dict[str, int] = {}
    for origin in origins:
        counts[origin.kind] = counts.get(origin.kind, 0) + 1
    return counts


def graph_edges_by_origin(graph: Graph) -> dict[str, int]:
    """:func:`edges_by_origin` of a graph's edges: counted per declaration (in C), then
    per kind."""
    table, origin_of = graph.origin_indexes()
    counts: dict[str, int] = {}
    for index, count in Counter(origin_of).items():
        kind = table[index].kind
        counts[kind] = counts.get(kind, 0) + count
    return counts
