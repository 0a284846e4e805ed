"""The test session's fixtures and hooks: ``pytester`` without the plugins generated suites never
need, ``run``, and the number of xdist workers (the helpers are in :mod:`tests.helpers`)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import _pytest.unraisableexception
import pytest
from hypothesis import HealthCheck, settings

from .helpers import GENERATED_RUN_ADDOPTS, Run

pytest_plugins = ["pytester"]

# hypothesis' checks of time fail a property test on a loaded machine, not on a wrong result:
# CI runs four suites at once on two cores, where drawing a test's first examples took more
# than a second ("Data generation is extremely slow", tests/test_resolve.py, pytest 8.0 on
# Python 3.9). Every property test runs without them; a test's own settings still apply.
settings.register_profile(
    "depgraph", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("depgraph")

#: pytest rewrites the asserts of every module of an installed pytest plugin (this package,
#: installed as a wheel) when a process imports it, and keeps the result as a .pyc beside it
#: unless PYTHONDONTWRITEBYTECODE is set: where it is, every generated pytest process (a
#: pytester subprocess, each xdist worker) rewrote the package again, 0.17 s of CPU each.
_BYTECODE = "PYTHONDONTWRITEBYTECODE"

#: this checkout: pytest puts it on sys.path, since tests/ is a package
_CHECKOUT = Path(__file__).resolve().parent.parent

#: pytest 8.4 and later collect garbage when a config is unconfigured, unless this stash key
#: says how many times (pytester's in-process runs set it to 0; pytest 8.0 has neither)
_GC_ROUNDS = getattr(_pytest.unraisableexception, "gc_collect_iterations_key", None)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto`` (pyproject.toml's addopts): one worker more than the cores. Most of this
    suite's time is generated pytest runs that start processes and wait for them, which
    leaves a core idle with one worker per core (2 cores: 115 s with 2 workers, 89 s with 3)."""
    return (os.cpu_count() or 1) + 1


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytest's ``pytester``, with the plugins the generated suites never need turned off,
    bytecode kept (as this process keeps it: ``tests/__init__.py``), this checkout off
    sys.path, and no garbage collection when a config of ``parseconfig`` is unconfigured."""
    monkeypatch.setenv("PYTEST_ADDOPTS", GENERATED_RUN_ADDOPTS)
    monkeypatch.delenv(_BYTECODE, raising=False)
    if _GC_ROUNDS is not None:
        # pytester turns that collection off for its in-process runs, but not for the configs
        # of parseconfig and parseconfigure, which it unconfigures at the test's teardown: two
        # full collections of this worker's heap each, 12.7% of the CPU of this suite's
        # workers (py-spy, the README's test command)
        parseconfig = pytester.parseconfig

        def parseconfig_without_gc(*args: str | os.PathLike[str]) -> pytest.Config:
            config = parseconfig(*args)
            config.stash[_GC_ROUNDS] = 0
            return config

        monkeypatch.setattr(pytester, "parseconfig", parseconfig_without_gc)
    # pytest 8 marks for assertion rewriting each package that a pytest plugin's metadata
    # lists, and warns about one already imported: a build in the checkout (pip install .)
    # leaves there pytest_depgraph.egg-info, which lists this package, "tests".
    path = [entry for entry in sys.path if not entry or Path(entry).resolve() != _CHECKOUT]
    monkeypatch.setattr(sys, "path", path)
    return pytester


@pytest.fixture
def run(pytester: pytest.Pytester) -> Run:
    """Run pytest in-process with -v and -rs; returns the RunResult."""

    def run_(*args: str) -> pytest.RunResult:
        return pytester.runpytest("-v", "-rs", "-p", "no:randomly", *args)

    return run_
