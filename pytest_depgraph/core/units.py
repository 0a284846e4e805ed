"""xdist's work units (``--dist loadfile``, ``loadscope``, ``loadgroup``) as pinned groups.

A suite that uses one of these modes shares state within a unit (a file; a class, else a
module; an ``xdist_group``) and expects each unit to run whole on one worker, in its own order.
:func:`bind_units` makes each unit of the plan a pinned group (the walker binds it to the worker
that starts it), chains its tests with AFTER edges in plan order, and makes its first test wait
for every test outside the unit that any of its tests depends on -- so a unit starts only once
all of that has finished, then runs from start to end. Units that wait for each other (a cycle
between units, though the tests' own graph has none) cannot be run that way: each such cycle
is returned as an error naming the tests and edges that tie the units.
"""

from __future__ import annotations

from collections.abc import Callable

from pytest_depgraph.core.graph import Edge, Kind, Origin, find_cycles
from pytest_depgraph.core.plan import Plan

#: origin kind of the edges that keep a unit whole
UNIT = "unit"
#: the ``--dist`` modes whose units are bound here
MODES = ("loadfile", "loadscope", "loadgroup")


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


def unit_of(dist: str) -> Callable[[str], str]:
    """The unit a node id belongs to under ``--dist {dist}``, as xdist defines it."""
    return {"loadfile": _file, "loadscope": _scope, "loadgroup": _group}[dist]


def _units(plan: Plan, dist: str) -> list[str]:
    """The unit of every item; for loadgroup the plan's ``xdist_group`` names count too (the
    workers could not add them to the node ids)."""
    unit = unit_of(dist)
    names = [unit(nodeid) for nodeid in plan.nodeids[: plan.item_count]]
    if dist == "loadgroup":
        for node, group in plan.xdist_groups.items():
            names[node] = "@" + group
    return names


def bind_units(plan: Plan, dist: str) -> list[tuple[str, str]]:
    """Make every unit of ``plan`` (under ``--dist {dist}``) a pinned group that starts once
    all it depends on outside it finished; return an error per cycle between units, as
    (the file to report it under, the message).

    Existing pinned groups (:mod:`pytest_depgraph.collect.pinning`) are merged with the units they
    touch. Replaces ``plan.graph`` and ``plan.pinned``; on a cycle, only adds the errors to
    ``plan.errors``. O(V + E).
    """
    count = plan.item_count
    names: dict[str, int] = {}
    of = [names.setdefault(name, len(names)) for name in _units(plan, dist)]
    # pinned groups that span units join them (union-find over unit numbers)
    parent = list(range(len(names)))

    def find(u: int) -> int:
        while parent[u] != u:
            parent[u] = parent[parent[u]]
            u = parent[u]
        return u

    for group in plan.pinned:
        for a, b in zip(group, group[1:]):
            ra, rb = find(of[a]), find(of[b])
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    members: dict[int, list[int]] = {}
    for node in range(count):
        if node not in plan.broken:
            members.setdefault(find(of[node]), []).append(node)
    label = {find(u): name for name, u in reversed(names.items())}
    graph = plan.graph
    edges: list[tuple[int, int, Kind, Origin]] = []
    for root, nodes in members.items():
        if len(nodes) > 1:
            chain = Origin(UNIT, f"--dist {dist} unit {label[root]}, in order")
            edges.extend((b, a, Kind.AFTER, chain) for a, b in zip(nodes, nodes[1:]))
        first = nodes[0]
        for node in nodes:
            for dependency in graph.dependency_ids(node):
                if dependency < count and find(of[dependency]) == root:
                    continue
                if node == first:
                    continue  # the edge itself already holds the unit back
                edge = graph.edge(node, dependency)
                assert edge is not None
                edges.append((first, dependency, Kind.AFTER, Origin(
                    UNIT,
                    f"{plan.nodeids[node]} depends on {plan.nodeids[dependency]} "
                    f"({edge.origin.describe()})",
                )))
    # on a copy: a plan with a cycle must stay as it was (the summary and DOT still read it)
    bound = graph.relabel(range(graph.size))
    bound.add_edges(edges)
    unit_name = {node: label[root] for root, nodes in members.items() for node in nodes}
    errors = [
        (plan.nodeids[loop[0].dependent].split("::", 1)[0],
         _cycle_message(loop, plan, dist, unit_name))
        for loop in find_cycles(bound)
    ]
    if errors:
        plan.errors.extend(message for _, message in errors)
        return errors
    if bound.edge_count > graph.edge_count:
        plan.edge_counts[UNIT] = bound.edge_count - graph.edge_count
    plan.graph = bound
    plan.pinned = sorted((nodes for nodes in members.values() if len(nodes) > 1),
                         key=lambda nodes: nodes[0])
    return []


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
            if edge.origin.kind == UNIT
            else f"{plan.nodeids[a]} depends on {plan.nodeids[b]} ({edge.origin.describe()})"
        )
        lines.append(f"  {name(a)} waits for {name(b)}: {why}")
    lines.append(
        "  A unit runs whole on one worker once everything it depends on outside it finished. "
        "Remove or reverse one of these dependencies, move the tests so that the units do not "
        "wait for each other, or use --dist load."
    )
    return "\n".join(lines)
