"""Every performance target measured by one command, as a Markdown table.

Runs, interleaved and median of ``--repeat`` (5) runs each, with CPU time (user + system from
``/usr/bin/time``), wall time and peak RSS of whole ``pytest`` processes:

* the serial suites of ``peers_bench.py``: ``real10k`` (the realistic shape), ``onefile10k``,
  ``rand10k`` (also a full run of its no-op tests), ``bare10k`` (no marker at all), each with
  this plugin, *markers only* (the same suite with ``-p no:depgraph -o markers=depends_on``;
  ``-p no:depgraph`` for ``bare10k``) and the peers; ``rand100k`` and ``layer100k`` with this
  plugin and markers only (``--big-repeat`` runs);
* the rows of ``xdist_bench.py``: 2,000 no-op tests without edges on ``-n 4`` (this plugin,
  its walker forced, ``--dist load``), a 2,000-test random DAG on ``-n 4`` against the same
  tests without markers on ``--dist load``, and the three sleeping DAGs against their bound.

Then prints the targets table (target | measured | met?), and for every missed target writes a
cProfile of that case to ``--out`` and prints its top entries; then the detail tables. A run
that fails or times out shows in the tables, it does not stop the script.

The peers: pytest-depends and pytest-dependency run every round; pytest-order and
pytest-order+dependency (about 60-90 s a run at 10k) run once, on the suites of
``--slow-peer-suites`` (default ``rand10k``), and not at all with ``--skip-slow-peers``.

Run from the repository root: ``python bench/targets.py`` (about 20 minutes on 2 idle cores;
``--skip-slow-peers``: about 15); ``--tiny`` checks the script itself on 1k suites in a few
minutes. Any ``python3`` runs it: every pytest process, the xdist rows' too, runs in the
bench's venv of this checkout (made on first use), which the output names.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import math
import os
import platform
import pstats
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import peers_bench as pb
import xdist_bench as xb

#: the peers the targets ask us to be ahead of (pytest-dependency alone does not reorder: shown in
#: the details, not compared)
AHEAD_OF = ("pytest-order", "pytest-depends", "pytest-order+dependency")
SLOW_PEERS = ("pytest-order", "pytest-order+dependency")
SERIAL = ("real10k", "onefile10k", "rand10k", "bare10k")
HUGE = ("rand100k", "layer100k")
FULL_SUITE = "rand10k"  # the suite whose full serial run is a target
#: --tiny: the same rows on small suites, to check the script
TINY = {"real10k": "real1k", "onefile10k": "onefile1k", "rand10k": "rand1k",
        "bare10k": "noedge1k", "rand100k": "rand10k", "layer100k": "layer10k"}


@dataclass
class Target:
    """One row of the targets table."""

    what: str
    measured: str
    met: bool | None  # None: not measured (a failed run)
    case: str = ""  # key of the profile to write when missed


@dataclass
class State:
    opts: argparse.Namespace
    work: Path
    venvs: dict[str, Path] = field(default_factory=dict)
    serial: dict[str, tuple[pb.Suite, list[pb.Plugin], pb.Results]] = field(default_factory=dict)
    xdist: dict[str, dict[str, list[xb.Sample]]] = field(default_factory=dict)
    sleeping: dict[str, list[float]] = field(default_factory=dict)
    details: list[str] = field(default_factory=list)
    targets: list[Target] = field(default_factory=list)
    profilers: dict[str, Callable[[Path], list[str]]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def name(self, suite: str) -> str:
        return TINY[suite] if self.opts.tiny else suite


def log(message: str) -> None:
    print(f"# {time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True)


def guarded(state: State, what: str, job: Callable[[], None]) -> None:
    """Run one section; an error is written down and the script goes on."""
    try:
        job()
    except Exception:  # a benchmark must report, never crash: the error goes in the output
        state.errors.append(f"{what}: {traceback.format_exc(limit=3)}")
        log(f"{what} failed:\n{traceback.format_exc()}")


def plugin(name: str) -> pb.Plugin:
    return next(p for p in pb.PLUGINS if p.name == name)


# --------------------------------------------------------------------------- measuring


def run_serial(state: State, key: str) -> None:
    opts, name = state.opts, state.name(key)
    suite = pb.SUITES[name]
    suite.generate()
    names = ["depgraph", "markers only"]
    slow = [] if opts.skip_slow_peers else opts.slow_peer_suites.split(",")
    if key in SERIAL and not opts.no_peers:
        names += ["pytest-depends", "pytest-dependency"]
        if key in slow:
            names += list(SLOW_PEERS)
    plugins = [plugin(n) for n in names]
    runnable = [p for p in plugins if not pb.Syntax(p.suite).cannot_express(suite)]
    for p in runnable:
        state.venvs.setdefault(p.venv, pb.ensure_venv(p.venv))
    repeat = opts.big_repeat if key in HUGE else opts.repeat
    full = key == FULL_SUITE
    log(f"{name}: {pb.describe(suite)}; {', '.join(p.name for p in runnable)}; x{repeat}")
    res = pb.measure(suite, runnable, state.venvs, state.work, repeat, full, opts.timeout,
                     once=SLOW_PEERS)
    state.serial[key] = (suite, plugins, res)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        pb.report(suite, plugins, res, full, opts.timeout, repeat)
    once = [p.name for p in runnable if p.name in SLOW_PEERS]
    if once:
        out.write(f"({', '.join(once)}: one run, the first round: a run takes a minute or "
                  "more at 10k)\n\n")
    state.details.append(out.getvalue())


def xdist_python(state: State) -> Path:
    """The interpreter of the xdist rows: the bench's venv of this checkout (it has pytest-xdist
    and this package), whatever interpreter runs this script; a bare ``python3`` has neither,
    and every pytest run of the rows would fail. Raises, naming the interpreter, when it
    cannot import both."""
    venv = state.venvs.get("depgraph")
    python = venv / "bin" / "python" if venv is not None else Path(sys.executable)
    check = subprocess.run([str(python), "-c", "import pytest_depgraph, xdist"],
                           capture_output=True, text=True)
    if check.returncode:
        raise RuntimeError(f"{python} cannot import pytest_depgraph and xdist (the xdist rows "
                           f"need both): {check.stderr.strip().splitlines()[-1:]}")
    xb.PYTHON = str(python)
    return python


def run_xdist(state: State) -> None:
    python = xdist_python(state)
    log(f"xdist rows with {python}")
    count, repeat = (200 if state.opts.tiny else 2000), state.opts.xdist_repeat
    log(f"xdist: {count} no-op tests, -n 4, x{repeat}")
    flat = xb.bench_flat(count, repeat)
    state.xdist["flat"] = flat
    edges, dag = xb.bench_random_dag(count, repeat)
    state.xdist["dag"] = dag
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        print(f"### xdist: {count} no-op tests without edges, -n 4 (median of {repeat})\n")
        xb.print_samples(flat, count, "--dist load (no plugin)")
        print(f"\n### xdist: {count} no-op tests in a random DAG ({edges:,} edges), -n 4 "
              f"(median of {repeat})\n")
        xb.print_samples(dag, count, "--dist load, no markers (no plugin)")
        print()
    state.details.append(out.getvalue())


def run_sleeping(state: State) -> None:
    xdist_python(state)
    repeat = state.opts.sleep_repeat
    log(f"xdist: sleeping DAGs on -n 4, warm priorities, x{repeat}")
    state.sleeping = xb.sleeping_ratios(repeat)
    lines = [f"### xdist: sleeping DAGs on -n 4, warm priorities (walk / bound, {repeat} runs)\n",
             "| shape | median | runs |", "|---|---:|---|"]
    for shape, ratios in state.sleeping.items():
        lines.append(f"| {shape} | {xb.med(ratios):.3f} | "
                     f"{', '.join(f'{r:.3f}' for r in ratios)} |")
    state.details.append("\n".join(lines) + "\n")


# --------------------------------------------------------------------------- judging


def fmt_ratio(a: float, b: float) -> str:
    return f"{a / b:.3f}" if ok(a) and ok(b) and b > 0 else "n/a"


def ok(x: float) -> bool:
    return not math.isnan(x)


def compare(state: State, what: str, value: float, limit: float, detail: str,
            case: str) -> None:
    met = None if not ok(value) else value < limit
    shown = f"**{value:.3f}** ({detail})" if ok(value) else f"n/a ({detail})"
    state.targets.append(Target(what, shown, met, case))


def phase_detail(res: pb.Results) -> str:
    runs = len(res.phase_totals)
    return f"s, median of {runs}" if runs else "no `--depgraph-timings` line: see the details"


def judge_serial(state: State) -> None:
    for key in (*SERIAL, *(() if state.opts.no_big else HUGE)):
        if key not in state.serial:
            state.targets.append(Target(f"{state.name(key)}: measured", "n/a (failed)", None))
            continue
        suite, _, res = state.serial[key]
        n, ref = suite.name, "markers only"
        why = res.failed("depgraph") or res.failed(ref)
        cpu, ref_cpu = res.cpu("depgraph"), res.cpu(ref)
        rss, ref_rss = res.rss("depgraph"), res.rss(ref)
        phases = pb.median(res.phase_totals)
        case = f"collect:{key}"
        if key in ("real10k", "onefile10k", "rand10k"):
            compare(state, f"`{n}`: graph phases (`--depgraph-timings` total) < 0.25 s",
                    phases, 0.25, phase_detail(res), case)
            compare(state, f"`{n}`: `--collect-only` CPU < 1.10x markers only",
                    cpu / ref_cpu if not why else math.nan, 1.10,
                    why or f"{cpu:.2f} vs {ref_cpu:.2f} s", case)
        if key == "bare10k":
            compare(state, f"`{n}` (no marker): `--collect-only` CPU < 1.03x `-p no:depgraph`",
                    cpu / ref_cpu if not why else math.nan, 1.03,
                    why or f"{cpu:.2f} vs {ref_cpu:.2f} s", case)
            compare(state, f"`{n}` (no marker): peak RSS < 1.05x `-p no:depgraph`",
                    rss / ref_rss if not why else math.nan, 1.05,
                    why or f"{rss / 1024:.0f} vs {ref_rss / 1024:.0f} MiB", case)
        if key in HUGE:
            compare(state, f"`{n}`: graph phases < 2 s", phases, 2.0, phase_detail(res), case)
        if key != "bare10k":
            compare(state, f"`{n}`: peak RSS < 1.3x markers only",
                    rss / ref_rss if not why else math.nan, 1.3,
                    why or f"{rss / 1024:.0f} vs {ref_rss / 1024:.0f} MiB", case)
        if key == FULL_SUITE:
            fwhy = res.failed("depgraph", True) or res.failed(ref, True)
            fc, fref = res.cpu("depgraph", True), res.cpu(ref, True)
            compare(state, f"`{n}`: full serial run CPU < 1.15x markers only",
                    fc / fref if not fwhy else math.nan, 1.15, fwhy or f"{fc:.2f} vs {fref:.2f} s",
                    f"full:{key}")
        if key in SERIAL:
            judge_peers(state, key, n, res, full=False)
            if key == FULL_SUITE:
                judge_peers(state, key, n, res, full=True)
        state.profilers.setdefault(case, serial_profiler(state, key, full=False))
        if key == FULL_SUITE:
            state.profilers.setdefault(f"full:{key}", serial_profiler(state, key, full=True))


def judge_peers(state: State, key: str, n: str, res: pb.Results, full: bool) -> None:
    """Ahead of each peer that ran the suite: this plugin's CPU below the peer's."""
    ours = res.cpu("depgraph", full)
    parts, verdicts = [], []
    for peer in AHEAD_OF:
        if peer not in res.collect:
            continue
        why = res.failed(peer, full)
        if why:
            parts.append(f"{peer}: {why}")
            verdicts.append(why == "timed out")  # slower than the timeout: behind us
            continue
        theirs = res.cpu(peer, full)
        parts.append(f"{peer} {theirs:.2f}")
        verdicts.append(ok(ours) and ours < theirs)
    what = "full run" if full else "`--collect-only`"
    if not parts:
        return
    met = all(verdicts) if ok(ours) else None
    state.targets.append(Target(f"`{n}`: {what} CPU ahead of the peers",
                                f"depgraph {ours:.2f} s; {'; '.join(parts)}", met,
                                f"{'full' if full else 'collect'}:{key}"))


def judge_xdist(state: State) -> None:
    flat, dag = state.xdist.get("flat"), state.xdist.get("dag")
    rows = []
    if flat:
        rows += [(flat, "depgraph, no edges", "--dist load (no plugin)", 1.05,
                  "no-op tests, no edges, `-n 4`: wall < 1.05x `--dist load`", "xdist:flat"),
                 (flat, "depgraph walker forced", "--dist load (no plugin)", 1.10,
                  "same, walker forced (`--depgraph-parallelism 4`): wall < 1.10x", "xdist:walker")]
    if dag:
        rows.append((dag, "depgraph, random DAG", "--dist load, no markers (no plugin)", 1.15,
                     "random DAG of no-op tests, `-n 4`: wall < 1.15x the same tests without "
                     "markers on `--dist load`", "xdist:dag"))
    for samples, mode, base, limit, what, case in rows:
        good, ref = ([r for r in samples[m] if r.ok] for m in (mode, base))
        if not good or not ref:
            compare(state, what, math.nan, limit, f"failed: {mode if not good else base}", case)
            continue
        w, rw = xb.med([r.wall for r in good]), xb.med([r.wall for r in ref])
        ctl, rctl = xb.med([r.controller_cpu for r in good]), xb.med([r.controller_cpu
                                                                      for r in ref])
        count = 200 if state.opts.tiny else 2000
        compare(state, what, w / rw, limit,
                f"{w:.2f} vs {rw:.2f} s; controller CPU {ctl / count * 1e6:.0f} vs "
                f"{rctl / count * 1e6:.0f} µs a test", case)
        state.profilers.setdefault(case, xdist_profiler(state, case))
    if not flat or not dag:
        state.targets.append(Target("xdist no-op rows", "n/a (failed)", None))
    for shape, ratios in state.sleeping.items():
        compare(state, f"sleeping DAG `{shape}`, `-n 4`: walk within 5% of the bound",
                xb.med(ratios), 1.05, f"walk / bound, median of {len(ratios)}",
                f"sleep:{shape}")
        state.profilers.setdefault(f"sleep:{shape}", xdist_profiler(state, f"sleep:{shape}"))


# --------------------------------------------------------------------------- profiles


def top_entries(path: Path, count: int = 15) -> list[str]:
    """The profile's entries by cumulative time: this plugin's first, then everything's."""
    stats = pstats.Stats(str(path))
    rows = []
    entries = stats.stats.items()  # type: ignore[attr-defined]
    for (file, line, func), (_cc, calls, tottime, cum, _callers) in entries:
        rows.append((cum, tottime, calls, file, line, func))
    rows.sort(reverse=True)

    def show(row: tuple[float, float, int, str, int, str]) -> str:
        cum, tottime, calls, file, line, func = row
        short = file.split("site-packages/")[-1].split(str(pb.ROOT) + "/")[-1]
        return f"| `{short}:{line}({func})` | {cum:.3f} | {tottime:.3f} | {calls:,} |"

    head = ["| file:function | cumulative (s) | own (s) | calls |", "|---|---:|---:|---:|"]
    ours = [show(r) for r in rows if "pytest_depgraph" in r[3]][:count]
    by_own = sorted(rows, key=lambda r: r[1], reverse=True)[:count]
    return (["pytest_depgraph's entries, by cumulative time:", "", *head, *ours, "",
             "every entry, by own time:", "", *head, *map(show, by_own)])


def cprofile(python: Path, cwd: Path, args: list[str], out: Path, env: dict[str, str],
             timeout: float) -> list[str]:
    cmd = [str(python), "-m", "cProfile", "-o", str(out), "-m", "pytest", *args]
    try:
        subprocess.run(cmd, cwd=cwd, env={**os.environ, **env}, capture_output=True,
                       timeout=timeout)
    except subprocess.TimeoutExpired:
        return [f"(the profiled run timed out after {timeout:.0f} s)"]
    if not out.exists():
        return ["(no profile written)"]
    return [f"`{' '.join(['python', '-m', 'cProfile', '-m', 'pytest', *args])}` in the "
            f"generated suite; profile: `{out}` (cProfile inflates the figures: read shares)",
            "", *top_entries(out)]


def serial_profiler(state: State, key: str, full: bool) -> Callable[[Path], list[str]]:
    def run(out: Path) -> list[str]:
        suite, _, res = state.serial[key]
        d = res.dirs["depgraph"]
        dep = plugin("depgraph")
        args = (["-q", "-p", "no:cacheprovider"] if full
                else pb.collect_args(dep, suite))
        return cprofile(state.venvs["depgraph"] / "bin" / "python", d, args,
                        out / f"{'full' if full else 'collect'}-{suite.name}.prof", {},
                        state.opts.timeout * 3)
    return run


def xdist_profiler(state: State, case: str) -> Callable[[Path], list[str]]:
    """The controller's profile (the workers are processes of their own)."""
    def run(out: Path) -> list[str]:
        count = 200 if state.opts.tiny else 2000
        root = state.work / case.replace(":", "-")
        root.mkdir(parents=True, exist_ok=True)
        env = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
        if case == "xdist:flat":
            xb.write_flat_suite(root, count)
            args = list(xb.FLAT_MODES["depgraph, no edges"])
        elif case == "xdist:walker":
            xb.write_flat_suite(root, count)
            args = list(xb.FLAT_MODES["depgraph walker forced"])
        elif case == "xdist:dag":
            xb.write_random_dag(root, count, markers=True)
            args = list(xb.DAG_MODES["depgraph, random DAG"])
        else:
            shape = {s.name: s for s in (xb.chain_heavy_shape(), xb.wide_shape(),
                                         xb.mixed_shape())}[case.split(":", 1)[1]]
            xb.write_dag_suite(root, shape)
            args = ["-p", "depgraph", "-n", "4"]
        return cprofile(Path(xb.PYTHON), root, ["-q", "-p", "xdist", *args], out /
                        f"{case.replace(':', '-')}.prof", env, 600)
    return run


def write_profiles(state: State) -> list[str]:
    out = Path(state.opts.out)
    out.mkdir(parents=True, exist_ok=True)
    lines: list[str] = []
    done = set()
    for t in state.targets:
        if t.met is False and t.case and t.case not in done and t.case in state.profilers:
            done.add(t.case)
            log(f"profiling {t.case}")
            missed = [m.what for m in state.targets if m.met is False and m.case == t.case]
            lines += [f"### Profile of `{t.case}` (missed: {'; '.join(missed)})", ""]
            if all("RSS" in m for m in missed):
                lines += ["(only memory missed here: the profile shows where the time goes, "
                          "not the memory)", ""]
            try:
                lines += state.profilers[t.case](out)
            except Exception as error:  # a profile that fails is reported, not fatal
                lines.append(f"(profiling failed: {error!r})")
            lines.append("")
    return lines


# --------------------------------------------------------------------------- main


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per row of the 10k suites")
    parser.add_argument("--big-repeat", type=int, default=5, help="runs per row at 100k")
    parser.add_argument("--xdist-repeat", type=int, default=5,
                        help="runs per row of the xdist no-op suites")
    parser.add_argument("--sleep-repeat", type=int, default=5,
                        help="runs per sleeping DAG (about 2.5-3 s each on -n 4)")
    parser.add_argument("--slow-peer-suites", default=FULL_SUITE,
                        help="comma-separated 10k suites on which pytest-order and "
                             "pytest-order+dependency run (once)")
    parser.add_argument("--skip-slow-peers", action="store_true",
                        help="pytest-order and pytest-order+dependency nowhere")
    parser.add_argument("--no-peers", action="store_true", help="no peer at all")
    parser.add_argument("--no-big", action="store_true", help="leave out the 100k suites")
    parser.add_argument("--no-xdist", action="store_true", help="leave out the xdist rows")
    parser.add_argument("--timeout", type=float, default=150.0, help="per pytest run, seconds")
    parser.add_argument("--out", default="/tmp/depgraph-targets",
                        help="where the profiles of missed targets and the suites go")
    parser.add_argument("--tiny", action="store_true",
                        help="1k suites instead of 10k, 10k instead of 100k, 200 xdist tests: "
                             "checks the script, measures nothing")
    return parser.parse_args()


def main() -> int:
    opts = parse_args()
    started = time.time()
    work = Path(opts.out) / "suites"
    work.mkdir(parents=True, exist_ok=True)
    state = State(opts, work)
    load = os.getloadavg()
    def make_venv() -> None:
        state.venvs.setdefault("depgraph", pb.ensure_venv("depgraph"))

    guarded(state, "venvs", make_venv)
    for key in (*SERIAL, *(() if opts.no_big else HUGE)):
        guarded(state, key, functools.partial(run_serial, state, key))
    if not opts.no_xdist:
        guarded(state, "xdist", lambda: run_xdist(state))
        guarded(state, "sleeping DAGs", lambda: run_sleeping(state))
    guarded(state, "judging", lambda: judge_serial(state))
    if not opts.no_xdist:
        guarded(state, "judging xdist", lambda: judge_xdist(state))
    measured_for = time.time() - started
    profiles: list[str] = []
    guarded(state, "profiles", lambda: profiles.extend(write_profiles(state)))

    commit = subprocess.run(["git", "-C", str(pb.ROOT), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    print(f"# Issue 14 targets{' (--tiny: sizes too small to mean anything)' if opts.tiny else ''}"
          f"\n\nCommit `{commit}`, Python {platform.python_version()}, {os.cpu_count()} cores; "
          f"load average {load[0]:.2f} before, {os.getloadavg()[0]:.2f} after; measured in "
          f"{measured_for / 60:.1f} min, {(time.time() - started) / 60:.1f} min with the "
          f"profiles. CPU = user + system (`/usr/bin/time`), medians of interleaved runs.\n")
    print(f"The serial rows ran in the venvs listed at the end; the xdist rows with "
          f"`{xb.PYTHON}`.\n")
    print("| target | measured | met? |")
    print("|---|---|---|")
    for t in state.targets:
        verdict = {True: "yes", False: "**no**", None: "not measured"}[t.met]
        print(f"| {t.what} | {t.measured} | {verdict} |")
    print()
    if state.errors:
        print("## Errors\n")
        for e in state.errors:
            print(f"```\n{e}```\n")
    if profiles:
        print("## Profiles of the missed targets\n")
        print("\n".join(profiles))
    print("## Details\n")
    for d in state.details:
        print(d)
    for venv_name, venv in state.venvs.items():
        with contextlib.suppress(Exception):
            print(f"* venv `{venv_name}`: {pb.versions(venv)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
