"""The tests' locations the xdist controller reports its own skips under, from the workers.

The controller collects nothing, so the location (file, line, domain) of a test it reports
itself -- skipped because a dependency was unsatisfied, or unable to run -- comes from the
workers. pytest computes ``item.location`` on demand (about 30 us an item: paths and a
``stat``) and keeps it on the item; a worker needs the locations of the tests it runs anyway,
but those of the tests others run are wasted unless the controller reports them.

So a worker computes only what the controller may need, when it may need it:

* at the start of a walk (:func:`at_start`, sent beside the plan): the tests the walk skips
  before anything runs -- those that cannot run (broken), those that depend on them or on a
  test outside the run, the cleanups -- shared out between the first workers (index ``k``
  modulo ``n``: one worker computing all of them held the walk's start back);
* during the walk (:class:`OnFailure`): when one of its tests reports anything but a pass,
  the locations of every test downstream of it, sent before the report itself (the same
  channel keeps their order, so the controller has them when the report makes it skip
  them). A run where every test passes computes none of them.

A test whose location no worker sent (its worker crashed in a test upstream of it) is reported
under the place its node id names in the source the controller has (:func:`from_source`).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from pathlib import Path
from typing import Optional

import pytest

from pytest_depgraph.core.graph.paths import reachable
from pytest_depgraph.core.plan import Plan
from pytest_depgraph.hosts.xdist import send_event

#: where a test is reported: (relative file, 0-based line or None, domain), as ``item.location``
Location = tuple[str, Optional[int], str]

#: worker -> controller: the ``locations`` of the tests ``nodes`` (plan nodes), which the
#: controller may report skipped; sent before the report that may skip them
LOCATED_EVENT = "depgraph_located"


def at_start(
    plan: Plan, items: Sequence[pytest.Item], share: int = 0, shares: int = 1
) -> dict[int, Location]:
    """``item.location`` of the items a walk of ``plan`` may skip before any test runs (see
    the module's docstring) that are this worker's ``share`` of ``shares`` (the items whose
    index is ``share`` modulo ``shares``), by index: usually none. (A list with a None for
    each other item, with 2,000 tests, cost a worker 2.2-3.1 ms of CPU to send, 0.2-0.3 ms
    now, and the controller 1.6 ms to read, 0.02 ms now.)"""
    unsatisfied = [*plan.broken, *plan.external]
    reported = {*plan.broken, *plan.cleanups, *reachable(plan.graph, unsatisfied, "dependents")}
    return {n: items[n].location for n in sorted(reported)
            if n % shares == share and n < len(items)}


class OnFailure:
    """A walked worker's plugin: a test that did not pass sends the locations of the tests
    downstream of it, once each, before its report."""

    def __init__(self, plan: Plan, items: Sequence[pytest.Item], config: pytest.Config) -> None:
        self.plan = plan
        self.items = items
        self.config = config
        #: node id -> plan node, made at the first report that is not a pass
        self._node: dict[str, int] | None = None
        #: the nodes whose locations were sent
        self._sent: set[int] = set()

    @pytest.hookimpl(tryfirst=True)  # before xdist's own, which sends the report
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.outcome == "passed":
            return  # a pass (an XPASS too) skips nothing
        plan = self.plan
        if self._node is None:
            self._node = {nodeid: n for n, nodeid in enumerate(plan.nodeids[: plan.item_count])}
        node = self._node.get(report.nodeid)
        if node is None:
            return
        downstream = [
            n for n in reachable(plan.graph, (node,), "dependents")
            if n < plan.item_count and n not in self._sent
        ]
        if not downstream:
            return
        self._sent.update(downstream)
        send_event(self.config, LOCATED_EVENT, nodes=downstream,
                   locations=[self.items[n].location for n in downstream])


def install(config: pytest.Config, plan: Plan | None, items: Sequence[pytest.Item]) -> None:
    """Have a walked worker send the locations a test's failure may need (a plan with edges:
    without, no test is skipped for another's sake)."""
    if plan is not None and plan.graph.edge_count:
        config.pluginmanager.register(OnFailure(plan, items, config), "depgraph-locations")


def from_source(
    rootpath: Path, nodeid: str, read: dict[Path, dict[tuple[str, ...], int]] | None = None
) -> Location:
    """Where test ``nodeid`` is reported when no worker sent its location: its file, the first
    line of its function as pytest counts it (0-based, its first decorator's) read from that
    file under ``rootpath`` (None when it cannot be found: no such file here, a test defined
    elsewhere), and its names as pytest's domain (``TestC.test_x[1]``). ``read``: the files
    read so far (each is read once)."""
    path, *names = nodeid.split("::")
    file = rootpath / path
    read = {} if read is None else read
    if file not in read:
        read[file] = _first_lines(file)
    line = read[file].get(tuple(name.split("[")[0] for name in names))
    return (path, line, ".".join(names) or nodeid)


def _first_lines(path: Path) -> dict[tuple[str, ...], int]:
    """The first line (0-based) of every function and class of the module at ``path``, by
    its names from the module down; empty when it cannot be read."""
    try:
        tree = ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return {}
    found: dict[tuple[str, ...], int] = {}

    def walk(body: list[ast.stmt], prefix: tuple[str, ...]) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names = (*prefix, node.name)
                found[names] = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
                if isinstance(node, ast.ClassDef):
                    walk(node.body, names)

    walk(tree.body, ())
    return found
