"""Discovery of undeclared dependencies: ``--depgraph-discover`` against detect-test-pollution
and iPFlakies on generated suites whose dependencies the generator planted, so it knows the truth.

Each suite (``--sizes``, default 200 and 1,000 tests, 50 a module) holds, per 200 tests:

* 6 *needs* (T passes only when S ran before it in the same process): S sets a module global of
  a helper module, an environment variable or a file in the session's temporary folder (two of
  each), T reads it;
* 6 *conflicts* (T passes alone, fails when P ran before it): P leaves the same kinds of state;
* 2 chains of needs, c needs b needs a (b computes its state from a's: c passes only after both);
* 3 needs and 2 conflicts that are declared (``depends_on`` on T, ``depends_on(T,
  on_failure="run")`` on P): true, but not hidden, so never to be reported;
* a test failing at random (30%, one per 500 tests or fewer), and ~160 independent tests, every
  fifth of which writes and reads back state of its own (writers nobody reads).

Every planted test passes in collection order (S before T, T before P) and alone where it
should. A conftest appends one line per test execution (``pytest_runtest_call``) to
``executions.log`` beside it: every tool's executions are counted the same way.

The tools, each in its own venv under ``/tmp/depgraph-bench-venvs`` (made on first use):

* **depgraph**: ``pytest --depgraph-discover --depgraph-discover-json PATH``, serially and on
  ``-n 2``; the interpreter given with ``--depgraph-python`` (default: a venv with this checkout
  and pytest-xdist). Orders are read from its summary.
* **detect-test-pollution** 1.2: ``--failing-test T --testids-file ...``, once for the test of
  every hidden pair (needs and conflicts: it is told each victim, not the declared pairs' tests,
  which it could not tell from hidden ones), serially. It bisects for a polluter of a test that
  passes alone, so it cannot find a need (it stops on "test failed!"): those calls are counted
  too. It looks for no random failure.
* **iPFlakies** 1.1.1 (pytest 6.2.5, pytest-random-order, pytest-csv, as it pins them): its own
  steps as its ``main()`` calls them, driven from a small script in its venv: the suite run
  once, iDFlakies's ``--it`` random orders (default 100) and their analysis (victims, brittles,
  non-deterministic tests), then for each order-dependent test what ``-t TEST`` does before its
  patcher: the verdict and the minimiser (the test paired with each other test, hits verified
  3 times). Its patcher (which writes fixes) is not run. The minimiser costs about 2(n - 1)
  executions per order-dependent test; ``--ipflakies-minimise K`` runs it for the first K of them
  and extrapolates executions and wall time for the rest from their mean (said in the row).
  iPFlakies sizes its output to the terminal at import (``os.get_terminal_size``) and fails
  without one: it runs under ``script`` (a pseudo-terminal).

``--model`` runs none of them: the discovery's search (``pytest_depgraph.discover.search``) in
this process, its lists run by :class:`Model`, the planted truth played back (a need passes
only after its test passed in the same list, a conflict fails after its test ran, the random
test fails at its rate), for ``--model-seeds`` seeds of the random test, ``--model-width``
lists at once (the slots of ``-n N``: the shared lists of a round, one a slot). Its executions
are what a real run counts, without the processes: deterministic, and independent of the
machine's load.

Recall: the planted hidden pairs found (kind, test, other). Precision: true findings over all
findings of needs and conflicts; a declared pair reported (either way) counts against it and is
also shown apart. ``c needs a`` in a chain is true but not planted: neither counted nor held
against. Flaky: the random test reported as flaky; a planted dependency's test reported flaky is
a false finding.

    python bench/discover_bench.py [--sizes 200,1000] [--only depgraph,dtp,ipflakies]
        [--depgraph-python PY] [--ipflakies-iterations 100] [--ipflakies-minimise K]
        [--keep DIR] [--seed S]
    python bench/discover_bench.py --model [--sizes 200,1000] [--seed S] [--model-seeds K]
        [--model-width N]

prints Markdown on stdout (progress on stderr).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
VENVS = Path("/tmp/depgraph-bench-venvs")
PER_MODULE = 50
FLAKY_RATE_ENV = "DISCBENCH_FLAKY_RATE"  # the random test's failure rate (default 0.3)
VIAS = ("global", "env", "file")

CONFTEST = '''\
"""Counts test executions (one line per call in executions.log) and gives the file state."""
import os
import pathlib

import pytest

COUNTER = pathlib.Path(__file__).with_name("executions.log")


def pytest_configure(config):
    config.addinivalue_line("markers", "depends_on: registered for runs without pytest-depgraph")


def pytest_runtest_call(item):
    fd = os.open(COUNTER, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (item.nodeid + "\\n").encode())
    finally:
        os.close(fd)


@pytest.fixture(scope="session")
def scratch(tmp_path_factory):
    return tmp_path_factory.mktemp("scratch")
'''

STATE = '"""State the tests share within one process."""\nvalues = {}\n'


@dataclass(frozen=True)
class Pair:
    """One planted dependency: ``test`` needs ``other`` before it, or conflicts with it."""

    kind: str  # "needs" | "conflicts"
    test: str
    other: str
    via: str
    declared: bool = False
    chain: bool = False


@dataclass
class Suite:
    """The generated tests, their sources, and the truth."""

    size: int
    seed: int = 1
    pairs: list[Pair] = field(default_factory=list)
    flaky: list[str] = field(default_factory=list)
    bodies: dict[int, list[str]] = field(default_factory=dict)  # index -> decorator+body lines
    implied: set[tuple[str, str]] = field(default_factory=set)  # (c, a) of each chain

    def __post_init__(self) -> None:
        rng = random.Random(self.seed * 1_000_003 + self.size)
        scale = max(1, round(self.size / 200))
        free = list(range(self.size))
        rng.shuffle(free)

        def take(count: int) -> list[int]:
            return sorted(free.pop() for _ in range(count))

        key = 0
        for declared, count in ((False, 6 * scale), (True, 3 * scale)):
            for k in range(count):
                key += 1
                s, t = take(2)
                self._needs(s, t, VIAS[k % 3], f"k{key}", declared)
        for declared, count in ((False, 6 * scale), (True, 2 * scale)):
            for k in range(count):
                key += 1
                t, p = take(2)
                self._conflicts(t, p, VIAS[k % 3], f"k{key}", declared)
        for _ in range(2 * scale):
            key += 1
            a, b, c = take(3)
            self._chain(a, b, c, f"k{key}")
        for _ in range(max(1, self.size // 500)):
            (f,) = take(1)
            self.flaky.append(self.nodeid(f))
            self.bodies[f] = [
                f"    rate = float(os.environ.get('{FLAKY_RATE_ENV}', '0.3'))",
                "    assert random.SystemRandom().random() >= rate",
            ]
        for n, i in enumerate(free):
            self.bodies[i] = (
                [f"    discstate.values['own{i}'] = {i}",
                 f"    assert discstate.values['own{i}'] == {i}"]
                if n % 5 == 0 else [f"    assert sum(range({i % 17})) == {sum(range(i % 17))}"]
            )

    # -- naming

    def nodeid(self, index: int) -> str:
        return f"test_m{index // PER_MODULE:02}.py::test_t{index:04}"

    def target(self, index: int, of: int) -> str:
        """How a ``depends_on`` on test ``of`` names test ``index``: by name in its module."""
        same = index // PER_MODULE == of // PER_MODULE
        return f"test_t{index:04}" if same else self.nodeid(index)

    # -- planting

    @staticmethod
    def _set(via: str, key: str) -> list[str]:
        return {
            "global": [f"    discstate.values[{key!r}] = 1"],
            "env": [f"    os.environ['DISCBENCH_{key.upper()}'] = '1'"],
            "file": [f"    (scratch / {key!r}).write_text('1')"],
        }[via]

    @staticmethod
    def _is_set(via: str, key: str) -> str:
        return {
            "global": f"discstate.values.get({key!r}) == 1",
            "env": f"os.environ.get('DISCBENCH_{key.upper()}') == '1'",
            "file": f"(scratch / {key!r}).exists()",
        }[via]

    def _needs(self, s: int, t: int, via: str, key: str, declared: bool) -> None:
        self.bodies[s] = self._set(via, key)
        decorator = [f'@pytest.mark.depends_on("{self.target(s, t)}")'] if declared else []
        self.bodies[t] = [*decorator, f"    assert {self._is_set(via, key)}"]
        self.pairs.append(Pair("needs", self.nodeid(t), self.nodeid(s), via, declared))

    def _conflicts(self, t: int, p: int, via: str, key: str, declared: bool) -> None:
        self.bodies[t] = [f"    assert not {self._is_set(via, key)}"]
        decorator = (
            [f'@pytest.mark.depends_on("{self.target(t, p)}", on_failure="run")']
            if declared else []
        )
        self.bodies[p] = [*decorator, *self._set(via, key)]
        self.pairs.append(Pair("conflicts", self.nodeid(t), self.nodeid(p), via, declared))

    def _chain(self, a: int, b: int, c: int, key: str) -> None:
        self.bodies[a] = [f"    discstate.values['{key}a'] = 1"]
        self.bodies[b] = [f"    discstate.values['{key}b'] = discstate.values['{key}a'] + 1"]
        self.bodies[c] = [f"    assert discstate.values.get('{key}b') == 2"]
        ids = [self.nodeid(i) for i in (a, b, c)]
        self.pairs.append(Pair("needs", ids[1], ids[0], "global", chain=True))
        self.pairs.append(Pair("needs", ids[2], ids[1], "global", chain=True))
        self.implied.add((ids[2], ids[0]))

    # -- the truth

    @property
    def hidden(self) -> list[Pair]:
        return [p for p in self.pairs if not p.declared]

    @property
    def declared(self) -> list[Pair]:
        return [p for p in self.pairs if p.declared]

    @property
    def victims(self) -> list[str]:
        """Every test whose outcome a planted pair makes depend on the order."""
        return sorted({p.test for p in self.pairs})

    @property
    def hidden_victims(self) -> list[str]:
        """The tests of the hidden pairs: what detect-test-pollution is told."""
        return sorted({p.test for p in self.hidden})

    def describe(self) -> str:
        hidden = self.hidden
        needs = sum(1 for p in hidden if p.kind == "needs" and not p.chain)
        conflicts = sum(1 for p in hidden if p.kind == "conflicts")
        chains = sum(1 for p in hidden if p.chain) // 2
        return (
            f"{self.size} tests in {self.modules} modules: {len(hidden)} hidden pairs "
            f"({needs} needs, {conflicts} conflicts, {chains} chains of 3 = {2 * chains} needs), "
            f"{len(self.declared)} declared pairs, {len(self.flaky)} failing at random"
        )

    @property
    def modules(self) -> int:
        return (self.size + PER_MODULE - 1) // PER_MODULE

    def write(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "conftest.py").write_text(CONFTEST, encoding="utf-8")
        (folder / "discstate.py").write_text(STATE, encoding="utf-8")
        for module in range(self.modules):
            lines = ["import os", "import random", "", "import pytest", "", "import discstate", ""]
            for i in range(module * PER_MODULE, min(self.size, (module + 1) * PER_MODULE)):
                body = self.bodies[i]
                decorators = [line for line in body if line.startswith("@")]
                code = [line for line in body if not line.startswith("@")]
                uses = "scratch" if any("scratch" in line for line in code) else ""
                lines += [*decorators, f"def test_t{i:04}({uses}):", *code, "", ""]
            (folder / f"test_m{module:02}.py").write_text("\n".join(lines), encoding="utf-8")


# --------------------------------------------------------------------------- scoring


@dataclass
class Finding:
    kind: str  # needs | conflicts | flaky
    test: str
    other: str | None


@dataclass
class Score:
    found: int = 0  # planted hidden pairs found
    planted: int = 0
    true: int = 0  # needs/conflicts findings that are planted hidden pairs or implied
    false: int = 0
    declared: int = 0  # declared pairs reported
    flaky_found: int = 0
    flaky_false: int = 0  # tests wrongly reported flaky
    wrong: list[str] = field(default_factory=list)

    @property
    def recall(self) -> str:
        return f"{self.found}/{self.planted}"

    @property
    def precision(self) -> str:
        total = self.true + self.false + self.declared
        return f"{self.true}/{total}" if total else "-"


def score(suite: Suite, findings: list[Finding]) -> Score:
    hidden = {(p.kind, p.test, p.other) for p in suite.hidden}
    declared = {frozenset((p.test, p.other)) for p in suite.declared}
    result = Score(planted=len(hidden))
    seen: set[tuple[str, str, str | None]] = set()
    for f in findings:
        if (f.kind, f.test, f.other) in seen:
            continue
        seen.add((f.kind, f.test, f.other))
        if f.kind == "flaky":
            if f.test in suite.flaky:
                result.flaky_found += 1
            else:
                result.flaky_false += 1
                result.wrong.append(f"flaky {f.test}")
            continue
        if (f.kind, f.test, f.other) in hidden:
            result.found += 1
            result.true += 1
        elif f.kind == "needs" and (f.test, f.other) in suite.implied:
            result.true += 1
        elif frozenset((f.test, f.other or "")) in declared:
            result.declared += 1
            result.wrong.append(f"declared {f.kind} {f.test} {f.other}")
        else:
            result.false += 1
            result.wrong.append(f"{f.kind} {f.test} {f.other}")
    return result


# --------------------------------------------------------------------------- the tools


@dataclass
class Result:
    tool: str
    findings: list[Finding]
    orders: str  # processes or orders, as each tool counts them
    executions: int
    wall: float
    note: str = ""
    cpu: float = float("nan")  # user + system of every process the tool started


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(tool: Callable[..., Result], *args: Any) -> Result:
    """The tool's result with the CPU time of the processes it started (and waited for)."""
    before = children_cpu()
    result = tool(*args)
    result.cpu = children_cpu() - before
    return result


def ensure_venv(name: str, packages: list[str]) -> Path:
    """A throwaway venv under VENVS, made once (delete the folder to rebuild)."""
    path = VENVS / name
    python = path / "bin" / "python"
    marker = path / ".discover-bench-ready"
    if marker.exists() and python.exists():
        return python
    VENVS.mkdir(parents=True, exist_ok=True)
    print(f"# creating venv {path}", file=sys.stderr, flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", *packages], check=True)
    marker.write_text("ok\n")
    return python


def clean_env(python: Path) -> dict[str, str]:
    env = dict(os.environ)
    for name in ("PYTEST_ADDOPTS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD", FLAKY_RATE_ENV):
        env.pop(name, None)
    env["PATH"] = f"{python.parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def executions(folder: Path) -> int:
    counter = folder / "executions.log"
    return len(counter.read_text().splitlines()) if counter.exists() else 0


def reset(folder: Path) -> None:
    (folder / "executions.log").unlink(missing_ok=True)


def run_depgraph(python: Path, folder: Path, workers: int) -> Result:
    reset(folder)
    report = folder / "discover.json"
    report.unlink(missing_ok=True)
    args = [str(python), "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
            "--depgraph-discover", f"--depgraph-discover-json={report}"]
    if workers:
        args += ["-n", str(workers)]
    start = time.perf_counter()
    done = subprocess.run(args, cwd=folder, env=clean_env(python), capture_output=True,
                          text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode not in (0, 1) or not report.exists():
        raise SystemExit(f"{shlex.join(args)} exited {done.returncode}:\n"
                         f"{done.stdout[-3000:]}{done.stderr[-3000:]}")
    findings = [Finding(f["kind"], f["test"], f.get("other"))
                for f in json.loads(report.read_text())]
    cost = re.search(r"([\d,]+) orders? of every test, ([\d,]+) tests? alone and ([\d,]+) "
                     r"shorter lists?", done.stdout)
    orders = f"{cost[1]} orders + {cost[2]} alone + {cost[3]} shorter lists" if cost else "?"
    label = "depgraph" + (f" -n {workers}" if workers else " (serial)")
    return Result(label, findings, orders, executions(folder), wall)


def run_dtp(python: Path, folder: Path, suite: Suite) -> Result:
    reset(folder)
    ids = folder / "testids.txt"
    ids.write_text("".join(suite.nodeid(i) + "\n" for i in range(suite.size)))
    findings: list[Finding] = []
    calls = failed_alone = 0
    other_outcomes: list[str] = []
    start = time.perf_counter()
    for victim in suite.hidden_victims:
        calls += 1
        done = subprocess.run(
            # its console script: under ``python -m`` it would pass ``-p __main__`` to pytest
            [str(python.parent / "detect-test-pollution"), "--failing-test", victim,
             "--testids-file", str(ids)],
            cwd=folder, env=clean_env(python), capture_output=True, text=True, check=False,
        )
        match = re.search(r"the polluting test is: (\S+)", done.stdout)
        if match:
            findings.append(Finding("conflicts", victim, match.group(1)))
        elif "test failed!" in done.stdout:
            failed_alone += 1
        elif "Traceback" in done.stderr:
            raise SystemExit(f"detect-test-pollution failed on {victim}:\n{done.stderr[-3000:]}")
        else:
            other_outcomes.append(done.stdout.strip().splitlines()[-1])
    wall = time.perf_counter() - start
    note = f"told {calls} victims; {failed_alone} fail alone (needs): it stops there"
    if other_outcomes:
        note += "; " + "; ".join(sorted(set(other_outcomes)))
    return Result("detect-test-pollution", findings, f"{calls} bisections", executions(folder),
                  wall, note)


IPFLAKIES_DRIVER = '''\
"""iPFlakies's steps as its main() calls them, without the patcher; results to a JSON file."""
import json, sys, time
from ipflakies.utils import pytest_cmd
from ipflakies.initializers import collect_tests, verdict, VICTIM
from ipflakies.idflakies import idflakies_exust
from ipflakies.detector import find_polluter_or_state_setter

out, iterations, minimise = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
counter = "executions.log"
def count():
    try:
        return sum(1 for _ in open(counter))
    except FileNotFoundError:
        return 0
result = {"od": {}, "pairs": [], "minimised": [], "stopped": None}
start = time.perf_counter()
pytest_cmd([])  # main(): the suite once, before anything
tests = collect_tests()
result["tests"] = tests
try:
    flakies = idflakies_exust(tests, iterations, "ICSE_DEMO", 3, 5, 3, False)
except SystemExit:
    flakies, result["stopped"] = {}, "iDFlakies exited (a verdict saw a non-deterministic test)"
result["od"] = {t: v["type"] for t, v in flakies.items()}
result["detect"] = {"executions": count(), "wall": time.perf_counter() - start}
for test, kind in result["od"].items():
    if kind not in ("victim", "brittle") or len(result["minimised"]) >= minimise:
        continue
    before, t0 = count(), time.perf_counter()
    try:
        verd = verdict(test, 3)
    except SystemExit:
        result["minimised"].append({"test": test, "executions": count() - before,
                                    "wall": time.perf_counter() - t0, "stopped": "verdict"})
        continue
    task = "polluter" if verd == VICTIM else "state-setter"
    found = find_polluter_or_state_setter("bench", tests, test, task, "session", 3, False)
    for other in found:
        result["pairs"].append(["conflicts" if task == "polluter" else "needs", test, other])
    result["minimised"].append({"test": test, "executions": count() - before,
                                "wall": time.perf_counter() - t0})
result["wall"] = time.perf_counter() - start
json.dump(result, open(out, "w"))
'''


def executions_per_order(folder: Path) -> int:
    return sum(1 for f in folder.glob("test_m*.py") for line in f.read_text().splitlines()
               if line.startswith("def test_"))


def run_ipflakies(python: Path, folder: Path, iterations: int, minimise: int) -> Result:
    reset(folder)
    driver = folder.parent / f"ipflakies_driver_{folder.name}.py"
    driver.write_text(IPFLAKIES_DRIVER)
    out = folder.parent / f"ipflakies_{folder.name}.json"
    out.unlink(missing_ok=True)
    command = shlex.join([str(python), str(driver), str(out), str(iterations), str(minimise)])
    start = time.perf_counter()
    done = subprocess.run(["script", "-qec", f"stty cols 120 rows 40; {command}", "/dev/null"],
                          cwd=folder, env=clean_env(python), capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - start
    if not out.exists():
        raise SystemExit(f"iPFlakies wrote nothing ({done.returncode}):\n{done.stdout[-3000:]}")
    data = json.loads(out.read_text())
    findings = [Finding("flaky", t, None) for t, k in data["od"].items() if k == "NOD"]
    findings += [Finding(kind, test, other) for kind, test, other in data["pairs"]]
    od = [t for t, k in data["od"].items() if k in ("victim", "brittle")]
    measured = data["minimised"]
    total_exec, total_wall = executions(folder), wall
    note = f"{len(od)} order-dependent tests found by {iterations} random orders"
    if len(measured) < len(od) and measured:
        rest = len(od) - len(measured)
        mean_exec = sum(m["executions"] for m in measured) / len(measured)
        mean_wall = sum(m["wall"] for m in measured) / len(measured)
        total_exec += round(rest * mean_exec)
        total_wall += rest * mean_wall
        note += (f"; minimiser run on {len(measured)}, extrapolated for {rest} more "
                 f"({mean_exec:,.0f} executions, {mean_wall:.0f} s each)")
    if od and not measured:
        n = len(data.get("tests", [])) or executions_per_order(folder)
        floor = len(od) * (n + 3 + 2 * (n - 1))
        total_exec += floor
        note += (f"; minimiser not run: at least {floor:,} more executions counted in (each "
                 f"test's verdict runs the suite and the test alone 3 times, then pairs it "
                 f"with the {n - 1:,} others), its wall time not")
    if data["stopped"]:
        note += f"; {data['stopped']}"
    orders = f"{iterations + 1} orders + {len(od)} minimisations"
    return Result("iPFlakies", findings, orders, total_exec, total_wall, note)


# --------------------------------------------------------------------------- the model


def index(nodeid: str) -> int:
    """The test's number in the serial order (``test_t0042`` is 42)."""
    return int(nodeid.rpartition("test_t")[2])


class Model:
    """The suite's planted truth, played back in-process: the runner a discovery's search is
    given, without processes. Each list is a fresh process: a need's test passes only when
    the test it needs passed before it in the list (a chain's middle fails without its own
    need, so its state is not set), a conflict's test fails when its polluter ran before it,
    the random test fails at its rate (seeded), every other test passes."""

    def __init__(self, suite: Suite, rate: float = 0.3, seed: int = 0) -> None:
        self.needs = {index(p.test): index(p.other) for p in suite.pairs if p.kind == "needs"}
        self.conflicts = {index(p.test): index(p.other) for p in suite.pairs
                          if p.kind == "conflicts"}
        self.flaky = {index(t) for t in suite.flaky}
        self.rate = rate
        self.rng = random.Random(seed)
        self.executions = 0
        #: the calls, each a set of lists run at once: the steps a real run waits for
        self.rounds = 0

    def run(self, lists: Sequence[Sequence[int]]) -> list[dict[int, bool]]:
        self.rounds += 1
        results = []
        for order in lists:
            self.executions += len(order)
            ran: set[int] = set()
            good: set[int] = set()
            outcomes: dict[int, bool] = {}
            for test in order:
                ok = test not in self.needs or self.needs[test] in good
                ok = ok and not (test in self.conflicts and self.conflicts[test] in ran)
                if test in self.flaky:
                    ok = self.rng.random() >= self.rate
                outcomes[test] = ok
                ran.add(test)
                if ok:
                    good.add(test)
            results.append(outcomes)
        return results


def declared_graph(suite: Suite) -> Any:
    """The declared pairs as the plan's graph holds them: ``depends_on("S")`` on T a requires
    edge T -> S, ``depends_on("T", on_failure="run")`` on P an after edge P -> T."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from pytest_depgraph.core.graph.storage import Graph, Kind, Origin

    graph = Graph(suite.size)
    for pair in suite.declared:
        test, other = index(pair.test), index(pair.other)
        if pair.kind == "needs":
            graph.add_edge(test, other, Kind.REQUIRES, Origin("marker", pair.test))
        else:
            graph.add_edge(other, test, Kind.AFTER, Origin("marker", pair.other))
    return graph


def run_model(suite: Suite, seed: int, verify: int, width: int = 1) -> Result:
    """The discovery's search on the suite's truth in-process (see :class:`Model`), its
    shared lists ``width`` a round (as on ``-n width``)."""
    from pytest_depgraph.discover.search import discover

    model = Model(suite, seed=seed)
    start = time.perf_counter()
    found = discover(declared_graph(suite), suite.size, model.run, verify, width)
    wall = time.perf_counter() - start
    assert found.executions == model.executions
    findings = [Finding(f.kind, suite.nodeid(f.test),
                        None if f.other is None else suite.nodeid(f.other))
                for f in found.findings]
    spent = sorted(((f.executions, suite.nodeid(f.test)) for f in found.findings
                    if f.kind != "flaky"), reverse=True)[:3]
    note = (f"seed {seed}; {model.rounds} rounds of lists at once; "
            f"{found.orders * suite.size:,} in whole orders; costliest victims: "
            + ", ".join(f"{t.rpartition('::')[2]} {e:,}" for e, t in spent))
    shorter = found.lists - found.orders - found.alone
    return Result("model", findings, f"{found.orders} orders + {found.alone} alone + "
                  f"{shorter} shorter lists", found.executions, wall, note)


# --------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="200,1000")
    parser.add_argument("--only", default="depgraph,dtp,ipflakies")
    parser.add_argument("--depgraph-python", type=Path, default=None)
    parser.add_argument("--workers", default="0,2", help="depgraph's -n values (0: serial)")
    parser.add_argument("--ipflakies-iterations", type=int, default=100)
    parser.add_argument("--ipflakies-minimise", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", type=Path, default=None)
    parser.add_argument("--model", action="store_true",
                        help="the search in-process on the planted truth; no tool runs")
    parser.add_argument("--model-seeds", type=int, default=10,
                        help="how many seeds of the random test the model runs")
    parser.add_argument("--verify", type=int, default=3, help="the model's K")
    parser.add_argument("--model-width", type=int, default=1,
                        help="the lists the model runs at once (the slots: -n N)")
    args = parser.parse_args()
    tools = args.only.split(",")
    results: list[tuple[Suite, Result, Score]] = []
    if args.model:
        for size in map(int, args.sizes.split(",")):
            suite = Suite(size, args.seed)
            print(f"# {suite.describe()}", file=sys.stderr, flush=True)
            for seed in range(args.model_seeds):
                run = run_model(suite, seed, args.verify, args.model_width)
                results.append((suite, run, score(suite, run.findings)))
        table(results)
        return
    with tempfile.TemporaryDirectory() as scratch:
        base = args.keep or Path(scratch)
        for size in map(int, args.sizes.split(",")):
            suite = Suite(size, args.seed)
            folder = base / f"discover{size}"
            suite.write(folder)
            (base / f"truth{size}.json").write_text(json.dumps(
                {"hidden": [vars(p) for p in suite.hidden],
                 "declared": [vars(p) for p in suite.declared], "flaky": suite.flaky},
                indent=1))
            print(f"# {suite.describe()}", file=sys.stderr, flush=True)
            runs: list[Result] = []
            if "depgraph" in tools:
                python = args.depgraph_python or ensure_venv(
                    f"depgraph-{ROOT.name}", ["pytest-xdist", "-e", str(ROOT)])
                runs += [timed(run_depgraph, python, folder, int(n))
                         for n in args.workers.split(",")]
            if "dtp" in tools:
                dtp = ensure_venv("detect-test-pollution",
                                  ["detect-test-pollution==1.2.0", "pytest"])
                runs.append(timed(run_dtp, dtp, folder, suite))
            if "ipflakies" in tools:
                ipflakies = ensure_venv("ipflakies", ["ipflakies==1.1.1"])
                runs.append(timed(run_ipflakies, ipflakies, folder, args.ipflakies_iterations,
                                  args.ipflakies_minimise))
            for run in runs:
                result = score(suite, run.findings)
                results.append((suite, run, result))
                print(f"# {size} {run.tool}: recall {result.recall}, precision "
                      f"{result.precision}, {run.executions} executions, {run.wall:.0f} s, "
                      f"CPU {run.cpu:.0f} s; "
                      f"wrong: {result.wrong[:5]}", file=sys.stderr, flush=True)
    table(results)


def seconds(value: float, run: Result) -> str:
    return "-" if run.tool == "model" or value != value else f"{value:,.0f} s"


def table(results: list[tuple[Suite, Result, Score]]) -> None:
    print("| n | tool | recall | precision | declared reported | flaky found | orders / runs "
          "| executions | wall | CPU | notes |")
    print("|---:|---|---:|---:|---:|---:|---|---:|---:|---:|---|")
    for suite, run, result in results:
        print(f"| {suite.size} | {run.tool} | {result.recall} | {result.precision} | "
              f"{result.declared} | {result.flaky_found}/{len(suite.flaky)}"
              f"{f' (+{result.flaky_false} wrong)' if result.flaky_false else ''} | "
              f"{run.orders} | {run.executions:,} | {seconds(run.wall, run)} | "
              f"{seconds(run.cpu, run)} | {run.note} |")
    for size in sorted({s.size for s, _, _ in results}):
        suite = next(s for s, _, _ in results if s.size == size)
        print(f"\n* n = {size}: {suite.describe()}")


if __name__ == "__main__":
    main()
