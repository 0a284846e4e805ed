"""CI shards: balance and cut dependencies of ``--depgraph-shard`` against pytest-split.

Generates a suite of about 2,000 tests in 150 dependency groups (chains, random DAGs, fans,
parametrized meta-nodes; some groups span two modules; a fifth of the edges are ordering-only)
with skewed durations written to ``.test_durations`` (pytest-split's format). For N = 2, 4, 8
and every K, each splitter lists the tests of shard K (``--collect-only -q``):

* this plugin: ``--depgraph-shard K/N --depgraph-durations .test_durations``;
* pytest-split 0.11 (``--splits N --group K``), both ``least_duration`` and
  ``duration_based_chunks``, run with ``-p no:depgraph`` from the interpreter given with
  ``--split-python`` (a throwaway venv: pytest-split is never a dependency of this project);
* "per test": the same largest-first balancing on single tests, dependencies ignored -- the
  best balance any splitter that ignores dependencies could hope for.

Per splitter and N: the heaviest shard over the ideal ``total / N`` and over the lower bound
``max(largest group, total / N)``; the dependency edges whose two tests land in different
shards; and what those cuts do to a run, computed from the graph: the tests whose requires
chain reaches a test of another shard (skipped, or failing when the state they need is absent,
when the shard runs alone) and the tests another shard's run has to pull in to run them (this
plugin's pull-in, run twice). Every split is also checked to be a partition of the suite.

    python bench/shard_bench.py --split-python /tmp/venv-split/bin/python

prints Markdown on stdout. ``--keep DIR`` keeps the generated suite; ``--verify`` also runs
pytest-split's group 1 of 4 with this plugin loaded, to show the pull-in on a real run.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import subprocess
import sys
import tempfile
from collections import deque
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from pytest_depgraph.core.shard import balance

REQUIRES, AFTER = "requires", "after"


class Suite:
    """The generated tests: node ids, edges, durations, groups."""

    def __init__(self, seed: int, groups: int, tests: int) -> None:
        rng = random.Random(seed)
        self.nodeids: list[str] = []
        self.edges: list[tuple[str, str, str]] = []  # dependent, dependency, kind
        self.seconds: dict[str, float] = {}
        self.files: dict[str, list[str]] = {}
        sizes = [max(1, min(120, int(rng.paretovariate(1.3) * 4))) for _ in range(groups)]
        scale = tests / sum(sizes)
        sizes = [max(1, round(s * scale)) for s in sizes]
        sizes[-1] = max(1, sizes[-1] + tests - sum(sizes))
        for number, size in enumerate(sizes):
            self._group(rng, number, size)

    def _group(self, rng: random.Random, number: int, size: int) -> None:
        shape = rng.choice(["chain", "dag", "fan", "param"]) if size > 2 else "chain"
        two_files = size >= 8 and rng.random() < 0.15
        slow = 10.0 if rng.random() < 0.1 else 1.0  # a few slow groups: skewed durations
        base = f"test_g{number:03}"
        names: list[str] = []
        if shape == "param":
            instances = size // 2
            names = [f"test_root[{i}]" for i in range(instances)]
            names += [f"test_n{i}" for i in range(size - instances)]
        else:
            names = [f"test_n{i}" for i in range(size)]
        files = [
            f"{base}{'_b' if two_files and i >= size // 2 else ''}.py" for i in range(size)
        ]
        ids = [f"{f}::{n}" for f, n in zip(files, names)]
        declared: dict[int, list[tuple[str, str]]] = {i: [] for i in range(size)}

        def link(i: int, j: int) -> None:
            kind = AFTER if rng.random() < 0.2 else REQUIRES
            target = names[j] if files[i] == files[j] else ids[j]
            if shape == "param" and j < size // 2:
                target = "test_root" if files[i] == files[j] else f"{files[j]}::test_root"
            declared[i].append((target, kind))

        if shape == "chain":
            for i in range(1, size):
                link(i, i - 1)
        elif shape == "dag":
            for i in range(1, size):
                for j in sorted(rng.sample(range(i), min(i, rng.choice([1, 2])))):
                    link(i, j)
        elif shape == "fan":
            for i in range(1, size):
                link(i, 0)
        else:  # dependents of a parametrized function by name: every instance (meta-node)
            instances = size // 2
            for i in range(instances, size):
                link(i, 0)
        for nodeid in ids:
            self.nodeids.append(nodeid)
            self.seconds[nodeid] = round(rng.lognormvariate(-2.0, 1.2) * slow, 4)
        # edges as the plugin resolves them: a function name means all its instances
        instances = [k for k, n in enumerate(names) if n.startswith("test_root[")]
        for i, targets in declared.items():
            for target, kind in targets:
                deps = instances if target.endswith("test_root") else [
                    k for k in range(size) if target in (names[k], ids[k])
                ]
                self.edges.extend((ids[i], ids[k], kind) for k in deps)
        self._write_sources(files, names, declared, shape)

    def _write_sources(
        self,
        files: list[str],
        names: list[str],
        declared: dict[int, list[tuple[str, str]]],
        shape: str,
    ) -> None:
        written: set[str] = set()
        for i, (file, name) in enumerate(zip(files, names)):
            lines = self.files.setdefault(file, ["import pytest", ""])
            function = name.split("[")[0]
            if function in written and shape == "param":
                continue
            written.add(function)
            for target, kind in declared[i]:
                extra = ', on_failure="run"' if kind == AFTER else ""
                lines.append(f'@pytest.mark.depends_on("{target}"{extra})')
            if name.startswith("test_root["):
                count = sum(1 for n in names if n.startswith("test_root["))
                lines += [f"@pytest.mark.parametrize('i', range({count}))",
                          f"def {function}(i): pass", ""]
            else:
                lines += [f"def {function}(): pass", ""]

    def write(self, folder: Path) -> None:
        for file, lines in self.files.items():
            (folder / file).write_text("\n".join(lines) + "\n")
        (folder / "conftest.py").write_text(
            "def pytest_configure(config):\n"
            "    config.addinivalue_line('markers', 'depends_on: registered for runs without "
            "pytest-depgraph')\n"
        )
        (folder / ".test_durations").write_text(json.dumps(self.seconds, indent=1))

    def groups(self) -> list[set[str]]:
        neighbours: dict[str, set[str]] = {n: set() for n in self.nodeids}
        for a, b, _ in self.edges:
            neighbours[a].add(b)
            neighbours[b].add(a)
        seen: set[str] = set()
        found = []
        for start in self.nodeids:
            if start in seen:
                continue
            part, todo = {start}, [start]
            while todo:
                for m in neighbours[todo.pop()] - part:
                    part.add(m)
                    todo.append(m)
            seen |= part
            found.append(part)
        return found


def collect(python: str, folder: Path, args: list[str]) -> list[str]:
    done = subprocess.run(
        [python, "-m", "pytest", "--collect-only", "-q", "-p", "no:randomly",
         "-p", "no:cacheprovider", *args],
        cwd=folder, capture_output=True, text=True, check=False,
    )
    ids = [line for line in done.stdout.splitlines() if "::" in line and " " not in line]
    if done.returncode not in (0, 5):
        raise SystemExit(f"{' '.join(args)} failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return ids


def effects(suite: Suite, shard_of: dict[str, int]) -> tuple[int, int, int]:
    """(edges cut, tests whose requires chain leaves their shard, tests pulled in)."""
    requires: dict[str, list[str]] = {n: [] for n in suite.nodeids}
    for a, b, kind in suite.edges:
        if kind == REQUIRES:
            requires[a].append(b)
    cut = sum(1 for a, b, _ in suite.edges if shard_of[a] != shard_of[b])
    broken = pulled = 0
    for shard in set(shard_of.values()):
        members = {n for n, s in shard_of.items() if s == shard}
        closure = set(members)
        todo = deque(members)
        while todo:
            for dep in requires[todo.popleft()]:
                if dep not in closure:
                    closure.add(dep)
                    todo.append(dep)
        pulled += len(closure - members)
        # a test is hit when anything it (transitively) requires is outside the shard
        hit: dict[str, bool] = {}

        def is_hit(node: str, members: set[str] = members, hit: dict[str, bool] = hit) -> bool:
            stack, order = [node], []
            while stack:
                n = stack.pop()
                if n in hit:
                    continue
                order.append(n)
                stack.extend(d for d in requires[n] if d not in hit)
            for n in reversed(order):
                hit[n] = any(d not in members or hit.get(d, False) for d in requires[n])
            return hit[node]

        broken += sum(1 for n in members if is_hit(n))
    return cut, broken, pulled


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split-python", required=True,
                        help="an interpreter with pytest-split installed (a throwaway venv)")
    parser.add_argument("--python", default=sys.executable,
                        help="the interpreter with this plugin installed")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--keep", type=Path, default=None)
    parser.add_argument("--verify", action="store_true")
    options = parser.parse_args()
    folder = options.keep or Path(tempfile.mkdtemp(prefix="shard-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    suite = Suite(options.seed, groups=150, tests=2000)
    suite.write(folder)
    groups = suite.groups()
    weight = suite.seconds
    total = math.fsum(weight.values())
    largest = max(math.fsum(weight[n] for n in g) for g in groups)
    everything = collect(options.python, folder, [])
    assert sorted(everything) == sorted(suite.nodeids), "the generator and pytest disagree"
    print(f"suite: {len(suite.nodeids)} tests, {len(suite.edges)} dependency edges "
          f"({sum(1 for e in suite.edges if e[2] == AFTER)} ordering-only), {len(groups)} "
          f"groups (largest {max(len(g) for g in groups)} tests), expected {total:.1f} s in "
          f"all, largest group {largest:.1f} s; tests {min(weight.values()):.4f}-"
          f"{max(weight.values()):.2f} s", file=sys.stderr)

    rows = []
    for count in (2, 4, 8):
        splitters = {
            "pytest-depgraph `--depgraph-shard`": lambda k, n=count: collect(
                options.python, folder,
                [f"--depgraph-shard={k}/{n}", "--depgraph-durations=.test_durations"]),
            "pytest-split `least_duration`": lambda k, n=count: collect(
                options.split_python, folder,
                ["-p", "no:depgraph", f"--splits={n}", f"--group={k}",
                 "--splitting-algorithm=least_duration"]),
            "pytest-split `duration_based_chunks`": lambda k, n=count: collect(
                options.split_python, folder,
                ["-p", "no:depgraph", f"--splits={n}", f"--group={k}",
                 "--splitting-algorithm=duration_based_chunks"]),
        }
        per_test = balance([weight[n] for n in suite.nodeids], suite.nodeids, count)
        results: dict[str, dict[str, int]] = {}
        for name, run in splitters.items():
            shard_of: dict[str, int] = {}
            for k in range(1, count + 1):
                for nodeid in run(k):
                    assert nodeid not in shard_of, f"{name}: {nodeid} in two shards"
                    shard_of[nodeid] = k
            assert sorted(shard_of) == sorted(suite.nodeids), f"{name}: not every test"
            results[name] = shard_of
        results["per test, dependencies ignored (LPT)"] = dict(zip(suite.nodeids, per_test))
        ideal = total / count
        bound = max(largest, ideal)
        for name, shard_of in results.items():
            loads: dict[int, float] = {}
            for nodeid, k in shard_of.items():
                loads[k] = loads.get(k, 0.0) + weight[nodeid]
            heaviest = max(loads.values())
            cut, broken, pulled = effects(suite, shard_of)
            rows.append((count, name, heaviest, heaviest / ideal, heaviest / bound, cut, broken,
                         pulled))
        print(f"N={count} done", file=sys.stderr)

    print(f"Suite: {len(suite.nodeids)} tests in {len(groups)} dependency groups, "
          f"{len(suite.edges)} edges; expected {total:.1f} s in all, the largest group "
          f"{largest:.1f} s.\n")
    print("| N | splitter | heaviest shard | / ideal (total/N) | / lower bound | edges cut "
          "| tests whose dependency is in another shard | tests another shard pulls in |")
    print("|---|---|---|---|---|---|---|---|")
    for count, name, heaviest, over_ideal, over_bound, cut, broken, pulled in rows:
        print(f"| {count} | {name} | {heaviest:.1f} s | {over_ideal:.3f} | {over_bound:.3f} "
              f"| {cut} | {broken} | {pulled} |")
    if options.verify:
        verify(options, folder)


def verify(options: argparse.Namespace, folder: Path) -> None:
    """pytest-split's group 1 of 4 with this plugin loaded: its pull-in on a real run."""
    done = subprocess.run(
        [options.split_python, "-m", "pytest", "-q", "-p", "no:randomly", "-p",
         "no:cacheprovider", "--splits=4", "--group=1", "--splitting-algorithm=least_duration"],
        cwd=folder, capture_output=True, text=True, check=False,
    )
    lines = [line for line in done.stdout.splitlines()
             if "pulled in" in line or " passed" in line or "[pytest-split]" in line]
    print("\npytest-split group 1 of 4 (least_duration) with pytest-depgraph loaded:\n")
    print("```")
    print("\n".join(lines))
    print("```")


if __name__ == "__main__":
    main()
