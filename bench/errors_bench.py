"""Collection with many bad declarations: time and size of the report.

Generates a suite of MODULES x TESTS no-op tests under ``tests/`` and adds one kind of
trouble, then runs ``pytest --collect-only -qq`` on it with the plugin and without it
(``-p no:depgraph``), and prints one Markdown row per scenario: the CPU time of each (user +
system of the pytest process: wall time means little on a shared machine), and the bytes and
lines the plugin's run printed.

Scenarios:

* ``renamed``: 1,000 tests each depend on a test of ``tests/test_old.py``, a file that was
  renamed (the same missing file, 1,000 markers);
* ``distinct``: 2,000 tests each depend on a different missing test of an existing file
  (2,000 different causes);
* ``cycle``: 2,000 tests in one dependency cycle;
* ``huge``: one target string of 1 MB.

``--code DIR`` runs the plugin from another checkout's ``pytest_depgraph`` (for a before /
after comparison: ``git worktree add /tmp/before main`` then ``--code /tmp/before``).

Run from the repository root::

    python bench/errors_bench.py [--scenarios renamed,distinct,cycle,huge] [--code DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODULES = 100
TESTS = 100

#: runs pytest with the plugin imported from ``sys.argv[1]`` (a checkout) when given: the
#: editable install's finder would otherwise win over sys.path
RUNNER = """
import sys
code = sys.argv.pop(1)
if code:
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f)]
    sys.path.insert(0, code)
import pytest
sys.exit(pytest.main(sys.argv[1:]))
"""


def _module(index: int, markers: dict[int, str]) -> str:
    lines = ["import pytest", ""]
    for test in range(TESTS):
        number = index * TESTS + test
        if number in markers:
            lines.append(f"@pytest.mark.depends_on({markers[number]})")
        lines.append(f"def test_{test}(): pass")
        lines.append("")
    return "\n".join(lines)


def generate(root: Path, scenario: str) -> None:
    """Write the suite of ``scenario`` under ``root``."""
    markers: dict[int, str] = {}
    count = MODULES * TESTS
    if scenario == "renamed":
        for k in range(1000):
            markers[k * count // 1000] = repr(f"tests/test_old.py::test_{k % TESTS}")
    elif scenario == "distinct":
        for k in range(2000):
            markers[k * count // 2000] = repr(f"tests/test_mod_{k % MODULES}.py::test_nope_{k}")
    elif scenario == "cycle":
        # test i of the first 20 modules depends on test i+1; the last on the first
        length = 2000
        for k in range(length):
            nxt = (k + 1) % length
            markers[k] = repr(f"tests/test_mod_{nxt // TESTS}.py::test_{nxt % TESTS}")
    elif scenario == "huge":
        markers[0] = repr("x" * 1_000_000)
    tests = root / "tests"
    tests.mkdir(parents=True)
    for index in range(MODULES):
        (tests / f"test_mod_{index}.py").write_text(_module(index, markers))


def run(root: Path, code: str, *args: str) -> tuple[float, float, bytes]:
    """Wall and CPU seconds (user + system, of the pytest process) and what it printed. The
    CPU time is the figure to compare on a shared machine."""
    command = [sys.executable, "-c", RUNNER, code, "--collect-only", "-qq", "-p", "no:randomly",
               "-p", "no:cacheprovider", *args]
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        process = subprocess.Popen(command, cwd=root, stdout=out, stderr=subprocess.STDOUT)
        _, _, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        out.seek(0)
        output = out.read()
    return wall, usage.ru_utime + usage.ru_stime, output


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", default="renamed,distinct,cycle,huge")
    parser.add_argument("--code", default="", help="a checkout whose pytest_depgraph to run")
    parser.add_argument("--keep", action="store_true", help="keep the generated suites")
    options = parser.parse_args()
    code = options.code or "this checkout"
    print(f"{MODULES * TESTS:,} tests; `--collect-only -qq`; code: {code}")
    print()
    print("| scenario | CPU without plugin | CPU with plugin | printed | lines | last line |")
    print("|---|---|---|---|---|---|")
    for scenario in options.scenarios.split(","):
        root = Path(tempfile.mkdtemp(prefix=f"depgraph-errors-{scenario}-"))
        try:
            generate(root, scenario)
            run(root, "", "-p", "no:depgraph")  # writes the byte code: not timed
            _, plain, _ = run(root, "", "-p", "no:depgraph")
            print(f"{scenario}: plain {plain:.1f} s CPU", file=sys.stderr)
            wall, took, output = run(root, options.code)
            text = output.decode("utf-8", "replace")
            last = text.strip().splitlines()[-1] if text.strip() else ""
            print(
                f"| {scenario} | {plain:.1f} s | {took:.1f} s ({wall:.0f} s wall) "
                f"| {len(output) / 1024:,.0f} KB | {text.count(chr(10)):,} "
                f"| `{last.strip('= ')[:60]}` |",
                flush=True,
            )
        finally:
            if options.keep:
                print(f"kept {root}", file=sys.stderr)
            else:
                shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
