"""The one producer of a process's plan: build -> shard -> groups, stored once in its state.

Every process that collects (the serial session, each xdist worker) makes its plan here, in
the outermost ``pytest_collection_modifyitems`` wrapper, once every other plugin has selected
and reordered the tests: :func:`collected` before they do, :func:`session_plan` after. The
plan is then final: the walk, the worker's plan event and the outputs read it; nothing writes
it again. (The xdist controller collects nothing: its plan is the workers',
:mod:`pytest_depgraph.run.xdist.controller`.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from pytest_depgraph.collect import file_warnings
from pytest_depgraph.collect.peer_plugins import marks_of
from pytest_depgraph.core.plan import Plan
from pytest_depgraph.hosts import pytest as host
from pytest_depgraph.plurals import plural, tests
from pytest_depgraph.run.role import Role, role
from pytest_depgraph.run.state import session_state

if TYPE_CHECKING:
    from pytest_depgraph.collect.build import Result


def widen(config: pytest.Config) -> None:
    """Before collection: node-id arguments widened to their files, and the files their
    declarations point to added, so that the dependencies of the tests they name are
    collected (:func:`~pytest_depgraph.collect.selection.widen_node_id_args`). Not on an xdist
    controller, which collects nothing."""
    if role(config) is not Role.CONTROLLER:
        # imported by the processes that collect: the readers come with it (measured,
        # callgrind: the plugin's import 49.4 -> 32.3 M instructions, which an xdist
        # controller, collecting nothing, no longer pays for them)
        from pytest_depgraph.collect.selection import widen_node_id_args

        session_state(config).selection = widen_node_id_args(config)


def collected(config: pytest.Config, items: list[pytest.Item]) -> list[pytest.Item]:
    """Every collected test, before the other plugins select (``-k``, ``-m``, ``--lf``,
    ``--deselect``): targets resolve against all of them. A node id given as an argument that
    names no test is an error, as in plain pytest."""
    found = list(items)
    state = session_state(config)
    chosen = state.selection
    if chosen is not None:
        chosen.check_found(found)
    state.marks = marks_of(found)
    return found


def session_plan(
    config: pytest.Config, collected: list[pytest.Item], items: list[pytest.Item]
) -> Plan:
    """The plan of the selected ``items`` (``collected``: every test), stored in the session's
    state; ``items`` become the tests to run, in its order.

    The tests collected only because node ids were widened to their files are dropped (they
    count neither as collected nor as deselected), unless a selected test depends on them;
    the graph is built and its problems reported as collection errors; ``--depgraph-shard``
    keeps its share (the others are deselected); ``--dist loadgroup`` workers put the tests'
    ``xdist_group`` names in the plan. Resource blocks that wait for each other are
    collection errors too.
    """
    # the build (collect/build.py and its phases, 7 modules) is imported here, in the
    # processes that collect: an xdist controller never does, and it imports the plugin before
    # it starts its workers (measured, callgrind: the plugin's import 111.7 -> 100.7 M
    # instructions, two runs each within 0.1 M)
    from pytest_depgraph.collect.build import build

    state = session_state(config)
    settings = state.settings
    chosen = state.selection
    # tests collected only because node ids were widened to files: never named by the user
    widened_only: list[pytest.Item] = []
    if chosen is not None:
        items[:], widened_only = chosen.apply(items)
    result = build(
        collected,
        items,
        config.rootpath,
        pull_dependencies=not (settings.no_deps or settings.ignore_deps),
        keep_unreduced=settings.shard is not None,
        verbosity=config.option.verbose,
        ignore_unselected=settings.ignore_deps,
        ignored_files=chosen.ignored if chosen is not None else (),
        settings=state.peers,
        capacity=settings.resources,
        marks=state.marks,
    )
    if settings.timings:
        _print_timings(config, result)
    plan, kept = result.plan, result.items
    _recount(config, plan, widened_only)
    if settings.shard is not None:  # split after selection and pull-in, before the walk
        from pytest_depgraph.run import sharding

        plan, kept, others = sharding.apply(
            config, plan, kept, result.unreduced, *settings.shard
        )
        if others:
            config.hook.pytest_deselected(items=others)
    if role(config).sends_plan and config.getoption("loadgroup", False):
        plan = plan.replace(xdist_groups=xdist_groups(kept))
    items[:] = kept
    found = [(problem.report_nodeid, problem.message) for problem in result.problems]
    if plan.resources.blocks and not plan.errors:
        # blocks that wait for each other stop the run before any test, serially too
        from pytest_depgraph.run.xdist.units import block_cycles  # only a run with blocks

        cycles = block_cycles(plan)
        plan = plan.replace(errors=[message for _, message in cycles])
        found += cycles
    for nodeid, message in found:
        config.hook.pytest_collectreport(
            report=pytest.CollectReport(nodeid, "failed", longrepr=message, result=[])
        )
    state.plan = plan
    file_warnings.warn_imported_targets(plan, kept)
    return plan


def _recount(config: pytest.Config, plan: Plan, widened_only: list[pytest.Item]) -> None:
    """The terminal's counts as the user selected: tests pulled back in as dependencies are
    not "deselected"; tests collected only to find dependencies, and not needed, are not
    "collected" either (pytest would never have collected them, and the user did not select
    them)."""
    added = {plan.nodeids[n] for n in plan.added}
    if added:
        host.undo_deselection(config, added)
    host.uncount_collected(config, sum(1 for item in widened_only if item.nodeid not in added))


def xdist_groups(items: list[pytest.Item]) -> dict[int, str]:
    """The ``xdist_group`` name of each test that has one, for ``--dist loadgroup`` units.

    xdist marks them by adding ``@name`` to the node ids, which pytest 9.2 no longer lets it
    do (the node id is not an attribute any more): the units are read from the markers here,
    with xdist's naming (several groups on one test join as ``a_b``, no name is "default").
    """
    groups: dict[int, str] = {}
    for node, item in enumerate(items):
        names = {
            str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
            for mark in item.iter_markers("xdist_group")
        }
        if names:
            groups[node] = "_".join(sorted(names))
    return groups


def _print_timings(config: pytest.Config, result: Result) -> None:
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    if terminal is None:
        return
    plan = result.plan
    terminal.write_line(
        f"depgraph timings: {tests(plan.item_count)}, {plural(plan.graph.edge_count, 'edge')} "
        f"after reduction: {_phases(result.timings)}"
    )
    # CPU time as well: on a loaded machine wall time says more about the others than us
    terminal.write_line(f"depgraph timings (CPU): {_phases(result.cpu_timings)}")


def _phases(timings: dict[str, float]) -> str:
    """``resolve 1.2 ms, ...; total 2.0 ms``."""
    phases = ", ".join(f"{name} {sec * 1000:.1f} ms" for name, sec in timings.items())
    return f"{phases}; total {sum(timings.values()) * 1000:.1f} ms"
