"""Collection overhead and full runs of pytest-depgraph side by side with its peers.

Generates the same random DAG of no-op tests once per plugin, in that plugin's own syntax, and
measures for each suite and plugin (median of ``--repeat`` runs, interleaved):

* ``pytest --collect-only -q``: wall time and peak RSS (``/usr/bin/time -f %M``, else
  ``getrusage(RUSAGE_CHILDREN)``);
* ``pytest -q -p no:cacheprovider``: wall time of the full run, and its correctness: every test
  appends its name to a log file, and the script counts the tests that ran, the dependency
  edges whose dependency had not run before its dependent (violations), and the summary line;
* for this plugin only, the graph phases from ``--depgraph-timings`` (extra collect-only runs).

Plugins (each in its own throwaway venv under ``/tmp/depgraph-bench-venvs/<name>``, created on
first use and reused, with the same pytest version as the running interpreter):

* ``plain``: the venv of this plugin with ``-p no:depgraph`` -- the reference of every ratio;
* ``depgraph``: this plugin (``pip install -e`` of this checkout, plus pytest-xdist);
  ``@pytest.mark.depends_on("test_x")``, ``"test_mod_0003.py::test_000012"`` across modules;
* ``pytest-order``: ``@pytest.mark.order(after=[...])``, ``"test_mod_0003.py::test_000012"``
  across modules;
* ``pytest-dependency``: ``@pytest.mark.dependency(depends=[...], scope="session")`` with full
  node ids (one marker only: pytest-dependency reads the closest ``dependency`` marker), and
  ``@pytest.mark.dependency()`` on every test without dependencies. It does not reorder;
* ``pytest-order+dependency``: the pytest-dependency suite run with pytest-order's
  ``--order-dependencies``, which reorders by the pytest-dependency markers;
* ``pytest-depends``: ``@pytest.mark.depends(on=[...])``, ``"test_mod_0003.py::test_000012"``
  across modules.

Suites: ``rand1k`` (1,000 tests, 20 modules), ``rand10k`` (10,000 tests, 200 modules) -- each
test depends on min(i, 3) distinct random earlier tests, tests are spread over the modules at
random and shuffled within each module, so most dependents come before their dependencies in
collection order -- and ``noedge1k`` (1,000 tests, 20 modules, no dependencies). With
``--big``, also ``rand100k`` for ``plain`` and ``depgraph`` (collect-only).

Run: ``python bench/peers_bench.py`` (``--quick`` for the 1k suites only, ``--repeat N``,
``--only PLUGIN,...``, ``--suites NAME,...``, ``--timeout SECONDS`` per pytest run,
``--profile`` to write a cProfile of this plugin's 10k collect-only run). Prints Markdown.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENVS = Path("/tmp/depgraph-bench-venvs")
TIME_BIN = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None
LOG_ENV = "PEERS_BENCH_LOG"


def pytest_version() -> str:
    import pytest

    return pytest.__version__


# --------------------------------------------------------------------------- suites


@dataclass
class Suite:
    name: str
    tests: int
    modules: int
    edges_per_test: int
    seed: int = 1
    module_of: list[int] = field(default_factory=list)
    deps: list[list[int]] = field(default_factory=list)

    def generate(self) -> None:
        rng = random.Random(self.seed)
        self.deps = [
            rng.sample(range(i), min(i, self.edges_per_test)) if self.edges_per_test else []
            for i in range(self.tests)
        ]
        self.module_of = [rng.randrange(self.modules) for _ in range(self.tests)]
        self.order_in_module: dict[int, list[int]] = {m: [] for m in range(self.modules)}
        for i in range(self.tests):
            self.order_in_module[self.module_of[i]].append(i)
        for members in self.order_in_module.values():
            rng.shuffle(members)

    @property
    def edge_count(self) -> int:
        return sum(len(d) for d in self.deps)


def test_name(i: int) -> str:
    return f"test_{i:06d}"


def module_file(m: int) -> str:
    return f"test_mod_{m:04d}.py"


class Syntax:
    """How one plugin spells 'this test depends on these'."""

    def __init__(self, plugin: str) -> None:
        self.plugin = plugin

    def target(self, suite: Suite, i: int, dep: int) -> str:
        if self.plugin == "pytest-dependency":
            return f"{module_file(suite.module_of[dep])}::{test_name(dep)}"
        if suite.module_of[i] == suite.module_of[dep]:
            return test_name(dep)
        return f"{module_file(suite.module_of[dep])}::{test_name(dep)}"

    def decorators(self, suite: Suite, i: int) -> list[str]:
        targets = [self.target(suite, i, d) for d in suite.deps[i]]
        if self.plugin == "depgraph":
            return [f"@pytest.mark.depends_on({', '.join(map(repr, targets))})"] if targets else []
        if self.plugin == "pytest-order":
            return [f"@pytest.mark.order(after={targets!r})"] if targets else []
        if self.plugin == "pytest-depends":
            return [f"@pytest.mark.depends(on={targets!r})"] if targets else []
        if self.plugin == "pytest-dependency":
            if targets:
                return [f'@pytest.mark.dependency(depends={targets!r}, scope="session")']
            return ["@pytest.mark.dependency()"]
        return []  # plain


MODULE_HEADER = """import os
import pytest

_LOG = os.environ.get("{env}")
_F = open(_LOG, "a", buffering=1) if _LOG else None


def _ran(name):
    if _F is not None:
        _F.write(name + "\\n")

"""

# Wraps pytest_depgraph.build.build to time it from outside the package (the generated suite's
# conftest, only for the depgraph suites, only when PEERS_BENCH_BUILD_TIMES is set).
CONFTEST_TIMER = """import os
import time

_OUT = os.environ.get("PEERS_BENCH_BUILD_TIMES")
if _OUT:
    import pytest_depgraph.build as _b
    import pytest_depgraph.plugin as _p

    _orig = _p.build

    def _timed(*args, **kwargs):
        t = time.perf_counter()
        try:
            return _orig(*args, **kwargs)
        finally:
            with open(_OUT, "a") as f:
                f.write(f"{time.perf_counter() - t}\\n")

    _p.build = _timed
"""


def write_suite(suite: Suite, plugin: str, directory: Path) -> None:
    syntax = Syntax(plugin)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "pytest.ini").write_text("[pytest]\n")
    (directory / "conftest.py").write_text(CONFTEST_TIMER if plugin == "depgraph" else "")
    header = MODULE_HEADER.format(env=LOG_ENV)
    for m, members in suite.order_in_module.items():
        lines = [header]
        for i in members:
            lines.extend(syntax.decorators(suite, i))
            lines.append(f"def {test_name(i)}():\n    _ran({test_name(i)!r})\n\n")
        (directory / module_file(m)).write_text("\n".join(lines))


# --------------------------------------------------------------------------- venvs


@dataclass(frozen=True)
class Plugin:
    name: str  # row label
    venv: str  # directory under VENVS
    suite: str  # whose syntax the suite is written in
    args: tuple[str, ...] = ()


PLUGINS = [
    Plugin("plain", "depgraph", "plain", ("-p", "no:depgraph")),
    Plugin("depgraph", "depgraph", "depgraph"),
    Plugin("pytest-order", "pytest-order", "pytest-order"),
    Plugin("pytest-dependency", "pytest-dependency", "pytest-dependency"),
    Plugin(
        "pytest-order+dependency",
        "pytest-order-dependency",
        "pytest-dependency",
        ("--order-dependencies",),
    ),
    Plugin("pytest-depends", "pytest-depends", "pytest-depends"),
]

VENV_PACKAGES = {
    "depgraph": ["pytest-xdist", "-e", str(ROOT)],
    "pytest-order": ["pytest-order"],
    "pytest-dependency": ["pytest-dependency"],
    "pytest-order-dependency": ["pytest-order", "pytest-dependency"],
    "pytest-depends": ["pytest-depends"],
}


def ensure_venv(name: str) -> Path:
    path = VENVS / name
    python = path / "bin" / "python"
    marker = path / ".peers-bench-ready"
    if marker.exists() and python.exists():
        return path
    VENVS.mkdir(parents=True, exist_ok=True)
    print(f"# creating venv {path}", file=sys.stderr, flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", f"pytest=={pytest_version()}",
         *VENV_PACKAGES[name]],
        check=True,
    )
    marker.write_text("ok\n")
    return path


def versions(venv: Path) -> str:
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "list", "--format=json"],
        capture_output=True, text=True, check=True,
    ).stdout
    wanted = {"pytest", "pytest-xdist", "pytest-order", "pytest-dependency", "pytest-depends",
              "pytest-depgraph", "networkx"}
    return ", ".join(f"{p['name']} {p['version']}" for p in json.loads(out)
                     if p["name"].lower() in wanted)


# --------------------------------------------------------------------------- running


@dataclass
class Run:
    wall: float
    rss_kb: int
    rc: int
    stdout: str
    timed_out: bool = False


def run_pytest(venv: Path, cwd: Path, args: list[str], timeout: float,
               env_extra: dict[str, str] | None = None) -> Run:
    env = dict(os.environ)
    env.pop(LOG_ENV, None)
    env.pop("PEERS_BENCH_BUILD_TIMES", None)
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
    env["PYTHONDONTWRITEBYTECODE"] = "0"
    if env_extra:
        env.update(env_extra)
    cmd = [str(venv / "bin" / "python"), "-m", "pytest", *args]
    rss_file = None
    if TIME_BIN:
        fd, rss_file = tempfile.mkstemp(prefix="rss-")
        os.close(fd)
        cmd = [TIME_BIN, "-f", "%M", "-o", rss_file, *cmd]
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return Run(timeout, 0, -1, "", timed_out=True)
    wall = time.perf_counter() - start
    if rss_file:
        try:
            rss = int(Path(rss_file).read_text().split()[-1])
        except (ValueError, IndexError):
            rss = 0
        os.unlink(rss_file)
    else:  # only grows: a max over all children so far, good enough when it grows
        rss = max(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, before)
    return Run(wall, rss, proc.returncode, proc.stdout + proc.stderr)


SUMMARY = re.compile(
    r"^=*\s*(\d+ (?:passed|failed|skipped|error|errors|deselected|tests? collected).*?)\s*=*$",
    re.M,
)


def summary_line(out: str) -> str:
    found = SUMMARY.findall(out)
    return found[-1] if found else (out.strip().splitlines() or ["(no output)"])[-1][:120]


def check_order(suite: Suite, log: Path) -> tuple[int, int]:
    """(tests that ran, dependency edges violated: dependent ran, dependency not before it)."""
    ran = log.read_text().split() if log.exists() else []
    position = {name: k for k, name in enumerate(ran)}
    violations = 0
    for i, deps in enumerate(suite.deps):
        p = position.get(test_name(i))
        if p is None:
            continue
        for d in deps:
            q = position.get(test_name(d))
            if q is None or q > p:
                violations += 1
    return len(ran), violations


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


# --------------------------------------------------------------------------- main


SUITES = {
    "rand1k": Suite("rand1k", 1_000, 20, 3),
    "noedge1k": Suite("noedge1k", 1_000, 20, 0),
    "rand10k": Suite("rand10k", 10_000, 200, 3),
    "rand100k": Suite("rand100k", 100_000, 2_000, 3),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="1k suites only")
    parser.add_argument("--big", action="store_true", help="add rand100k (plain, depgraph)")
    parser.add_argument("--suites", default="", help="comma-separated suite names")
    parser.add_argument("--only", default="", help="comma-separated plugin names")
    parser.add_argument("--timeout", type=float, default=300.0, help="per pytest run, seconds")
    parser.add_argument("--no-full", action="store_true", help="collect-only measurements only")
    parser.add_argument("--profile", default="", help="write a cProfile of depgraph's "
                        "collect-only run of the largest suite to this path")
    parser.add_argument("--keep", default="", help="generate the suites here and keep them")
    opts = parser.parse_args()

    names = ["rand1k", "noedge1k"] if opts.quick else ["rand1k", "noedge1k", "rand10k"]
    if opts.big:
        names.append("rand100k")
    if opts.suites:
        names = opts.suites.split(",")
    plugins = [p for p in PLUGINS if not opts.only or p.name in opts.only.split(",")
               or p.name == "plain"]

    venvs = {p.venv: ensure_venv(p.venv) for p in plugins}
    work = Path(opts.keep) if opts.keep else Path(tempfile.mkdtemp(prefix="peers-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()
    started = time.time()

    print(f"Python {platform.python_version()} on {platform.machine()}, "
          f"{os.cpu_count()} cores, load average before {load_before[0]:.2f}; "
          f"median of {opts.repeat}, runs interleaved across plugins\n")
    for venv_name, venv in venvs.items():
        print(f"* venv `{venv_name}`: {versions(venv)}")
    print()

    for suite_name in names:
        suite = SUITES[suite_name]
        suite.generate()
        suite_plugins = plugins if suite_name != "rand100k" else [
            p for p in plugins if p.name in ("plain", "depgraph")]
        dirs: dict[str, Path] = {}
        for p in suite_plugins:
            d = work / suite_name / p.suite
            if p.suite not in {x.name for x in dirs.values()}:
                shutil.rmtree(d, ignore_errors=True)
                write_suite(suite, p.suite, d)
            dirs[p.name] = d
        full = not opts.no_full and suite_name != "rand100k"
        collect: dict[str, list[Run]] = {p.name: [] for p in suite_plugins}
        fulls: dict[str, list[Run]] = {p.name: [] for p in suite_plugins}
        checks: dict[str, tuple[int, int, str]] = {}
        phases: list[str] = []
        build_times: list[float] = []
        dead: set[str] = set()

        # warm-up: byte-compile each suite once per plugin (not timed)
        for p in suite_plugins:
            r = run_pytest(venvs[p.venv], dirs[p.name], ["--collect-only", "-q", *p.args],
                           opts.timeout)
            if r.timed_out:
                dead.add(p.name)
                print(f"# {suite_name} {p.name}: warm-up timed out after {opts.timeout:.0f} s",
                      file=sys.stderr, flush=True)
        for rep in range(opts.repeat):
            for p in suite_plugins:
                if p.name in dead:
                    continue
                r = run_pytest(venvs[p.venv], dirs[p.name], ["--collect-only", "-q", *p.args],
                               opts.timeout)
                collect[p.name].append(r)
                if r.timed_out:
                    dead.add(p.name)
                    continue
                if full:
                    log = work / f"{suite_name}-{p.name}-{rep}.log"
                    log.unlink(missing_ok=True)
                    r = run_pytest(venvs[p.venv], dirs[p.name],
                                   ["-q", "-p", "no:cacheprovider", *p.args], opts.timeout,
                                   {LOG_ENV: str(log)})
                    fulls[p.name].append(r)
                    if r.timed_out:
                        dead.add(p.name)
                        continue
                    ran, violations = check_order(suite, log)
                    checks[p.name] = (ran, violations, summary_line(r.stdout))
                    log.unlink(missing_ok=True)
                print(f"# {suite_name} rep {rep + 1} {p.name}: collect "
                      f"{collect[p.name][-1].wall:.2f} s"
                      + (f", full {fulls[p.name][-1].wall:.2f} s" if full else ""),
                      file=sys.stderr, flush=True)
            if "depgraph" in dirs and "depgraph" not in dead:
                times = work / f"{suite_name}-build-times.txt"
                r = run_pytest(venvs["depgraph"], dirs["depgraph"],
                               ["--collect-only", "-q", "--depgraph-timings"], opts.timeout,
                               {"PEERS_BENCH_BUILD_TIMES": str(times)})
                line = next((x for x in r.stdout.splitlines()
                             if x.startswith("depgraph timings")), "")
                if line:
                    phases.append(line)
                if times.exists():
                    build_times.extend(float(x) for x in times.read_text().split())
                    times.unlink()

        # ------------------------------------------------------------ report
        print(f"### {suite_name}: {suite.tests:,} tests, {suite.edge_count:,} edges, "
              f"{suite.modules} modules\n")
        base_c = median([r.wall for r in collect["plain"]])
        base_f = median([r.wall for r in fulls["plain"]]) if full else float("nan")
        head = "| plugin | collect-only (s) | ratio | peak RSS (MiB) | ratio |"
        sep = "|---|---:|---:|---:|---:|"
        if full:
            head += " full run (s) | ratio | tests run | order violations | summary |"
            sep += "---:|---:|---:|---:|---|"
        print(head)
        print(sep)
        base_m = median([r.rss_kb for r in collect["plain"]])
        for p in suite_plugins:
            cs = collect[p.name]
            if not cs or cs[-1].timed_out:
                print(f"| {p.name} | > {opts.timeout:.0f} (timed out) | | | |"
                      + (" | | | | |" if full else ""))
                continue
            bad = "" if all(r.rc == 0 for r in cs) else f" (exit {cs[-1].rc})"
            c = median([r.wall for r in cs])
            m = median([r.rss_kb for r in cs])
            row = (f"| {p.name} | {c:.2f}{bad} | {c / base_c:.2f} | {m / 1024:.0f} | "
                   f"{m / base_m:.2f} |")
            if full:
                fs = fulls[p.name]
                if not fs or fs[-1].timed_out:
                    row += f" > {opts.timeout:.0f} (timed out) | | | | |"
                else:
                    f = median([r.wall for r in fs])
                    ran, violations, summary = checks.get(p.name, (0, 0, ""))
                    row += (f" {f:.2f} | {f / base_f:.2f} | {ran:,} | {violations:,} | "
                            f"{summary} |")
            print(row)
        if phases:
            print(f"\ndepgraph `--depgraph-timings` (last of {len(phases)}): "
                  f"`{phases[-1]}`")
        if build_times:
            print(f"`pytest_depgraph.build.build` wall time, timed from the suite's conftest: "
                  f"median {median(build_times) * 1000:.1f} ms of {len(build_times)} runs")
        print(flush=True)

    if opts.profile:
        big = names[-1]
        d = work / big / "depgraph"
        if d.exists():
            subprocess.run([str(venvs["depgraph"] / "bin" / "python"), "-m", "cProfile", "-o",
                            opts.profile, "-m", "pytest", "--collect-only", "-q"],
                           cwd=d, capture_output=True)
            print(f"cProfile of depgraph `--collect-only -q` on {big}: {opts.profile}")

    print(f"\nLoad average after: {os.getloadavg()[0]:.2f}; "
          f"{time.time() - started:.0f} s for the whole script.")
    if not opts.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
