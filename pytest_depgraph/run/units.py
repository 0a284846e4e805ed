"""The ``--dist`` modes the plugin walks, and xdist's work units as pinned groups.

:data:`MODES` is the one table of ``--dist`` modes: those the depgraph scheduler runs, each
with xdist's own scheduler for a run with nothing to walk, and for ``loadfile``,
``loadscope`` and ``loadgroup`` what a unit is. Any other mode (``each``, ``no``, a plugin's)
is xdist's alone.

A suite that uses a mode with units shares state within a unit (a file; a class, else a
module; an ``xdist_group``) and expects each unit to run whole on one worker, in its own order.
:func:`bind_units` makes each unit of the plan a pinned group (the walker binds it to the worker
that starts it), chains its tests with AFTER edges in plan order, and makes its first test wait
for every test outside the unit that any of its tests depends on -- so a unit starts only once
all of that has finished, then runs from start to end. Units that wait for each other (a cycle
between units, though the tests' own graph has none) cannot be run that way: each such cycle
is returned as an error naming the tests and edges that tie the units.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from pytest_depgraph.collect.origins import OriginKind, describe
from pytest_depgraph.core.disjoint import DisjointSets
from pytest_depgraph.core.graph import Edge, Graph, Kind, Origin
from pytest_depgraph.core.plan import Plan
from pytest_depgraph.core.tarjan import find_cycles, strongly_connected_components
from pytest_depgraph.hosts.pytest import given_on_command_line


def _file(nodeid: str) -> str:
    # xdist's LoadFileScheduling._split_scope
    return nodeid.split("::", 1)[0]


def _scope(nodeid: str) -> str:
    # xdist's LoadScopeScheduling._split_scope: the class, else the module
    return nodeid.rsplit("::", 1)[0]


def _group(nodeid: str) -> str:
    # xdist's LoadGroupScheduling._split_scope: workers add "@name" to the node ids of tests
    # marked xdist_group (an "@" inside the parameters does not count); other tests are alone
    if nodeid.rfind("@") > nodeid.rfind("]"):
        return "@" + nodeid.split("@")[-1]
    return nodeid


@dataclass(frozen=True)
class Mode:
    """What the plugin does under one ``--dist`` mode."""

    #: xdist's own scheduler for the mode (a class of ``xdist.scheduler``): it runs a session
    #: with nothing to walk
    xdist_scheduler: str
    #: the unit a node id belongs to, as xdist defines it; None: tests go out one by one
    unit: Callable[[str], str] | None = None
    #: what a unit is, in a user's words: (one, many)
    words: tuple[str, str] = ("test", "tests")


#: the ``--dist`` modes the depgraph scheduler runs
MODES: dict[str, Mode] = {
    "load": Mode("LoadScheduling"),
    "worksteal": Mode("WorkStealingScheduling"),
    "loadfile": Mode("LoadFileScheduling", _file, ("file", "files")),
    "loadscope": Mode(
        "LoadScopeScheduling", _scope, ("class or module", "classes and modules")
    ),
    "loadgroup": Mode("LoadGroupScheduling", _group, ("xdist_group", "xdist_groups")),
}


def walked(dist: str) -> bool:
    """Whether the depgraph scheduler runs the tests under ``--dist {dist}``."""
    return dist in MODES


def dist_chosen(config: pytest.Config) -> bool:
    """Whether the user asked for a ``--dist`` mode (``--dist``, ``-d``; on the command line or
    in ``addopts``), rather than running with the one ``-n`` implies."""
    given = given_on_command_line(config, "dist")
    return (given is not None and given != "no") or bool(
        given_on_command_line(config, "distload")
    )


def has_units(dist: str) -> bool:
    """Whether ``--dist {dist}`` sends whole units (files, scopes, groups) to one worker."""
    mode = MODES.get(dist)
    return mode is not None and mode.unit is not None


def _units(plan: Plan, dist: str) -> list[str]:
    """The unit of every item; for loadgroup the plan's ``xdist_group`` names count too (the
    workers could not add them to the node ids)."""
    unit = MODES[dist].unit
    assert unit is not None
    names = [unit(nodeid) for nodeid in plan.nodeids[: plan.item_count]]
    if dist == "loadgroup":
        for node, group in plan.xdist_groups.items():
            names[node] = "@" + group
    return names


def bind_units(plan: Plan, dist: str) -> tuple[Plan, list[tuple[str, str]]]:
    """``plan`` with every unit (under ``--dist {dist}``) a pinned group that starts once all
    it depends on outside it finished, and an error per cycle between units, as (the file to
    report it under, the message).

    Existing pinned groups (:mod:`pytest_depgraph.collect.pinning`) are merged with the units they
    touch. pytest-order's position edges between units that wait for each other are dropped,
    with a warning in the plan's ``warnings``. On a cycle, the plan returned is ``plan`` with
    the errors added to its ``errors`` (its graph stays: the summary and the DOT file read it).
    ``plan`` itself is left as it is. O(V + E).
    """
    count = plan.item_count
    names: dict[str, int] = {}
    of = [names.setdefault(name, len(names)) for name in _units(plan, dist)]
    # pinned groups that span units join them (union-find over unit numbers)
    sets = DisjointSets(len(names))
    find = sets.find
    for group in plan.pinned:
        for a, b in zip(group, group[1:]):
            sets.union(of[a], of[b])
    members: dict[int, list[int]] = {}
    for node in range(count):
        if node not in plan.broken:
            members.setdefault(find(of[node]), []).append(node)
    label = {find(u): name for name, u in reversed(names.items())}
    unit_of_node = [find(u) for u in of]
    graph, given_way = _soft_positions(plan.graph, unit_of_node, count)
    edges: list[tuple[int, int, Kind, Origin]] = []
    for root, nodes in members.items():
        if len(nodes) > 1:
            chain = Origin(OriginKind.UNIT, f"--dist {dist} unit {label[root]}, in order")
            edges.extend((b, a, Kind.AFTER, chain) for a, b in zip(nodes, nodes[1:]))
        first = nodes[0]
        for node in nodes:
            for dependency in graph.dependencies_of(node):
                if dependency < count and find(of[dependency]) == root:
                    continue
                if node == first:
                    continue  # the edge itself already holds the unit back
                edge = graph.edge(node, dependency)
                assert edge is not None
                edges.append((first, dependency, Kind.AFTER, Origin(
                    OriginKind.UNIT,
                    f"{plan.nodeids[node]} depends on {plan.nodeids[dependency]} "
                    f"({describe(edge.origin)})",
                )))
    bound = graph.relabel(range(graph.size))
    bound.add_edges(edges)
    unit_name = {node: label[root] for root, nodes in members.items() for node in nodes}
    errors = [
        (plan.nodeids[loop[0].dependent].split("::", 1)[0],
         _cycle_message(loop, plan, dist, unit_name))
        for loop in find_cycles(bound)
    ]
    if errors:
        return (
            dataclasses.replace(plan, errors=[*plan.errors, *(m for _, m in errors)]),
            errors,
        )
    edge_counts, warnings = dict(plan.edge_counts), list(plan.warnings)
    if given_way:
        left = edge_counts.pop(OriginKind.ORDINAL, 0) - len(given_way)
        if left > 0:
            edge_counts[OriginKind.ORDINAL] = left
        warnings.append(_given_way_message(given_way, dist))
    if bound.edge_count > graph.edge_count:
        edge_counts[OriginKind.UNIT] = bound.edge_count - graph.edge_count
    pinned = sorted((nodes for nodes in members.values() if len(nodes) > 1),
                    key=lambda nodes: nodes[0])
    return (
        dataclasses.replace(
            plan, graph=bound, pinned=pinned, edge_counts=edge_counts, warnings=warnings
        ),
        [],
    )


def _soft_positions(
    graph: Graph, unit: list[int], count: int
) -> tuple[Graph, list[Origin]]:
    """``graph`` without the ordinal edges that tie units into a cycle, and the origin of
    each edge dropped. O(V + E) when no ordinal edge joins two units that wait for each other.

    Two units wait for each other when they are in one strongly connected component of the
    graph of units (an edge between two units for each edge between their tests): an edge
    inside such a component lies on a cycle of units. An ordinal edge there gives way unless
    explicit edges already make its unit wait for the other, and not the other way round:
    then it lies on no cycle (each kept ordinal edge has an explicit path beside it). The
    cycles that explicit edges make are left: they stay errors, and name no position.
    Checking that costs a search of the explicit edges inside the component per unit with
    such an ordinal edge.
    """
    table, origin_index = graph.origin_indexes()
    ordinal = {i for i, origin in enumerate(table) if origin.kind == OriginKind.ORDINAL}
    if not ordinal:
        return graph, []
    dependents, dependencies, _ = graph.columns()
    pairs: set[tuple[int, int]] = set()
    #: unit -> the units it waits for through explicit edges
    explicit: dict[int, set[int]] = {}
    candidates: list[int] = []
    for e, (a, b) in enumerate(zip(dependents, dependencies)):
        if a >= count or b >= count or unit[a] == unit[b]:
            continue
        pairs.add((unit[a], unit[b]))
        if origin_index[e] in ordinal:
            candidates.append(e)
        else:
            explicit.setdefault(unit[a], set()).add(unit[b])
    if not candidates:
        return graph, []
    units = Graph(len(unit))
    units.add_edges((u, v, Kind.AFTER, _ANY) for u, v in pairs)
    component = [0] * len(unit)
    for number, members in enumerate(strongly_connected_components(units)):
        for u in members:
            component[u] = number
    waits_for: dict[int, set[int]] = {}

    def explicitly_waits(u: int, v: int) -> bool:
        found = waits_for.get(u)
        if found is None:
            # a path from u to v lies inside their component, since v reaches u
            found = waits_for[u] = set()
            todo = [u]
            while todo:
                for w in explicit.get(todo.pop(), ()):
                    if w not in found and component[w] == component[u]:
                        found.add(w)
                        todo.append(w)
        return v in found

    dropped = []
    for e in candidates:
        u, v = unit[dependents[e]], unit[dependencies[e]]
        if component[u] == component[v] and (
            not explicitly_waits(u, v) or explicitly_waits(v, u)
        ):
            dropped.append(e)
    if not dropped:
        return graph, []
    size = graph.size
    # (the columns' positions are the live edges in order, not the graph's edge numbers)
    numbers = graph.edges_keyed(dependents[e] * size + dependencies[e] for e in dropped)
    return graph.without_edges(numbers), [table[origin_index[e]] for e in dropped]


#: the origin of the edges of the graph of units (read by nobody)
_ANY = Origin(OriginKind.UNIT)


def _given_way_message(given_way: list[Origin], dist: str) -> str:
    """The warning that names the order markers whose positions could not hold across
    units, each once, by file and line."""

    def place(where: str) -> tuple[str, int]:
        path, _, line = where.rpartition(":")
        return (path, int(line)) if line.isdigit() else (where, 0)

    places = sorted({origin.where for origin in given_way if origin.where}, key=place)
    one, many = MODES[dist].words
    first = f"{places[0]}: " if places else ""
    markers = ", ".join(places) if places else "(places not known)"
    return (
        f"depgraph: {first}pytest-order positions that hold within their {one} but not across "
        f"{many} under --dist {dist}: {markers}. Each {one} runs whole on one worker, in its "
        f"own order, and across {many} these positions would make {many} wait for each other."
    )


def _cycle_message(loop: list[Edge], plan: Plan, dist: str, unit: dict[int, str]) -> str:
    def name(node: int) -> str:
        return unit.get(node, plan.nodeids[node])

    lines = [f"depgraph: --dist {dist} cannot run these units whole: they wait for each other"]
    for edge in loop:
        a, b = edge.dependent, edge.dependency
        if name(a) == name(b):
            continue
        why = (
            edge.origin.where
            if edge.origin.kind == OriginKind.UNIT
            else f"{plan.nodeids[a]} depends on {plan.nodeids[b]} ({describe(edge.origin)})"
        )
        lines.append(f"  {name(a)} waits for {name(b)}: {why}")
    lines.append(
        "  A unit runs whole on one worker once everything it depends on outside it finished. "
        "Remove or reverse one of these dependencies, move the tests so that the units do not "
        "wait for each other, or use --dist load."
    )
    return "\n".join(lines)
