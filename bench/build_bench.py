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

* ``phases SUITE,...``: the same alternated ``--collect-only`` processes, each with a small
  plugin that reads the process's CPU seconds at the boundaries of pytest's phases (start and
  pytest's import; configure, with the plugins' imports; the files collected; the
  ``pytest_collection_modifyitems`` hooks, the build among them; the end). Per side, each
  phase's fastest round, and the whole process's fastest and median against *markers only*.
  With ``--callgrind``, one process per side under valgrind's callgrind instead, the same
  boundaries dumped: instruction counts, which no load changes (needs ``valgrind`` and a C
  compiler with valgrind's headers; ``PYTHONHASHSEED=0``).

Run from the repository root, e.g. ``python bench/build_bench.py build real10k --code
/tmp/d345bb1``, ``python bench/build_bench.py collect onefile10k,real10k --code
/tmp/d345bb1 --code /tmp/f18b870 --repeat 3`` or ``python bench/build_bench.py phases
onefile10k --code /tmp/d345bb1 --callgrind``.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import gc
import io
import json
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
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


#: the plugin of ``phases``: the CPU seconds at each boundary, written as JSON lines at exit;
#: with a callgrind helper library, a dump of the counts at each boundary instead
PHASES_PLUGIN = """
import atexit, ctypes, json, os, time
_marks = []
_lib = ctypes.CDLL(os.environ["PHASES_CALLGRIND"]) if os.environ.get("PHASES_CALLGRIND") else None
def _mark(name):
    if _lib is not None:
        _lib.dump(name.encode())
    _marks.append((name, time.process_time()))
_mark("start")
import pytest
@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    _mark("configure")
@pytest.hookimpl(wrapper=True)
def pytest_collection(session):
    _mark("session start")
    return (yield)
@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_collection_modifyitems(session, config, items):
    _mark("files collected")
    return (yield)
@pytest.hookimpl(wrapper=True)
def pytest_collection_finish(session):
    _mark("modifyitems")
    return (yield)
@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    _mark("summary")
@atexit.register
def _write():
    _mark("end")
    with open(os.environ["PHASES_OUT"], "a") as out:
        out.write(json.dumps(_marks) + "\\n")
"""

#: the callgrind helper: one function that dumps the counts so far under a name
CALLGRIND_HELPER = """
#include <valgrind/callgrind.h>
void dump(const char *name) { CALLGRIND_DUMP_STATS_AT(name); }
"""


def _phases_of(marks: list[tuple[str, float]]) -> dict[str, float]:
    """Each phase's seconds (or counts), named by the boundary that ends it."""
    phases = {"python and pytest": marks[0][1]}
    for (_, before), (name, after) in zip(marks, marks[1:]):
        phases[name] = after - before
    return phases


def _callgrind_phases(files: list[Path]) -> dict[str, float]:
    """The counts of each dump of one callgrind run (``Ir``), by the boundary that ends it."""
    counts: dict[str, float] = {}
    for path in files:
        text = path.read_text()
        trigger = next(line for line in text.splitlines() if line.startswith("desc: Trigger"))
        name = trigger.split(": ", 2)[-1].split("Client Request: ", 1)[-1]
        total = next(int(line.split()[1]) for line in text.splitlines()
                     if line.startswith("summary:"))
        name = {"start": "python and pytest"}.get(name, name)
        name = "end" if name.startswith("Program termination") else name
        counts[name] = counts.get(name, 0) + total
    return counts


def bench_phases(opts: argparse.Namespace) -> None:
    python = pb.ensure_venv("depgraph") / "bin" / "python"
    sides = [*opts.code, None]
    names = [*(Path(c).name for c in opts.code), "this checkout", "markers only"]
    work = Path(tempfile.mkdtemp(prefix="depgraph-phases-"))
    (work / "depgraph_phases.py").write_text(PHASES_PLUGIN)
    library = None
    if opts.callgrind:
        (work / "helper.c").write_text(CALLGRIND_HELPER)
        library = work / "helper.so"
        subprocess.run(["cc", "-O1", "-shared", "-fPIC", "-o", str(library),
                        str(work / "helper.c")], check=True)
    for name in opts.suites.split(","):
        directory = suite_dir(name, Path(opts.out))
        ref = ["-p", "no:depgraph"] if name.startswith("bare") else [
            "-p", "no:depgraph", "-o", "markers=depends_on"]
        got: dict[str, list[dict[str, float]]] = {n: [] for n in names}
        for round_ in range(1 if opts.callgrind else opts.repeat):
            for side, label in zip([*sides, None], names):
                env = {k: v for k, v in os.environ.items()
                       if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
                env["PYTHONPATH"] = os.pathsep.join(
                    [*([str(Path(side).resolve())] if side else []), str(work)])
                env["PHASES_OUT"] = str(work / "marks.jsonl")
                command = [str(python), "-m", "pytest", "--collect-only", "-q",
                           "-p", "no:cacheprovider", "-p", "depgraph_phases",
                           *(ref if label == "markers only" else [])]
                subprocess.run(command, cwd=directory, env=env, capture_output=True,
                               check=False)  # byte code written, before any measured run
                (work / "marks.jsonl").unlink(missing_ok=True)
                if library is None:
                    subprocess.run(command, cwd=directory, env=env, capture_output=True,
                                   check=True)
                    marks = json.loads((work / "marks.jsonl").read_text())
                    got[label].append(_phases_of(marks))
                else:
                    env["PHASES_CALLGRIND"], env["PYTHONHASHSEED"] = str(library), "0"
                    out = work / f"callgrind-{round_}-{len(got[label])}-{names.index(label)}"
                    subprocess.run(["valgrind", "--tool=callgrind", "--dump-instr=no",
                                    f"--callgrind-out-file={out}", *command], cwd=directory,
                                   env=env, capture_output=True, check=True)
                    dumps = sorted(work.glob(f"{out.name}.*"),
                                   key=lambda path: int(path.suffix[1:]))
                    got[label].append(_callgrind_phases([*dumps, out]))
                print(f"# {time.strftime('%H:%M:%S')} {name} {round_ + 1} {label}, "
                      f"load {os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)
        unit, scale = ("G instructions", 1e-9) if opts.callgrind else ("ms of CPU, fastest", 1e3)
        phases = list(got["markers only"][0])
        print(f"\n{name}: {unit} by phase"
              + ("" if opts.callgrind else f", {opts.repeat} alternated rounds") + "\n")
        print("| phase | " + " | ".join(names) + " |")
        print("|---|" + "---:|" * len(names))
        for phase in [*phases, "whole process"]:
            cells = []
            for label in names:
                values = [sum(p.values()) if phase == "whole process" else p.get(phase, 0.0)
                          for p in got[label]]
                cells.append(f"{min(values) * scale:.3f}" if opts.callgrind
                             else f"{min(values) * scale:.0f}")
            print(f"| {phase} | " + " | ".join(cells) + " |")
        mark = [sum(p.values()) for p in got["markers only"]]
        for label in names[:-1]:
            mine = [sum(p.values()) for p in got[label]]
            ratio = min(mine) / min(mark)
            median = statistics.median(mine) / statistics.median(mark)
            print(f"{label} / markers only: {ratio:.3f}"
                  + ("" if opts.callgrind else f" (fastest rounds), {median:.3f} (medians)"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=("build", "collect", "phases"))
    parser.add_argument("suites", help="a suite of peers_bench.py (collect: comma-separated)")
    parser.add_argument("--code", action="append", default=[],
                        help="a folder holding another checkout's pytest_depgraph/")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", default="/tmp/depgraph-build-bench")
    parser.add_argument("--callgrind", action="store_true",
                        help="phases: instruction counts, one run per side under callgrind")
    opts = parser.parse_args()
    {"build": bench_build, "collect": bench_collect, "phases": bench_phases}[opts.mode](opts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
