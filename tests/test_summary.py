"""The ``depgraph`` terminal summary follows pytest's verbosity and speaks a user's words."""

from __future__ import annotations

import pytest

from pytest_depgraph.run.xdist.hooks import dist_location

#: one failing test and 25 dependents of it, and a chain of 8 tests with long names
MANY = "import pytest\n\ndef test_root():\n    assert False\n" + "".join(
    f"\n@pytest.mark.depends_on('test_root')\ndef test_dependent_{i}():\n    pass\n"
    for i in range(25)
)
CHAIN = "import pytest\n" + "".join(
    (f"\n@pytest.mark.depends_on('test_step_{i - 1}_of_a_long_chain')" if i else "")
    + f"\ndef test_step_{i}_of_a_long_chain():\n    pass\n"
    for i in range(8)
)


def _section(result: pytest.RunResult) -> list[str]:
    """The lines between the depgraph separator and the next one."""
    lines = result.outlines
    if not any("= depgraph =" in line for line in lines):
        return []
    start = next(i for i, line in enumerate(lines) if "= depgraph =" in line) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("=")), len(lines))
    return lines[start:end]


def test_skipped_tests_listed_by_verbosity(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_many=MANY, test_chain=CHAIN)
    # default: at most 10 per root cause; the chain's ends only
    section = _section(pytester.runpytest("-p", "no:randomly"))
    assert section[0] == (
        "34 tests, 32 edges (32 explicit, 0 from fixtures); 0 removed by transitive "
        "reduction"
    )
    assert "    … and 15 more (-v lists them all)" in section
    assert sum(line.startswith("    test_many.py::test_dependent_") for line in section) == 10
    assert len(section) < 20
    # -v: every skipped test
    verbose = _section(pytester.runpytest("-v", "-p", "no:randomly"))
    assert sum(line.startswith("    test_many.py::test_dependent_") for line in verbose) == 25
    assert not any("more (-v lists them all)" in line for line in verbose)
    # -q: one line, no section
    quiet = pytester.runpytest("-q", "-p", "no:randomly")
    assert _section(quiet) == []
    quiet.stdout.fnmatch_lines([
        "depgraph: 34 tests, 32 edges, 25 tests skipped because of 1 upstream test",
    ])
    assert sum("depgraph" in line for line in quiet.outlines) == 1
    # -qq: nothing
    very_quiet = pytester.runpytest("-qq", "-p", "no:randomly")
    assert not any("depgraph" in line for line in very_quiet.outlines)
    assert len(very_quiet.outlines) < 20


def test_long_critical_path_shows_its_ends(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_chain=CHAIN)
    result = pytester.runpytest("-p", "no:randomly")
    result.stdout.fnmatch_lines([
        "critical path: 8 tests (* s):",
        "  test_chain.py::test_step_0_of_a_long_chain",
        "  … 6 more …",
        "  test_chain.py::test_step_7_of_a_long_chain",
    ])
    assert max(len(line) for line in _section(result)) <= 120


def test_one_test_and_no_pins_serially(pytester: pytest.Pytester) -> None:
    """"1 test", not "1 tests"; a serial run does not count edges that pin tests to a worker."""
    pytester.makepyfile(
        test_one="""
        import pytest

        @pytest.fixture(scope="module")
        def db():
            return {}

        def test_a(db):
            db["a"] = 1

        @pytest.mark.depends_on("test_a")
        def test_b(db):
            pass

        @pytest.mark.depends_on("test_a")
        def test_c(db):
            pass
        """
    )
    section = _section(pytester.runpytest("-p", "no:randomly"))
    assert section[0] == (
        "3 tests, 2 edges (2 explicit, 0 from fixtures); 0 removed by transitive reduction"
    )
    assert not any("pinned" in line for line in section)
    section = _section(pytester.runpytest("test_one.py::test_b", "--depgraph-no-deps"))
    assert section[0].startswith("1 test, 1 edge (1 explicit")


def test_no_counts_when_collection_errors_stopped_the_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_bad="""
        import pytest

        def test_a():
            pass

        @pytest.mark.depends_on("test_nowhere")
        def test_b():
            pass

        @pytest.mark.depends_on("test_a")
        def test_c():
            pass
        """
    )
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert _section(result) == []
    result.stdout.no_fnmatch_line("*edges*")
    # with --continue-on-collection-errors the graph is walked: the summary is back
    result = pytester.runpytest("--continue-on-collection-errors")
    result.stdout.fnmatch_lines(["*= depgraph =*", "3 tests, 1 edge*"])


def test_dist_warning_points_at_the_ini_line(pytester: pytest.Pytester) -> None:
    """The warning for a --dist mode the scheduler does not run (a plugin's) is located where
    --dist was given: the ini line, or the command line -- not a line of the plugin."""
    pytester.makeini("[pytest]\naddopts = -p xdist\n    --dist loadscope\n")
    config = pytester.parseconfig()
    assert dist_location(config) == (str(pytester.path / "tox.ini"), 3)
    config = pytester.parseconfig("-p", "xdist", "--dist", "loadscope")
    assert dist_location(config) == ("pytest command line", 0)
