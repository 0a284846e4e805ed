"""bench/'s generated realistic suite means what the benchmark says it means.

The benchmark counts edges and order violations from its own model of the suite; these runs
check that the plugin reads the written suite the same way (every target resolves, the same
edge count) and runs it in an order the model accepts.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import discover_bench  # bench/ is not a package: the path above
import peers_bench


def test_realistic_suite_collects_with_the_edges_it_declares_and_runs_in_order(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = peers_bench.RealSuite("real-small", 300, 3, "real", seed=4)
    suite.generate()
    assert {f.cls is not None for f in suite.funcs} == {True, False}
    assert any(f.params for f in suite.funcs) and any(f.fixture for f in suite.funcs)
    assert {kind for f in suite.funcs for kind, _, _ in f.targets} >= {"func", "inst"}
    peers_bench.write_suite(suite, "depgraph", pytester.path)

    collected = pytester.runpytest("--collect-only", "-q", "-p", "no:cacheprovider")
    collected.assert_outcomes()
    assert f"depgraph: {suite.items} tests, {suite.edge_count} edges" in collected.stdout.str()

    log = pytester.path / "ran.log"
    monkeypatch.setenv(peers_bench.LOG_ENV, str(log))
    ran = pytester.runpytest("-q", "-p", "no:cacheprovider")
    ran.assert_outcomes(passed=suite.items)
    assert peers_bench.check_order(suite, log) == (suite.items, 0)
    assert not re.search(r"warning", ran.stdout.str(), re.I)


def test_targets_runs_the_xdist_rows_with_the_venv_that_has_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bench/targets.py's xdist rows run in the bench's venv of the checkout, whichever
    interpreter runs the script; an interpreter without the package is an error naming it,
    not a table of silent n/a rows."""
    import argparse

    import targets
    import xdist_bench

    monkeypatch.setattr(xdist_bench, "PYTHON", "python3-without-the-package")
    venv = Path(sys.prefix)  # this environment has pytest_depgraph and xdist
    state = targets.State(argparse.Namespace(), tmp_path, venvs={"depgraph": venv})
    assert targets.xdist_python(state) == venv / "bin" / "python"
    assert str(venv / "bin" / "python") == xdist_bench.PYTHON

    bare = tmp_path / "bare"
    (bare / "bin").mkdir(parents=True)
    (bare / "bin" / "python").symlink_to("/bin/false")
    state.venvs["depgraph"] = bare
    with pytest.raises(RuntimeError, match="bare/bin/python cannot import pytest_depgraph"):
        targets.xdist_python(state)


def test_discovery_suite_plants_exactly_the_dependencies_it_scores(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In collection order every test passes; reversed, exactly the planted victims (and the
    random test, made to fail) fail: the truth the bench scores the tools against is real."""
    suite = discover_bench.Suite(200)
    assert len(suite.hidden) == 16 and len(suite.declared) == 5 and len(suite.flaky) == 1
    suite.write(pytester.path)
    pytester.makepyfile(reverse_order="def pytest_collection_modifyitems(items):\n"
                                      "    items.reverse()\n")

    monkeypatch.setenv(discover_bench.FLAKY_RATE_ENV, "0")
    in_order = pytester.runpytest_subprocess("-p", "no:depgraph", "-p", "no:cacheprovider")
    in_order.assert_outcomes(passed=200)
    assert discover_bench.executions(pytester.path) == 200

    monkeypatch.setenv(discover_bench.FLAKY_RATE_ENV, "1")
    reversed_ = pytester.runpytest_subprocess(
        "-p", "no:depgraph", "-p", "no:cacheprovider", "-p", "reverse_order", "-rf")
    failed = set(re.findall(r"^FAILED (\S+)", reversed_.stdout.str(), re.M))
    assert failed == {*suite.victims, *suite.flaky}

    truth = [discover_bench.Finding(p.kind, p.test, p.other) for p in suite.hidden]
    declared = suite.declared[0]
    wrong = [discover_bench.Finding("needs", declared.other, declared.test),
             discover_bench.Finding("flaky", suite.victims[0], None)]
    scored = discover_bench.score(suite, truth + wrong)
    assert (scored.recall, scored.precision) == ("16/16", "16/17")
    assert (scored.declared, scored.false, scored.flaky_false) == (1, 0, 1)
