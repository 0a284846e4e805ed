"""The build's resolve phase, its first: what the tests of the run declare, resolved into edges
between collection positions, with the dependencies the run pulls in.

Starting from the selected tests, each test's declarations
(:mod:`~pytest_depgraph.collect.declarations`) are resolved against every collected test
(:mod:`~pytest_depgraph.collect.targets`). A dependency outside the selection is pulled in (and its
own declarations read) unless ``--depgraph-no-deps`` keeps it out, as an *external* node, or
``--depgraph-ignore-deps`` drops the edge. A target that matches nothing, or that holds the
declaring test itself, is a problem for every test it is declared for.
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Mapping, Sequence
from functools import partial

from pytest_depgraph.collect import problems, safe
from pytest_depgraph.collect.context import Context, Source
from pytest_depgraph.collect.declarations import Declarations
from pytest_depgraph.collect.dependency_markers import describe_target
from pytest_depgraph.collect.selection import uncollected_file
from pytest_depgraph.collect.targets import TargetIndex
from pytest_depgraph.core.graph.storage import Kind, Origin


class Resolved:
    """The run's edges over collection positions, as parallel columns (no tuple per edge)."""

    __slots__ = ("added", "dependencies", "dependents", "external", "in_run", "kinds",
                 "origin_of", "placing", "pulled", "selected", "table")

    def __init__(self, selected: list[int]) -> None:
        #: the selected positions, in the order pytest and the other plugins left them
        self.selected = selected
        #: positions pulled into the run as dependencies of the selected tests, in order found
        self.added: list[int] = []
        #: positions of dependencies left out of the run (``--depgraph-no-deps``)
        self.external: list[int] = []
        #: every position in the run
        self.in_run = set(selected)
        self.dependents = array("i")
        self.dependencies = array("i")
        self.kinds = bytearray()
        #: the index of each edge's origin in :attr:`table`
        self.origin_of = array("i")
        #: one origin per declaration resolved in one scope
        self.table: list[Origin] = []
        #: position of a test of the run -> the tests it pulled into the run because they
        #: name it (``cleanup_of``: :mod:`.follow_cleanups`)
        self.pulled: dict[int, list[int]] = {}
        #: the edges from this index on order the tests of the run without placing a
        #: pulled-in one (a cleanup's edges to the dependents of its targets); -1: every edge
        #: places
        self.placing = -1


def resolve(
    context: Context,
    declarations: Declarations,
    selected: Sequence[int],
    pull_dependencies: bool,
    ignore_unselected: bool,
    pulls: Mapping[int, Sequence[int]] | None = None,
) -> Resolved:
    """Resolve what the tests at ``selected`` declare, and what every test pulled in
    declares. O(V + E) dictionary look-ups; each declaration is resolved once per class or
    module that it applies to (a target resolves against the test's scope).

    ``pulls``: the tests each position pulls into the run when it is in the run (the
    cleanups that name it), when dependencies are pulled in."""
    found = Resolved(list(selected))
    nodeids = context.nodeids
    queue = deque(selected)
    named = pulls if pulls and pull_dependencies else None
    if named:
        for position in selected:
            _pull_naming(found, queue, named, position)
    # how each source resolves in the current scope (a class or module, whose tests pytest
    # collects one after another): a source shared by a class's tests or by a test's
    # parametrized instances is resolved once
    scope = ""
    in_scope: dict[int, tuple[int, int, list[tuple[object, Sequence[int]]]]] = {}
    # the prefixes of a name in the current scope, innermost first, asked once per scope
    # (measured, callgrind: onefile10k's resolve, 10,000 declarations, 655 -> 614 M
    # instructions: asked once per declaration -> this)
    index = context.index
    outward: list[str] | None = None
    # ordering edges to a test outside the run so far: it may still be pulled in (as another
    # test's dependency), and then they order it as any other
    waiting: dict[int, list[tuple[int, int, int]]] = {}
    # the edges' columns, appended to in one place of the loop (measured, callgrind:
    # onefile10k's resolve phase, 30,000 edges, 677 -> 654 M instructions: add_edge() -> this)
    in_run = found.in_run
    add_dependent, add_dependency = found.dependents.append, found.dependencies.append
    add_kind, add_origin = found.kinds.append, found.origin_of.append
    # every collected test runs (the usual case): no match is outside the run (measured,
    # callgrind: the resolve phase of rand10k, onefile10k and real10k, 30,000 edges each, 9 M
    # instructions less of 303-376 M: looked up -> this)
    everything = len(in_run) == len(nodeids)
    while queue:
        # the tests reached so far, read together (each reader's columns for all of them),
        # resolved in the order reached: those they pull in are the next batch
        batch = list(queue)
        queue.clear()
        found_before = len(context.problems)
        for position, sources in zip(batch, declarations.sources(batch)):
            if not sources:
                continue
            nodeid = nodeids[position]
            current = _scope(nodeid)
            if current != scope:
                scope, in_scope, outward = current, {}, None
            for source in sources:
                resolved = in_scope.get(id(source))
                if resolved is None:
                    if outward is None and source.resolved is None:
                        outward = index.outward_of(nodeid)
                    resolved = in_scope[id(source)] = _resolve_source(
                        index, source, nodeid, outward, found.table
                    )
                origin, kind, targets = resolved
                for target, matches in targets:
                    if not matches:
                        unresolved(context, source, target, position)
                    elif position in matches:  # the test itself, or a class or file holding it
                        self_reference(context, source, target, position)
                    else:
                        for match in matches:
                            if not everything and match not in in_run:
                                if ignore_unselected:
                                    continue  # ordering against a test that does not run
                                if kind == Kind.AFTER:
                                    waiting.setdefault(match, []).append((position, kind, origin))
                                    continue
                                if pull_dependencies:
                                    in_run.add(match)
                                    found.added.append(match)
                                    queue.append(match)
                                    if named:
                                        _pull_naming(found, queue, named, match)
                                else:
                                    found.external.append(match)
                            add_dependent(position)
                            add_dependency(match)
                            add_kind(kind)
                            add_origin(origin)
        context.problems.in_test_order(found_before, batch)
    for match, edges in waiting.items():
        if match in found.in_run:
            for position, kind, origin in edges:
                add_edge(found, position, match, kind, origin)
    return found


def _pull_naming(
    found: Resolved, queue: deque[int], pulls: Mapping[int, Sequence[int]], position: int
) -> None:
    """Pull into the run the tests that ``position`` (in the run) pulls in, and those that
    they pull in. O(tests pulled)."""
    stack = [position]
    while stack:
        puller = stack.pop()
        for pulled in pulls.get(puller, ()):
            if pulled not in found.in_run:
                found.in_run.add(pulled)
                found.added.append(pulled)
                found.pulled.setdefault(puller, []).append(pulled)
                queue.append(pulled)
                stack.append(pulled)


def _scope(nodeid: str) -> str:
    """What resolving a target depends on: the test's module and classes (the part before its
    last ``::``, parameters aside), or the id itself when it has none."""
    base = nodeid.partition("[")[0]
    return base.rpartition("::")[0] or base


def add_edge(found: Resolved, dependent: int, dependency: int, kind: int, origin: int) -> None:
    found.dependents.append(dependent)
    found.dependencies.append(dependency)
    found.kinds.append(kind)
    found.origin_of.append(origin)


def _resolve_source(
    index: TargetIndex, source: Source, nodeid: str, outward: list[str] | None,
    table: list[Origin],
) -> tuple[int, int, list[tuple[object, Sequence[int]]]]:
    """``source`` resolved for the test ``nodeid`` (and the other tests of its scope, whose
    names are looked up under ``outward``, :meth:`TargetIndex.outward_of`): the index of its
    origin in ``table`` (an entry shared by the edges of all of them), its kind, and each
    target with the positions it matches."""
    table.append(source.origin)
    kind = source.declaration.kind  # an int already (int() of it: a call, 0.11 us more)
    if source.resolved is not None:
        return len(table) - 1, kind, [(None, source.resolved)]
    return len(table) - 1, kind, index.resolve_all(source.declaration.targets, nodeid, outward)


def unresolved(context: Context, source: Source, target: object, position: int) -> None:
    """A target of ``source`` matches nothing for the test at ``position``: one error per
    cause (a missing file, a target), listing the declarations that share it."""
    nodeid = context.nodeids[position]
    text = describe_target(target)
    missing = context.index.missing_path(target, nodeid) if isinstance(target, str) else ""
    key = ("file", missing) if missing else ("target", text)
    # a file that exists but is not collected: the target is right, the run leaves it out
    left_out = (uncollected_file(target, nodeid, context.rootpath, context.files)
                if missing else None)
    advice = problems.UNRESOLVED_ADVICE if isinstance(target, str) else problems.OBJECT_ADVICE
    context.problems.grouped(
        key, (source.label, source.origin, source.written, text), nodeid, position,
        kind="unresolved", missing_path=safe.shorten(missing),
        hints=(partial(problems.left_out, left_out, left_out in context.ignored) if left_out
               else partial(_hints, context, target, position)),
        advice="" if left_out else advice,
    )


def self_reference(
    context: Context, source: Source, target: object, position: int, advice: str = ""
) -> None:
    """A target of ``source`` contains the test at ``position`` itself; ``advice``: what to
    do (default: a dependency's)."""
    text = describe_target(target)
    if not advice:
        advice = problems.SELF_ADVICE_INHERITED if source.inherited else problems.SELF_ADVICE
    context.problems.grouped(
        ("self", text, str(id(source.origin))),
        (source.label, source.origin, source.written, text),
        context.nodeids[position], position, kind="self", advice=advice,
    )


def _hints(context: Context, target: object, position: int) -> list[str]:
    """What the error about an unresolved target suggests (computed only if shown)."""
    if not isinstance(target, str):
        return []
    name = target.strip()
    if name in context.fixture_names():
        return problems.fixture_named(safe.quoted(name))
    nodeid = context.nodeids[position]
    # never the declaring test itself
    return problems.did_you_mean([
        safe.quoted(s) for s in context.index.suggest(name, nodeid)
        if position not in context.index.resolve(s, nodeid)
    ])
