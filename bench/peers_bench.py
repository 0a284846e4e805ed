"""Collection overhead and full runs of pytest-depgraph side by side with its peers.

Generates the same random DAG of no-op tests once per plugin, in that plugin's own syntax, and
measures for each suite and plugin (median of ``--repeat`` runs, interleaved):

* ``pytest --collect-only -q -p no:cacheprovider``: CPU time (user + system), wall time and peak
  RSS (``/usr/bin/time -f "%U %S %M"``, else ``getrusage(RUSAGE_CHILDREN)``);
* ``pytest -q -p no:cacheprovider``: wall time of the full run, and its correctness: every test
  appends its name to a log file, and the script counts the tests that ran, the dependency
  edges whose dependency had not run before its dependent (violations), and the summary line;
* for this plugin only, the graph phases from ``--depgraph-timings`` (printed by its measured
  collect-only runs: the phases are timed anyway, printing them costs one line).

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

Suites (tests spread over the modules at random and shuffled within each module, so most
dependents come before their dependencies in collection order):

* ``rand1k`` (1,000 tests, 20 modules), ``rand10k`` (10,000 tests, 200 modules): each test
  depends on min(i, 3) distinct random earlier tests; ``noedge1k``: no dependencies;
* ``chain1k``, ``chain10k``: test i depends on test i-1;
* ``fan1k``: one root that the 999 other tests depend on; the last test also depends on 100
  others (a fan-in);
* ``param1k``: 100 functions x 10 params, each function depending on an earlier function by
  name without params, i.e. on all its instances (a meta-node);
* ``fixture1k``: 20 fixtures in conftest.py carry the dependencies (3 provider tests each), each
  of the 950 other tests uses one;
* ``rand100k`` and ``layer100k`` (``--big``): plain, depgraph and markers only, collect-only;
  ``layer100k`` is 100 layers of 1,000 tests, each depending on two tests of the layer
  before and one of the layer before that (the 100k reference shape of the performance targets);
  ``layer10k`` the same with 10 layers;
* ``real1k``, ``real10k``: the realistic shape (``RealSuite``): 100 modules (10 for real1k) in
  4 folders under ``tests/``, test classes, parametrized tests with ids, targets written as
  users write them (``tests/db/test_m003.py::TestC1::test_read_05`` across modules, a bare
  name in the same module or class, ``test_m004.py::...`` for a neighbour in the same folder,
  whole classes, one instance ``[pg]`` or every instance of a parametrized test), fixtures in
  ``tests/conftest.py`` and in the modules carrying edges; 10,000 tests, about 31,000 edges;
* ``onefile1k``, ``onefile10k``: ``rand``'s shape in one file;
* ``bare10k``: 10,000 tests in 20 modules without a single marker (its "markers only" row is
  ``-p no:depgraph``).

A plugin that has no way to write a suite gets a "cannot express" row (``CANNOT_EXPRESS``).

Run: ``python bench/peers_bench.py`` (``--quick`` for the 1k suites with one run each,
``--repeat N`` on the 1k suites, ``--big-repeat N`` on the 10k ones, ``--only PLUGIN,...``,
``--suites NAME,...``, ``--timeout SECONDS`` per pytest run, ``--profile FILE`` to write a
cProfile of this plugin's collect-only run of the last suite). Prints Markdown.
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
import signal
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

# Shapes. Every shape spreads its tests over the modules at random and shuffles them within each
# module, so collection order says little about dependency order and a plugin has to reorder.
SHAPES = ("random", "noedge", "chain", "fan", "param", "fixture")
FAN_IN = 100  # fan1k: the last test depends on this many others besides the root
FIXTURES = 20  # fixture1k: fixtures that carry dependencies
PROVIDERS = 50  # fixture1k: tests without dependencies that the fixtures depend on


@dataclass
class Suite:
    name: str
    tests: int  # test functions (parametrized ones count once)
    modules: int
    shape: str
    edges_per_test: int = 3  # random / param: distinct earlier functions each one depends on
    params: int = 0  # param: instances per function; 0 = not parametrized
    seed: int = 1
    module_of: list[int] = field(default_factory=list)
    deps: list[list[int]] = field(default_factory=list)  # written as markers on the test
    fixture_deps: list[list[int]] = field(default_factory=list)  # per fixture
    fixture_of: list[int | None] = field(default_factory=list)  # fixture a test uses

    def generate(self) -> None:
        rng = random.Random(self.seed)
        n = self.tests
        self.fixture_deps, self.fixture_of = [], [None] * n
        if self.shape in ("random", "param"):
            k = self.edges_per_test
            self.deps = [rng.sample(range(i), min(i, k)) for i in range(n)]
        elif self.shape == "layered":
            # graph_bench's layered DAG, the performance targets' 100k reference shape: layers of
            # LAYER tests, each depending on two tests of the layer before and one of the
            # layer before that
            self.deps = []
            for i in range(n):
                layer = i // LAYER
                start = (layer - 1) * LAYER  # first test of the layer before
                deps = rng.sample(range(start, start + LAYER), 2) if layer >= 1 else []
                if layer >= 2:
                    deps.append(start - LAYER + rng.randrange(LAYER))
                self.deps.append(deps)
        elif self.shape == "chain":
            self.deps = [[i - 1] if i else [] for i in range(n)]
        elif self.shape == "fan":
            self.deps = [[0] if i else [] for i in range(n)]
            self.deps[-1] += rng.sample(range(1, n - 1), FAN_IN)
        elif self.shape == "fixture":
            self.deps = [[] for _ in range(n)]
            self.fixture_deps = [rng.sample(range(PROVIDERS), 3) for _ in range(FIXTURES)]
            self.fixture_of = [None] * PROVIDERS + [
                rng.randrange(FIXTURES) for _ in range(n - PROVIDERS)]
        else:  # noedge
            self.deps = [[] for _ in range(n)]
        self.module_of = [rng.randrange(self.modules) for _ in range(n)]
        self.order_in_module: dict[int, list[int]] = {m: [] for m in range(self.modules)}
        for i in range(n):
            self.order_in_module[self.module_of[i]].append(i)
        for members in self.order_in_module.values():
            rng.shuffle(members)

    def all_deps(self, i: int) -> list[int]:
        """What test function i must run after: its markers plus its fixture's."""
        k = self.fixture_of[i]
        return self.deps[i] + (self.fixture_deps[k] if k is not None else [])

    def instances(self, i: int) -> list[str]:
        """The names test function i logs: one per parametrized instance."""
        if not self.params:
            return [test_name(i)]
        return [f"{test_name(i)}[{p}]" for p in range(self.params)]

    def item_edges(self) -> list[tuple[str, str]]:
        """(dependent, dependency) between the names the test items log."""
        return [(name, dep_name) for i in range(self.tests) for d in self.all_deps(i)
                for name in self.instances(i) for dep_name in self.instances(d)]

    @property
    def items(self) -> int:
        return self.tests * max(self.params, 1)

    @property
    def edge_count(self) -> int:
        """Edges between test items: a meta-node edge links every pair of instances."""
        per_edge = max(self.params, 1) ** 2
        return sum(len(self.all_deps(i)) for i in range(self.tests)) * per_edge

    @property
    def targets_written(self) -> int:
        return sum(map(len, self.deps)) + sum(map(len, self.fixture_deps))


def test_name(i: int) -> str:
    return f"test_{i:06d}"


def module_file(m: int) -> str:
    return f"test_mod_{m:04d}.py"


def fixture_name(k: int) -> str:
    return f"fx_{k:02d}"


# (syntax, shape) pairs a plugin has no way to write, with the reason shown in the table.
CANNOT_EXPRESS = {
    ("pytest-dependency", "param"): "cannot express: every instance must be named",
    ("pytest-order", "fixture"): "cannot express: marks on fixtures are ignored",
    ("pytest-depends", "fixture"): "cannot express: marks on fixtures are ignored",
}


class Syntax:
    """How one plugin spells 'this test depends on these'."""

    def __init__(self, plugin: str) -> None:
        self.plugin = plugin

    def cannot_express(self, suite: Suite) -> str:
        return CANNOT_EXPRESS.get((self.plugin, suite.shape), "")

    def target(self, suite: Suite, i: int | None, dep: int) -> str:
        """A test function's name, or its node id without params when in another module.

        ``i`` is None for a fixture in conftest.py: always the full node id."""
        if self.plugin == "pytest-dependency" or i is None:
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

    def fixture(self, suite: Suite, k: int) -> str:
        """A conftest fixture that carries fixture_deps[k], where the plugin has a way."""
        targets = [self.target(suite, None, d) for d in suite.fixture_deps[k]]
        if self.plugin == "depgraph":
            return (f"@pytest.fixture\n@pytest_depgraph.depends_on(*{targets!r})\n"
                    f"def {fixture_name(k)}():\n    return None\n")
        if self.plugin == "pytest-dependency":
            # pytest-dependency's documented runtime check: skips, never reorders
            return (f"@pytest.fixture\ndef {fixture_name(k)}(request):\n"
                    f"    depends(request, {targets!r}, scope='session')\n")
        return f"@pytest.fixture\ndef {fixture_name(k)}():\n    return None\n"

    def conftest_header(self) -> str:
        if self.plugin == "depgraph":
            return "import pytest\nimport pytest_depgraph\n\n"
        if self.plugin == "pytest-dependency":
            return "import pytest\nfrom pytest_dependency import depends\n\n"
        return "import pytest\n\n"


MODULE_HEADER = """import os
import pytest

_LOG = os.environ.get("{env}")
_F = open(_LOG, "a", buffering=1) if _LOG else None


def _ran(name):
    if _F is not None:
        _F.write(name + "\\n")

"""

# Wraps pytest_depgraph.collect.build.build, as the producer of the plan calls it, to time it
# from outside the package (the generated suite's conftest, only for the depgraph suites, only
# when PEERS_BENCH_BUILD_TIMES is set).
CONFTEST_TIMER = """import os
import time

_OUT = os.environ.get("PEERS_BENCH_BUILD_TIMES")
if _OUT:
    from pytest_depgraph.run import plan_producer

    _orig = plan_producer.build

    def _timed(*args, **kwargs):
        t = time.perf_counter()
        try:
            return _orig(*args, **kwargs)
        finally:
            with open(_OUT, "a") as f:
                f.write(f"{time.perf_counter() - t}\\n")

    plan_producer.build = _timed
"""


def test_source(syntax: Syntax, suite: Suite, i: int) -> list[str]:
    """Decorators and definition of test function i; it logs the instance it runs as."""
    lines = syntax.decorators(suite, i)
    args, logged = [], repr(test_name(i))
    if suite.params:
        lines.append(f'@pytest.mark.parametrize("p", range({suite.params}))')
        args.append("p")
        logged = f'f"{test_name(i)}[{{p}}]"'
    k = suite.fixture_of[i]
    if k is not None:
        args.append(fixture_name(k))
    lines.append(f"def {test_name(i)}({', '.join(args)}):\n    _ran({logged})\n\n")
    return lines


def conftest_source(syntax: Syntax, suite: Suite) -> str:
    parts = [CONFTEST_TIMER] if syntax.plugin == "depgraph" else []
    if suite.fixture_deps:
        parts.append(syntax.conftest_header())
        parts.extend(syntax.fixture(suite, k) for k in range(len(suite.fixture_deps)))
    return "\n\n".join(parts)


def write_suite(suite: Suite, plugin: str, directory: Path) -> None:
    if isinstance(suite, RealSuite):
        suite.write(plugin, directory)
        return
    syntax = Syntax(plugin)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "pytest.ini").write_text("[pytest]\n")
    (directory / "conftest.py").write_text(conftest_source(syntax, suite))
    header = MODULE_HEADER.format(env=LOG_ENV)
    for m, members in suite.order_in_module.items():
        lines = [header]
        for i in members:
            lines.extend(test_source(syntax, suite, i))
        (directory / module_file(m)).write_text("\n".join(lines))


# --------------------------------------------------------------------------- the realistic shape

REAL_DIRS = ("api", "db", "core", "ui")  # tests/<dir>/test_mNNN.py, modules spread evenly
REAL_IDS = ("sqlite", "pg", "mysql", "mem")  # ids of a parametrized test's instances
REAL_VERBS = ("create", "read", "update", "delete", "list", "login", "sync", "export")
REAL_PLAIN = 64  # per module: plain test functions ...
REAL_PARAM = 9  # ... and parametrized ones (len(REAL_IDS) instances each): 100 tests a module
REAL_CLASSES = 3  # test classes per module, holding about 40% of its functions
REAL_CONFTEST_FIXTURES = 20  # fixtures in tests/conftest.py, 2 targets each
REAL_PROVIDERS = 0.05  # the first 5% of the dependency order: what fixtures depend on
REAL_FIXTURE_USERS = 0.12  # functions that use a fixture (conftest's or their module's)


@dataclass
class RealFunc:
    """One test function of the realistic shape; ``rank`` orders the dependencies."""

    rank: int
    module: int
    slot: int  # position of its definition in the module (names repeat across modules)
    cls: int | None  # class in its module, None at module level
    params: tuple[str, ...]
    targets: list[tuple[str, int, str]] = field(default_factory=list)
    fixture: str = ""

    @property
    def name(self) -> str:
        return f"test_{REAL_VERBS[self.slot % len(REAL_VERBS)]}_{self.slot:02d}"

    def logged(self) -> list[str]:
        """The names its instances log: unique across the suite (function names repeat)."""
        return [f"f{self.rank}[{p}]" for p in self.params] if self.params else [f"f{self.rank}"]


def real_path(m: int) -> str:
    return f"tests/{REAL_DIRS[m % len(REAL_DIRS)]}/test_m{m:03d}.py"


@dataclass
class RealSuite(Suite):
    """Modules in folders, classes, parametrized tests with ids, targets as users write them.

    Targets (kind, number, instance id): ("func", rank, "") every instance of a function,
    ("inst", rank, id) one instance, ("class", module * 100 + class, "") a whole class. Each
    function depends only on lower ranks; ranks are shuffled over the definitions, so about
    half of the edges point forward in collection order."""

    funcs: list[RealFunc] = field(default_factory=list)
    fixture_targets: dict[str, list[int]] = field(default_factory=dict)  # fixture -> ranks
    targets_per_func: float = 2.15
    by_class: dict[int, list[int]] = field(default_factory=dict)  # module*100+class -> ranks
    edges: list[tuple[str, str]] | None = None  # item edges, by logged names (a cache)

    def generate(self) -> None:
        rng = random.Random(self.seed)
        layout = []
        for m in range(self.modules):
            kinds = [()] * REAL_PLAIN + [REAL_IDS] * REAL_PARAM
            rng.shuffle(kinds)
            for slot, params in enumerate(kinds):
                cls = rng.randrange(REAL_CLASSES) if rng.random() < 0.4 else None
                layout.append((m, slot, cls, params))
        ranks = list(range(len(layout)))
        rng.shuffle(ranks)
        self.funcs = sorted((RealFunc(r, m, slot, cls, params)
                             for r, (m, slot, cls, params) in zip(ranks, layout)),
                            key=lambda f: f.rank)
        by_module: dict[int, list[int]] = {}
        by_class: dict[int, list[int]] = {}
        for f in self.funcs:
            by_module.setdefault(f.module, []).append(f.rank)  # ascending ranks
            if f.cls is not None:
                by_class.setdefault(f.module * 100 + f.cls, []).append(f.rank)
        # a class is a valid target of a function ranked above all of its members
        classes = sorted((max(members), key) for key, members in by_class.items())
        providers = max(1, int(len(self.funcs) * REAL_PROVIDERS))
        for f in self.funcs[1:]:
            k = min(f.rank, max(1, round(rng.gauss(self.targets_per_func, 1.0))))
            chosen: set[tuple[str, int, str]] = set()
            for _ in range(k):
                if rng.random() < 0.02 and classes[0][0] < f.rank:
                    eligible = [key for top, key in classes if top < f.rank]
                    chosen.add(("class", rng.choice(eligible), ""))
                    continue
                local = [r for r in by_module[f.module] if r < f.rank]
                g = self.funcs[rng.choice(local) if local and rng.random() < 0.5
                               else rng.randrange(f.rank)]
                if g.params and rng.random() < 0.4:
                    chosen.add(("inst", g.rank, rng.choice(g.params)))
                else:
                    chosen.add(("func", g.rank, ""))
            f.targets = sorted(chosen)
        self.fixture_targets = {
            f"cfx_{k:02d}": rng.sample(range(providers), 2) for k in range(REAL_CONFTEST_FIXTURES)}
        for m, members in by_module.items():  # its lowest-ranked test, by a short name
            self.fixture_targets[f"mfx_{m:03d}"] = [members[0]]
        for f in self.funcs[providers:]:
            if rng.random() < REAL_FIXTURE_USERS:
                own = f"mfx_{f.module:03d}"
                f.fixture = own if (rng.random() < 0.3 and self.fixture_targets[own][0] < f.rank
                                    ) else f"cfx_{rng.randrange(REAL_CONFTEST_FIXTURES):02d}"
        self.tests = len(self.funcs)
        self.by_class, self.edges = by_class, None

    # --- what the suite means, for counting and checking
    def target_ranks(self, target: tuple[str, int, str]) -> list[tuple[int, str]]:
        """(rank, instance id or "" for all instances) of the functions a target selects."""
        kind, n, param = target
        if kind == "class":
            return [(r, "") for r in self.by_class[n]]
        return [(n, param)]

    def dependencies(self, f: RealFunc) -> list[tuple[int, str]]:
        deps = [x for t in f.targets for x in self.target_ranks(t)]
        if f.fixture:
            deps += [(r, "") for r in self.fixture_targets[f.fixture]]
        return deps

    def item_edges(self) -> list[tuple[str, str]]:
        if self.edges is None:
            edges: set[tuple[str, str]] = set()
            for f in self.funcs:
                dep_names = set()
                for r, param in self.dependencies(f):
                    g = self.funcs[r]
                    dep_names.update([f"f{r}[{param}]"] if param else g.logged())
                edges.update((name, d) for name in f.logged() for d in dep_names)
            self.edges = sorted(edges)
        return self.edges

    @property
    def items(self) -> int:
        return sum(len(f.logged()) for f in self.funcs)

    @property
    def edge_count(self) -> int:
        return len(self.item_edges())

    @property
    def targets_written(self) -> int:
        return sum(len(f.targets) for f in self.funcs) + sum(map(len,
                                                                  self.fixture_targets.values()))

    def describe(self) -> str:
        params = sum(1 for f in self.funcs if f.params)
        in_classes = sum(1 for f in self.funcs if f.cls is not None)
        users = sum(1 for f in self.funcs if f.fixture)
        return (f"{self.items:,} tests ({self.tests:,} functions: {in_classes:,} in classes, "
                f"{params:,} parametrized x {len(REAL_IDS)} ids), {self.edge_count:,} edges, "
                f"{self.modules} modules in {len(REAL_DIRS)} folders, {users:,} tests using a "
                f"dependency-carrying fixture")

    # --- writing it in one plugin's syntax
    def node(self, g: RealFunc, param: str = "") -> str:
        """The node id of function g (of its instance ``param``), relative to rootdir."""
        cls = f"::TestC{g.cls}" if g.cls is not None else ""
        return f"{real_path(g.module)}{cls}::{g.name}" + (f"[{param}]" if param else "")

    def depgraph_target(self, f: RealFunc | None, target: tuple[str, int, str]) -> str:
        """As a user writes it: short in its own module, else a path (rootdir-relative, or
        relative to the test's folder for a neighbour in the same folder)."""
        kind, n, param = target
        suffix = f"[{param}]" if param else ""
        if kind == "class":
            m, c = divmod(n, 100)
            if f is not None and m == f.module:
                return f"TestC{c}"
            return f"{real_path(m)}::TestC{c}"
        g = self.funcs[n]
        if f is not None and g.module == f.module:
            if g.cls is None or g.cls == f.cls:
                return g.name + suffix
            return f"{real_path(g.module).rsplit('/', 1)[1]}::TestC{g.cls}::{g.name}{suffix}"
        if (f is not None and real_path(g.module).rsplit("/", 1)[0]
                == real_path(f.module).rsplit("/", 1)[0] and g.rank % 5 == 0):
            return self.node(g, param).rsplit("/", 1)[1]
        return self.node(g, param)

    def peer_targets(self, plugin: str, f: RealFunc) -> list[str]:
        """Node ids relative to rootdir (a bare name between module-level tests of a module);
        fixtures' targets on the test itself (the peers ignore marks on fixtures); for
        pytest-dependency every instance named (it has no 'all instances'); for pytest-order
        the whole function where one instance is meant (it cannot name an instance)."""
        out: list[str] = []
        for r, param in self.dependencies(f):
            g = self.funcs[r]
            if plugin == "pytest-dependency":
                out += ([self.node(g, param)] if param
                        else [self.node(g, p) for p in g.params] or [self.node(g)])
            elif plugin == "pytest-order" and param:  # it cannot name one instance:
                out.append(self.node(g))  # all of them (orders as much, and more)
            elif g.module == f.module and g.cls is None and f.cls is None:
                out.append(g.name + (f"[{param}]" if param else ""))
            else:
                out.append(self.node(g, param))
        return list(dict.fromkeys(out))

    def decorators(self, plugin: str, f: RealFunc) -> list[str]:
        if plugin == "depgraph":
            targets = [self.depgraph_target(f, t) for t in f.targets]
            return [f"@pytest.mark.depends_on({', '.join(map(repr, targets))})"] if targets else []
        if plugin == "plain":
            return []
        targets = self.peer_targets(plugin, f)
        if plugin == "pytest-dependency":
            if targets:
                return [f'@pytest.mark.dependency(depends={targets!r}, scope="session")']
            return ["@pytest.mark.dependency()"]
        if not targets:
            return []
        if plugin == "pytest-order":
            return [f"@pytest.mark.order(after={targets!r})"]
        return [f"@pytest.mark.depends(on={targets!r})"]  # pytest-depends

    def fixture_source(self, plugin: str, name: str) -> str:
        if plugin == "depgraph":
            ranks = self.fixture_targets[name]
            g = self.funcs[ranks[0]]
            if name.startswith("mfx_"):  # in its module: a short name, or the file's
                targets = [g.name if g.cls is None
                           else self.node(g).rsplit("/", 1)[1]]
            else:
                targets = [self.node(self.funcs[r]) for r in ranks]
            return (f"@pytest.fixture\n@pytest_depgraph.depends_on"
                    f"({', '.join(map(repr, targets))})\ndef {name}():\n    return None\n\n")
        return f"@pytest.fixture\ndef {name}():\n    return None\n\n"

    def test_source(self, plugin: str, f: RealFunc, indent: str) -> str:
        lines = self.decorators(plugin, f)
        args = ["self"] if f.cls is not None else []
        logged = repr(f"f{f.rank}")
        if f.params:
            lines.append(f"@pytest.mark.parametrize('p', {list(f.params)!r})")
            args.append("p")
            logged = f'f"f{f.rank}[{{p}}]"'
        if f.fixture:
            args.append(f.fixture)
        lines.append(f"def {f.name}({', '.join(args)}):\n    _ran({logged})\n")
        return "".join(indent + line.replace("\n    ", "\n" + indent + "    ") + "\n"
                       for line in lines)

    def write(self, plugin: str, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "pytest.ini").write_text("[pytest]\n")
        (directory / "conftest.py").write_text(CONFTEST_TIMER if plugin == "depgraph" else "")
        header = ("import pytest\nimport pytest_depgraph\n\n" if plugin == "depgraph"
                  else "import pytest\n\n")
        conftest = [header] + [self.fixture_source(plugin, name)
                               for name in self.fixture_targets if name.startswith("cfx_")]
        for folder in REAL_DIRS:
            (directory / "tests" / folder).mkdir(parents=True, exist_ok=True)
        (directory / "tests" / "conftest.py").write_text("".join(conftest))
        modules: dict[int, list[RealFunc]] = {}
        for f in sorted(self.funcs, key=lambda f: (f.module, f.slot)):
            modules.setdefault(f.module, []).append(f)
        for m, funcs in modules.items():
            parts = [MODULE_HEADER.format(env=LOG_ENV)]
            if plugin == "depgraph":
                parts.append("import pytest_depgraph\n\n")
            parts.append(self.fixture_source(plugin, f"mfx_{m:03d}"))
            written: set[int] = set()
            for f in funcs:  # a class is written where its first method's slot is
                if f.cls is None:
                    parts.append(self.test_source(plugin, f, ""))
                elif f.cls not in written:
                    written.add(f.cls)
                    parts.append(f"class TestC{f.cls}:\n")
                    parts.extend(self.test_source(plugin, g, "    ")
                                 for g in funcs if g.cls == f.cls)
            (directory / real_path(m)).write_text("\n".join(parts))


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
    # this plugin's suite with the plugin off (its marker registered, so pytest does not warn):
    # what the markers themselves cost pytest, so "depgraph" minus this row is the plugin's own
    Plugin("markers only", "depgraph", "depgraph",
           ("-p", "no:depgraph", "-o", "markers=depends_on")),
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


def venv_path(name: str) -> Path:
    """This plugin's venv is per checkout (its editable install points at this checkout)."""
    return VENVS / (f"depgraph-{ROOT.name}" if name == "depgraph" else name)


def ensure_venv(name: str) -> Path:
    path = venv_path(name)
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
    cpu: float = float("nan")  # user + system of the pytest process (and its children)


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
        cmd = [TIME_BIN, "-f", "%U %S %M", "-o", rss_file, *cmd]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    # A session of its own, so that a timeout kills pytest too and not only /usr/bin/time
    # (an orphaned pytest-order would keep a core busy during the next measurements).
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return Run(timeout, 0, -1, "", timed_out=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # without /usr/bin/time: the children's CPU since before (this script waits for one
    # pytest at a time) and their max RSS so far (only grows: good enough when it grows)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    rss = max(after.ru_maxrss, before.ru_maxrss)
    if rss_file:
        # the last line: /usr/bin/time writes "Command exited with non-zero status" first
        fields = (Path(rss_file).read_text().strip().splitlines() or [""])[-1].split()
        try:
            cpu, rss = float(fields[0]) + float(fields[1]), int(fields[2])
        except (ValueError, IndexError):
            cpu, rss = float("nan"), 0
        os.unlink(rss_file)
    return Run(wall, rss, proc.returncode, out, cpu=cpu)


SUMMARY = re.compile(
    r"^=*\s*(\d+ (?:passed|failed|skipped|error|errors|deselected|tests? collected).*?)\s*=*$",
    re.M,
)


def summary_line(out: str) -> str:
    found = SUMMARY.findall(out)
    return found[-1] if found else (out.strip().splitlines() or ["(no output)"])[-1][:120]


def check_order(suite: Suite, log: Path) -> tuple[int, int]:
    """(tests that ran, item edges violated: dependent ran, dependency not before it)."""
    ran = log.read_text().split() if log.exists() else []
    position = {name: k for k, name in enumerate(ran)}
    violations = 0
    for name, dep_name in suite.item_edges():
        p = position.get(name)
        if p is not None:
            q = position.get(dep_name)
            if q is None or q > p:
                violations += 1
    return len(ran), violations


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


# --------------------------------------------------------------------------- main


SUITES = {
    "rand1k": Suite("rand1k", 1_000, 20, "random"),
    "noedge1k": Suite("noedge1k", 1_000, 20, "noedge", 0),
    "chain1k": Suite("chain1k", 1_000, 20, "chain"),
    "fan1k": Suite("fan1k", 1_000, 20, "fan"),
    "param1k": Suite("param1k", 100, 20, "param", edges_per_test=1, params=10),
    "fixture1k": Suite("fixture1k", 1_000, 20, "fixture"),
    "rand10k": Suite("rand10k", 10_000, 200, "random"),
    "chain10k": Suite("chain10k", 10_000, 200, "chain"),
    "rand100k": Suite("rand100k", 100_000, 2_000, "random"),
    "layer100k": Suite("layer100k", 100_000, 2_000, "layered"),
    # the targets' shapes: realistic (folders, classes, parametrize, path targets, fixtures),
    # everything in one file, and a suite without a single marker
    "real1k": RealSuite("real1k", 1_000, 10, "real"),
    "real10k": RealSuite("real10k", 10_000, 100, "real"),
    "onefile1k": Suite("onefile1k", 1_000, 1, "random"),
    "onefile10k": Suite("onefile10k", 10_000, 1, "random"),
    "bare10k": Suite("bare10k", 10_000, 20, "noedge", 0),
    "layer10k": Suite("layer10k", 10_000, 200, "layered"),  # layer100k's shape, small
}
#: tests per layer of the "layered" shape
LAYER = 1_000
#: suites only plain pytest and this plugin run, collect-only (the peers take minutes or more)
HUGE = ("rand100k", "layer100k")
QUICK = ["rand1k", "noedge1k", "chain1k", "fan1k", "param1k", "fixture1k", "real1k", "onefile1k"]
FULL = [*QUICK, "rand10k", "chain10k", "real10k", "onefile10k", "bare10k"]
BIG = 10_000  # suites of this many items and more get --big-repeat runs


def describe(suite: Suite) -> str:
    if isinstance(suite, RealSuite):
        return suite.describe()
    if suite.shape == "param":
        return (f"{suite.tests} functions x {suite.params} params = {suite.items:,} tests; "
                f"{suite.targets_written} function-level targets (meta-nodes), "
                f"{suite.edge_count:,} edges between instances, {suite.modules} modules")
    if suite.shape == "fixture":
        return (f"{suite.items:,} tests, {FIXTURES} fixtures with 3 targets each, used by "
                f"{suite.items - PROVIDERS:,} tests: {suite.edge_count:,} edges, "
                f"{suite.modules} modules")
    return f"{suite.items:,} tests, {suite.edge_count:,} edges, {suite.modules} modules"


@dataclass
class Results:
    """Everything measured on one suite."""

    collect: dict[str, list[Run]]
    fulls: dict[str, list[Run]]
    checks: dict[str, tuple[int, int, str]] = field(default_factory=dict)
    phases: list[str] = field(default_factory=list)  # this plugin's --depgraph-timings lines
    phase_totals: list[float] = field(default_factory=list)  # their totals, seconds
    build_times: list[float] = field(default_factory=list)
    dead: set[str] = field(default_factory=set)
    dirs: dict[str, Path] = field(default_factory=dict)  # plugin -> its generated suite

    def cpu(self, plugin: str, full: bool = False) -> float:
        return median([r.cpu for r in ok_runs((self.fulls if full else self.collect)
                                              .get(plugin, []))])

    def wall(self, plugin: str, full: bool = False) -> float:
        return median([r.wall for r in ok_runs((self.fulls if full else self.collect)
                                               .get(plugin, []))])

    def rss(self, plugin: str) -> float:
        return median([float(r.rss_kb) for r in ok_runs(self.collect.get(plugin, []))])

    def failed(self, plugin: str, full: bool = False) -> str:
        """Why a plugin has no figure ("" when it has one)."""
        runs = (self.fulls if full else self.collect).get(plugin, [])
        if not runs:
            return "not run"
        if any(r.timed_out for r in runs):
            return "timed out"
        if not ok_runs(runs):
            return f"exit {runs[-1].rc}"
        return ""


def ok_runs(runs: list[Run]) -> list[Run]:
    """Runs that finished in time with exit 0 (5: nothing collected, for an empty suite)."""
    return [r for r in runs if not r.timed_out and r.rc in (0, 5)]


TIMINGS = re.compile(r"^depgraph timings:.*?total ([\d.]+) ms", re.M)


def collect_args(p: Plugin, suite: Suite) -> list[str]:
    """A plugin's collect-only command line; this plugin's prints its phase timings (they are
    always measured, printing them costs one line)."""
    args = ["--collect-only", "-q", "-p", "no:cacheprovider", *plugin_args(p, suite)]
    return [*args, "--depgraph-timings"] if p.name == "depgraph" else args


def plugin_args(p: Plugin, suite: Suite) -> tuple[str, ...]:
    """A suite without a single marker compares with the plugin off, nothing registered."""
    if p.name == "markers only" and not suite.targets_written:
        return ("-p", "no:depgraph")
    return p.args


def warm_up(venv: Path, directory: Path, timeout: float) -> None:
    """Write the suite's byte code (pytest's rewritten modules) once, before any timed run.

    Without plugins: the cache is the same for every venv (same Python and pytest), and a
    plugin that takes minutes on a 10k suite would spend them again for nothing."""
    run_pytest(venv, directory, ["--collect-only", "-q", "-p", "no:cacheprovider"], timeout,
               {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})


def one_round(suite: Suite, p: Plugin, venv: Path, d: Path, res: Results, full: bool,
              work: Path, rep: int, timeout: float) -> None:
    """One collect-only run and, if ``full``, one full run with its order check."""
    r = run_pytest(venv, d, collect_args(p, suite), timeout)
    res.collect[p.name].append(r)
    found = TIMINGS.search(r.stdout) if p.name == "depgraph" else None
    if found:
        res.phases.append(found.group(0))
        res.phase_totals.append(float(found.group(1)) / 1000)
    if r.timed_out:
        res.dead.add(p.name)
        return
    if full:
        log = work / f"{suite.name}-{p.name}-{rep}.log"
        log.unlink(missing_ok=True)
        r = run_pytest(venv, d, ["-q", "-p", "no:cacheprovider", *plugin_args(p, suite)],
                       timeout, {LOG_ENV: str(log)})
        res.fulls[p.name].append(r)
        if r.timed_out:
            res.dead.add(p.name)
            return
        ran, violations = check_order(suite, log)
        res.checks[p.name] = (ran, violations, summary_line(r.stdout))
        log.unlink(missing_ok=True)
    print(f"# {suite.name} rep {rep + 1} {p.name}: collect {res.collect[p.name][-1].wall:.2f} s"
          f" ({res.collect[p.name][-1].cpu:.2f} s CPU)"
          + (f", full {res.fulls[p.name][-1].wall:.2f} s" if full else ""),
          file=sys.stderr, flush=True)


def build_times(suite: Suite, venv: Path, d: Path, res: Results, work: Path,
                timeout: float) -> None:
    """An extra collect-only run: the build's wall time, timed from the suite's conftest."""
    times = work / f"{suite.name}-build-times.txt"
    run_pytest(venv, d, ["--collect-only", "-q", "-p", "no:cacheprovider"], timeout,
               {"PEERS_BENCH_BUILD_TIMES": str(times)})
    if times.exists():
        res.build_times.extend(float(x) for x in times.read_text().split())
        times.unlink()


def measure(suite: Suite, plugins: list[Plugin], venvs: dict[str, Path], work: Path,
            repeat: int, full: bool, timeout: float, once: tuple[str, ...] = (),
            timed_build: bool = False, full_plugins: tuple[str, ...] | None = None) -> Results:
    """Every plugin ``repeat`` times, interleaved; the plugins in ``once`` only in the first
    round; full runs (if ``full``) for ``full_plugins`` (default: all)."""
    res = Results({p.name: [] for p in plugins}, {p.name: [] for p in plugins})
    for p in plugins:
        d = work / suite.name / p.suite
        if d not in res.dirs.values():
            shutil.rmtree(d, ignore_errors=True)
            write_suite(suite, p.suite, d)
            warm_up(venvs[p.venv], d, timeout)
        res.dirs[p.name] = d
    for rep in range(repeat):
        for p in plugins:  # interleaved: the machine's load drifts
            if p.name not in res.dead and not (rep and p.name in once):
                with_full = full and (full_plugins is None or p.name in full_plugins)
                one_round(suite, p, venvs[p.venv], res.dirs[p.name], res, with_full, work,
                          rep, timeout)
        if timed_build and "depgraph" in res.dirs and "depgraph" not in res.dead:
            build_times(suite, venvs["depgraph"], res.dirs["depgraph"], res, work, timeout)
    return res


def reference(plugins: list[Plugin], res: Results) -> str:
    """The row ratios are taken against: markers only when it ran, else plain pytest."""
    names = [p.name for p in plugins]
    return "markers only" if res.collect.get("markers only") else (
        "plain" if "plain" in names else names[0])


def ratio(a: float, b: float) -> str:
    return f"{a / b:.3f}" if a == a and b == b and b > 0 else "-"


def report(suite: Suite, plugins: list[Plugin], res: Results, full: bool, timeout: float,
           repeat: int) -> None:
    ref = reference(plugins, res)
    print(f"### {suite.name}: {describe(suite)} (median of {repeat}; ratios against "
          f"*{ref}*)\n")
    head = ("| plugin | collect-only CPU (s) | ratio | wall (s) | ratio | peak RSS (MiB) | ratio |")
    sep = "|---|---:|---:|---:|---:|---:|---:|"
    if full:
        head += " full run CPU (s) | ratio | wall (s) | tests run | order violations | summary |"
        sep += "---:|---:|---:|---:|---:|---|"
    print(head)
    print(sep)
    blank = " | | | | | |" + (" | | | | | |" if full else "")
    for p in plugins:
        reason = Syntax(p.suite).cannot_express(suite)
        if reason:
            print(f"| {p.name} | {reason}{blank}")
            continue
        why = res.failed(p.name)
        if why:
            print(f"| {p.name} | {why}" + (f" (> {timeout:.0f} s)" if why == "timed out" else "")
                  + blank)
            continue
        runs = len(ok_runs(res.collect[p.name]))
        n = f" ({runs} run{'s' if runs > 1 else ''})" if runs != repeat else ""
        c, w, m = res.cpu(p.name), res.wall(p.name), res.rss(p.name)
        row = (f"| {p.name}{n} | {c:.2f} | {ratio(c, res.cpu(ref))} | {w:.2f} | "
               f"{ratio(w, res.wall(ref))} | {m / 1024:.0f} | {ratio(m, res.rss(ref))} |")
        if full:
            why = res.failed(p.name, full=True)
            if why:
                row += f" {why} | | | | | |"
            else:
                fc, fw = res.cpu(p.name, True), res.wall(p.name, True)
                ran, violations, summary = res.checks.get(p.name, (0, 0, ""))
                row += (f" {fc:.2f} | {ratio(fc, res.cpu(ref, True))} | {fw:.2f} | {ran:,} | "
                        f"{violations:,} | {summary} |")
        print(row)
    if res.phases:
        print(f"\ndepgraph `--depgraph-timings`: total median "
              f"{median(res.phase_totals) * 1000:.0f} ms of {len(res.phase_totals)} runs; "
              f"the last: `{res.phases[-1]}`")
    if res.build_times:
        print(f"`pytest_depgraph.collect.build.build` wall time, timed from the suite's conftest: "
              f"median {median(res.build_times) * 1000:.1f} ms of {len(res.build_times)} runs")
    print(flush=True)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=None,
                        help="runs per plugin on the 1k suites (default 3; 1 with --quick)")
    parser.add_argument("--big-repeat", type=int, default=1,
                        help=f"runs per plugin on suites of {BIG:,} tests and more (default 1: "
                             "pytest-order alone needs about 90 s per run on rand10k)")
    parser.add_argument("--quick", action="store_true",
                        help=f"the 1k suites only ({', '.join(QUICK)}), one run each")
    parser.add_argument("--big", action="store_true",
                        help="add rand100k and layer100k (plain, depgraph, markers only)")
    parser.add_argument("--suites", default="",
                        help=f"comma-separated suite names, of: {', '.join(SUITES)}")
    parser.add_argument("--only", default="", help="comma-separated plugin names")
    parser.add_argument("--timeout", type=float, default=150.0,
                        help="per pytest run, seconds (a plugin that times out is not run again "
                             "on that suite)")
    parser.add_argument("--no-full", action="store_true", help="collect-only measurements only")
    parser.add_argument("--profile", default="", help="write a cProfile of depgraph's "
                        "collect-only run of the largest suite to this path")
    parser.add_argument("--keep", default="", help="generate the suites here and keep them")
    parser.add_argument("--build-times", action="store_true",
                        help="an extra run per round: pytest_depgraph's build timed from the "
                             "suite's conftest")
    opts = parser.parse_args()
    if opts.repeat is None:
        opts.repeat = 1 if opts.quick else 3
    return opts


def profile(work: Path, venvs: dict[str, Path], big: str, out: str) -> None:
    d = work / big / "depgraph"
    if d.exists():
        subprocess.run([str(venvs["depgraph"] / "bin" / "python"), "-m", "cProfile", "-o",
                        out, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
                       cwd=d, capture_output=True)
        print(f"cProfile of depgraph `--collect-only -q` on {big}: {out}")


def main() -> int:
    opts = parse_args()
    names = list(QUICK if opts.quick else FULL)
    if opts.big:
        names += HUGE
    if opts.suites:
        names = opts.suites.split(",")
    unknown = [n for n in names if n not in SUITES]
    if unknown:
        raise SystemExit(f"unknown suite(s) {unknown}; known: {', '.join(SUITES)}")
    plugins = [p for p in PLUGINS if not opts.only or p.name in opts.only.split(",")
               or p.name == "plain"]

    venvs = {p.venv: ensure_venv(p.venv) for p in plugins}
    work = Path(opts.keep) if opts.keep else Path(tempfile.mkdtemp(prefix="peers-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.time()

    print(f"Python {platform.python_version()} on {platform.machine()}, "
          f"{os.cpu_count()} cores, load average before {os.getloadavg()[0]:.2f}; "
          f"runs interleaved across plugins\n")
    for venv_name, venv in venvs.items():
        print(f"* venv `{venv_name}`: {versions(venv)}")
    print()

    for suite_name in names:
        suite = SUITES[suite_name]
        suite.generate()
        suite_plugins = [p for p in plugins if suite_name not in HUGE
                         or p.name in ("plain", "depgraph", "markers only")]
        runnable = [p for p in suite_plugins if not Syntax(p.suite).cannot_express(suite)]
        full = not opts.no_full and suite_name not in HUGE
        repeat = opts.big_repeat if suite.items >= BIG else opts.repeat
        res = measure(suite, runnable, venvs, work, repeat, full, opts.timeout,
                      timed_build=opts.build_times)
        report(suite, suite_plugins, res, full, opts.timeout, repeat)

    if opts.profile:
        profile(work, venvs, names[-1], opts.profile)
    print(f"\nLoad average after: {os.getloadavg()[0]:.2f}; "
          f"{time.time() - started:.0f} s for the whole script.")
    if not opts.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
