"""What a run with shared resources shows: the summary's lines per resource and its lower bound,
the run report's waits; serially, nothing changes."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from typing import Any

import pytest

from pytest_depgraph.core.graph.storage import Graph
from pytest_depgraph.core.plan import READ, WRITE, Block, Plan, Resources
from pytest_depgraph.core.timeline import Span, WalkStats, build, resource_bound
from pytest_depgraph.core.walk.resource_books import ALONE, LOCK, SLOTS
from pytest_depgraph.core.walk.resource_cost import Record, Use, Wait
from pytest_depgraph.output.summary import resource_lines, walk_line

from .helpers import R, make


def plan_with(
    resources: Resources, edges: tuple[tuple[int, int], ...] = (), size: int = 6
) -> Plan:
    graph = make(size, [(a, b, R) for a, b in edges]) if edges else Graph(size)
    return Plan(nodeids=[f"t.py::t{i}" for i in range(size)], graph=graph,
                group=[0] * size, item_count=size, resources=resources)


def test_the_bound_adds_exclusive_time_to_every_term_and_names_the_bottleneck() -> None:
    """t0 -> t1 a chain of 3 s; t2 exclusive (2 s); t3 and t4 write db (capacity 1, 4 s each);
    t5 reads db (9 s: its turn adds to the writers' time) and weighs 2 on a bound of 2."""
    resources = Resources(capacity={"db": 1},
                          claims={3: {"db": WRITE}, 4: {"db": WRITE}, 5: {"db": READ}},
                          slots={5: 3}, exclusive=[2])
    seconds = [1.0, 2.0, 2.0, 4.0, 4.0, 9.0]
    bound = resource_bound(plan_with(resources, ((1, 0),)), seconds, 2)
    assert (bound.alone, bound.chain, bound.parallelism) == (2.0, 9.0, 2)
    assert bound.work == 1 + 2 + 4 + 4 + 2 * 9  # the exclusive test's seconds are apart
    assert bound.written == (("db", 8.0, 1),)
    assert bound.read == (("db", 9.0),)  # one reader: its own seconds
    assert bound.value == 2.0 + max(9.0, 29 / 2, 8.0 + 9.0)
    assert bound.bottleneck == "db"  # its writers, then its reader, outlast the work per worker
    busy = resource_bound(plan_with(resources, ((1, 0),)), [1, 2, 2, 20, 20, 1], 2)
    assert busy.bottleneck == "db" and busy.value == 2 + 40 + 1
    light = resource_bound(plan_with(resources, ((1, 0),)), [1, 2, 2, 1, 1, 1], 2)
    assert light.bottleneck is None  # the chain is longer than db's writers and reader
    # a block's writers are its tests; under a joined group (a --dist unit), the group's
    blocked = Resources(capacity={"net": 2},
                        blocks=[Block((0, 1), (("net", WRITE),), "class t.py::C")])
    plan = plan_with(blocked)
    assert resource_bound(plan, [1.0] * 6, 4).written == (("net", 2.0, 2),)
    plan.pinned = [[0, 1, 2]]
    assert resource_bound(plan, [1.0] * 6, 4).written == (("net", 3.0, 2),)


def test_the_summary_says_what_each_resource_cost_and_the_bound_in_words() -> None:
    resources = Resources(capacity={"db": 1, "net": 2},
                          claims={3: {"db": WRITE}, 4: {"db": WRITE}}, slots={5: 4},
                          exclusive=[2])
    plan = plan_with(resources)
    record = Record(
        uses=(Use("db", 1, 8.5, 8.0, 3.25, 2), Use("net", 2, 1.0, 0.0, 0.0, 0)),
        waits={4: (Wait(SLOTS, SLOTS, 1.0, 1.5),), 2: (Wait(ALONE, ALONE, 0.0, 0.25),)},
        alone=2.0, limit=2, clamped=((5, 4),),
    )
    assert resource_lines(record, plan) == [
        "resource db (capacity 1): held 8.50 s; 2 tests waited 3.25 s for it",
        "resource net (capacity 2): held 1.00 s; no test waited for it",
        "exclusive tests: 2.00 s with no other test running",
        "1 test waited 0.50 s for slots of --depgraph-parallelism (a heavy test's weight)",
        "1 test waited 0.25 s for every other test to finish (an exclusive test)",
        "t.py::t5 has weight 4: it counts as 2, the whole of --depgraph-parallelism",
    ]
    bound = resource_bound(plan, [1.0, 1.0, 2.0, 20.0, 1.0, 1.0], 2)
    stats = WalkStats(wall=24.15, critical_path=20.0, total=26.0, parallelism=2)
    assert walk_line(stats, 20.0, 26.0, bound) == (
        "parallel run: 24.15 s wall time; best possible 23.00 s, 2.00 s of exclusive tests "
        "plus the longest of the critical path outside them (20.00 s), the total test time "
        "per worker, weights counted (25.00 s / 2) and db's writers' time (21.00 s / 1): db "
        "bound the run; 5% above it"
    )
    # without resources, the line is as it always was
    assert walk_line(stats, 20.0, 26.0) == (
        "parallel run: 24.15 s wall time; best possible 20.00 s, the longer of the critical "
        "path (20.00 s) and the total test time per worker (26.00 s / 2); 21% above it"
    )
    # the critical path as the run report shows it: stored to 4 digits, 0.034996 s is 0.035
    # there and reads 0.04 s on the page; the line says the same
    short = WalkStats(wall=0.1, critical_path=0.034996, total=0.05, parallelism=2)
    assert "the critical path (0.04 s)" in walk_line(short, 0.034996, 0.05)


def test_the_timeline_marks_each_tests_waits_and_bounds_with_resources() -> None:
    resources = Resources(capacity={"db": 1}, claims={0: {"db": WRITE}, 1: {"db": WRITE}})
    plan = plan_with(resources, size=2)
    spans = {"t.py::t0": Span(100.0, 102.0, "gw0"), "t.py::t1": Span(102.5, 104.0, "gw1")}
    record = Record(uses=(Use("db", 1, 3.5, 3.5, 2.5, 1),),
                    waits={1: (Wait(LOCK, "db", 100.0, 102.5),)})
    run = build(plan, lambda n: "passed", spans, {}, lambda n: True, parallelism=2,
                resources=record)
    first, second = run.tests
    assert first.lock_waits == () and second.lock_waits == (Wait(LOCK, "db", 0.0, 2.5),)
    assert run.stats.bound is not None and run.stats.lower_bound == 3.5  # db's writers
    assert run.stats.resources is record


SUITE = """
import os
import time

import pytest

LOG = os.path.join(os.path.dirname(__file__), "order.log")


@pytest.fixture(autouse=True)
def log(request):
    with open(LOG, "a") as f:
        f.write(request.node.name + "\\n")
    time.sleep(0.05)


@pytest.mark.resource_lock("db")
def test_w1(): pass
@pytest.mark.resource_lock("db")
def test_w2(): pass
@pytest.mark.resource_lock("db", mode="read")
def test_r1(): pass
@pytest.mark.weight(5)
def test_heavy(): pass
@pytest.mark.exclusive
def test_alone(): pass
@pytest.mark.depends_on("test_w1")
def test_after_w1(): pass


@pytest.mark.resource_lock("net", scope="class")
class TestC:
    def test_c1(self): pass
    def test_c2(self): pass
"""

#: the suite without its shared resources
PLAIN = re.sub(r"@pytest\.mark\.(resource_lock|weight|exclusive)\b.*\n", "", SUITE)


def test_a_parallel_run_shows_each_resource_and_the_page_marks_the_waits(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_locks=SUITE)
    result = pytester.runpytest(
        "-p", "depgraph", "-p", "xdist", "-n", "2", "-p", "no:randomly",
        "--depgraph-report", "run.html",
    )
    result.assert_outcomes(passed=8)
    result.stdout.fnmatch_lines([
        "*= depgraph =*",
        "8 tests, 2 edges (1 explicit, 0 from fixtures, 1 keeping resource blocks whole)*",
        "resource db (capacity 1): held * s; *",
        "resource net (capacity 1): held * s; *",
        "exclusive tests: * s with no other test running",
        "test_locks.py::test_heavy has weight 5: it counts as 2, the whole of "
        "--depgraph-parallelism",
        "parallel run: * wall time; best possible * s, * s of exclusive tests plus the longest "
        "of the critical path outside them (* s), the total test time per worker, weights "
        "counted (* s / 2), db's writers' time (* s / 1) plus its readers' turn (* s) and net's "
        "writers' time (* s / 1)*",
    ])
    page = (pytester.path / "run.html").read_text(encoding="utf-8")
    data = _page_data(page)
    assert [row[0] for row in data["resources"]] == ["db", "net"]
    assert data["stats"]["boundWords"] == (
        "lower bound = exclusive + max(critical path, total / 2, db writers / 1 + db readers, "
        "net writers / 1)"
    )
    waits = [wait for row in data["tests"] for wait in row[7]]
    assert waits, "something waited: two writers, a heavy and an exclusive test on two workers"
    assert all(w[0] in (LOCK, SLOTS, ALONE) and w[2] <= w[3] for w in waits)
    if shutil.which("chromium"):
        done = subprocess.run(
            ["chromium", "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
             "--enable-logging=stderr", "--v=0", "--dump-dom",
             (pytester.path / "run.html").as_uri()],
            capture_output=True, text=True, timeout=120,
        )
        assert [line for line in done.stderr.splitlines() if ":CONSOLE" in line] == []
        assert 'data-ready="1"' in done.stdout and '<table id="resources"><tbody>' in done.stdout
        assert len(re.findall(r'<rect class="wait" data-n="\d+"', done.stdout)) == len(waits)


def test_serially_resources_change_nothing(pytester: pytest.Pytester) -> None:
    """The same suite, with and without the markers, in one process: the same order, the same
    outcomes, and a summary without a word of resources."""
    pytester.makepyfile(test_locks=PLAIN)
    plain = pytester.runpytest("-p", "depgraph", "-p", "no:randomly", "-p", "no:xdist")
    plain.assert_outcomes(passed=8)
    order = (pytester.path / "order.log").read_text()
    (pytester.path / "order.log").unlink()
    pytester.makepyfile(test_locks=SUITE)
    claimed = pytester.runpytest("-p", "depgraph", "-p", "no:randomly", "-p", "no:xdist")
    claimed.assert_outcomes(passed=8)
    assert (pytester.path / "order.log").read_text() == order
    summary = claimed.stdout.str().split("= depgraph =", 1)[1]
    assert "resource" not in summary and "parallel run" not in summary
    # the critical path follows the durations each run measured (tests of 0.05 s: a loaded
    # machine's stall of one of them changed it in CI): each summary names one, the rest is
    # the same
    plain_summary = plain.stdout.str().split("= depgraph =", 1)[1]
    assert "critical path: " in summary and "critical path: " in plain_summary
    assert _words(_without_critical_path(summary)) == _words(
        _without_critical_path(plain_summary)
    )


def _without_critical_path(summary: str) -> str:
    """``summary`` without its critical path (its line, and the tests listed under it)."""
    return re.sub(r"critical path: .*\n(  .*\n)*", "", summary)


def _words(text: str) -> str:
    """``text`` without its timings."""
    return re.sub(r"\d+\.\d+ ?s", "S", text)


def _page_data(page: str) -> dict[str, Any]:
    match = re.search(
        r'<script type="application/json" id="depgraph-data">(.*?)</script>', page, re.S
    )
    assert match is not None
    data: dict[str, Any] = json.loads(match.group(1))
    return data


def test_the_page_data_of_a_run_without_resources_has_none() -> None:
    from pytest_depgraph.output.html_page import page_data

    plan = plan_with(Resources(), size=1)
    run = build(plan, lambda n: "passed", {"t.py::t0": Span(0.0, 1.0)}, {}, lambda n: True)
    data = page_data(run, "t", "pytest")
    assert data["resources"] == [] and data["stats"]["boundWords"] == ""
    assert data["tests"][0][7] == []
