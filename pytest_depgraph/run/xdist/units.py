"""The ``--dist`` modes the plugin walks; their work units and resource blocks as pinned groups.

:data:`MODES` is the one table of ``--dist`` modes: those the depgraph scheduler runs, each
with xdist's own scheduler for a run with nothing to walk, and for ``loadfile``,
``loadscope`` and ``loadgroup`` what a unit is. Any other mode (``each``, ``no``, a plugin's)
is xdist's alone.

A suite that uses a mode with units shares state within a unit (a file; a class, else a
module; an ``xdist_group``) and expects each unit to run whole on one worker, in its own order;
so does a block of tests that hold a resource as one (a class or module lock, a lock on a
class-, module- or session-scoped fixture). :func:`bind_units` makes each unit and each block
of the plan a pinned group (the dispatcher binds it to the worker that starts it), chains its
tests with AFTER edges in plan order, and makes its first test wait for every test outside it
that any of its tests depends on -- so it starts only once all of that has finished, then
runs from start to end (:mod:`pytest_depgraph.core.walk.whole_groups`). Units or blocks that wait
for each other (a cycle between them, though the tests' own graph has none) cannot be run that
way: each such cycle is returned as an error naming the tests and edges that tie them.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pytest_depgraph.collect.origins import BLOCK_EDGES, OriginKind, describe
from pytest_depgraph.core.graph.storage import Edge, Origin
from pytest_depgraph.core.plan import Plan
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


class Mode:
    """What the plugin does under one ``--dist`` mode. (A plain class: every xdist controller
    imports this module, and a frozen dataclass is written and compiled at import, 0.37 ms.)"""

    __slots__ = ("unit", "words", "xdist_scheduler")

    def __init__(
        self,
        xdist_scheduler: str,
        unit: Callable[[str], str] | None = None,
        words: tuple[str, str] = ("test", "tests"),
    ) -> None:
        #: xdist's own scheduler for the mode (a class of ``xdist.scheduler``): it runs a
        #: session with nothing to walk
        self.xdist_scheduler = xdist_scheduler
        #: the unit a node id belongs to, as xdist defines it; None: tests go out one by one
        self.unit = unit
        #: what a unit is, in a user's words: (one, many)
        self.words = words


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
    """``plan`` with every unit (under ``--dist {dist}``, when it has units) and every
    resource block (:class:`~pytest_depgraph.core.plan.Block`) a pinned group that starts once
    all it depends on outside it finished
    (:func:`~pytest_depgraph.core.walk.whole_groups.make_whole`), and an error per cycle between
    them, as (the file to report it under, the message).

    A block inside a unit makes no group of its own: the unit holds the block's resources for
    its whole run (the walk's claims, :mod:`pytest_depgraph.core.walk.resource_books`). Existing
    pinned groups (:mod:`pytest_depgraph.collect.pinning`) are merged with the units and blocks they
    touch. pytest-order's position edges between groups that wait for each other are dropped,
    with a warning in the plan's ``warnings``. On a cycle, the plan returned is ``plan`` with
    the errors added to its ``errors`` (its graph stays: the summary and the DOT file read
    it). ``plan`` itself is left as it is. O(V + E).
    """
    # the walk's groups, imported by a controller that binds units or blocks: a plan with
    # nothing to walk is handed over without them
    from pytest_depgraph.core.walk.whole_groups import make_whole

    units = has_units(dist)
    groups: list[tuple[str, list[int]]] = []
    if units:
        members: dict[str, list[int]] = {}
        for node, name in enumerate(_units(plan, dist)):
            members.setdefault(name, []).append(node)
        groups = list(members.items())
    blocks = range(len(groups), len(groups) + len(plan.resources.blocks))
    groups.extend((f"{block.name} ({block.where})" if block.where else block.name,
                   list(block.tests)) for block in plan.resources.blocks)
    nodeids = plan.nodeids
    whole = make_whole(
        plan.graph, plan.item_count, groups,
        pinned=plan.pinned, leave_out=plan.broken, soft={OriginKind.ORDINAL}, single=blocks,
        chain=lambda name: Origin(
            OriginKind.UNIT,
            f"--dist {dist} unit {name}, in order" if units
            else f"{name} holds its resources as one block, in order",
        ),
        wait=lambda node, dependency, edge: Origin(
            OriginKind.UNIT,
            f"{nodeids[node]} depends on {nodeids[dependency]} ({describe(edge.origin)})",
        ),
    )
    errors = [
        (nodeids[loop[0].dependent].split("::", 1)[0],
         _cycle_message(loop, plan, dist if units else None, whole.name))
        for loop in whole.cycles
    ]
    if errors:
        return (
            plan.replace(errors=[*plan.errors, *(m for _, m in errors)]),
            errors,
        )
    edge_counts, warnings = dict(plan.edge_counts), list(plan.warnings)
    if whole.given_way:
        left = edge_counts.pop(OriginKind.ORDINAL, 0) - len(whole.given_way)
        if left > 0:
            edge_counts[OriginKind.ORDINAL] = left
        warnings.append(_given_way_message(whole.given_way, dist if units else None))
    if whole.added:
        edge_counts[OriginKind.UNIT if units else BLOCK_EDGES] = whole.added
    return (
        plan.replace(
            graph=whole.graph, pinned=whole.pinned, edge_counts=edge_counts, warnings=warnings
        ),
        [],
    )


def block_cycles(plan: Plan) -> list[tuple[str, str]]:
    """The errors of the resource blocks of ``plan`` that wait for each other (a block scope
    that contradicts the dependencies), as :func:`bind_units` finds them for a walk without
    ``--dist`` units: (the file to report it under, the message naming the blocks, the tests
    and the edges that tie them), one per cycle; empty when every block can run whole. A
    collection finds them before any test runs, serially too; the walk's units may add more
    (the controller reports those). O(V + E)."""
    if not plan.resources.blocks:
        return []
    _, errors = bind_units(plan, "load")
    return errors


def _given_way_message(given_way: list[Origin], dist: str | None) -> str:
    """The warning that names the order markers whose positions could not hold across
    units (``dist`` None: resource blocks), each once, by file and line."""

    def place(where: str) -> tuple[str, int]:
        path, _, line = where.rpartition(":")
        return (path, int(line)) if line.isdigit() else (where, 0)

    places = sorted({origin.where for origin in given_way if origin.where}, key=place)
    one, many = _BLOCK_WORDS if dist is None else MODES[dist].words
    run = "in a parallel run" if dist is None else f"under --dist {dist}"
    first = f"{places[0]}: " if places else ""
    markers = ", ".join(places) if places else "(places not known)"
    return (
        f"depgraph: {first}pytest-order positions that hold within their {one} but not across "
        f"{many} {run}: {markers}. Each {one} runs whole on one worker, in its "
        f"own order, and across {many} these positions would make {many} wait for each other."
    )


#: a resource block in a user's words: (one, many)
_BLOCK_WORDS = ("block of tests that hold a resource as one", "such blocks")


def _cycle_message(
    loop: list[Edge], plan: Plan, dist: str | None, unit: dict[int, str]
) -> str:
    """A cycle between units (``dist`` None: between resource blocks), edge by edge."""

    def name(node: int) -> str:
        return unit.get(node, plan.nodeids[node])

    if dist is None:
        head = ("depgraph: these tests cannot hold their resources as blocks: the blocks "
                "wait for each other")
        advice = ("  A block runs whole on one worker once everything its tests depend on "
                  "outside it finished. Remove or reverse one of these dependencies, or give "
                  "the lock test scope (scope=\"test\") so that each test holds it alone.")
    else:
        head = f"depgraph: --dist {dist} cannot run these units whole: they wait for each other"
        advice = ("  A unit runs whole on one worker once everything it depends on outside it "
                  "finished. Remove or reverse one of these dependencies, move the tests so "
                  "that the units do not wait for each other, or use --dist load.")
    lines = [head]
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
    lines.append(advice)
    return "\n".join(lines)
