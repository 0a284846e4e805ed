"""Building the session's plan from collected items, in named phases: resolve, number, validate,
order, reduce, assemble.

Input: every collected item (targets resolve against all of them) and the selected ones.
Output: the items to run, in order, and a :class:`~pytest_depgraph.core.plan.Plan` -- or
problems, each a message for a person that names the test, the file and line, and what to do.

* **resolve** (:func:`pytest_depgraph.collect.phases.resolve.resolve`): what the selected tests
  declare, resolved into edges between collection positions; dependencies pulled in, and the
  tests that name a test of the run in a declaration that reaches past its targets
  (``cleanup_of``, :func:`pytest_depgraph.collect.phases.follow_cleanups.find`).
* **follow** (:func:`pytest_depgraph.collect.phases.follow_cleanups.follow`): once the other edges
  are known, each such test's edges to its targets and to every test that depends on them.
* **number**: the tests of the run numbered in the order pytest left them, each pulled-in
  dependency just before its first dependent; the graph over these numbers.
* **validate**: the problems found so far, the cycles, the tests that cannot run.
* **order**: the serial order, keeping classes and modules together; the pinned groups.
* **reduce**: the transitive reduction; the edges that follow the order (pytest-order's
  groups); the graph over the plan's numbers.
* **assemble**: the plan, with the shared resources its tests claim
  (:func:`pytest_depgraph.collect.phases.assemble_resources.resources`).

A session in which no test can declare anything takes none of these: its plan is the selected
tests in their order, without edges. ``--depgraph-timings`` names the phases resolve (with
number and follow), validate, order and reduce.
"""

from __future__ import annotations

import gc
import time
from array import array
from collections import deque
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import pytest

from pytest_depgraph.collect.context import Context
from pytest_depgraph.collect.declarations import Declarations
from pytest_depgraph.collect.peer_plugins import Marks, Settings
from pytest_depgraph.collect.phases import follow_cleanups
from pytest_depgraph.collect.phases.assemble_resources import resources
from pytest_depgraph.collect.phases.follow_cleanups import Followed
from pytest_depgraph.collect.phases.resolve import Resolved, resolve
from pytest_depgraph.collect.problems import (
    Problem,
    broken_dependent,
    capped,
    cycle_message,
    inconsistency,
)
from pytest_depgraph.collect.readers.base import ClaimKind, Ordered
from pytest_depgraph.core.graph.paths import reachable
from pytest_depgraph.core.graph.reduction import transitive_reduction
from pytest_depgraph.core.graph.storage import Graph, Kind
from pytest_depgraph.core.graph.tarjan import find_cycles, strongly_connected_components
from pytest_depgraph.core.graph.toposort import positions_in, stable_topological_order
from pytest_depgraph.core.plan import Cleanup, Plan, graph_edges_by_origin

if TYPE_CHECKING:
    from pytest_depgraph.collect.pinning import Pins

#: the phases ``--depgraph-timings`` names
PHASES = ("resolve", "validate", "order", "reduce")


class Result:
    """What :func:`build` returns."""

    __slots__ = ("cpu_timings", "items", "plan", "problems", "timings", "unreduced")

    def __init__(
        self, items: list[pytest.Item], plan: Plan, problems: list[Problem],
        unreduced: Graph | None = None,
    ) -> None:
        self.items = items
        self.plan = plan
        self.problems = problems
        #: seconds spent in each phase (:data:`PHASES`)
        self.timings: dict[str, float] = {}
        #: CPU seconds of this process in each phase (``time.process_time``): unlike wall
        #: time, still telling on a loaded machine
        self.cpu_timings: dict[str, float] = {}
        #: the graph before transitive reduction, over the plan's numbers
        #: (``keep_unreduced``): a shard's edge counts are taken from it
        self.unreduced = unreduced


def build(
    collected: Sequence[pytest.Item],
    selected: Sequence[pytest.Item],
    rootpath: Path,
    *,
    pull_dependencies: bool = True,
    keep_unreduced: bool = False,
    verbosity: int = 0,
    ignore_unselected: bool = False,
    ignored_files: Collection[str] = (),
    settings: Settings | None = None,
    capacity: Mapping[str, int] | None = None,
    marks: Marks | None = None,
) -> Result:
    """Resolve every declaration of the selected items (and of the dependencies pulled in),
    validate the graph, order the items and reduce the graph. ``capacity``: the shared
    resources ``depgraph_resources`` lists (None: not set); ``marks``: :func:`~pytest_depgraph.
    collect.peer_plugins.marks_of` the collected items, when the caller has it.

    O(V + E) plus the reduction; targets resolve through a prefix index. The cyclic garbage
    collector is paused meanwhile: the build makes many small objects and no cycles, and each
    full collection it would trigger walks every collected item of the session.
    """
    # measured: onefile10k graph phases 0.72 -> 0.38 s CPU (spread 0.16; median of 5
    # interleaved, loaded machine), rand100k 7.3 -> 4.3 s (one run each): without -> with
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _build(collected, selected, rootpath, pull_dependencies, keep_unreduced,
                      verbosity, ignore_unselected, ignored_files, settings, capacity, marks)
    finally:
        if enabled:
            gc.enable()


def _build(
    collected: Sequence[pytest.Item],
    selected: Sequence[pytest.Item],
    rootpath: Path,
    pull_dependencies: bool,
    keep_unreduced: bool,
    verbosity: int,
    ignore_unselected: bool,
    ignored_files: Collection[str],
    settings: Settings | None,
    capacity: Mapping[str, int] | None,
    marks: Marks | None,
) -> Result:
    """:func:`build`, its garbage collector paused."""
    clock = _Clock()
    context = Context(collected, rootpath, verbosity, settings, ignored_files, capacity)
    declarations = Declarations(context, marks)
    chosen = context.positions_of(selected)
    if not keep_unreduced and declarations.nothing() and len(set(chosen)) == len(chosen):
        result = _without_declarations(context, chosen)
        clock.lap("resolve")
        return clock.timed(result)
    found = follow_cleanups.find(context, declarations)
    resolved = resolve(context, declarations, chosen, pull_dependencies, ignore_unselected,
                       found.pulls)
    followed = follow_cleanups.follow(context, found, resolved)
    context.release()
    declarations.release()
    numbered = number(context, resolved, followed)
    clock.lap("resolve")
    validated = validate(context, numbered, verbosity)
    clock.lap("validate")
    try:
        ordered = order(context, declarations, numbered, validated)
    except Inconsistent:
        validated = inconsistent(numbered, validated)
        ordered = order(context, declarations, numbered, validated)
    clock.lap("order")
    reduced = reduce(declarations, numbered, validated, ordered)
    clock.lap("reduce")
    return clock.timed(assemble(context, declarations, resolved, numbered, validated, ordered,
                                reduced, keep_unreduced))


class _Clock:
    """The wall and CPU seconds of each phase."""

    def __init__(self) -> None:
        self.timings: dict[str, float] = {}
        self.cpu_timings: dict[str, float] = {}
        self._wall, self._cpu = time.perf_counter(), time.process_time()

    def lap(self, phase: str) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        self.timings[phase], self.cpu_timings[phase] = wall - self._wall, cpu - self._cpu
        self._wall, self._cpu = wall, cpu

    def timed(self, result: Result) -> Result:
        """``result`` with the phases' seconds (0 for a phase not run)."""
        result.timings = {phase: self.timings.get(phase, 0.0) for phase in PHASES}
        result.cpu_timings = {phase: self.cpu_timings.get(phase, 0.0) for phase in PHASES}
        return result


# -- number --------------------------------------------------------------------------------


class Numbered(NamedTuple):
    """The graph of the run, over its own numbers."""

    #: ``run[n]``: the collection position of the test that is graph node ``n``
    run: list[int]
    #: the same for every node: the run, then the dependencies outside it (external)
    numbered: list[int]
    #: ``number[position]``: the node of a collection position, -1 when not in the graph
    number: list[int]
    #: the node id of every node
    nodeids: list[str]
    graph: Graph
    #: the cleanups of the run (``cleanup_of``), by node
    cleanups: dict[int, Cleanup]


def number(context: Context, resolved: Resolved, followed: Followed | None = None) -> Numbered:
    """Number the tests in the order pytest and the other plugins left them (``--ff``,
    randomisers, pytest-order): the stable sort that follows only ever moves a test down, so
    each pulled-in dependency (it had no place in that order) is numbered just before its
    first dependent. O(V + E)."""
    if resolved.added:
        placing = len(resolved.kinds) if resolved.placing < 0 else resolved.placing
        run = _with_pulled_in(resolved.selected, resolved.added, resolved.dependents[:placing],
                              resolved.dependencies[:placing], resolved.pulled)
    else:
        run = resolved.selected
    numbered = [*run, *sorted(set(resolved.external) - resolved.in_run)]
    if numbered == list(range(len(context.nodeids))):
        # the whole collection in pytest's order, the usual run: the positions are the
        # numbers (measured, callgrind: onefile10k's number phase 122 -> 90 M instructions,
        # real10k's 176 -> 144 M; then 143.0 -> 137.2 M: the numbers and node ids copied,
        # not made one by one)
        number = numbered[:]
        nodeids = context.nodeids[:]
        dependents, dependencies = resolved.dependents, resolved.dependencies
    else:
        number = [-1] * len(context.nodeids)
        for node, position in enumerate(numbered):
            number[position] = node
        nodeids = [context.nodeids[p] for p in numbered]
        dependents = array("i", [number[position] for position in resolved.dependents])
        dependencies = array("i", [number[position] for position in resolved.dependencies])
    graph = Graph.from_arrays(len(numbered), dependents, dependencies, resolved.kinds,
                              resolved.origin_of, resolved.table)
    cleanups = {} if followed is None else {
        number[position]: Cleanup(tuple(number[t] for t in targets),
                                  tuple(followed.absent.get(position, ())))
        for position, targets in followed.targets.items()
    }
    return Numbered(run, numbered, number, nodeids, graph, cleanups)


def _with_pulled_in(
    selected: list[int],
    added: list[int],
    dependents: Sequence[int],
    dependencies: Sequence[int],
    pulled_by: Mapping[int, Sequence[int]],
) -> list[int]:
    """The selected positions in order, each pulled-in dependency just before the first
    selected test that needs it (in collection order among those of one test), each test
    pulled in because it names a test of the run (``pulled_by``) just after that test.
    O(V + E)."""
    pulled = set(added)
    needs: dict[int, list[int]] = {}
    for dependent, dependency in zip(dependents, dependencies):
        if dependency in pulled:
            needs.setdefault(dependent, []).append(dependency)
    seen: set[int] = set()
    run: list[int] = []
    for position in selected:
        following = deque([position])
        while following:
            placed = following.popleft()
            mine: list[int] = []
            stack = list(needs.get(placed, ()))
            while stack:
                dependency = stack.pop()
                if dependency not in seen:
                    seen.add(dependency)
                    mine.append(dependency)
                    stack.extend(needs.get(dependency, ()))
            run.extend(sorted(mine))
            run.append(placed)
            for named in [*sorted(mine), placed]:
                for follower in pulled_by.get(named, ()):
                    if follower not in seen:
                        seen.add(follower)
                        following.append(follower)
    return run


# -- validate ------------------------------------------------------------------------------


class Validated(NamedTuple):
    """What can run."""

    #: the problems to report, capped (``-v``: all)
    problems: list[Problem]
    #: nodes that cannot run, each with why
    broken: dict[int, str]
    #: the graph without them
    acyclic: Graph
    #: the graph's nodes in Kahn's order, when it has no cycle (for the reduction)
    kahn: list[int]


def validate(context: Context, numbered: Numbered, verbosity: int) -> Validated:
    """The tests a problem or a cycle breaks, and the tests that require them. O(V + E)."""
    problems = context.problems.finished()
    number, nodeids, graph = numbered.number, numbered.nodeids, numbered.graph
    broken: dict[int, str] = {}
    for problem in problems:
        for position in problem.items:
            if number[position] >= 0:
                broken.setdefault(number[position], problem.message)
    kahn: list[int] = []
    cycles = find_cycles(graph, kahn)
    for cycle in cycles:
        first = nodeids[cycle[0].dependent]
        problem = Problem(cycle_message(cycle, nodeids, verbosity), first.split("::", 1)[0])
        problems.append(problem)
        for edge in cycle:
            broken.setdefault(edge.dependent, problem.message)
    if cycles:  # a component of several loops: its other tests are in the one reported
        for component in strongly_connected_components(graph):
            for node in component[1:]:
                broken.setdefault(node, broken[component[0]])
    # tests that require a broken test cannot run either: say which one
    for dependent, node in reachable(graph, list(broken), "dependents", (Kind.REQUIRES,)).items():
        broken[dependent] = broken_dependent(nodeids[dependent], nodeids[node])
    acyclic = graph.subgraph_without(set(broken))
    # the graph as declared is read by its columns from here on: its adjacency lists and
    # look-up tables go before the order and the reduction make the acyclic graph's
    graph.compact()
    return Validated(capped(problems, verbosity), broken, acyclic, kahn)


# -- order ---------------------------------------------------------------------------------


class Serial(NamedTuple):
    """The serial order, and the plan's numbers."""

    #: the graph's nodes in serial order
    order: list[int]
    #: the tests of the run in serial order (graph nodes)
    run_order: list[int]
    #: ``new_id[n]``: the plan's number of graph node ``n`` (the run in serial order, then
    #: the external nodes)
    new_id: list[int]
    #: the nodes in the plan's order
    final: list[int]
    #: tests that must share a worker
    pins: Pins


def order(
    context: Context, declarations: Declarations, numbered: Numbered, validated: Validated
) -> Serial:
    """The serial order: a dependent collected before its dependency waits until the
    dependency's class, module and package are done, rather than splitting them (their
    fixtures would be set up twice). Then the tests that must share a worker, chained in this
    order (AFTER edges added to the acyclic graph)."""
    from pytest_depgraph.collect import pinning  # a session without declarations never pins

    run, numbered_positions = numbered.run, numbered.numbered
    try:
        serial = stable_topological_order(validated.acyclic,
                                          _scopes_of(context.collected, numbered_positions))
    except ValueError as error:
        raise Inconsistent(error) from error
    computed = {
        position: [claim.value for claim in claims if claim.kind is ClaimKind.COMPUTED_NAMES]
        for position, claims in declarations.claims.items()
    }
    pins = pinning.pin(context, run, validated.acyclic, serial, validated.broken,
                       {position: sites for position, sites in computed.items() if sites})
    run_order = [n for n in serial if n < len(run)]
    # external nodes go last: they never run, and nothing in the run waits on their position
    final = [*run_order, *range(len(run), len(numbered_positions))]
    return Serial(serial, run_order, positions_in(final), final, pins)


class Inconsistent(Exception):
    """The graph :func:`validate` left is not acyclic: a bug of ours, never the user's."""


def inconsistent(numbered: Numbered, validated: Validated) -> Validated:
    """:func:`validate`'s result, when the graph it left still has a cycle, with the tests of
    every such cycle and those that require them broken by one internal-error problem that
    says what to report: a collection error, as a cycle is, rather than a traceback."""
    nodeids, acyclic = numbered.nodeids, validated.acyclic
    stuck = sorted(node for component in strongly_connected_components(acyclic)
                   for node in component
                   if len(component) > 1 or acyclic.edge(node, node) is not None)
    message = inconsistency([nodeids[node] for node in stuck])
    broken = dict(validated.broken)
    for node in stuck:
        broken[node] = message
    for dependent, node in reachable(acyclic, stuck, "dependents", (Kind.REQUIRES,)).items():
        broken.setdefault(dependent, broken_dependent(nodeids[dependent], nodeids[node]))
    problem = Problem(message, nodeids[stuck[0]].split("::", 1)[0])
    return Validated([*validated.problems, problem], broken,
                     numbered.graph.subgraph_without(set(broken)), [])


def _scopes_of(
    collected: Sequence[pytest.Item], numbered: Sequence[int]
) -> list[tuple[str, ...]] | None:
    """``scopes[node]``: the node ids of the collectors that hold the test of graph node
    ``node`` (``collected[numbered[node]]``) and own fixtures of their scope, outermost first:
    its packages, its module, its classes; not a plain folder (a ``package`` fixture outside a
    package is a session one) nor the session. One tuple per innermost collector, shared by
    its tests. None when every test has the same parent: any order keeps its scopes
    together."""
    if not numbered or (
        collected[numbered[0]].parent is collected[numbered[-1]].parent
        and len({id(collected[position].parent) for position in numbered}) < 2
    ):
        # measured: onefile10k's order, one module: 35-37 -> 12-13 ms (median of 5 in one
        # process): keeping the scopes -> none to keep. Looked for only when the first and
        # the last test share a parent: the build of onefile10k under callgrind 1,185.6 ->
        # 1,178.5 M instructions (every test's scopes listed, then dropped -> this check)
        return None
    # by id: pytest 8's nodes hash their node id in Python code, run at every look-up
    known: dict[int, tuple[str, ...]] = {}
    scopes = []
    # every node at once, in node order (about collection order, so about memory order):
    # measured, rand100k, the order's loop in the build 416 -> 281 ms CPU (3 runs in one
    # process): asked a node at a time as it needs them -> this list, 17 ms (the one-parent
    # check of every test: 10 ms)
    for position in numbered:
        parent = collected[position].parent
        chain = known.get(id(parent))
        if chain is None:
            found = []
            collector = parent
            while collector is not None and not isinstance(collector, pytest.Session):
                if not isinstance(collector, pytest.Dir):
                    found.append(collector.nodeid)
                collector = collector.parent
            chain = known[id(parent)] = tuple(reversed(found))
        scopes.append(chain)
    return scopes


# -- reduce --------------------------------------------------------------------------------


class Reduced(NamedTuple):
    """The plan's graph."""

    #: over the plan's numbers
    graph: Graph
    #: edges the reduction removed
    removed: int
    #: edges the readers added once the order was known, by origin kind
    order_counts: dict[str, int]


def reduce(
    declarations: Declarations, numbered: Numbered, validated: Validated, serial: Serial
) -> Reduced:
    """The transitive reduction, in Kahn's breadth-first order (it keeps the closures shorter
    than the serial order would; the graph's, found with its cycles, is the acyclic graph's
    when no edge went or came). Then the edges that follow the serial order (pytest-order's
    ordinal groups, tied for parallel runs): added after the reduction, as they tie every
    unordered test to the ordered ones, and reducing such stars costs more than it saves."""
    acyclic = validated.acyclic
    same = not validated.broken and acyclic.edge_count == numbered.graph.edge_count
    reduced = transitive_reduction(acyclic, validated.kahn if same else None)
    removed = acyclic.edge_count - reduced.edge_count
    order_counts = declarations.order_edges(
        Ordered(numbered.run, serial.order, validated.broken, reduced, acyclic)
    )
    acyclic.compact()  # read by its columns from here on (a shard's unreduced graph)
    graph = reduced.relabel(serial.new_id)
    graph.compact()
    return Reduced(graph, removed, order_counts)


# -- assemble ------------------------------------------------------------------------------


def assemble(
    context: Context,
    declarations: Declarations,
    resolved: Resolved,
    numbered: Numbered,
    validated: Validated,
    serial: Serial,
    reduced: Reduced,
    keep_unreduced: bool,
) -> Result:
    """The plan, and the items in its order, with the shared resources its tests claim."""
    new_id, collected = serial.new_id, context.collected
    # (the lists read once, not per test: rand10k's assemble up to the resources 4.8 -> 2.6 M
    # instructions, callgrind)
    position_of, nodeid_of = numbered.run, numbered.nodeids
    items = [collected[position_of[n]] for n in serial.run_order]
    run, number = len(numbered.run), numbered.number
    claimed, lone = resources(
        context.collected, declarations.claims,
        lambda p: new_id[number[p]] if 0 <= number[p] < run else -1,
        context.capacity, context.rootpath,
    )
    found = [*validated.problems, *lone]
    nodeids = [nodeid_of[n] for n in serial.final]
    plan = Plan(
        nodeids=nodeids,
        graph=reduced.graph,
        # affinity groups are the innermost scope (class, else module): a worker that keeps
        # to one class keeps its class fixtures, which pytest sets up again after a switch
        group=_groups(nodeids),
        item_count=len(items),
        errors=[problem.message for problem in found],
        broken={new_id[n]: message for n, message in validated.broken.items()},
        edge_counts={
            **graph_edges_by_origin(numbered.graph),
            **serial.pins.counts(),
            **reduced.order_counts,
        },
        removed_edges=reduced.removed,
        added=sorted(new_id[numbered.number[p]] for p in resolved.added),
        pinned=[[new_id[n] for n in group] for group in serial.pins.groups],
        warnings=serial.pins.warnings,
        cleanups={
            new_id[n]: Cleanup(tuple(sorted(new_id[t] for t in cleanup.targets)), cleanup.absent)
            for n, cleanup in numbered.cleanups.items()
        },
        resources=claimed,
    )
    unreduced = validated.acyclic.relabel(new_id) if keep_unreduced else None
    if unreduced is not None:
        unreduced.compact()
    return Result(items=items, plan=plan, problems=found, unreduced=unreduced)


def _without_declarations(context: Context, chosen: list[int]) -> Result:
    """The plan of a session where no test declares anything: the chosen tests in their
    order, no edge -- what the whole build would make, without its graph algorithms and
    per-test tables."""
    items = [context.collected[p] for p in chosen]
    nodeids = [context.nodeids[p] for p in chosen]
    graph = Graph(len(items))
    graph.compact()  # as the build leaves the plan's graph: nothing kept per node
    plan = Plan(
        nodeids=nodeids,
        graph=graph,
        group=_groups(nodeids),
        item_count=len(items),
    )
    return Result(items=items, plan=plan, problems=[])


def _groups(nodeids: Sequence[str]) -> list[int]:
    """The affinity group of each node id, numbered in order of first appearance: its scope,
    the id up to its last ``::`` before any ``[`` (``f.py::C::t[x]`` -> ``f.py::C``,
    ``f.py::t`` -> ``f.py``), or the id itself without one. O(V)."""
    numbers: dict[str, int] = {}
    groups = []
    for nodeid in nodeids:
        scope = nodeid.partition("[")[0].rpartition("::")[0] or nodeid
        groups.append(numbers.setdefault(scope, len(numbers)))
    return groups
