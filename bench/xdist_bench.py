"""Benchmark of the xdist scheduler: walk time against its bound, overhead against --dist load.

(a) three DAGs of sleeping tests with known durations (3.7-5.9 s of work each):
    critical-path-heavy (a 12-test chain beside 24 short tests), wide (36 independent tests
    plus 3 short chains) and mixed (a random 40-test DAG). For each at -n 2 and -n 4, the walk's
    wall time (first test start to last test end, recorded by the tests) against
    ``max(critical path, total / N)``, for: this plugin with the previous run's durations in
    the cache (warm); with unit weights (cold, empty cache; not with --quick); with a
    collection-order walker (priorities switched off: what critical-path priority buys); and
    xdist's ``--dist load`` without the plugin, which ignores the dependencies -- its
    ordering violations (a test started before one of its dependencies ended) are counted,
    and its walk may beat the bound since the bound assumes the dependencies are kept;
(b) 2,000 no-op tests without edges on -n 4: process wall time of this plugin (handed to xdist's
    LoadScheduling), of the walker forced by ``--depgraph-parallelism 4``, and of
    ``-p no:depgraph --dist load``; and a 2,000-test random DAG of no-op tests (each test on 3
    random earlier ones, shuffled over 40 modules) on -n 4 against the same suite without its
    markers on ``-p no:depgraph --dist load`` (the target's reference), and with its markers,
    inert, on ``-p no:depgraph --dist load`` (what pytest alone spends on the marks). Median
    of ``--repeat`` (5) interleaved runs: wall time, CPU of every process (``/usr/bin/time``:
    the controller and its workers), the controller's own CPU (``time.process_time()`` at its
    ``pytest_unconfigure``) and the ``runtests`` commands it sent;
(c) ``--stress``: the DAG suite 20 times on -n 4, counting ordering violations;
(d) a suite without edges and skewed durations (60 short sleeping tests, then 4 long ones
    defined last) on -n 4: the makespan (first test start to last test end) against
    ``max(longest test, total / 4)`` for xdist's ``--dist load`` and ``--dist worksteal``
    (no plugin) and this plugin on an empty cache with a durations file (``--depgraph-durations``,
    written by a first run's ``--depgraph-store-durations``); median of ``--repeat`` (5)
    interleaved runs. The sleeping DAGs of (a) get a "file" row too: an empty cache and the
    durations file, which must walk as well as the warm cache does.

Run: ``python bench/xdist_bench.py [--quick] [--stress] [--repeat N] [--only ROW ...] [--code DIR
...] [--phases]`` (prints Markdown tables; ROW: ``sleeping``, ``flat``, ``dag``, ``skew``; ``--code
DIR``: the no-op rows run the plugin's modes of that checkout too, its package first on the path,
interleaved with this one's: before and after from one run). The no-op rows also count the
``runtests`` commands the controller sent (xdist's ``--dist load`` sends a few large ones); with
``--phases`` they show, per mode, the CPU of the controller and of a worker by phase (median):
the start (interpreter and imports), the controller's start-up and its run loop by the kind of
worker event it handles (collections, completions, reports) beside execnet's thread that
receives them, a worker's collection, plan and tests, and the session's end.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PYTHON = sys.executable
CONFTEST = '''
import os, time
import pytest

LOG = os.path.join(os.path.dirname(__file__), "times.log")

if os.environ.get("BENCH_COLLECTION_ORDER"):
    # the walk's priorities all equal: ready tests go in collection order (the scheduler
    # looks the function up in the module each time it starts a walk)
    from pytest_depgraph.core.walk import inputs

    inputs.priorities = lambda graph, weight: [0.0] * graph.size

@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    start = time.time()
    try:
        return (yield)
    finally:
        with open(LOG, "a") as f:
            f.write(f"{item.nodeid}|{start}|{time.time()}\\n")
'''


# Written by the controller only (xdist workers have ``workerinput``): its CPU for the run,
# and how many ``runtests`` commands it sent (whatever the scheduler: counted on xdist's side).
CONTROLLER_CPU = '''
import os, time

SENT = [0]


def pytest_configure(config):
    if not os.environ.get("BENCH_CONTROLLER_CPU") or hasattr(config, "workerinput"):
        return
    try:
        from xdist.workermanage import WorkerController
    except ImportError:
        return
    send = WorkerController.send_runtest_some

    def counted(self, indices):
        SENT[0] += 1
        return send(self, indices)

    WorkerController.send_runtest_some = counted


def pytest_unconfigure(config):
    out = os.environ.get("BENCH_CONTROLLER_CPU")
    if out and not hasattr(config, "workerinput"):
        with open(out, "w") as f:
            f.write(f"{time.process_time()} {SENT[0]}")
'''
# Written by every process with ``--phases`` (``BENCH_PHASES`` names the file; one JSON line a
# process): its CPU by phase. On the controller the run loop's main thread is split by the kind
# of worker event xdist's session hands on (thread CPU), the rest of the loop is execnet's
# receiver thread reading the events; on a worker the collection is split at the end of the
# other plugins' ``pytest_collection_modifyitems`` (the plan is built after it, in the
# outermost wrapper) and at ``pytest_collection_finish`` (the plan and the collection sent).
PHASES = '''
import json as _json
import os
import time as _time

import pytest as _pytest

_MARKS = {}
_SPENT = {}


def _timed(cls, name, key):
    original = getattr(cls, name)

    def timed(*args, **kwargs):
        start = _time.thread_time()
        try:
            return original(*args, **kwargs)
        finally:
            _SPENT[key] = _SPENT.get(key, 0.0) + _time.thread_time() - start

    setattr(cls, name, timed)


@_pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    if not os.environ.get("BENCH_PHASES"):
        return
    _MARKS["configure"] = _time.process_time()
    if hasattr(config, "workerinput"):
        return
    from xdist import dsession

    for name, key in (("worker_testreport", "reports"), ("worker_logstart", "reports"),
                      ("worker_logfinish", "reports"),
                      ("worker_runtest_protocol_complete", "completions"),
                      ("worker_collectionfinish", "collections")):
        _timed(dsession.DSession, name, key)


def _mark(name):
    if "configure" in _MARKS:
        _MARKS[name] = _time.process_time()
        _MARKS[name + " (thread)"] = _time.thread_time()


@_pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems():
    result = yield
    _mark("modifyitems")
    return result


@_pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_collection_finish():
    _mark("plan built")
    result = yield
    _mark("collection sent")
    return result


@_pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtestloop():
    _mark("loop start")
    result = yield
    _mark("loop end")
    return result


@_pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    out = os.environ.get("BENCH_PHASES")
    if not out or "configure" not in _MARKS:
        return
    _mark("end")
    with open(out, "a") as f:
        f.write(_json.dumps({"worker": hasattr(config, "workerinput"), "marks": _MARKS,
                             "spent": _SPENT}) + "\\n")
'''
#: byte code written and read, whatever the machine sets: with PYTHONDONTWRITEBYTECODE=1, a
#: plugin module edited since its last cached byte code is compiled again by every process
#: (the controller and each worker), a cost no user pays twice
BYTECODE = {"PYTHONDONTWRITEBYTECODE": "0"}
TIME_BIN = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None


@dataclass
class Sample:
    """One pytest process: what it cost, and whether it went well."""

    wall: float
    cpu: float  # user + system of the process and its workers (nan without /usr/bin/time)
    controller_cpu: float  # the controller's own CPU (nan without the conftest above)
    rc: int
    output: str
    #: ``runtests`` commands the controller sent to its workers (nan without the conftest)
    messages: float = float("nan")
    #: with ``--phases``: each process's CPU by phase (the controller's first)
    phases: list[dict[str, float]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.rc == 0


#: with ``--phases``: every no-op run records its processes' CPU by phase
RECORD_PHASES = [False]


def timed_run(root: Path, *args: str, env: dict[str, str] | None = None,
              timeout: float = 600) -> Sample:
    """One pytest run in root; a failure or a timeout is a Sample with rc != 0, not an error."""
    fd, cpu_file = tempfile.mkstemp(prefix="ctl-cpu-")
    os.close(fd)
    fd, phases_file = tempfile.mkstemp(prefix="phases-")
    os.close(fd)
    if RECORD_PHASES[0]:
        env = {**(env or {}), "BENCH_PHASES": phases_file}
    fd, time_file = tempfile.mkstemp(prefix="time-")
    os.close(fd)
    full_env = {**os.environ, **BYTECODE, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
                "BENCH_CONTROLLER_CPU": cpu_file, **(env or {})}
    full_env.pop("PYTEST_ADDOPTS", None)
    cmd = [PYTHON, "-m", "pytest", "-q", "-p", "xdist", *args]
    if TIME_BIN:
        cmd = [TIME_BIN, "-f", "%U %S", "-o", time_file, *cmd]
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=root, env=full_env, capture_output=True, text=True,
                              timeout=timeout)
        rc, output = proc.returncode, proc.stdout[-3000:] + proc.stderr[-2000:]
    except subprocess.TimeoutExpired:
        rc, output = -1, f"timed out after {timeout:.0f} s"
    wall = time.perf_counter() - start
    try:
        fields = Path(time_file).read_text().strip().splitlines()[-1].split()
        cpu = float(fields[0]) + float(fields[1])
    except (ValueError, IndexError):
        cpu = float("nan")
    try:
        controller, messages = map(float, Path(cpu_file).read_text().split())
    except ValueError:
        controller = messages = float("nan")
    phases = [_phases(json.loads(line))
              for line in Path(phases_file).read_text().splitlines() if line.strip()]
    phases.sort(key=lambda found: found.get("worker", 0.0))  # the controller first
    os.unlink(cpu_file)
    os.unlink(time_file)
    os.unlink(phases_file)
    return Sample(wall, cpu, controller, rc, output, messages, phases)


def _phases(record: dict[str, Any]) -> dict[str, float]:
    """One process's CPU seconds by phase, from what :data:`PHASES` wrote."""
    marks: dict[str, float] = record["marks"]
    spent: dict[str, float] = record["spent"]
    loop_start = marks.get("loop start", marks["end"])
    loop_end = marks.get("loop end", marks["end"])
    found = {"worker": float(bool(record["worker"])),
             "start (interpreter, imports)": marks["configure"],
             "session end": marks["end"] - loop_end}
    if record["worker"]:
        found.update({
            "collection": marks.get("modifyitems", loop_start) - marks["configure"],
            "the plan built": marks.get("plan built", loop_start) - marks.get("modifyitems",
                                                                              loop_start),
            "plan and collection sent": marks.get("collection sent", loop_start)
            - marks.get("plan built", loop_start),
            "tests (run loop)": loop_end - loop_start,
        })
        return found
    main = marks.get("loop end (thread)", 0.0) - marks.get("loop start (thread)", 0.0)
    events = sum(spent.values())
    found.update({
        "start-up to the run loop (workers started)": loop_start - marks["configure"],
        "loop: collections (plans agreed, walk started)": spent.get("collections", 0.0),
        "loop: completions (dispatch, messages)": spent.get("completions", 0.0),
        "loop: reports (logstart, testreport, logfinish)": spent.get("reports", 0.0),
        "loop: the rest of the main thread": main - events,
        "loop: other threads (receiving events)": (loop_end - loop_start) - main,
    })
    return found


def print_phases(samples: dict[str, list[Sample]]) -> None:
    """Per mode, the median CPU milliseconds of each phase of the controller and of a worker
    (``--phases``)."""
    for worker, who in ((False, "controller"), (True, "a worker (median of all workers)")):
        table: dict[str, dict[str, float]] = {}
        for mode, runs in samples.items():
            records = [p for r in runs if r.ok for p in r.phases if bool(p["worker"]) is worker]
            names = [k for k in (records[0] if records else {}) if k != "worker"]
            table[mode] = {k: med([p[k] for p in records]) for k in names}
        names = list(dict.fromkeys(k for found in table.values() for k in found))
        print(f"\nCPU by phase, {who} (ms, median):\n")
        print("| phase | " + " | ".join(table) + " |")
        print("|---|" + "---:|" * len(table))
        for name in [*names, "total"]:
            cells = [sum(found.values()) if name == "total" else found.get(name, float("nan"))
                     for found in table.values()]
            print(f"| {name} | " + " | ".join(f"{c * 1000:.0f}" for c in cells) + " |")


PER_MODULE = 10


@dataclass
class Shape:
    """A DAG of sleeping tests: durations, dependency lists, and the collection order."""

    name: str
    durations: list[float]
    deps: list[list[int]]
    order: list[int]  # test indices in collection order

    def module_of(self) -> dict[int, int]:
        return {i: pos // PER_MODULE for pos, i in enumerate(self.order)}

    @property
    def total(self) -> float:
        return sum(self.durations)

    @property
    def edges(self) -> int:
        return sum(map(len, self.deps))


def make_dag(count: int, seed: int, low: float, high: float) -> tuple[list[float], list[list[int]]]:
    """Durations and dependency lists of a random layered DAG (each test on 0-2 earlier ones)."""
    rng = random.Random(seed)
    durations = [round(rng.uniform(low, high), 3) for _ in range(count)]
    deps = [
        sorted(set(rng.sample(range(i), min(i, rng.choice((0, 1, 1, 2))))))
        for i in range(count)
    ]
    return durations, deps


def shuffled(count: int, rng: random.Random) -> list[int]:
    """A random collection order: where the long chain sits is not up to the author."""
    order = list(range(count))
    rng.shuffle(order)
    return order


def chain_heavy_shape(seed: int = 3) -> Shape:
    """A 12-test chain of 0.2 s (2.4 s: the bound at -n 2 and -n 4) beside 24 short tests."""
    rng = random.Random(seed)
    durations = [0.2] * 12 + [round(rng.uniform(0.03, 0.08), 3) for _ in range(24)]
    deps = [[i - 1] if 0 < i < 12 else [] for i in range(len(durations))]
    return Shape("critical-path-heavy", durations, deps, shuffled(len(durations), rng))


def wide_shape(seed: int = 5) -> Shape:
    """36 independent tests of 0.05-0.12 s plus 3 chains of 3 x 0.15 s: total / N dominates."""
    rng = random.Random(seed)
    durations = [0.15] * 9 + [round(rng.uniform(0.05, 0.12), 3) for _ in range(36)]
    deps = [[i - 1] if i < 9 and i % 3 else [] for i in range(len(durations))]
    return Shape("wide", durations, deps, shuffled(len(durations), rng))


def mixed_shape() -> Shape:
    """The random DAG of earlier RESULTS.md tables (seed 7), in its original collection order."""
    durations, deps = make_dag(40, seed=7, low=0.05, high=0.3)
    return Shape("mixed", durations, deps, list(range(len(durations))))


def write_dag_suite(root: Path, shape: Shape) -> None:
    (root / "conftest.py").write_text(CONFTEST)
    module = shape.module_of()
    for start in range(0, len(shape.order), PER_MODULE):
        lines = ["import time", "import pytest", ""]
        for i in shape.order[start:start + PER_MODULE]:
            for d in shape.deps[i]:
                lines.append(f"@pytest.mark.depends_on('test_m{module[d]}.py::test_{d}')")
            lines += [f"def test_{i}():", f"    time.sleep({shape.durations[i]})", ""]
        (root / f"test_m{start // PER_MODULE}.py").write_text("\n".join(lines))


def critical_path(durations: list[float], deps: list[list[int]]) -> float:
    finish = [0.0] * len(durations)
    for i, d in enumerate(durations):
        finish[i] = d + max((finish[j] for j in deps[i]), default=0.0)
    return max(finish)


def pytest_run(root: Path, *args: str, env: dict[str, str] | None = None) -> float:
    full_env = {**os.environ, **BYTECODE, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", **(env or {})}
    start = time.perf_counter()
    proc = subprocess.run(
        [PYTHON, "-m", "pytest", "-q", "-p", "xdist", *args],
        cwd=root, env=full_env, capture_output=True, text=True, timeout=600,
    )
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"pytest {' '.join(args)} failed in {root}:\n{proc.stdout[-3000:]}")
    return wall


def read_times(root: Path) -> dict[int, tuple[float, float]]:
    found = {}
    for line in (root / "times.log").read_text().splitlines():
        nodeid, start, end = line.split("|")
        found[int(nodeid.rsplit("_", 1)[-1])] = (float(start), float(end))
    return found


def violations(found: dict[int, tuple[float, float]], deps: list[list[int]]) -> int:
    return sum(
        1 for i, ds in enumerate(deps) for d in ds if i in found and found[i][0] < found[d][1]
    )


#: the durations file the fill run of a suite writes beside it
DURATIONS_FILE = "durations.json"
# Rows of the DAG tables: how each scheduler is invoked. "warm" reads the durations the fill
# run left in the cache, "file" those it wrote to the durations file; the others run without
# the cache provider.
MODES = {
    "warm": ("-p", "depgraph"),
    "file": ("-p", "depgraph", "-p", "no:cacheprovider", "--depgraph-durations", DURATIONS_FILE),
    "cold": ("-p", "depgraph", "-p", "no:cacheprovider"),
    "collection order": ("-p", "depgraph", "-p", "no:cacheprovider"),
    "--dist load": ("-p", "no:depgraph", "-p", "no:cacheprovider", "--dist", "load"),
}


def bench_dag(root: Path, workers: int, mode: str, shape: Shape) -> dict[str, float]:
    """One run of the suite in root; the walk and violations come from the tests' own log."""
    (root / "times.log").unlink(missing_ok=True)
    env = {"BENCH_COLLECTION_ORDER": "1"} if mode == "collection order" else {}
    wall = pytest_run(root, *MODES[mode], "-n", str(workers), env=env)
    found = read_times(root)
    walk = max(e for _, e in found.values()) - min(s for s, _ in found.values())
    bound = max(critical_path(shape.durations, shape.deps), shape.total / workers)
    return {"walk": walk, "bound": bound, "process": wall,
            "violations": violations(found, shape.deps)}


def bench_shape(shape: Shape, modes: list[str]) -> list[tuple[int, str, dict[str, float]]]:
    """Every mode at -n 2 and -n 4 on one generated suite; the cache is filled once, at -n 4."""
    root = Path(tempfile.mkdtemp(prefix="dagbench"))
    try:
        write_dag_suite(root, shape)
        if "warm" in modes or "file" in modes:
            pytest_run(root, "-p", "depgraph", "-n", "4",
                       "--depgraph-store-durations", DURATIONS_FILE)
        return [(workers, mode, bench_dag(root, workers, mode, shape))
                for workers in (2, 4) for mode in modes]
    finally:
        shutil.rmtree(root, ignore_errors=True)


def print_dag_tables(shapes: list[Shape], modes: list[str]) -> None:
    for shape in shapes:
        print(f"* **{shape.name}**: {len(shape.durations)} tests, {shape.edges} edges, total "
              f"{shape.total:.2f} s, critical path "
              f"{critical_path(shape.durations, shape.deps):.2f} s")
    print("\n| shape | -n | scheduler | walk (s) | bound (s) | walk / bound | process (s) "
          "| violations |")
    print("|---|---|---|---|---|---|---|---|")
    for shape in shapes:
        for workers, mode, r in bench_shape(shape, modes):
            print(f"| {shape.name} | {workers} | {mode} | {r['walk']:.2f} | {r['bound']:.2f} | "
                  f"{r['walk'] / r['bound']:.3f} | {r['process']:.2f} | "
                  f"{r['violations']:.0f} |", flush=True)


FLAT_MODES = {
    "--dist load (no plugin)": ("-p", "no:depgraph", "-n", "4", "--dist", "load"),
    "depgraph, no edges": ("-p", "depgraph", "-n", "4"),
    "depgraph walker forced": ("-p", "depgraph", "-n", "4", "--depgraph-parallelism", "4"),
}
DAG_MODES = {
    "--dist load, no markers (no plugin)": ("-p", "no:depgraph", "-n", "4", "--dist", "load"),
    # the same suite with its markers, which pytest then only stores: what pytest itself
    # spends on 2,000 marked test functions, apart from the plugin
    "--dist load, inert markers (no plugin)": ("-p", "no:depgraph", "-o", "markers=depends_on",
                                               "-n", "4", "--dist", "load"),
    "depgraph, random DAG": ("-p", "depgraph", "-n", "4"),
}


def write_conftest(root: Path) -> None:
    """The no-op suites' conftest: the controller's CPU and messages, and (its own plugin
    module, whose hooks have the same names) the processes' CPU by phase."""
    (root / "conftest.py").write_text(CONTROLLER_CPU + 'pytest_plugins = ["bench_phases"]\n')
    (root / "bench_phases.py").write_text(PHASES)


def write_flat_suite(root: Path, count: int) -> None:
    write_conftest(root)
    (root / "test_flat.py").write_text(
        "import pytest\n\n"
        f"@pytest.mark.parametrize('n', range({count}))\ndef test_noop(n):\n    pass\n"
    )


def write_random_dag(root: Path, count: int, markers: bool, seed: int = 2) -> int:
    """No-op tests, each on min(i, 3) random earlier ones, shuffled over count / 50 modules
    (about half of the edges point forward); without ``markers`` the same tests bare."""
    rng = random.Random(seed)
    deps = [rng.sample(range(i), min(i, 3)) for i in range(count)]
    order = shuffled(count, rng)
    per_module = 50
    module = {i: pos // per_module for pos, i in enumerate(order)}
    write_conftest(root)
    for start in range(0, count, per_module):
        lines = ["import pytest", ""]
        for i in order[start:start + per_module]:
            if markers and deps[i]:
                targets = ", ".join(f"'test_d{module[d]}.py::test_{d}'" for d in deps[i])
                lines.append(f"@pytest.mark.depends_on({targets})")
            lines += [f"def test_{i}():", "    pass", ""]
        (root / f"test_d{start // per_module}.py").write_text("\n".join(lines))
    return sum(map(len, deps))


def interleaved(roots: dict[str, tuple[Path, tuple[str, ...]]], repeats: int,
                timeout: float = 600,
                envs: dict[str, dict[str, str]] | None = None) -> dict[str, list[Sample]]:
    """Each mode ``repeats`` times, interleaved (the machine's load drifts); a warm-up first.
    ``envs``: the environment some modes add (another checkout's package, ``--code``)."""
    envs = envs or {}
    warmed: set[tuple[Path, tuple[str, ...], str]] = set()
    for mode, (root, args) in roots.items():
        env = envs.get(mode, {})
        key = (root, args, json.dumps(env, sort_keys=True))
        if key not in warmed:  # byte code
            warmed.add(key)
            timed_run(root, *args, "-p", "no:cacheprovider", env=env, timeout=timeout)
    samples: dict[str, list[Sample]] = {mode: [] for mode in roots}
    for rep in range(repeats):
        for mode, (root, args) in roots.items():
            samples[mode].append(timed_run(root, *args, "-p", "no:cacheprovider",
                                           env=envs.get(mode), timeout=timeout))
            print(f"# xdist {mode} rep {rep + 1}: {samples[mode][-1].wall:.2f} s",
                  file=sys.stderr, flush=True)
    return samples


def with_code(modes: dict[str, tuple[Path, tuple[str, ...]]], code: Sequence[Path],
              ) -> tuple[dict[str, tuple[Path, tuple[str, ...]]], dict[str, dict[str, str]]]:
    """``modes``, each mode of this plugin once more for every other checkout of ``code`` (a
    folder holding its ``pytest_depgraph/``, first on the path of the controller and its
    workers), right after it: before and after in one interleaved run."""
    out: dict[str, tuple[Path, tuple[str, ...]]] = {}
    envs: dict[str, dict[str, str]] = {}
    for mode, (root, args) in modes.items():
        for folder in code if "depgraph" in args else ():
            other = f"{mode} [{folder}]"
            out[other] = (root, args)
            envs[other] = {"PYTHONPATH": str(folder.resolve())}
        out[mode] = (root, args)
    return out, envs


def bench_flat(count: int, repeats: int, code: Sequence[Path] = ()) -> dict[str, list[Sample]]:
    """2,000 no-op tests without edges on -n 4: the plugin, its walker forced, --dist load
    (and the plugin's modes from each checkout of ``code``)."""
    root = Path(tempfile.mkdtemp(prefix="flatbench"))
    try:
        write_flat_suite(root, count)
        modes, envs = with_code({mode: (root, args) for mode, args in FLAT_MODES.items()}, code)
        return interleaved(modes, repeats, envs=envs)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def bench_random_dag(count: int, repeats: int, code: Sequence[Path] = (),
                     ) -> tuple[int, dict[str, list[Sample]]]:
    """A random DAG of no-op tests on -n 4 against the same tests without markers, and with
    their markers inert (no plugin) (and the plugin's mode from each checkout of ``code``)."""
    base = Path(tempfile.mkdtemp(prefix="dag2kbench"))
    try:
        (base / "bare").mkdir()
        (base / "dag").mkdir()
        write_random_dag(base / "bare", count, markers=False)
        edges = write_random_dag(base / "dag", count, markers=True)
        roots = {mode: (base / ("bare" if "no markers" in mode else "dag"), args)
                 for mode, args in DAG_MODES.items()}
        modes, envs = with_code(roots, code)
        return edges, interleaved(modes, repeats, envs=envs)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def med(values: list[float]) -> float:
    values = [v for v in values if not math.isnan(v)]
    return statistics.median(values) if values else float("nan")


def print_samples(samples: dict[str, list[Sample]], count: int, reference: str) -> None:
    """wall / CPU / controller CPU medians and ratios against the reference mode."""
    print("| mode | wall (s) | ratio | CPU, all processes (s) | ratio | controller CPU (s) "
          "| per test (µs) | runtests messages | runs ok |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    ref = [r for r in samples[reference] if r.ok]
    ref_wall, ref_cpu = med([r.wall for r in ref]), med([r.cpu for r in ref])
    for mode, runs in samples.items():
        good = [r for r in runs if r.ok]
        if not good:
            print(f"| {mode} | failed (exit {runs[-1].rc}) | | | | | | | 0/{len(runs)} |")
            continue
        wall, cpu = med([r.wall for r in good]), med([r.cpu for r in good])
        ctl = med([r.controller_cpu for r in good])
        sent = med([r.messages for r in good])
        print(f"| {mode} | {wall:.2f} | {wall / ref_wall:.3f} | {cpu:.2f} | {cpu / ref_cpu:.3f} "
              f"| {ctl:.2f} | {ctl / count * 1e6:.0f} | {sent:.0f} | {len(good)}/{len(runs)} |")


def sleeping_ratios(repeats: int) -> dict[str, list[float]]:
    """walk / bound of each sleeping DAG on -n 4 with warm priorities, ``repeats`` runs (a
    failed run counts as nan)."""
    found: dict[str, list[float]] = {}
    for shape in (chain_heavy_shape(), wide_shape(), mixed_shape()):
        root = Path(tempfile.mkdtemp(prefix="dagbench"))
        found[shape.name] = []
        try:
            write_dag_suite(root, shape)
            timed_run(root, "-p", "depgraph", "-n", "4")  # fills the durations cache
            for _ in range(repeats):
                try:
                    r = bench_dag(root, 4, "warm", shape)
                    found[shape.name].append(r["walk"] / r["bound"])
                except (SystemExit, OSError, ValueError, subprocess.SubprocessError) as error:
                    print(f"# {shape.name}: {error}", file=sys.stderr)
                    found[shape.name].append(float("nan"))
        finally:
            shutil.rmtree(root, ignore_errors=True)
    return found


def stress(runs: int) -> int:
    """Ordering violations over ``runs`` cold runs of a small 40-test DAG on -n 4."""
    durations, deps = make_dag(40, seed=11, low=0.005, high=0.03)
    shape = Shape("stress", durations, deps, list(range(len(durations))))
    root = Path(tempfile.mkdtemp(prefix="dagstress"))
    try:
        write_dag_suite(root, shape)
        return sum(int(bench_dag(root, 4, "cold", shape)["violations"]) for _ in range(runs))
    finally:
        shutil.rmtree(root, ignore_errors=True)


def skew_shape(seed: int = 13) -> Shape:
    """60 short tests of 0.05-0.15 s, then 4 long ones of 1.5-2.5 s, defined last, no edges:
    the shape where a scheduler that ignores durations leaves one worker alone at the end."""
    rng = random.Random(seed)
    durations = [round(rng.uniform(0.05, 0.15), 3) for _ in range(60)]
    durations += [round(rng.uniform(1.5, 2.5), 2) for _ in range(4)]
    return Shape("skewed, no edges", durations, [[] for _ in durations],
                 list(range(len(durations))))


SKEW_MODES = {
    "--dist load (no plugin)": ("-p", "no:depgraph", "-p", "no:cacheprovider",
                                "--dist", "load"),
    "--dist worksteal (no plugin)": ("-p", "no:depgraph", "-p", "no:cacheprovider",
                                     "--dist", "worksteal"),
    "depgraph, durations file, empty cache": MODES["file"],
}


def bench_skew(repeats: int) -> None:
    """The skewed suite on -n 4: each mode's makespan against its bound, median of
    ``repeats`` interleaved runs."""
    shape = skew_shape()
    bound = max(max(shape.durations), shape.total / 4)
    root = Path(tempfile.mkdtemp(prefix="skewbench"))
    found: dict[str, list[float]] = {mode: [] for mode in SKEW_MODES}
    try:
        write_dag_suite(root, shape)
        pytest_run(root, "-p", "depgraph", "-p", "no:cacheprovider", "-n", "4",
                   "--depgraph-store-durations", DURATIONS_FILE)
        for _ in range(repeats):
            for mode, args in SKEW_MODES.items():
                (root / "times.log").unlink(missing_ok=True)
                pytest_run(root, *args, "-n", "4")
                times = read_times(root).values()
                found[mode].append(max(e for _, e in times) - min(s for s, _ in times))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"\n* **{shape.name}**: {len(shape.durations)} tests (4 long ones last), total "
          f"{shape.total:.2f} s, longest {max(shape.durations):.2f} s; bound on -n 4 "
          f"max(longest, total / 4) = {bound:.2f} s; median of {repeats} interleaved runs\n")
    print("| scheduler | makespan (s) | makespan / bound | runs (s) |")
    print("|---|---|---|---|")
    for mode, walks in found.items():
        walk = med(walks)
        runs = ", ".join(f"{w:.2f}" for w in walks)
        print(f"| {mode} | {walk:.2f} | {walk / bound:.3f} | {runs} |", flush=True)


#: the rows ``--only`` selects
ROWS = ["sleeping", "flat", "dag", "skew"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="no cold rows, 500 no-ops, one run each")
    parser.add_argument("--stress", action="store_true", help="20 runs of a DAG on -n 4")
    parser.add_argument("--repeat", type=int, default=5,
                        help="runs per mode of the no-op suites (default 5)")
    parser.add_argument("--code", action="append", type=Path, default=[],
                        help="another checkout's folder holding its pytest_depgraph/ "
                             "(repeatable): the no-op rows run its plugin's modes too, "
                             "interleaved with this checkout's (before and after in one run)")
    parser.add_argument("--only", action="append", choices=ROWS,
                        help="run only these rows (repeatable): sleeping DAGs, no-op tests "
                             "without edges, no-op random DAG; default all")
    parser.add_argument("--phases", action="store_true",
                        help="the no-op rows also show the CPU of the controller and of a "
                             "worker by phase")
    options = parser.parse_args()
    rows = options.only or ROWS
    RECORD_PHASES[0] = options.phases

    if "sleeping" in rows:
        # cold rows only in full runs: what the cache buys, not the scheduler's quality
        modes = ["warm", "file", "collection order", "--dist load"]
        if not options.quick:
            modes.insert(2, "cold")
        print_dag_tables([chain_heavy_shape(), wide_shape(), mixed_shape()], modes)

    count = 500 if options.quick else 2000
    repeats = 1 if options.quick else options.repeat
    if "flat" in rows:
        print(f"\n{count} no-op tests without edges, -n 4, median of {repeats}, "
              "interleaved:\n")
        flat = bench_flat(count, repeats, options.code)
        print_samples(flat, count, "--dist load (no plugin)")
        if options.phases:
            print_phases(flat)
    if "dag" in rows:
        edges, dag = bench_random_dag(count, repeats, options.code)
        print(f"\n{count} no-op tests in a random DAG ({edges:,} edges, 40 modules), -n 4, "
              f"median of {repeats}, interleaved:\n")
        print_samples(dag, count, "--dist load, no markers (no plugin)")
        if options.phases:
            print_phases(dag)

    if "skew" in rows:
        bench_skew(repeats)

    if options.stress:
        print(f"\nstress: 20 runs of a 40-test DAG on -n 4: {stress(20)} ordering violations")
    print(json.dumps({"python": sys.version.split()[0]}))


if __name__ == "__main__":
    main()
