"""Output: the DOT export (accepted by Graphviz) and the terminal summary."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

SUITE = """
import pytest
from pytest_depgraph import depends_on

@pytest.fixture
@depends_on("test_create")
def account():
    return 1

def test_create():
    pass

@pytest.mark.depends_on("test_create")
def test_read():
    assert 0

@pytest.mark.depends_on("test_read")
def test_update(account):
    pass

@pytest.mark.depends_on("test_update", on_failure="run")
def test_cleanup():
    pass
"""

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz 'dot' not installed")


def _dot_accepts(path: Path) -> None:
    done = subprocess.run(["dot", "-Tsvg", "-o", "/dev/null", str(path)], capture_output=True)
    assert done.returncode == 0, done.stderr


@needs_dot
def test_dot_file_after_run_has_outcomes_and_is_valid(pytester: pytest.Pytester, run) -> None:
    pytester.makepyfile(test_acct=SUITE)
    out = pytester.path / "graph.dot"
    result = run(f"--depgraph-dot={out}")
    result.assert_outcomes(passed=2, failed=1, skipped=1)
    text = out.read_text()
    _dot_accepts(out)
    assert text.startswith("digraph depgraph {")
    assert 'subgraph "cluster_0" {' in text and 'label = "test_acct.py";' in text
    assert '"test_acct.py::test_create" [label = "test_create", fillcolor = "palegreen"' in text
    assert '"test_acct.py::test_read" [label = "test_read", fillcolor = "salmon"' in text
    assert '"test_acct.py::test_update" [label = "test_update", fillcolor = "lightgrey"' in text
    assert '"test_acct.py::test_read" -> "test_acct.py::test_create"' in text
    # test_update -> test_create (fixture 'account') is implied by update -> read -> create
    assert '"test_acct.py::test_update" -> "test_acct.py::test_create"' not in text
    cleanup = '"test_acct.py::test_cleanup" -> "test_acct.py::test_update" ['
    assert cleanup in text
    assert 'style = "dashed"' in text.split(cleanup, 1)[1].splitlines()[0]


@needs_dot
def test_fixture_edges_are_labelled(pytester: pytest.Pytester, run) -> None:
    pytester.makepyfile(
        test_f="""
        import pytest
        from pytest_depgraph import depends_on

        @pytest.fixture
        @depends_on("test_a")
        def gateway():
            pass

        def test_a(): pass
        def test_b(gateway): pass
        """
    )
    out = pytester.path / "g.dot"
    run(f"--depgraph-dot={out}").assert_outcomes(passed=2)
    text = out.read_text()
    _dot_accepts(out)
    assert '"test_f.py::test_b" -> "test_f.py::test_a" [tooltip = "fixture \'gateway\'", ' \
        'label = "gateway"];' in text


def test_collect_only_writes_without_outcomes_to_stdout(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_acct=SUITE)
    result = pytester.runpytest("--collect-only", "-q", "--depgraph-dot", "-")
    text = result.stdout.str()
    assert "digraph depgraph {" in text
    assert "fillcolor = \"palegreen\"" not in text and "fillcolor = \"salmon\"" not in text
    assert '"test_acct.py::test_read" -> "test_acct.py::test_create"' in text


@needs_dot
@pytest.mark.parametrize("suffix", ["svg", "png", "pdf"])
def test_rendered_formats(pytester: pytest.Pytester, run, suffix: str) -> None:
    pytester.makepyfile(test_acct=SUITE)
    out = pytester.path / "out" / f"graph.{suffix}"
    run(f"--depgraph-dot={out}")
    data = out.read_bytes()
    magic = {"svg": b"<?xml", "png": b"\x89PNG", "pdf": b"%PDF"}[suffix]
    assert data.startswith(magic) or magic in data[:200]


def test_rendering_without_graphviz_is_a_clear_usage_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_acct=SUITE)
    monkeypatch.setenv("PATH", str(pytester.path))
    result = pytester.runpytest("--depgraph-dot=graph.svg")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--depgraph-dot graph.svg: rendering to SVG needs Graphviz*"])


def test_ini_setting_for_dot(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ndepgraph_dot = from_ini.dot\n")
    pytester.makepyfile(test_acct=SUITE)
    pytester.runpytest()
    assert (pytester.path / "from_ini.dot").read_text().startswith("digraph")


def test_dot_escapes_quotes_in_parametrized_ids(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.parametrize("s", ['a"b', "c\\\\d"])
        def test_p(s): pass

        @pytest.mark.depends_on("test_p")
        def test_q(): pass
        """
    )
    out = pytester.path / "g.dot"
    pytester.runpytest(f"--depgraph-dot={out}").assert_outcomes(passed=3)
    if shutil.which("dot"):
        _dot_accepts(out)


def test_summary_counts_edges_and_reduction(pytester: pytest.Pytester, run) -> None:
    pytester.makepyfile(test_acct=SUITE)
    result = run()
    result.stdout.fnmatch_lines(
        [
            "*= depgraph =*",
            "4 tests, 4 edges (3 explicit, 1 from fixtures); 1 removed by transitive reduction",
            "critical path: 4 tests (* s): test_acct.py::test_create -> test_acct.py::test_read"
            " -> test_acct.py::test_update -> test_acct.py::test_cleanup",
            "1 test skipped because of an upstream test:",
            "  test_acct.py::test_read failed:",
            "    test_acct.py::test_update",
        ]
    )


def test_timings_switch_prints_each_phase(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_acct=SUITE)
    result = pytester.runpytest("--collect-only", "-q", "--depgraph-timings")
    result.stdout.fnmatch_lines(
        ["depgraph timings: 4 tests, 3 edges after reduction: resolve * ms, validate * ms, "
         "order * ms, reduce * ms; total * ms"]
    )
