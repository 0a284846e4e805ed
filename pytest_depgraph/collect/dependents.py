"""The build's phase of the declarations that reach past their targets (``cleanup_of``): each is
pulled into the run by a target that runs, and runs after every test of the run that depends on
a target.

Two steps around the resolve phase (:mod:`.edges`):

* :func:`find`, before it: every collected test's such declarations, their targets resolved
  against the test (without reporting: a test outside the run reports nothing), and which
  tests each target pulls in;
* :func:`follow`, after it, once the edges of every other declaration are known: for each
  declaring test of the run, an AFTER edge to each target in the run and to each test that
  depends on one, directly or not -- but not through the declaring test itself, whose own
  dependents are no users of its targets; its problems (a target that matches nothing, or
  that holds the test itself) reported as any declaration's.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field

from pytest_depgraph.collect import problems
from pytest_depgraph.collect.context import Context, Source
from pytest_depgraph.collect.declarations import Declarations
from pytest_depgraph.collect.edges import Resolved, add_edge, self_reference, unresolved
from pytest_depgraph.core.graph import Graph, Kind
from pytest_depgraph.core.paths import reachable

#: a source with each of its targets and the collection positions it matches
_Resolved = tuple[Source, list[tuple[object, Sequence[int]]]]


@dataclass
class Reaching:
    """The declarations that reach past their targets, resolved for their tests."""

    #: position of each declaring test -> its declarations
    declared: dict[int, list[_Resolved]] = field(default_factory=dict)
    #: position of a target -> the declaring tests it pulls into the run
    pulls: dict[int, list[int]] = field(default_factory=dict)


@dataclass
class Followed:
    """What :func:`follow` found for each declaring test of the run (by position)."""

    #: its targets in the run
    targets: dict[int, list[int]] = field(default_factory=dict)
    #: the node ids of its targets outside the run
    absent: dict[int, list[str]] = field(default_factory=dict)


def find(context: Context, declarations: Declarations) -> Reaching:
    """Every collected test's declarations that reach past their targets, resolved. O(the
    declaring tests' targets) after one pass over the collected tests."""
    found = Reaching()
    for position, sources in declarations.reaching().items():
        nodeid = context.nodeids[position]
        resolved = found.declared[position] = []
        for source in sources:
            targets = context.index.resolve_all(source.declaration.targets, nodeid)
            resolved.append((source, targets))
            for _, matches in targets:
                for match in matches:
                    if match != position:
                        pulled = found.pulls.setdefault(match, [])
                        if not pulled or pulled[-1] != position:
                            pulled.append(position)
    return found


def follow(context: Context, reaching: Reaching, resolved: Resolved) -> Followed:
    """The edges of each declaring test of the run, added to ``resolved``: one AFTER edge to
    each of its targets in the run and to each test of the run that depends on one, directly
    or not. The dependents are those of the other edges and of these edges to the targets
    (a cleanup of a user of a target is a user too), never through the declaring test.
    O(declaring tests x (V + E)) at worst."""
    followed = Followed()
    in_run = resolved.in_run
    resolved.placing = len(resolved.kinds)
    #: (declaring position, its origin's index, its targets in the run), one per declaration
    edges: list[tuple[int, int, list[int]]] = []
    for position, declared in reaching.declared.items():
        if position not in in_run:
            continue
        targets: list[int] = []
        absent: list[str] = []
        for source, matches_of in declared:
            mine: list[int] = []
            for target, matches in matches_of:
                if not matches:
                    unresolved(context, source, target, position)
                elif position in matches:
                    self_reference(context, source, target, position,
                                   advice=problems.CLEANUP_SELF_ADVICE)
                mine += [m for m in matches if m in in_run and m != position]
                absent += [context.nodeids[m] for m in matches if m not in in_run]
            resolved.table.append(source.origin)
            edges.append((position, len(resolved.table) - 1, sorted(set(mine))))
            targets += mine
        followed.targets[position] = sorted(set(targets))
        followed.absent[position] = sorted(set(absent))
    for position, origin, targets in edges:
        for target in targets:
            add_edge(resolved, position, target, Kind.AFTER, origin)
    if not edges:
        return followed
    graph = Graph.from_arrays(
        len(context.nodeids), array("i", resolved.dependents), array("i", resolved.dependencies),
        bytearray(resolved.kinds), array("i", resolved.origin_of), list(resolved.table),
    )
    for position, origin, targets in edges:
        for user in sorted(reachable(graph, targets, "dependents", blocked={position})):
            add_edge(resolved, position, user, Kind.AFTER, origin)
    return followed
