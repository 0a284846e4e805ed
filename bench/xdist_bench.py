"""Benchmark of the xdist scheduler: walk time against its bound, overhead against --dist load.

(a) a DAG of sleeping tests with known durations: the walk's wall time (first test start to
    last test end, recorded by the tests) against ``max(critical path, total / N)``, for -n 2
    and -n 4, with the previous run's durations in the cache (warm), with unit weights (cold,
    empty cache) and with a collection-order walker (priorities switched off) for comparison;
(b) 2,000 no-op tests without edges on -n 4: process wall time of this plugin (handed to xdist's
    LoadScheduling), of the walker forced by ``--depgraph-parallelism 4``, and of
    ``-p no:depgraph --dist load``; median of 3;
(c) ``--stress``: the DAG suite 20 times on -n 4, counting ordering violations.

Run: ``python bench/xdist_bench.py [--quick] [--stress]`` (prints Markdown tables).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PYTHON = sys.executable
CONFTEST = '''
import os, time
import pytest

LOG = os.path.join(os.path.dirname(__file__), "times.log")

if os.environ.get("BENCH_COLLECTION_ORDER"):
    from pytest_depgraph import scheduler

    scheduler.DepGraphScheduling._priorities = lambda self, plan: [0.0] * len(plan.nodeids)

@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    start = time.time()
    try:
        return (yield)
    finally:
        with open(LOG, "a") as f:
            f.write(f"{item.nodeid}|{start}|{time.time()}\\n")
'''


def make_dag(count: int, seed: int, low: float, high: float) -> tuple[list[float], list[list[int]]]:
    """Durations and dependency lists of a random layered DAG (each test on 0-2 earlier ones)."""
    rng = random.Random(seed)
    durations = [round(rng.uniform(low, high), 3) for _ in range(count)]
    deps = [
        sorted(set(rng.sample(range(i), min(i, rng.choice((0, 1, 1, 2))))))
        for i in range(count)
    ]
    return durations, deps


def write_dag_suite(root: Path, durations: list[float], deps: list[list[int]]) -> None:
    per_module = 10
    (root / "conftest.py").write_text(CONFTEST)
    for start in range(0, len(durations), per_module):
        lines = ["import time", "import pytest", ""]
        for i in range(start, min(start + per_module, len(durations))):
            for d in deps[i]:
                lines.append(f"@pytest.mark.depends_on('test_m{d // per_module}.py::test_{d}')")
            lines += [f"def test_{i}():", f"    time.sleep({durations[i]})", ""]
        (root / f"test_m{start // per_module}.py").write_text("\n".join(lines))


def critical_path(durations: list[float], deps: list[list[int]]) -> float:
    finish = [0.0] * len(durations)
    for i, d in enumerate(durations):
        finish[i] = d + max((finish[j] for j in deps[i]), default=0.0)
    return max(finish)


def pytest_run(root: Path, *args: str, env: dict[str, str] | None = None) -> float:
    full_env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", **(env or {})}
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


def bench_dag(
    workers: int, mode: str, durations: list[float], deps: list[list[int]]
) -> dict[str, float]:
    root = Path(tempfile.mkdtemp(prefix="dagbench"))
    try:
        write_dag_suite(root, durations, deps)
        env = {"BENCH_COLLECTION_ORDER": "1"} if mode == "collection order" else {}
        args = ("-p", "depgraph", "-n", str(workers))
        if mode == "warm":
            pytest_run(root, *args)  # fills the duration cache
            (root / "times.log").unlink()
        cache = () if mode == "warm" else ("-p", "no:cacheprovider")
        wall = pytest_run(root, *args, *cache, env=env)
        found = read_times(root)
        walk = max(e for _, e in found.values()) - min(s for s, _ in found.values())
        bound = max(critical_path(durations, deps), sum(durations) / workers)
        return {"walk": walk, "bound": bound, "process": wall,
                "violations": violations(found, deps)}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def bench_flat(count: int, repeats: int) -> dict[str, float]:
    root = Path(tempfile.mkdtemp(prefix="flatbench"))
    try:
        (root / "test_flat.py").write_text(
            "import pytest\n\n"
            f"@pytest.mark.parametrize('n', range({count}))\ndef test_noop(n):\n    pass\n"
        )
        modes = {
            "--dist load (no plugin)": ("-p", "no:depgraph", "-n", "4", "--dist", "load"),
            "depgraph, no edges": ("-p", "depgraph", "-n", "4"),
            "depgraph walker forced": ("-p", "depgraph", "-n", "4", "--depgraph-parallelism", "4"),
        }
        samples: dict[str, list[float]] = {mode: [] for mode in modes}
        for _ in range(repeats):
            for mode, args in modes.items():  # interleaved: the machine's load drifts
                samples[mode].append(pytest_run(root, *args, "-p", "no:cacheprovider"))
        return {mode: statistics.median(values) for mode, values in samples.items()}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one mode per table, 500 no-ops")
    parser.add_argument("--stress", action="store_true", help="20 runs of the DAG on -n 4")
    options = parser.parse_args()

    durations, deps = make_dag(40, seed=7, low=0.05, high=0.3)
    print(f"DAG: 40 tests, {sum(map(len, deps))} edges, total {sum(durations):.2f} s, "
          f"critical path {critical_path(durations, deps):.2f} s\n")
    print("| -n | priorities | walk (s) | bound (s) | walk / bound | process (s) | violations |")
    print("|---|---|---|---|---|---|---|")
    modes = ["warm"] if options.quick else ["warm", "cold", "collection order"]
    for workers in (2, 4):
        for mode in modes:
            r = bench_dag(workers, mode, durations, deps)
            print(f"| {workers} | {mode} | {r['walk']:.2f} | {r['bound']:.2f} | "
                  f"{r['walk'] / r['bound']:.3f} | {r['process']:.2f} | {r['violations']:.0f} |")

    count = 500 if options.quick else 2000
    flat = bench_flat(count, repeats=1 if options.quick else 3)
    base = flat["--dist load (no plugin)"]
    print(f"\n{count} no-op tests, -n 4, median of {1 if options.quick else 3} (process wall):\n")
    print("| mode | wall (s) | ratio to --dist load |")
    print("|---|---|---|")
    for mode, wall in flat.items():
        print(f"| {mode} | {wall:.2f} | {wall / base:.3f} |")

    if options.stress:
        small, small_deps = make_dag(40, seed=11, low=0.005, high=0.03)
        total = 0
        for _ in range(20):
            r = bench_dag(4, "cold", small, small_deps)
            total += int(r["violations"])
        print(f"\nstress: 20 runs of a 40-test DAG on -n 4: {total} ordering violations")
    print(json.dumps({"python": sys.version.split()[0]}))


if __name__ == "__main__":
    main()
