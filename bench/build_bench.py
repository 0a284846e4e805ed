"""The build measured alone and the whole collection side by side, against other checkouts.

Two modes, on the suites of ``peers_bench.py`` (written to ``--out`` on first use):

* ``build SUITE``: collects the suite once in this process (the plugin on), then calls
  ``pytest_depgraph.collect.build.build`` on its items: ``--repeat`` times for the CPU seconds
  of each phase (``time.process_time``), once under cProfile for the function calls (Python
  functions apart: a count no load changes), once under tracemalloc for the memory each phase
  leaves and its peak. ``--code DIR`` imports the package from another checkout (``DIR`` holds
  ``pytest_depgraph/``: ``git archive COMMIT pytest_depgraph | tar -x -C DIR``).
* ``collect SUITE,...``: whole ``pytest --collect-only`` processes, alternated round by round:
  each ``--code`` checkout, this one, and *markers only* (``-p no:depgraph -o
  markers=depends_on``; ``-p no:depgraph`` for ``bare10k``), in the bench's venv of this
  checkout; CPU (user + system) and peak RSS from ``/usr/bin/time``, each round's ratio
  against *markers only* of the same round.

Run from the repository root, e.g. ``python bench/build_bench.py build real10k --code
/tmp/d345bb1`` or ``python bench/build_bench.py collect onefile10k,real10k --code
/tmp/d345bb1 --code /tmp/f18b870 --repeat 3``.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import gc
import io
import os
import pstats
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import peers_bench as pb


def suite_dir(name: str, out: Path) -> Path:
    """The suite written in this plugin's syntax, once."""
    directory = out / name
    if not (directory / "pytest.ini").exists():
        suite = pb.SUITES[name]
        suite.generate()
        pb.write_suite(suite, "depgraph", directory)
    return directory


def collected(directory: Path) -> list[Any]:
    """The suite's items, collected in this process with the plugin on, as a user's run
    collects them (its marker decorator runs at import; a checkout whose decorator does work
    there would otherwise pay it in the build measured, and compare unlike with this one)."""
    grabbed: list[Any] = []
    import pytest

    class Grab:
        # in the order pytest collected them: the plugin reorders the session's items
        @pytest.hookimpl(tryfirst=True)
        def pytest_collection_modifyitems(self, items: list[Any]) -> None:
            grabbed.extend(items)

    os.chdir(directory)
    with contextlib.redirect_stdout(io.StringIO()):
        pytest.main(["--collect-only", "-qq", "-p", "no:cacheprovider"], plugins=[Grab()])
    return grabbed


def bench_build(opts: argparse.Namespace) -> None:
    if opts.code:
        sys.path.insert(0, str(Path(opts.code[0]).resolve()))
    directory = suite_dir(opts.suites, Path(opts.out))
    items = collected(directory)
    from pytest_depgraph.collect import build

    print(f"{opts.suites}: {len(items)} tests; package {Path(build.__file__).parent.parent}")
    root = directory.resolve()
    totals, phases = [], []
    for _ in range(opts.repeat):
        start = time.process_time()
        result = build.build(items, items, root)
        totals.append(time.process_time() - start)
        phases.append(result.cpu_timings)
        del result
    best = min(range(len(totals)), key=totals.__getitem__)
    print("build CPU ms, each: " + " ".join(f"{t * 1000:.0f}" for t in totals))
    print("phases of the fastest, CPU ms: "
          + ", ".join(f"{k} {v * 1000:.0f}" for k, v in phases[best].items()))
    profile = cProfile.Profile()
    profile.enable()
    build.build(items, items, root)
    profile.disable()
    stats = pstats.Stats(profile)
    entries = stats.stats.items()  # type: ignore[attr-defined]
    python = sum(calls for (file, _, _), (_, calls, *_rest) in entries if file != "~")
    print(f"function calls: {stats.total_calls:,} ({python:,} of Python functions)")  # type: ignore[attr-defined]
    clock = getattr(build, "_Clock", None)
    if clock is None:
        print("(no phase clock in this checkout: its memory not traced by phase)")
        return
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    lap = clock.lap

    def traced(clock: Any, phase: str) -> None:
        now, peak = tracemalloc.get_traced_memory()
        print(f"  traced after {phase}: {(now - base) / 2**20:.1f} MiB, "
              f"peak {(peak - base) / 2**20:.1f} MiB")
        tracemalloc.reset_peak()
        lap(clock, phase)

    clock.lap = traced
    result = build.build(items, items, root)
    now, peak = tracemalloc.get_traced_memory()
    print(f"  traced after assemble: {(now - base) / 2**20:.1f} MiB, "
          f"peak {(peak - base) / 2**20:.1f} MiB (the plan: what the run keeps)")
    del result


def run(directory: Path, python: Path, code: str | None, args: list[str]) -> tuple[float, float]:
    """CPU seconds and peak RSS (MiB) of one ``--collect-only`` process."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
    if code:
        env["PYTHONPATH"] = str(Path(code).resolve())
    done = subprocess.run(
        ["/usr/bin/time", "-f", "%U %S %M", str(python), "-m", "pytest", "--collect-only", "-q",
         "-p", "no:cacheprovider", *args],
        cwd=directory, env=env, capture_output=True, text=True,
    )
    user, system, rss = done.stderr.strip().splitlines()[-1].split()
    if done.returncode:
        raise RuntimeError(f"{code or 'this checkout'} failed in {directory}:\n{done.stdout}")
    return float(user) + float(system), int(rss) / 1024


def bench_collect(opts: argparse.Namespace) -> None:
    python = pb.ensure_venv("depgraph") / "bin" / "python"
    sides = [*opts.code, None]
    names = [*(Path(c).name for c in opts.code), "this checkout"]
    for name in opts.suites.split(","):
        directory = suite_dir(name, Path(opts.out))
        ref = ["-p", "no:depgraph"] if name.startswith("bare") else [
            "-p", "no:depgraph", "-o", "markers=depends_on"]
        run(directory, python, None, ref)  # byte code written once, before any timed run
        got: dict[str, list[tuple[float, float]]] = {n: [] for n in [*names, "markers only"]}
        for round_ in range(opts.repeat):
            for side, label in zip([*sides, None], [*names, "markers only"]):
                got[label].append(run(directory, python, side,
                                      ref if label == "markers only" else []))
                print(f"# {time.strftime('%H:%M:%S')} {name} {round_ + 1} {label}: "
                      f"{got[label][-1][0]:.2f} s, load {os.getloadavg()[0]:.1f}",
                      file=sys.stderr, flush=True)
        mark = got["markers only"]
        print(f"\n{name}, {opts.repeat} alternated rounds (markers only: CPU "
              f"{', '.join(f'{c:.2f}' for c, _ in mark)} s)\n")
        print("| side | CPU / markers only, each round | median | peak RSS / markers only |")
        print("|---|---|---:|---:|")
        for label in names:
            ratios = [c / m for (c, _), (m, _) in zip(got[label], mark)]
            rss = statistics.median(r / m for (_, r), (_, m) in zip(got[label], mark))
            print(f"| {label} | {', '.join(f'{r:.3f}' for r in ratios)} | "
                  f"{statistics.median(ratios):.3f} | {rss:.3f} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=("build", "collect"))
    parser.add_argument("suites", help="a suite of peers_bench.py (collect: comma-separated)")
    parser.add_argument("--code", action="append", default=[],
                        help="a folder holding another checkout's pytest_depgraph/")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", default="/tmp/depgraph-build-bench")
    opts = parser.parse_args()
    (bench_build if opts.mode == "build" else bench_collect)(opts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
