"""Output: the DOT export (accepted by Graphviz) and the terminal summary."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from .helpers import Run

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
def test_dot_file_after_run_has_outcomes_and_is_valid(pytester: pytest.Pytester, run: Run) -> None:
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
def test_fixture_edges_are_labelled(pytester: pytest.Pytester, run: Run) -> None:
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


MAGIC = {"svg": b"<?xml", "png": b"\x89PNG", "pdf": b"%PDF", "jpg": b"\xff\xd8\xff", "gif": b"GIF8"}


@needs_dot
@pytest.mark.parametrize("suffix", sorted(MAGIC))
def test_rendered_formats(pytester: pytest.Pytester, run: Run, suffix: str) -> None:
    pytester.makepyfile(test_acct=SUITE)
    (pytester.path / "out").mkdir()
    out = pytester.path / "out" / f"graph.{suffix.upper()}"
    result = run(f"--depgraph-dot={out}")
    data = out.read_bytes()
    assert data.startswith(MAGIC[suffix]) or MAGIC[suffix] in data[:200]
    assert not data.startswith(b"digraph")
    result.stdout.fnmatch_lines([f"*- generated depgraph {suffix.upper()} file: {out} -*"])


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


def test_summary_counts_edges_and_reduction(pytester: pytest.Pytester, run: Run) -> None:
    # test_read takes a while: the chain test_create -> test_read is then the longest that
    # ran, however long test_cleanup alone takes on a loaded machine (CI once saw it longer
    # than the two instant tests together, and the path was test_cleanup alone)
    slow_read = SUITE.replace("    assert 0", "    time.sleep(0.3)\n    assert 0")
    pytester.makepyfile(test_acct="import time\n" + slow_read)
    result = run()
    result.stdout.fnmatch_lines(
        [
            "*= depgraph =*",
            "4 tests, 4 edges (3 explicit, 1 from fixtures); 1 removed by transitive reduction",
            # through tests that ran only: not test_update, skipped after test_read failed
            "critical path: 2 tests (* s):",
            "  test_acct.py::test_create",
            "  test_acct.py::test_read",
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
         "order * ms, reduce * ms; total * ms",
         "depgraph timings (CPU): resolve * ms, validate * ms, order * ms, reduce * ms; "
         "total * ms"]
    )
    one = pytester.runpytest("--collect-only", "-q", "--depgraph-timings", "-k", "test_create")
    one.stdout.fnmatch_lines(["depgraph timings: 1 test, 0 edges after reduction: *"])


# -- the path, checked before the run ------------------------------------------------------

#: a suite that leaves a file behind when it runs, to tell that nothing ran
RAN = """
import pathlib

def test_marks_that_it_ran():
    pathlib.Path(__file__).with_name("ran").write_text("yes")
"""


@pytest.mark.parametrize(
    ("path", "message"),
    [
        (".", "--depgraph-dot .: . is a directory; give a file name, e.g. ./depgraph.dot"),
        ("missing/g.dot", "--depgraph-dot missing/g.dot: the folder */missing does not exist*"),
        ("/proc/depgraph.dot", "--depgraph-dot /proc/depgraph.dot: cannot write*"),
        ("graph.txt", "--depgraph-dot graph.txt: graph.txt has extension '.txt'; use .dot or "
         ".gv for DOT text, or one of .svg, *, .jpg, * for a picture drawn by Graphviz"),
        ("graph", "--depgraph-dot graph: graph has no extension; use .dot or .gv*"),
    ],
    ids=["directory", "missing-folder", "unwritable", "unknown-extension", "no-extension"],
)
def test_a_path_that_cannot_be_written_is_refused_before_any_test_runs(
    pytester: pytest.Pytester, path: str, message: str
) -> None:
    pytester.makepyfile(test_ran=RAN)
    result = pytester.runpytest(f"--depgraph-dot={path}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])
    assert not (pytester.path / "ran").exists()
    assert not (pytester.path / "missing").exists()


def test_an_ini_path_is_named_with_its_file(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ndepgraph_dot = graphs/g.dot\n")
    pytester.makepyfile(test_ran=RAN)
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: depgraph_dot = graphs/g.dot in tox.ini: the folder */graphs does not exist*"]
    )


def test_a_format_graphviz_cannot_write_is_refused(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Never DOT text in a .jpg: a Graphviz without JPEG is named before the run."""
    bin_dir = pytester.mkdir("bin")
    fake = bin_dir / "dot"
    fake.write_text(
        "#!/bin/sh\necho 'Format: \"?\" not recognized. Use one of: dot png svg:cairo' >&2\n"
        "exit 1\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    pytester.makepyfile(test_ran=RAN)
    result = pytester.runpytest("--depgraph-dot=graph.jpg")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: --depgraph-dot graph.jpg: the installed Graphviz cannot write JPG (graph.jpg); "
         "it can write .png, .svg, or write a .dot file."]
    )
    assert not (pytester.path / "ran").exists() and not (pytester.path / "graph.jpg").exists()


# -- after the run -------------------------------------------------------------------------


def test_the_summary_says_where_the_file_was_written(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_acct=SUITE)
    result = pytester.runpytest("--depgraph-dot=graph.gv")
    out = pytester.path / "graph.gv"
    assert out.read_text().startswith("digraph depgraph {")
    result.stdout.fnmatch_lines(
        ["*= depgraph =*", f"*- generated depgraph DOT file: {out} -*", "*= 1 failed, *"]
    )
    # -q keeps the line (a file asked for is worth it); -qq drops it
    quiet = pytester.runpytest("-q", "--depgraph-dot=graph.gv")
    quiet.stdout.fnmatch_lines([f"*- generated depgraph DOT file: {out} -*"])
    very_quiet = pytester.runpytest("-qq", "--depgraph-dot=graph.gv")
    very_quiet.stdout.no_fnmatch_line("*generated depgraph*")


def test_stdout_graph_starts_on_a_line_of_its_own(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_acct=SUITE)
    result = pytester.runpytest("-q", "--depgraph-dot", "-")
    assert "digraph depgraph {" in result.outlines
    start = result.outlines.index("digraph depgraph {")
    assert result.outlines[start - 1].startswith(".F")  # the progress line, ended
    assert "}" in result.outlines[start:]
    result.stdout.no_fnmatch_line("*generated depgraph*")


def test_an_error_writing_after_the_run_keeps_the_summary_and_exit_code(
    pytester: pytest.Pytester,
) -> None:
    """The folder disappears during the run: one red line says so; the results stay."""
    pytester.mkdir("graphs")
    pytester.makepyfile(
        test_gone="""
        import pathlib, shutil

        def test_removes_the_folder():
            shutil.rmtree(pathlib.Path(__file__).with_name("graphs"))

        def test_fails():
            assert 0
        """
    )
    result = pytester.runpytest("--depgraph-dot=graphs/g.dot")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "depgraph: could not write graphs/g.dot: No such file or directory",
            "*= short test summary info =*",
            "FAILED test_gone.py::test_fails - assert 0",
            "*= 1 failed, 1 passed in *",
        ]
    )
    result.stdout.no_fnmatch_line("*Traceback*")
    # with every test passed, the missing graph is not a silent success
    pytester.mkdir("graphs")
    passing = pytester.runpytest("--depgraph-dot=graphs/g.dot", "-k", "removes")
    assert passing.ret == pytest.ExitCode.USAGE_ERROR
    passing.stdout.fnmatch_lines(["depgraph: could not write graphs/g.dot: *", "*= 1 passed*"])


# -- what the graph shows ------------------------------------------------------------------

PINNED = """
import pytest
from pytest_depgraph import depends_on

@pytest.fixture(scope="module")
def db():
    return {}

@pytest.fixture
@depends_on("test_a")
def seeded():
    pass

def test_a(db):
    pass

@pytest.mark.depends_on("test_a")
def test_b(db):
    assert 0

@pytest.mark.depends_on("test_a")
def test_c(db):
    pass

@pytest.mark.depends_on("test_b", on_failure="run")
def test_d(seeded):
    pass

@pytest.mark.depends_on("test_b")
def test_e():
    pass
"""


def test_legend_and_pinned_edges(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_pin=PINNED)
    out = pytester.path / "g.dot"
    pytester.runpytest(f"--depgraph-dot={out}").assert_outcomes(passed=3, failed=1, skipped=1)
    text = out.read_text()
    if shutil.which("dot"):
        _dot_accepts(out)
    # test_c shares test_b's module fixture 'db': pinned behind it, dotted and blue
    pin = '"test_pin.py::test_c" -> "test_pin.py::test_b" ['
    assert pin in text
    pin_attrs = text.split(pin, 1)[1].splitlines()[0]
    assert 'style = "dotted", color = "steelblue"' in pin_attrs
    assert 'label = "pinned: db"' in pin_attrs
    fixture = text.split('"test_pin.py::test_d" -> "test_pin.py::test_a" [', 1)[1].splitlines()[0]
    assert 'label = "seeded"' in fixture and "dotted" not in fixture
    legend = text.split('subgraph "cluster_legend" {', 1)[1]
    for entry in (
        "passed", "failed or error", "skipped: a dependency failed",
        "requires: skipped unless it passed", "runs after, whatever the outcome",
        "pinned: one worker, in this order", "from that fixture",
    ):
        assert f'label = "{entry}' in legend, entry
    assert "not run" not in legend and "not selected" not in legend  # only what the graph has
