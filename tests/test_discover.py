"""``pytest --depgraph-discover`` on generated suites: what it finds, prints, writes and exits with.

Each discovery starts dozens of pytest processes, so the suites are small and each run checks
all it can; the search itself is tested in-process in ``test_discover_search.py``.
"""

from __future__ import annotations

import json
import os
import socket
import venv

import pytest

from pytest_depgraph.discover.child import read_record
from pytest_depgraph.discover.findings import Named, covered, line
from pytest_depgraph.discover.search import CONFLICTS, NEEDS, Finding
from pytest_depgraph.discover.server import Runner

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
        "cost: 2 orders of every test, * tests alone and * shorter lists, * test executions in * "
        "processes "
        "(1 at once), * s",
        "findings written to found.json",
    ])
    assert "test_declared" not in result.stdout.str().split("depgraph discover")[1]
    # the children's failures are not the user's: their cache is a folder of the discovery's
    lastfailed = pytester.path / ".pytest_cache" / "v" / "cache" / "lastfailed"
    assert not lastfailed.exists() or "test_always_fails" not in lastfailed.read_text()


#: (in a suite's module) the parent of a process, from Linux's /proc
PARENT = """
def parent(pid):
    with open(f"/proc/{pid}/stat") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[1])
"""


def test_discovery_on_two_gateways_with_a_flaky_test(pytester: pytest.Pytester) -> None:
    """``-n 2``: two execnet gateways at once, as xdist makes its workers' (no worker session
    starts on them); each list runs in a process forked on a gateway's side, not here; a test
    failing at random is never a dependency (flaky, failing in pytest's order, or nothing
    when it happened to agree)."""
    if not os.path.exists(f"/proc/{os.getpid()}/stat"):
        pytest.skip("reads the processes' parents from Linux's /proc")
    pytester.makepyfile(test_two=PARENT + f"""
import random
import os
import pytest

SEEN = []
CONTROLLER = {os.getpid()}

def test_fill():
    SEEN.append(1)

def test_read():
    assert SEEN

def test_coin():
    assert random.random() < 0.5

@pytest.mark.depends_on("test_fill")
def test_declared():
    assert SEEN

def test_forked_on_a_gateway():
    zygote = os.getppid()
    gateway = parent(zygote)
    assert gateway != CONTROLLER and parent(gateway) == CONTROLLER
""")
    # each pair found is run ten times both ways, not three (the default): a coin that
    # agrees with a dependency of its own on all six runs of a pair (one chance in 64) is
    # reported as one -- ("needs", test_coin, test_fill), 1 failure in 44 runs of this test;
    # on twenty runs, about one chance in a million
    result = pytester.runpytest("-n", "2", "--depgraph-discover", "--depgraph-discover-verify",
                                "10", "--depgraph-discover-json", "found.json")
    assert result.ret == 1
    found = json.loads((pytester.path / "found.json").read_text())
    hidden = [(e["kind"], e["test"], e["other"]) for e in found if e["kind"] != "flaky"]
    assert hidden == [("needs", "test_two.py::test_read", "test_two.py::test_fill")]
    assert all(e["test"] == "test_two.py::test_coin" for e in found if e["kind"] == "flaky")
    result.stdout.fnmatch_lines([
        "depgraph discover: 5 tests in orders consistent with the declared graph, on 2 "
        "gateways at once (2*popen)",
        "*(2 at once)*",
    ])
    assert "test_forked_on_a_gateway" not in result.stdout.str()  # it passed everywhere
    assert "workers [" not in result.stdout.str()  # xdist started no worker session


def test_discovery_on_a_gateway_in_a_folder_of_its_own(pytester: pytest.Pytester) -> None:
    """``--tx popen//chdir=DIR``: a gateway that works in another folder receives the
    ``--rsyncdir`` folders, as a remote one does, and its children name the tests as this
    session does; beside it a ``popen`` gateway in this folder. A test file the gateway does
    not receive is a usage error naming the spec."""
    suite = pytester.mkpydir("suite")
    (suite / "test_moved.py").write_text(PARENT + f"""
import os

CART = []
HERE = {str(suite)!r}

def test_add():
    CART.append(1)

def test_checkout():
    assert CART == [1]

def test_where():
    assert os.path.basename(os.getcwd()) in ("elsewhere", {pytester.path.name!r})
    assert os.path.dirname(__file__).endswith("suite")
""")
    elsewhere = pytester.path.parent / f"{pytester.path.name}-elsewhere" / "elsewhere"
    elsewhere.parent.mkdir()
    result = pytester.runpytest(
        "-p", "xdist", "-W", "ignore::DeprecationWarning",  # --rsyncdir: removed in xdist 4
        "--depgraph-discover", "--depgraph-discover-verify", "1",
        "--tx", "popen", "--tx", f"popen//chdir={elsewhere}", "--rsyncdir", str(suite),
        str(suite),
    )
    assert result.ret == 1, result.stdout.str()
    result.stdout.fnmatch_lines([
        "needs     suite/test_moved.py::test_checkout needs suite/test_moved.py::test_add*",
        "cost: * (2 at once), *",
    ])
    assert "failing in pytest's own order" not in result.stdout.str()
    assert (elsewhere / "suite" / "test_moved.py").exists()  # rsynced there
    # the rootdir itself sent: the sessions there start from its copy
    result = pytester.runpytest(
        "-p", "xdist", "-W", "ignore::DeprecationWarning", "--depgraph-discover",
        "--depgraph-discover-verify", "1", "--tx", f"popen//chdir={elsewhere}",
        "--rsyncdir", str(pytester.path), str(suite),
    )
    assert result.ret == 1, result.stdout.str()
    result.stdout.fnmatch_lines(["needs     suite/test_moved.py::test_checkout needs *"])
    assert (elsewhere / pytester.path.name / "suite" / "test_moved.py").exists()
    other = pytester.mkpydir("other")
    (other / "test_left_here.py").write_text("def test_one():\n    pass\n")
    result = pytester.runpytest(
        "-p", "xdist", "-W", "ignore::DeprecationWarning", "--depgraph-discover",
        "--tx", f"popen//chdir={elsewhere}", "--rsyncdir", str(suite), str(suite), str(other),
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        f"ERROR: --tx popen//chdir={elsewhere}: the test file other/test_left_here.py is not "
        f"in a folder the gateway receives (*, {suite}): add --rsyncdir {pytester.path} (the "
        "rootdir), or run the discovery there",
    ])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_a_gateway_that_cannot_start_or_run_pytest_is_a_usage_error(
    pytester: pytest.Pytester,
) -> None:
    """A spec nothing answers, and a gateway whose Python has no pytest (a bare virtualenv):
    each stops the discovery naming the spec, without a traceback (the second ran every list
    and reported every test as failing in pytest's order)."""
    pytester.makepyfile(test_one="def test_one():\n    pass\n")
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # nothing listens there once the socket is closed
    result = pytester.runpytest("-p", "xdist", "--depgraph-discover",
                                "--tx", f"socket=127.0.0.1:{port}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        f"ERROR: --tx socket=127.0.0.1:{port}: cannot start the gateway (*refused*)*",
    ])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    bare = pytester.path / "bare"
    venv.create(bare, with_pip=False)
    python = bare / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    result = pytester.runpytest("-p", "xdist", "--depgraph-discover",
                                "--tx", f"popen//python={python}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines([
        f"*depgraph discover: a discovery process on gw0 (popen//python={python}) ended with "
        "exit code 1 before running any test:",
        "*No module named pytest*",
    ])
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


@pytest.mark.parametrize("fork", [True, False], ids=["forked", "started"])
def test_a_slots_list_runs_in_a_fresh_session_and_its_record_comes_back(
    pytester: pytest.Pytester, fork: bool
) -> None:
    """A slot's side (on a gateway or here): a list forked from the zygote, or, where the
    system does not fork, started as ``python -m pytest``; the record and the exit code come
    back in the answer, and the slot's folder goes when it closes."""
    if fork and not hasattr(os, "fork"):
        pytest.skip("the system does not fork")
    pytester.makepyfile(test_r="""
        import os

        def test_one():
            pass

        def test_two():
            assert 0

        def test_exit():
            os._exit(3)

        def test_never():
            pass
    """)
    runner = Runner(str(pytester.path), fork, cache=False)
    try:
        answer = runner.run({
            "args": ["-p", "no:cacheprovider", f"--rootdir={pytester.path}",
                     str(pytester.path / "test_r.py")],
            "tests": ["test_r.py::test_two", "test_r.py::test_one", "test_r.py::test_exit",
                      "test_r.py::test_never"],
        })
    finally:
        runner.close()
    assert read_record(answer["record"]) == (
        {"test_r.py::test_two": False, "test_r.py::test_one": True, "test_r.py::test_exit": False},
        "test_r.py::test_exit",
    )
    assert answer["code"] == 3
    assert not os.path.exists(runner.workdir)


#: test_total reads what either test_add_apple or test_add_pear leaves: pytest's order runs
#: the apple before it, the reversal the pear, so it fails only alone
TWO_SATISFY = """
CART = []

def test_add_apple():
    CART.append("apple")

def test_total():
    assert CART, "the cart is empty"

def test_add_pear():
    CART.append("pear")
"""


def test_a_need_two_tests_satisfy_is_found_by_running_each_test_alone(
    pytester: pytest.Pytester,
) -> None:
    """No order makes test_total fail (a test that fills the cart runs before it in both);
    alone it fails, and discovery names the one test before it in pytest's order that it
    needs, with the line to add -- after which test_total passes when run by itself, and a
    second discovery finds nothing (one was found by no order before the runs alone)."""
    pytester.makepyfile(test_cart=TWO_SATISFY)
    result = pytester.runpytest("--depgraph-discover", "--depgraph-discover-verify", "2",
                                "--depgraph-discover-json", "found.json", "-p", "no:randomly")
    assert result.ret == 1, result.stdout.str()
    found = json.loads((pytester.path / "found.json").read_text())
    assert [(e["kind"], e["test"], e["other"], e["location"], e["suggestion"])
            for e in found] == [
        ("needs", "test_cart.py::test_total", "test_cart.py::test_add_apple", "test_cart.py:6",
         '@pytest.mark.depends_on("test_add_apple")'),
    ]
    result.stdout.fnmatch_lines([
        "needs     test_cart.py::test_total needs test_cart.py::test_add_apple "
        '(test_cart.py:6): add @pytest.mark.depends_on("test_add_apple") to test_total',
        "cost: 2 orders of every test, 1 test alone and * shorter lists, *",
    ])
    alone = pytester.runpytest("test_cart.py::test_total", "-p", "no:randomly")
    alone.assert_outcomes(failed=1)
    source = (pytester.path / "test_cart.py").read_text()
    pytester.makepyfile(test_cart="import pytest\n" + source.replace(
        "def test_total", '@pytest.mark.depends_on("test_add_apple")\ndef test_total'))
    alone = pytester.runpytest("test_cart.py::test_total", "-p", "no:randomly")
    alone.assert_outcomes(passed=2)
    again = pytester.runpytest("--depgraph-discover", "-p", "no:randomly")
    assert again.ret == 0, again.stdout.str()
    again.stdout.fnmatch_lines(["no hidden dependency found"])


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
        "cost: 2 orders of every test, 0 tests alone and 0 shorter lists, 4 test executions in 2 "
        "processes*",
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
