"""The build's phase of the declarations that reach past their targets (``cleanup_of``): each is
pulled into the run by a target that runs, and runs after every test of the run that depends on
a target.

Two steps around the resolve phase (:mod:`.resolve`):

* :func:`find`, before it: every collected test's such declarations, their targets resolved
  against the test (without reporting: a test outside the run reports nothing), and which
  tests each target pulls in;
* :func:`follow`, after it, once the edges of every other declaration are known: for each
  declaring test of the run, an AFTER edge to each target in the run and to each test that
  depends on one, directly or not -- but not through the declaring test itself, whose own
  dependents are no users of its targets, nor to another cleanup of one of its targets
  (cleanups of one target wait for each other only where an edge says so); its problems (a
  target that matches nothing, or that holds the test itself) reported as any declaration's.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence

from pytest_depgraph.collect import problems
from pytest_depgraph.collect.context import Context, Source
from pytest_depgraph.collect.declarations import Declarations
from pytest_depgraph.collect.phases.resolve import Resolved, add_edge, self_reference, unresolved
from pytest_depgraph.core.graph.paths import reachable
from pytest_depgraph.core.graph.storage import Graph, Kind
from pytest_depgraph.core.graph.tarjan import strongly_connected_components
from pytest_depgraph.core.graph.toposort import kahn_order

#: a source with each of its targets and the collection positions it matches
_Resolved = tuple[Source, list[tuple[object, Sequence[int]]]]


class Reaching:
    """The declarations that reach past their targets, resolved for their tests."""

    __slots__ = ("declared", "pulls")

    def __init__(self) -> None:
        #: position of each declaring test -> its declarations
        self.declared: dict[int, list[_Resolved]] = {}
        #: position of a target -> the declaring tests it pulls into the run
        self.pulls: dict[int, list[int]] = {}


class Followed:
    """What :func:`follow` found for each declaring test of the run (by position)."""

    __slots__ = ("absent", "targets")

    def __init__(self) -> None:
        #: its targets in the run
        self.targets: dict[int, list[int]] = {}
        #: the node ids of its targets outside the run
        self.absent: dict[int, list[str]] = {}


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
    or not (:func:`_users`). O(declaring tests x (V + E)) at worst."""
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
    before = resolved.placing  # the edges of every other declaration
    for position, origin, targets in edges:
        for target in targets:
            add_edge(resolved, position, target, Kind.AFTER, origin)
    if not edges:
        return followed
    others = _graph(len(context.nodeids), resolved, before)
    cleaners: dict[int, list[int]] = {}
    for position, _, targets in edges:
        for target in targets:
            cleaners.setdefault(target, []).append(position)
    inferred: list[tuple[int, int, int]] = []
    for position, origin, targets in edges:
        users, cleanups = _users(others, cleaners, position, targets, followed.targets[position])
        for user in sorted(users):
            add_edge(resolved, position, user, Kind.AFTER, origin)
        inferred += [(position, user, origin) for user in sorted(cleanups)]
    for position, user, origin in _without_cycles(len(context.nodeids), resolved, inferred):
        add_edge(resolved, position, user, Kind.AFTER, origin)
    return followed


def _graph(size: int, resolved: Resolved, count: int, more: Sequence[tuple[int, int, int]] = (),
           ) -> Graph:
    """The graph of the first ``count`` edges of ``resolved`` and the AFTER edges ``more``
    (dependent, dependency, origin), its arrays copied."""
    return Graph.from_arrays(
        size,
        array("i", [*resolved.dependents[:count], *(edge[0] for edge in more)]),
        array("i", [*resolved.dependencies[:count], *(edge[1] for edge in more)]),
        bytearray([*resolved.kinds[:count], *(Kind.AFTER for _ in more)]),
        array("i", [*resolved.origin_of[:count], *(edge[2] for edge in more)]),
        list(resolved.table),
    )


def _users(
    others: Graph,
    cleaners: dict[int, list[int]],
    position: int,
    targets: list[int],
    every_target: list[int],
) -> tuple[set[int], set[int]]:
    """The tests that use ``targets`` (one declaration's) for the declaring test at
    ``position``: each test that depends on one of them through the edges of ``others``
    (every edge but this phase's); then, apart, each cleanup of such a user, with its own
    users (a cleanup of a user is a user too). Never ``position`` itself, one of its targets
    (``every_target``: all its declarations'), nor a test only because it cleans up one of
    them (``cleaners``: target -> the tests that clean it up): cleanups of one target wait
    for each other only where an edge says so. O(V + E) of the part reached, one
    :func:`reachable` per depth of cleanups of users."""
    starts = set(every_target)
    # a cleanup of a target that depends on it as well (to run only when it passed) is still
    # one of its cleanups: a user only through another test
    siblings = {cleaner for target in starts for cleaner in cleaners.get(target, ())}
    blocked = {position, *starts, *siblings}
    users = set(reachable(others, targets, "dependents", blocked=blocked))
    while True:
        more = [sibling for sibling in siblings - users
                if any(dependency in users for dependency in others.dependencies_of(sibling))]
        if not more:
            break
        users.update(more)
        users.update(reachable(others, more, "dependents", blocked={*blocked, *users}))
    found: set[int] = set()
    reached: Iterable[int] = users
    cleanups: list[int] = []  # the cleanups reached last: their own cleanups are users too
    while True:
        cleanups = [
            cleaner for user in [*reached, *cleanups] for cleaner in cleaners.get(user, ())
            if cleaner != position and cleaner not in starts and cleaner not in users
            and cleaner not in found
        ]
        if not cleanups:
            return users, found
        found.update(cleanups)
        reached = reachable(others, cleanups, "dependents",
                            blocked={position, *starts, *users, *found})
        found.update(reached)


def _without_cycles(
    size: int, resolved: Resolved, inferred: list[tuple[int, int, int]]
) -> list[tuple[int, int, int]]:
    """The edges ``inferred`` (a cleanup waiting for a cleanup of a user of its targets:
    dependent, dependency, origin) that close no cycle with the edges of ``resolved``: those
    inside a strongly connected component of them all are left out (such cleanups then do
    not wait for each other), so the cleanups alone never make a cycle; one that the other
    edges make is still reported. O(V + E): one Kahn pass, and the components only when it
    finds a cycle."""
    if not inferred:
        return inferred
    graph = _graph(size, resolved, len(resolved.kinds), inferred)
    if not kahn_order(graph)[1]:
        return inferred
    component = {node: k for k, members in enumerate(strongly_connected_components(graph))
                 if len(members) > 1 for node in members}
    return [edge for edge in inferred
            if edge[0] not in component or component[edge[0]] != component.get(edge[1])]
