"""Benchmark of ``--depgraph-report``: time to write the page, its size, and its load in a browser.

For 1,000 and 10,000 no-op tests (20 modules per 1,000; each test depends on up to 3 random
earlier tests, as ``peers_bench.py``'s ``rand`` suites; 1 test in 1,000 fails, among the last
tenth, so that some dependents are skipped and most tests run), one serial ``pytest`` run
with ``--depgraph-report``. Measured:

* the time the plugin spends writing the report at the end of the session (the timeline, the
  Graphviz drawing of the graph, the page), timed from the suite's conftest, and the part of it
  that is Graphviz;
* the size of the page;
* with chromium installed: the wall time of ``chromium --headless --dump-dom`` on the page beside
  the same on an empty page (the browser's own start), and the page's own drawing time (its
  script notes it in ``data-render-ms``). Median of ``--repeat`` runs.

Run: ``python bench/report_bench.py [--sizes 1000,10000] [--repeat 3]`` (prints Markdown).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CONFTEST = '''
import json, os, time

from pytest_depgraph.output import html_page, run_report

TIMES = {}
_finish = run_report.RunReport.pytest_sessionfinish
_graph = html_page.graph_svg


def _timed_finish(self, session):
    began = time.perf_counter()
    _finish(self, session)
    TIMES["report"] = time.perf_counter() - began
    with open(os.environ["BENCH_TIMES"], "w") as f:
        json.dump(TIMES, f)


def _timed_graph(*args):
    began = time.perf_counter()
    try:
        return _graph(*args)
    finally:
        TIMES["graph"] = time.perf_counter() - began


_timed_finish.__dict__.update(_finish.__dict__)  # the hookimpl options (trylast)
run_report.RunReport.pytest_sessionfinish = _timed_finish
html_page.graph_svg = _timed_graph
'''


def write_suite(where: Path, size: int, seed: int = 1) -> None:
    """``size`` tests over ``size // 50`` modules, each depending on up to 3 earlier ones."""
    rng = random.Random(seed)
    modules = max(1, size // 50)
    names = [f"test_m{i % modules}.py::test_{i}" for i in range(size)]
    bodies: dict[int, list[str]] = {m: ["import pytest\n"] for m in range(modules)}
    for i in range(size):
        targets = rng.sample(range(i), min(i, 3))
        marks = "".join(f'@pytest.mark.depends_on("{names[t]}")\n' for t in targets)
        fails = i >= size * 0.9 and rng.random() < 0.01
        body = "    assert 0\n" if fails else "    pass\n"
        bodies[i % modules].append(f"\n{marks}def test_{i}():\n{body}")
    for m, parts in bodies.items():
        (where / f"test_m{m}.py").write_text("".join(parts), encoding="utf-8")
    (where / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    (where / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")


def run_pytest(where: Path) -> dict[str, float]:
    times = where / "times.json"
    env = {**os.environ, "BENCH_TIMES": str(times), "PYTEST_ADDOPTS": ""}
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "depgraph", "-p", "no:cacheprovider",
         "--depgraph-report", "report.html"],
        cwd=where, env=env, capture_output=True, check=False, timeout=1800,
    )
    loaded: dict[str, float] = json.loads(times.read_text(encoding="utf-8"))
    return loaded


def browse(page: Path) -> tuple[float, int]:
    """Wall seconds of chromium dumping the page's DOM after its scripts ran; its render ms."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium
    began = time.perf_counter()
    done = subprocess.run(
        [chromium, "--headless", "--disable-gpu", "--no-sandbox", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=600, check=True,
    )
    wall = time.perf_counter() - began
    match = re.search(r'data-render-ms="(\d+)"', done.stdout)
    return wall, int(match.group(1)) if match else -1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    has_browser = bool(shutil.which("chromium") or shutil.which("chromium-browser"))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        empty = Path(tmp) / "empty.html"
        empty.write_text("<!DOCTYPE html><title>empty</title>", encoding="utf-8")
        baseline = (
            statistics.median(browse(empty)[0] for _ in range(args.repeat)) if has_browser else 0
        )
        for size in (int(s) for s in args.sizes.split(",")):
            where = Path(tmp) / f"s{size}"
            where.mkdir()
            write_suite(where, size)
            print(f"{size} tests: running pytest ...", file=sys.stderr)
            writes = [run_pytest(where) for _ in range(args.repeat)]
            page = where / "report.html"
            row = {
                "size": size,
                "report": statistics.median(w["report"] for w in writes),
                "graph": statistics.median(w.get("graph", 0.0) for w in writes),
                "bytes": page.stat().st_size,
                "drawn": 'id="no-graph"' not in page.read_text(encoding="utf-8"),
            }
            if has_browser:
                loads = [browse(page) for _ in range(args.repeat)]
                row["load"] = statistics.median(wall for wall, _ in loads) - baseline
                row["render"] = statistics.median(ms for _, ms in loads)
            rows.append(row)
    print("| tests | report written in | of which Graphviz | page size | graph drawn |"
          " browser load (beyond its start) | page's own drawing |")
    print("|---:|---:|---:|---:|---|---:|---:|")
    for row in rows:
        load = f"{row['load']:.2f} s" if "load" in row else "no chromium"
        render = f"{row['render']} ms" if "render" in row else "-"
        print(f"| {row['size']:,} | {row['report']:.2f} s | {row['graph']:.2f} s | "
              f"{row['bytes'] / 1e6:.2f} MB | {'yes' if row['drawn'] else 'no (too many)'} | "
              f"{load} | {render} |")
    if has_browser:
        print(f"\nchromium on an empty page: {baseline:.2f} s (subtracted above)")


if __name__ == "__main__":
    main()
