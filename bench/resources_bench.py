"""Benchmark of shared resources on xdist: the walk with locks against its bound and against the
two ways users keep tests apart without it.

Six suites of sleeping tests on ``-n 4``, each one form of shared resource:

* ``bottleneck``: 8 writers of ``db`` (0.5 s each: 4 s of writes on capacity 1) among 4 free
  tests of 1 s and 14 of 0.3 s -- the lock must be fed from the start;
* ``readers``: 6 writers of ``db`` (0.5 s), 8 readers of ``db`` (0.3 s), 14 free (0.3 s);
* ``exclusive``: 2 exclusive tests (0.5 s) among 24 free tests (0.3 s) and 2 of 1 s;
* ``weights``: 4 tests of weight 2 (1 s) and 2 of weight 3 (1 s) among 16 free (0.25 s);
* ``chained``: a chain of 3 tests (0.4 s) whose middle one writes ``net`` beside 4 more
  writers of ``net`` (0.4 s), a chain of 2 (0.6 s) after a writer of ``db``, 8 free (0.3 s);
* ``together``: 8 writers and 6 readers of ``db``, an exclusive test, 2 tests of weight 2,
  the ``net`` chain and 14 free tests (13.7 s of work);
* ``fixtures``: 3 classes of 5 tests (0.3 s), the first 2 using a class-scoped fixture that
  locks ``port`` (held until the worker tears the class down: after the class's last 3 tests
  when it runs them, else as it moves on), 2 tests that write ``port`` themselves and 8 free
  tests. The bound counts the fixture's users as ``port``'s writers: its life when the
  worker moves on at once.

Each is written three ways:

* **depgraph**: ``resource_lock``, ``exclusive``, ``weight`` and ``depends_on`` markers, one run
  on ``-n 4``;
* **two runs**: every test that holds a resource or runs alone marked ``serial``; ``-m "not
  serial" -n 4``, then ``-m serial`` in one process, each with ``--depgraph-ignore-deps`` (the
  chain is cut between the runs, as without the plugin; the weights have no equivalent);
* **xdist_group**: the tests of each resource in ``xdist_group(<resource>)``, the exclusive
  ones in ``xdist_group("alone")`` (no equivalent: they run beside others), on
  ``--dist loadgroup`` (walked by the plugin, which keeps each group on one worker, in order).

The makespan (first test start to last test end, recorded by the tests; for two runs, the sum
of both runs' makespans) against the bound ``exclusive + max(critical path, weighted total /
N, for each resource: writers' time / capacity + readers' turn)`` (the readers' turn: the
longest reader, or the readers' time over N). Median of ``--repeat`` (3) interleaved runs,
after one run of each that leaves the durations in pytest's cache (the walk's priorities).

Run: ``python bench/resources_bench.py [--repeat N] [--only SUITE ...] [--styles STYLE ...]``
(prints a Markdown table).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

# the conftest that records each test's start and end (nodeid|start|end in times.log)
from xdist_bench import CONFTEST

PYTHON = sys.executable
WORKERS = 4

#: (name, seconds, resource, mode, weight, exclusive, depends on); a name ``Class::test`` is a
#: test of that class; a resource ``@name``: the test uses the class-scoped fixture that locks
#: ``name`` (held as one block with its class's other users until the class is torn down)
Test = tuple[str, float, str, str, int, bool, str]


def free(count: int, seconds: float, prefix: str = "free") -> list[Test]:
    return [(f"test_{prefix}_{i}", seconds, "", "", 1, False, "") for i in range(count)]


def holders(count: int, seconds: float, resource: str, mode: str) -> list[Test]:
    return [(f"test_{mode}_{resource}_{i}", seconds, resource, mode, 1, False, "")
            for i in range(count)]


NET_CHAIN: list[Test] = [("test_chain_0", 0.4, "", "", 1, False, ""),
                         ("test_chain_1", 0.4, "net", "write", 1, False, "test_chain_0"),
                         ("test_chain_2", 0.4, "", "", 1, False, "test_chain_1")]

SUITES: dict[str, list[Test]] = {
    "bottleneck": holders(8, 0.5, "db", "write") + free(4, 1.0, "long") + free(14, 0.3),
    "readers": holders(6, 0.5, "db", "write") + holders(8, 0.3, "db", "read") + free(14, 0.3),
    "exclusive": [(f"test_alone_{i}", 0.5, "", "", 1, True, "") for i in range(2)]
    + free(24, 0.3) + free(2, 1.0, "long"),
    "weights": [(f"test_heavy_{i}", 1.0, "", "", 2, False, "") for i in range(4)]
    + [(f"test_heavier_{i}", 1.0, "", "", 3, False, "") for i in range(2)] + free(16, 0.25),
    "chained": NET_CHAIN + holders(4, 0.4, "net", "write")
    + [("test_db_write", 0.3, "db", "write", 1, False, ""),
       ("test_after_db_0", 0.6, "", "", 1, False, "test_db_write"),
       ("test_after_db_1", 0.6, "", "", 1, False, "test_after_db_0")] + free(8, 0.3),
    "together": holders(8, 0.5, "db", "write") + holders(6, 0.3, "db", "read")
    + [("test_alone", 0.5, "", "", 1, True, "")]
    + [(f"test_heavy_{i}", 1.0, "", "", 2, False, "") for i in range(2)]
    + NET_CHAIN + holders(2, 0.4, "net", "write") + free(14, 0.3),
    "fixtures": [(f"TestS{c}::test_{kind}_{i}", 0.3, *(("@port", "write") if kind == "use"
                                                     else ("", "")), 1, False, "")
                 for c in range(3) for kind, count in (("use", 2), ("rest", 3))
                 for i in range(count)]
    + holders(2, 0.3, "port", "write") + free(8, 0.3),
}

#: the class-scoped fixture of ``@port``, with and without its lock
FIXTURE = """
@pytest.fixture(scope="class"){lock}
def port_fixture():
    yield 8080

"""


def write_suite(root: Path, suite: list[Test], style: str) -> None:
    lines = ["import time", "import pytest", "from pytest_depgraph import resource_lock", ""]
    if any(resource.startswith("@") for _, _, resource, *_ in suite):
        lock = '\n@resource_lock("port")' if style == "depgraph" else ""
        lines.append(FIXTURE.format(lock=lock))
    current = ""
    for name, seconds, resource, mode, weight, alone, after in suite:
        cls, _, name = name.rpartition("::")
        if cls != current:
            current = cls
            if cls:
                lines.append(f"class {cls}:")
        pad = "    " if cls else ""
        if after:
            lines.append(f'{pad}@pytest.mark.depends_on("{after}")')
        uses = resource.startswith("@")
        resource = resource.lstrip("@")
        if style == "depgraph" and not uses:
            if resource:
                lines.append(f'@pytest.mark.resource_lock("{resource}", mode="{mode}")')
            if alone:
                lines.append("@pytest.mark.exclusive")
            if weight > 1:
                lines.append(f"@pytest.mark.weight({weight})")
        elif style == "two runs" and (resource or alone):
            lines.append(f"{pad}@pytest.mark.serial")
        elif style == "xdist_group" and (resource or alone):
            lines.append(f'{pad}@pytest.mark.xdist_group("{resource or "alone"}")')
        arguments = ", ".join([*(["self"] if cls else []), *(["port_fixture"] if uses else [])])
        lines += [f"{pad}def {name}({arguments}):", f"{pad}    time.sleep({seconds})", ""]
    (root / "test_suite.py").write_text("\n".join(lines), encoding="utf-8")
    (root / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    (root / "pytest.ini").write_text("[pytest]\nmarkers =\n    serial\n", encoding="utf-8")


def bound(suite: list[Test]) -> float:
    """exclusive + max(chain, weighted work / N, per resource: writers / capacity (1) + the
    readers' turn)."""
    seconds = {name: s for name, s, *_ in suite}
    after = {name: a for name, _, _, _, _, _, a in suite}

    def chain(name: str) -> float:
        return seconds[name] + (chain(after[name]) if after[name] else 0.0)

    alone = sum(s for _, s, _, _, _, a, _ in suite if a)
    work = sum(s * w for _, s, _, _, w, a, _ in suite if not a)
    written: dict[str, float] = {}
    read: dict[str, list[float]] = {}
    for _, s, resource, mode, _, _, _ in suite:
        resource = resource.lstrip("@")  # a fixture's lock: its users' time at least
        if mode == "write":
            written[resource] = written.get(resource, 0.0) + s
        elif mode == "read":
            read.setdefault(resource, []).append(s)
    terms = [written.get(r, 0.0) + (max(max(read[r]), sum(read[r]) / WORKERS) if r in read else 0.0)
             for r in {*written, *read}]
    return alone + max(max(chain(n) for n in seconds), work / WORKERS, *terms)


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
    if done.returncode == 5:  # two runs of a suite without serial tests: the second is empty
        return 0.0
    spans = [tuple(map(float, line.rsplit("|", 2)[1:])) for line in log.read_text().splitlines()]
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
    parser.add_argument("--only", nargs="*", choices=list(SUITES), default=list(SUITES))
    parser.add_argument("--styles", nargs="*", choices=list(RUNS), default=list(RUNS),
                        help="the ways of writing the suites to run (default: all)")
    args = parser.parse_args()
    found: dict[tuple[str, str], list[float]] = {
        (name, style): [] for name in args.only for style in args.styles
    }
    with tempfile.TemporaryDirectory() as scratch:
        roots = {}
        for k, (name, style) in enumerate(found):
            roots[name, style] = Path(scratch) / f"s{k}"
            roots[name, style].mkdir()
            write_suite(roots[name, style], SUITES[name], style)
            for run_args in RUNS[style]:  # warm: the walk's priorities from the durations
                makespan(roots[name, style], *run_args)
        for _ in range(args.repeat):
            for (name, style), values in found.items():
                values.append(sum(makespan(roots[name, style], *a) for a in RUNS[style]))
                print(f"{name}, {style}: {values[-1]:.2f} s", file=sys.stderr)
    print(f"| -n {WORKERS}, makespan / bound (median of {args.repeat}) | bound | "
          + " | ".join(args.styles) + " |")
    print("|---|---:|" + "---:|" * len(args.styles))
    for name in args.only:
        best = bound(SUITES[name])
        cells = [f"{statistics.median(found[name, style]) / best:.3f}"
                 for style in args.styles]
        print(f"| {name} | {best:.2f} s | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
