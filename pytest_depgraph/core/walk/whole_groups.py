"""Groups of tests that run whole on one worker: merged, chained, started once all they wait for.

A ``--dist loadfile/loadscope/loadgroup`` work unit and a block of tests that hold a resource
as one (:class:`~pytest_depgraph.core.plan.Block`) both run on one worker from start to end.
:func:`make_whole` joins the groups that share a test, and the pinned groups
(:mod:`pytest_depgraph.collect.pinning`) that touch them, into one; chains each joined group
with AFTER edges in plan order; and makes its first test wait for every test outside the group
that any of its tests depends on -- so a group starts only once all of that finished, then
runs from start to end. Groups that wait for each other (a cycle between groups, though the
tests' own graph has none) cannot run that way: each such cycle is returned as the edges of
the bound graph that tie them, for the caller to word (their origins say why each edge is
there).

Position edges (the origin kinds the caller calls ``soft``: pytest-order's positions) that
tie groups into a cycle give way instead of making one: they order tests within a group, not
groups. The core never reads a kind otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass, field

from pytest_depgraph.core.graph.disjoint import DisjointSets
from pytest_depgraph.core.graph.storage import Edge, Graph, Kind, Origin
from pytest_depgraph.core.graph.tarjan import find_cycles, strongly_connected_components


@dataclass
class Wholes:
    """What :func:`make_whole` made of a graph."""

    #: the graph with the chains and the waits added (and the soft edges that gave way gone)
    graph: Graph
    #: the pinned groups now: every joined group that must run whole (of two tests or more, or
    #: holding a group given with ``single``), and the pinned groups that touch none, each in
    #: plan order, by their first test
    pinned: list[list[int]]
    #: edges added
    added: int = 0
    #: the origins of the soft edges that gave way
    given_way: list[Origin] = field(default_factory=list)
    #: each cycle between groups: its edges, dependent first
    cycles: list[list[Edge]] = field(default_factory=list)
    #: node -> the name of its joined group (the first given group that touches it)
    name: dict[int, str] = field(default_factory=dict)


def make_whole(
    graph: Graph,
    count: int,
    groups: Sequence[tuple[str, Sequence[int]]],
    *,
    pinned: Sequence[Sequence[int]] = (),
    leave_out: Container[int] = (),
    soft: Container[str] = (),
    single: Container[int] = (),
    chain: Callable[[str], Origin],
    wait: Callable[[int, int, Edge], Origin],
) -> Wholes:
    """Make each of ``groups`` (name, items) run whole in ``graph``, whose first ``count``
    nodes are the items (the rest: dependencies outside the run).

    Groups that share an item, and ``pinned`` groups that share one with them, are joined; a
    joined group is named after the first of ``groups`` in it. ``leave_out``: items that
    never run (broken ones): in no group. ``soft``: the origin kinds that give way in a cycle
    between groups. ``single``: the indexes of ``groups`` that stay a pinned group even of
    one test (a block: it is bound to its worker until its test settled). ``chain(name)`` is
    the origin of the edges that chain a group, ``wait(node, dependency, edge)`` of the edge
    that makes its first test wait for ``dependency``, which ``node`` of the group depends on
    through ``edge``. The graph given is left as it is. O(V + E) when no soft edge joins two
    groups that wait for each other.
    """
    sets = DisjointSets(count)
    find, union = sets.find, sets.union
    for _, nodes in groups:
        for a, b in zip(nodes, nodes[1:]):
            union(a, b)
    grouped = {v for _, nodes in groups for v in nodes}
    for group in pinned:
        if not grouped.isdisjoint(group):
            for a, b in zip(group, group[1:]):
                union(a, b)
    name: dict[int, str] = {}
    for label, nodes in groups:
        if nodes:
            name.setdefault(find(nodes[0]), label)
    members: dict[int, list[int]] = {}
    for node in range(count):
        root = find(node)
        if root in name and node not in leave_out:
            members.setdefault(root, []).append(node)
    # a node's unit in the graph of groups: its joined group, else itself
    unit = [find(v) if find(v) in name else v for v in range(count)]
    bound_graph, given_way = _soft_positions(graph, unit, count, soft)
    edges: list[tuple[int, int, Kind, Origin]] = []
    for root, nodes in members.items():
        if len(nodes) > 1:
            origin = chain(name[root])
            edges.extend((b, a, Kind.AFTER, origin) for a, b in zip(nodes, nodes[1:]))
        first = nodes[0]
        for node in nodes[1:]:  # the first one's own edges already hold the group back
            for dependency in bound_graph.dependencies_of(node):
                if dependency < count and unit[dependency] == root:
                    continue
                edge = bound_graph.edge(node, dependency)
                assert edge is not None
                edges.append((first, dependency, Kind.AFTER, wait(node, dependency, edge)))
    bound = bound_graph.relabel(range(bound_graph.size))
    bound.add_edges(edges)
    kept_single = {find(groups[i][1][0]) for i in range(len(groups))
                   if i in single and groups[i][1]}
    whole = [nodes for root, nodes in members.items() if len(nodes) > 1 or root in kept_single]
    others = [list(group) for group in pinned if find(group[0]) not in name]
    return Wholes(
        graph=bound,
        pinned=sorted(whole + others, key=lambda nodes: nodes[0]),
        added=bound.edge_count - bound_graph.edge_count,
        given_way=given_way,
        cycles=find_cycles(bound),
        name={node: name[root] for root, nodes in members.items() for node in nodes},
    )


def _soft_positions(
    graph: Graph, unit: list[int], count: int, soft: Container[str]
) -> tuple[Graph, list[Origin]]:
    """``graph`` without the soft edges that tie groups into a cycle, and the origin of each
    edge dropped. O(V + E) when no soft edge joins two groups that wait for each other.

    Two groups wait for each other when they are in one strongly connected component of the
    graph of groups (an edge between two groups for each edge between their tests): an edge
    inside such a component lies on a cycle of groups. A soft edge there gives way unless
    other edges already make its group wait for the other, and not the other way round: then
    it lies on no cycle (each kept soft edge has a path of other edges beside it). The cycles
    that other edges make are left: they stay errors, and name no position. Checking that
    costs a search of the other edges inside the component per group with such a soft edge.
    """
    table, origin_index = graph.origin_indexes()
    softs = {i for i, origin in enumerate(table) if origin.kind in soft}
    if not softs:
        return graph, []
    dependents, dependencies, _ = graph.columns()
    pairs: set[tuple[int, int]] = set()
    #: group -> the groups it waits for through other edges
    explicit: dict[int, set[int]] = {}
    candidates: list[int] = []
    for e, (a, b) in enumerate(zip(dependents, dependencies)):
        if a >= count or b >= count or unit[a] == unit[b]:
            continue
        pairs.add((unit[a], unit[b]))
        if origin_index[e] in softs:
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


#: the origin of the edges of the graph of groups (read by nobody)
_ANY = Origin("")
