"""Benchmark of shared resources on xdist: the walk with locks against its bound and against the
two ways users keep tests apart without it.

One suite of sleeping tests (13.7 s of work) on ``-n 4``: 8 writers of ``db`` (0.5 s each,
the bottleneck: 4 s of writes on capacity 1), 6 readers of ``db`` (0.3 s), one exclusive test
(0.5 s), 2 tests of weight 2 (1 s), a chain of 3 tests (0.4 s each) whose middle one writes
``net`` beside 2 more writers of ``net``, and 14 free tests (0.3 s). Written three ways:

* **depgraph**: ``resource_lock``, ``exclusive``, ``weight`` and ``depends_on`` markers, one run
  on ``-n 4``;
* **two runs**: every test that holds a resource or runs alone marked ``serial``; ``-m "not
  serial" -n 4``, then ``-m serial`` in one process, each with ``--depgraph-ignore-deps`` (the
  chain is cut between the runs, as without the plugin; the weights have no equivalent);
* **xdist_group**: the tests of ``db`` (and the exclusive one, which has no equivalent) in
  ``xdist_group("db")``, those of ``net`` in ``xdist_group("net")``, on ``--dist loadgroup``
  (walked by the plugin, which keeps each group on one worker, in order).

The makespan (first test start to last test end, recorded by the tests; for two runs, the sum
of both runs' makespans) against the bound ``exclusive + max(critical path, weighted total /
N, each resource's writers' time / capacity)``. Median of ``--repeat`` (3) interleaved runs,
after one run of each that leaves the durations in pytest's cache (the walk's priorities).

Run: ``python bench/resources_bench.py [--repeat N]`` (prints a Markdown table).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

PYTHON = sys.executable
WORKERS = 4

CONFTEST = '''
import os, time
import pytest

LOG = os.path.join(os.path.dirname(__file__), "times.log")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    start = time.time()
    try:
        return (yield)
    finally:
        with open(LOG, "a") as f:
            f.write(f"{start} {time.time()}\\n")
'''

#: (name, seconds, resource, mode, weight, exclusive, depends on)
Test = tuple[str, float, str, str, int, bool, str]


def tests() -> list[Test]:
    made: list[Test] = []
    made += [(f"test_write_{i}", 0.5, "db", "write", 1, False, "") for i in range(8)]
    made += [(f"test_read_{i}", 0.3, "db", "read", 1, False, "") for i in range(6)]
    made.append(("test_alone", 0.5, "", "", 1, True, ""))
    made += [(f"test_heavy_{i}", 1.0, "", "", 2, False, "") for i in range(2)]
    made += [("test_chain_0", 0.4, "", "", 1, False, ""),
             ("test_chain_1", 0.4, "net", "write", 1, False, "test_chain_0"),
             ("test_chain_2", 0.4, "", "", 1, False, "test_chain_1")]
    made += [(f"test_net_{i}", 0.4, "net", "write", 1, False, "") for i in range(2)]
    made += [(f"test_free_{i}", 0.3, "", "", 1, False, "") for i in range(14)]
    return made


def write_suite(root: Path, style: str) -> None:
    lines = ["import time", "import pytest", ""]
    for name, seconds, resource, mode, weight, alone, after in tests():
        if after:
            lines.append(f'@pytest.mark.depends_on("{after}")')
        if style == "depgraph":
            if resource:
                lines.append(f'@pytest.mark.resource_lock("{resource}", mode="{mode}")')
            if alone:
                lines.append("@pytest.mark.exclusive")
            if weight > 1:
                lines.append(f"@pytest.mark.weight({weight})")
        elif style == "two runs" and (resource or alone):
            lines.append("@pytest.mark.serial")
        elif style == "xdist_group" and (resource or alone):
            lines.append(f'@pytest.mark.xdist_group("{resource or "db"}")')
        lines += [f"def {name}():", f"    time.sleep({seconds})", ""]
    (root / "test_suite.py").write_text("\n".join(lines), encoding="utf-8")
    (root / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    (root / "pytest.ini").write_text("[pytest]\nmarkers =\n    serial\n", encoding="utf-8")


def bound() -> float:
    suite = tests()
    seconds = {name: s for name, s, *_ in suite}
    alone = sum(s for _, s, _, _, _, a, _ in suite if a)
    chain = seconds["test_chain_0"] + seconds["test_chain_1"] + seconds["test_chain_2"]
    work = sum(s * w for _, s, _, _, w, a, _ in suite if not a)
    written: dict[str, float] = {}
    for _, s, resource, mode, _, _, _ in suite:
        if mode == "write":
            written[resource] = written.get(resource, 0.0) + s
    return alone + max(chain, work / WORKERS, *written.values())


def makespan(root: Path, *args: str) -> float:
    log = root / "times.log"
    log.unlink(missing_ok=True)
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTEST_ADDOPTS", None)
    done = subprocess.run(
        [PYTHON, "-m", "pytest", "-q", "-p", "xdist", "-p", "depgraph", *args],
        cwd=root, env=env, capture_output=True, text=True, timeout=600,
    )
    if done.returncode not in (0, 5):
        raise SystemExit(f"pytest {' '.join(args)} failed:\n{done.stdout[-3000:]}")
    spans = [tuple(map(float, line.split())) for line in log.read_text().splitlines()]
    return max(end for _, end in spans) - min(start for start, _ in spans)


RUNS: dict[str, list[tuple[str, ...]]] = {
    "depgraph": [("-n", str(WORKERS))],
    "two runs": [("-m", "not serial", "-n", str(WORKERS), "--depgraph-ignore-deps"),
                 ("-m", "serial", "-p", "no:xdist", "--depgraph-ignore-deps")],
    "xdist_group": [("-n", str(WORKERS), "--dist", "loadgroup")],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    repeat = parser.parse_args().repeat
    found: dict[str, list[float]] = {style: [] for style in RUNS}
    with tempfile.TemporaryDirectory() as scratch:
        roots = {}
        for k, style in enumerate(RUNS):
            roots[style] = Path(scratch) / f"s{k}"
            roots[style].mkdir()
            write_suite(roots[style], style)
            for args in RUNS[style]:  # warm: the walk's priorities from the durations
                makespan(roots[style], *args)
        for _ in range(repeat):
            for style, runs in RUNS.items():
                found[style].append(sum(makespan(roots[style], *args) for args in runs))
                print(f"{style}: {found[style][-1]:.2f} s", file=sys.stderr)
    best = bound()
    print(f"| -n {WORKERS}, bound {best:.2f} s | makespan (median of {repeat}) | ratio to bound |")
    print("|---|---|---|")
    for style, values in found.items():
        middle = statistics.median(values)
        print(f"| {style} | {middle:.2f} s | {middle / best:.2f} |")


if __name__ == "__main__":
    main()
