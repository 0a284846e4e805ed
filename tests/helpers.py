"""Helpers shared by the test modules: small graphs and plans made by hand, a walk's oracle,
a dispatcher driven through its one API, and what a generated run reported (its order, its
skips, its hook calls, a clean output)."""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import networkx as nx
import pytest

from pytest_depgraph.core.graph.storage import Graph, Kind, Origin
from pytest_depgraph.core.plan import Plan
from pytest_depgraph.core.walk.dispatch import Dispatcher, WalkInputs

if TYPE_CHECKING:
    from typing import TypedDict

    from typing_extensions import Unpack

    class Placement(TypedDict, total=False):
        """:class:`Dispatcher`'s keyword options of where and how many tests run: what the
        tests' dispatchers that set the priorities and queueing themselves pass on."""

        group: Sequence[int] | None
        limit: int | None
        unsatisfied: Iterable[int]
        pinned: Sequence[Sequence[int]]

    class Options(Placement, total=False):
        """:class:`Dispatcher`'s keyword options that the tests' dispatchers pass on (not
        ``claims`` nor ``clock``, which :mod:`tests.test_resources` gives its own)."""

        priority: Sequence[float] | None
        weight: Sequence[float] | None
        hold: int
        durations: Mapping[int, float] | None


R, A = Kind.REQUIRES, Kind.AFTER
#: the origin of the edges made here
M = Origin("marker", "t.py:1")


def make(size: int, edges: list[tuple[int, int, Kind]]) -> Graph:
    """A graph of ``size`` nodes with the edges (dependent, dependency, kind)."""
    graph = Graph(size)
    for dependent, dependency, kind in edges:
        graph.add_edge(dependent, dependency, kind, M)
    return graph


def plan_of(
    nodeids: list[str], edges: list[tuple[int, int]], group: list[int] | None = None
) -> Plan:
    """A plan of the tests ``nodeids`` with REQUIRES edges (dependent, dependency), each test
    its own module's group unless ``group`` says otherwise."""
    graph = Graph(len(nodeids))
    for dependent, dependency in edges:
        graph.add_edge(dependent, dependency, Kind.REQUIRES, Origin("marker", "t.py:1"))
    modules: dict[str, int] = {}
    if group is None:
        group = [modules.setdefault(nodeid.split("::")[0], len(modules)) for nodeid in nodeids]
    return Plan(nodeids=nodeids, graph=graph, group=group,
                item_count=len(nodeids))


def oracle(graph: Graph, failing: set[int], unsatisfied: set[int]) -> set[int]:
    """The tests a walk skips: those with a REQUIRES dependency unsatisfied (failed, skipped,
    or unsatisfied from the start)."""
    g: nx.DiGraph[int] = nx.DiGraph()
    g.add_nodes_from(range(graph.size))
    requires: dict[int, list[int]] = {}
    for dependent, dependency, kind in graph.triples():
        g.add_edge(dependency, dependent)
        if kind is R:
            requires.setdefault(dependent, []).append(dependency)
    skipped: set[int] = set()
    bad = failing | unsatisfied
    for v in nx.topological_sort(g):
        if v not in unsatisfied and any(d in bad for d in requires.get(v, ())):
            skipped.add(v)
            bad.add(v)
    return skipped


def to_nx(graph: Graph, kinds: tuple[Kind, ...] = (R, A)) -> nx.DiGraph[int]:
    """``graph`` as a networkx graph of its edges of ``kinds``, dependent -> dependency."""
    g: nx.DiGraph[int] = nx.DiGraph()
    g.add_nodes_from(range(graph.size))
    g.add_edges_from((e.dependent, e.dependency) for e in graph.edges() if e.kind in kinds)
    return g


def dispatcher(
    graph: Graph, workers: Iterable[Hashable] = ("w",), **options: Unpack[Options]
) -> Dispatcher:
    """A :class:`Dispatcher` of ``graph`` with its ``options`` and ``workers`` added."""
    made = Dispatcher(WalkInputs(graph, **options))
    for worker in workers:
        made.add_worker(worker)
    return made


def run_serial(walk: Dispatcher, failing: Iterable[int] = ()) -> list[int]:
    """Complete what ``walk`` hands out, one test after the other in the order it gives them
    (``failing`` unsatisfied), until it hands out nothing; return the tests in that order."""
    bad = set(failing)
    ran = []
    while given := walk.assign():
        for worker, nodes in given:
            for node in nodes:
                ran.append(node)
                walk.complete(worker, node, node not in bad)
    assert walk.done
    return ran


#: records, for every test whose body runs, "nodeid|worker" into ran.log beside the suite
RAN_CONFTEST = """
import os
import pytest

LOG = os.path.join(os.path.dirname(__file__), "ran.log")

@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    with open(LOG, "a") as f:
        f.write(f"{item.nodeid}|{os.environ.get('PYTEST_XDIST_WORKER', '-')}\\n")
"""


def ran(folder: Path) -> dict[str, str]:
    """Test name -> the worker that ran its body (``-`` serially), of every test whose body
    ran in the suite in ``folder`` (:data:`RAN_CONFTEST`)."""
    log = folder / "ran.log"
    found: dict[str, str] = {}
    if log.exists():
        for line in log.read_text().splitlines():
            nodeid, worker = line.split("|")
            found[nodeid.rsplit("::", 1)[-1]] = worker
    return found


def closure(g: nx.DiGraph[int]) -> set[tuple[int, int]]:
    return {(u, v) for u in g for v in nx.descendants(g, u)}


def passed_order(result: pytest.RunResult) -> list[str]:
    """Node ids in the order pytest reported them (-v output), with their outcome."""
    order = []
    for line in result.outlines:
        match = re.match(r"^(\S+::\S+) (PASSED|FAILED|SKIPPED|ERROR|XFAIL|XPASS)", line)
        if match:
            order.append(match.group(1))
    return order


def names(result: pytest.RunResult) -> list[str]:
    """Test names (the part after the last ::) in run order."""
    return [nodeid.rsplit("::", 1)[-1] for nodeid in passed_order(result)]


class Run(Protocol):
    """The ``run`` fixture: pytest in-process on the generated suite, with these arguments."""

    def __call__(self, *args: str) -> pytest.RunResult: ...


def recorded(result: pytest.RunResult) -> pytest.HookRecorder:
    """The hook calls of an in-process run."""
    # pytester's in-process runs add the recorder to the result, untyped
    recorder: pytest.HookRecorder = result.reprec  # type: ignore[attr-defined]
    return recorder


def skip_reasons(result: pytest.RunResult) -> dict[str, str]:
    """Test name -> skip reason, from the reports of an in-process run."""
    reasons = {}
    for report in recorded(result).getreports("pytest_runtest_logreport"):
        if report.skipped and report.when == "setup" and not hasattr(report, "wasxfail"):
            assert isinstance(report.longrepr, tuple)  # a skip's (file, line, reason)
            reason = report.longrepr[2]
            reasons[report.nodeid.rsplit("::", 1)[-1]] = reason.removeprefix("Skipped: ")
    return reasons


def assert_clean(result: pytest.RunResult) -> None:
    """The run's output shows no traceback, no path into the package, no internal error."""
    text = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in text
    assert "pytest_depgraph/" not in text
    assert "INTERNALERROR" not in text
