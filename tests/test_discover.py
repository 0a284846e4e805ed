"""``pytest --depgraph-discover`` on generated suites: what it finds, prints, writes and exits with.

Each discovery starts dozens of pytest processes, so the suites are small and each run checks
all it can; the search itself is tested in-process in ``test_discover_search.py``.
"""

from __future__ import annotations

import json

import pytest

from pytest_depgraph.discover.findings import Named, covered, line
from pytest_depgraph.discover.search import CONFLICTS, NEEDS, Finding

#: a module global read along a chain (c needs b needs a), an environment variable one test
#: sets and another reads, a file in the session's temporary folder, a declared pair, a test
#: that always fails, one that ends its process and one after it
SERIAL_SUITE = """
import os
import pytest

STATE = {}

def test_a():
    STATE["a"] = 1

def test_b():
    assert STATE["a"] == 1
    STATE["b"] = 1

def test_c():
    assert STATE["b"] == 1

def test_env_default():
    assert os.environ.get("DISCOVER_MODE", "prod") == "prod"

def test_env_set():
    os.environ["DISCOVER_MODE"] = "debug"

def test_write_file(tmp_path_factory):
    (tmp_path_factory.getbasetemp() / "shared.txt").write_text("data")

def test_read_file(tmp_path_factory):
    assert (tmp_path_factory.getbasetemp() / "shared.txt").read_text() == "data"

def test_declared_first():
    STATE["declared"] = 1

@pytest.mark.depends_on("test_declared_first")
def test_declared_second():
    assert STATE["declared"] == 1

def test_always_fails():
    assert False

def test_exits():
    os._exit(3)

def test_after_exit():
    pass
"""


def test_serial_discovery_finds_reports_and_writes_json(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_state=SERIAL_SUITE)
    result = pytester.runpytest(
        "--depgraph-discover", "--depgraph-discover-verify", "1",
        "--depgraph-discover-json", "found.json",
    )
    assert result.ret == 1
    found = json.loads((pytester.path / "found.json").read_text())
    assert [sorted(entry) for entry in found] == [
        ["executions", "kind", "location", "other", "suggestion", "test"]
    ] * len(found)
    short = [(e["kind"], e["test"].split("::")[1], e["other"] and e["other"].split("::")[1],
              e["location"], e["suggestion"]) for e in found]
    assert short == [
        ("needs", "test_b", "test_a", "test_state.py:9", '@pytest.mark.depends_on("test_a")'),
        ("needs", "test_c", "test_b", "test_state.py:13", '@pytest.mark.depends_on("test_b")'),
        ("conflicts", "test_env_default", "test_env_set", "test_state.py:16",
         '@pytest.mark.depends_on("test_env_default", on_failure="run")'),
        ("needs", "test_read_file", "test_write_file", "test_state.py:25",
         '@pytest.mark.depends_on("test_write_file")'),
    ]
    assert all(isinstance(e["executions"], int) and e["executions"] > 0 for e in found)
    result.stdout.fnmatch_lines([
        "*= depgraph discover =*",
        "needs     test_state.py::test_b needs test_state.py::test_a (test_state.py:9): add "
        '@pytest.mark.depends_on("test_a") to test_b',
        "needs     test_state.py::test_c needs test_state.py::test_b (test_state.py:13)*",
        "conflicts test_state.py::test_env_default fails after test_state.py::test_env_set "
        '(test_state.py:16): add @pytest.mark.depends_on("test_env_default", on_failure="run") '
        "to test_env_set (test_state.py:19)",
        "needs     test_state.py::test_read_file needs test_state.py::test_write_file*",
        "failing in pytest's own order, not analysed: 2 tests",
        "  test_state.py::test_always_fails (test_state.py:35)",
        "  test_state.py::test_exits (test_state.py:38)",
        "cost: 2 orders of every test and * shorter lists, * test executions in * processes "
        "(1 at once), * s",
        "findings written to found.json",
    ])
    assert "test_declared" not in result.stdout.str().split("depgraph discover")[1]
    # the children's failures are not the user's: their cache is a folder of the discovery's
    lastfailed = pytester.path / ".pytest_cache" / "v" / "cache" / "lastfailed"
    assert not lastfailed.exists() or "test_always_fails" not in lastfailed.read_text()


def test_discovery_on_two_processes_with_a_flaky_test(pytester: pytest.Pytester) -> None:
    """``-n 2``: two processes at once, no xdist worker; a test failing at random is never a
    dependency (flaky, failing in pytest's order, or nothing when it happened to agree)."""
    pytester.makepyfile(test_two="""
        import random
        import pytest

        SEEN = []

        def test_fill():
            SEEN.append(1)

        def test_read():
            assert SEEN

        def test_coin():
            assert random.random() < 0.5

        @pytest.mark.depends_on("test_fill")
        def test_declared():
            assert SEEN
    """)
    result = pytester.runpytest("-n", "2", "--depgraph-discover",
                                "--depgraph-discover-json", "found.json")
    assert result.ret == 1
    found = json.loads((pytester.path / "found.json").read_text())
    hidden = [(e["kind"], e["test"], e["other"]) for e in found if e["kind"] != "flaky"]
    assert hidden == [("needs", "test_two.py::test_read", "test_two.py::test_fill")]
    assert all(e["test"] == "test_two.py::test_coin" for e in found if e["kind"] == "flaky")
    result.stdout.fnmatch_lines(["*(2 at once)*"])
    assert "workers [" not in result.stdout.str()  # xdist started none


def test_nothing_hidden_exits_0_and_bad_paths_are_usage_errors(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_fine="""
        def test_one():
            pass

        def test_two():
            pass
    """)
    result = pytester.runpytest("--depgraph-discover", "--depgraph-discover-json", "out.json")
    assert result.ret == 0
    assert json.loads((pytester.path / "out.json").read_text()) == []
    result.stdout.fnmatch_lines([
        "no hidden dependency found",
        "cost: 2 orders of every test and 0 shorter lists, 4 test executions in 2 processes*",
    ])
    pytester.mkdir("folder")
    result = pytester.runpytest("--depgraph-discover", "--depgraph-discover-json", "folder")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--depgraph-discover-json folder: folder is a directory*"])
    result = pytester.runpytest("--depgraph-discover", "--depgraph-discover-verify", "0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--depgraph-discover-verify*at least 1*"])


def test_a_declared_cycle_stops_discovery_as_it_stops_a_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_cycle="""
        import pytest

        @pytest.mark.depends_on("test_b")
        def test_a():
            pass

        @pytest.mark.depends_on("test_a")
        def test_b():
            pass
    """)
    result = pytester.runpytest("--depgraph-discover")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*dependency cycle*"])
    assert "depgraph discover" not in result.stdout.str()


def test_a_conflict_whose_order_a_need_gives_adds_no_second_line() -> None:
    """test_b needs test_a, and test_a fails after test_b: the need's depends_on on test_b
    already keeps it after test_a, so the conflict asks for nothing more (it asked for a
    second, weaker marker on the same test)."""
    need = Finding(NEEDS, 1, 0)
    conflict = Finding(CONFLICTS, 0, 1)
    other = Finding(CONFLICTS, 2, 1)
    assert covered([need, conflict, other]) == {conflict}
    named = Named(["t.py::test_a", "t.py::test_b", "t.py::test_c"], ["t.py:1", "t.py:4", "t.py:7"])
    assert line(conflict, named, covered=True) == (
        "conflicts t.py::test_a fails after t.py::test_b (t.py:1): nothing more to add, the "
        "needs line of test_b keeps it after test_a")
    assert line(other, named).endswith(
        'add @pytest.mark.depends_on("test_c", on_failure="run") to test_b (t.py:4)')
