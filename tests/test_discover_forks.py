"""A discovery's lists: forked after one collection per slot, each as fresh as a run's first
test finds its process; and the fallbacks, which find the same.

What a list's process held is read from what the suite's own modules, fixtures and tests
wrote down as they ran (a log beside the suite), not from the discovery's summary.
"""

from __future__ import annotations

import json
import os
import re
from collections import defaultdict
from pathlib import Path

import pytest

from pytest_depgraph.discover.child import read_record
from pytest_depgraph.discover.server import COLLECTED, FORKED, STARTED, Runner

#: a conftest and a module that write to ``events.log`` beside them: each import of the
#: module; each test as it starts, with what the module global and the session fixture held
#: then (every test appends its own name to both); a session fixture's setup and teardown
SUITE_CONFTEST = """
import json
import os
import re

import pytest

LOG = os.path.join(os.path.dirname(__file__), "events.log")


def note(**event):
    event["pid"] = os.getpid()
    with open(LOG, "a") as log:
        log.write(json.dumps(event) + "\\n")


@pytest.fixture(scope="session")
def shared():
    note(event="session fixture set up")
    held = []
    yield held
    note(event="session fixture torn down", held=held)
"""

SUITE = """
import os
import random

from conftest import note

note(event="module imported", module=__name__)

SEEN = []


def start(name, shared):
    note(event="test", test=name, seen=list(SEEN), shared=list(shared), draw=random.random())
    SEEN.append(name)
    shared.append(name)


def test_first(shared):
    start("test_first", shared)


def test_reads_first(shared):
    start("test_reads_first", shared)
    assert "test_first" in SEEN


def test_mode_default(shared):
    start("test_mode_default", shared)
    assert os.environ.get("FORKS_MODE", "prod") == "prod"


def test_plain(shared):
    start("test_plain", shared)
"""

#: a second module, whose polluter names a test of the first in a marker
LATER = """
import os

import pytest

from conftest import note
from test_forks import start

note(event="module imported", module=__name__)


def test_later_mode_default(shared):
    start("test_later_mode_default", shared)
    assert os.environ.get("FORKS_MODE", "prod") == "prod"


@pytest.mark.depends_on("test_forks.py::test_plain", on_failure="run")
def test_set_mode(shared):
    start("test_set_mode", shared)
    os.environ["FORKS_MODE"] = "debug"
"""


def _events(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _processes(result: pytest.RunResult) -> int:
    """How many processes the discovery's summary says its lists ran in."""
    return int(re.search(r"in (\d+) processes", result.stdout.str())[1])  # type: ignore[index]


def _found(path: Path) -> list[tuple[str, str, str | None]]:
    return [(e["kind"], e["test"].split("::")[1], e["other"] and e["other"].split("::")[1])
            for e in json.loads(path.read_text())]


FOUND = [("needs", "test_reads_first", "test_first"),
         ("conflicts", "test_mode_default", "test_set_mode"),
         ("conflicts", "test_later_mode_default", "test_set_mode")]


@pytest.mark.parametrize("slots", [1, 2])
def test_each_list_is_forked_after_one_collection_and_starts_fresh(
    pytester: pytest.Pytester, slots: int
) -> None:
    """The test module is imported once in each slot (and once by the discovery's own
    collection), not once for each list; in each list's process, the module global and the
    session fixture hold only what that list's tests put there, the fixture is set up there
    and torn down at the list's end, and the random module is seeded afresh."""
    pytester.makeconftest(SUITE_CONFTEST)
    pytester.makepyfile(test_forks=SUITE, test_later=LATER)
    result = pytester.runpytest("--depgraph-discover", "--depgraph-discover-verify", "1",
                                "--depgraph-parallelism", str(slots),
                                "--depgraph-discover-json", "found.json")
    assert result.ret == 1, result.stdout.str()
    assert _found(pytester.path / "found.json") == FOUND
    assert "collected their tests afresh" not in result.stdout.str()
    events = _events(pytester.path / "events.log")
    here = os.getpid()  # the discovery collects in this process (runpytest is in-process)
    imports = [e["pid"] for e in events if e["event"] == "module imported" and e["pid"] != here
               and e["module"] == "test_later"]
    by_process: dict[object, list[dict[str, object]]] = defaultdict(list)
    for event in events:
        if event["pid"] != here and event["event"] != "module imported":
            by_process[event["pid"]].append(event)
    lists = [events for events in by_process.values()
             if any(e["event"] == "test" for e in events)]
    assert len(imports) == slots  # once a slot
    processes = _processes(result)
    assert len(lists) == processes > 10  # each list a process of its own, none importing it
    assert not set(imports) & set(by_process)  # no list ran where the module was imported
    draws = []
    for ran in lists:
        assert ran[0]["event"] == "session fixture set up"
        assert ran[-1]["event"] == "session fixture torn down"
        tests = [e for e in ran if e["event"] == "test"]
        names = [str(e["test"]) for e in tests]
        for at, event in enumerate(tests):
            assert event["seen"] == names[:at]  # nothing of another list's tests
            assert event["shared"] == names[:at]
        assert ran[-1]["held"] == names
        draws.append(tests[0]["draw"])
    assert len(set(draws)) == len(draws)  # each list's random state its own


def test_without_fork_each_list_is_a_process_of_its_own_and_finds_the_same(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the system does not fork, each list starts ``python -m pytest``, which imports
    the module again: the same findings, and nothing said about it. (The second module
    alone: its lists are five processes, where the whole suite's are sixteen.)"""
    pytester.makeconftest(SUITE_CONFTEST)
    pytester.makepyfile(test_forks=SUITE, test_later=LATER)
    monkeypatch.delattr(os, "fork", raising=False)
    result = pytester.runpytest("--depgraph-discover", "--depgraph-discover-verify", "1",
                                "--depgraph-discover-json", "found.json", "test_later.py")
    assert result.ret == 1, result.stdout.str()
    assert _found(pytester.path / "found.json") == FOUND[2:]
    assert "collected their tests afresh" not in result.stdout.str()
    events = _events(pytester.path / "events.log")
    here = os.getpid()
    imports = {e["pid"] for e in events if e["event"] == "module imported" and e["pid"] != here
               and e["module"] == "test_later"}
    ran = {e["pid"] for e in events if e["event"] == "test"
           and e["test"] in ("test_later_mode_default", "test_set_mode")}
    processes = _processes(result)
    assert ran <= imports and len(ran) == processes > 3  # each list imported the module itself


def test_a_collecting_session_that_fails_leaves_each_list_a_session_of_its_own(
    pytester: pytest.Pytester,
) -> None:
    """A discovery whose slots cannot collect once (here a conftest that fails in any
    session but the discovery's own) runs each list in a session of its own, finds the same
    and says why in its summary."""
    pytester.makeconftest(SUITE_CONFTEST + f"""

def pytest_collection_finish(session):
    if os.getpid() != {os.getpid()} and not session.config.getoption("depgraph_discover_child"):
        raise RuntimeError("collected only once per list")
""")
    pytester.makepyfile(test_forks=SUITE, test_later=LATER)
    result = pytester.runpytest("--depgraph-discover", "--depgraph-discover-verify", "1",
                                "--depgraph-discover-json", "found.json")
    assert result.ret == 1, result.stdout.str()
    assert _found(pytester.path / "found.json") == FOUND
    result.stdout.fnmatch_lines([
        "cost: *",
        "lists collected their tests afresh, each in a session of its own (slower, same "
        "findings): its collecting session ended (exit code 3) before any list",
    ])


@pytest.mark.parametrize("collects", [True, False], ids=["collecting", "failing"])
def test_a_slot_forks_its_lists_after_collection_or_else_before(
    pytester: pytest.Pytester, collects: bool
) -> None:
    """A slot's side: with a collecting session, the lists are forked from it (their own
    temporary folder each, the record and the exit code answered); when that session does
    not collect (here a conftest that fails in it alone), each list forks its whole session
    before it starts, on the list's files, as a list that names a test the collecting
    session did not collect does."""
    if not hasattr(os, "fork"):
        pytest.skip("the system does not fork")
    pytester.makepyfile(test_r="""
        import os

        def test_one(tmp_path_factory):
            base = tmp_path_factory.getbasetemp()
            assert not (base / "mine").exists()
            (base / "mine").write_text("x")

        def test_exit():
            os._exit(3)
    """)
    pytester.makepyfile(test_other="def test_other():\n    pass\n")
    if not collects:
        pytester.makeconftest("""
            def pytest_collection_finish(session):
                if not session.config.getoption("depgraph_discover_child"):
                    raise RuntimeError("collected once only")
        """)
    files = [str(pytester.path / "test_r.py"), str(pytester.path / "test_other.py")]
    options = ["-p", "no:cacheprovider", f"--rootdir={pytester.path}"]
    runner = Runner(str(pytester.path), True, cache=False, args=[*options, *files])
    try:
        answers = [runner.run({"args": [*options, *given], "tests": tests}) for given, tests in (
            (files[:1], ["test_r.py::test_one", "test_r.py::test_exit"]),
            (files, ["test_r.py::test_one", "test_other.py::test_other"]),
            (files[:1], ["test_r.py::test_one", "test_r.py::test_never_collected"]),
        )]
    finally:
        runner.close()
    assert [read_record(answer["record"]) for answer in answers] == [
        ({"test_r.py::test_one": True, "test_r.py::test_exit": False}, "test_r.py::test_exit"),
        ({"test_r.py::test_one": True, "test_other.py::test_other": True}, None),
        ({"test_r.py::test_one": True}, None),
    ]
    assert [answer["code"] for answer in answers] == [3, 0, 0]
    first = COLLECTED if collects else FORKED
    assert [answer["started"] for answer in answers] == [first, first, FORKED]
    assert answers[2]["fallback"] == (
        "a list's test, test_r.py::test_never_collected, was not collected by the collecting "
        "session" if collects else
        "its collecting session ended (exit code 3) before any list")
    assert STARTED not in {answer["started"] for answer in answers}
    assert not os.path.exists(runner.workdir)


def test_a_list_in_a_session_of_its_own_collects_the_files_its_tests_declare_on(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A list's session of its own (here forked before its session starts, the slot's
    collecting session failing: the same files as a session started where the system does
    not fork, without a process and its imports a list) collects the files of its tests, and
    those of the tests their declarations name: test_t runs after test_a.py::test_s through
    a target built at run time (which no scan of the source sees), and a list holding test_t
    without test_s stopped the discovery ("test_a.py is not a collected file or folder",
    exit 4)."""
    pytester.makeconftest(f"""
import os


def pytest_collection_finish(session):
    if os.getpid() != {os.getpid()} and not session.config.getoption("depgraph_discover_child"):
        raise RuntimeError("collected only once per list")
""")
    pytester.makepyfile(test_a="""
        def test_s():
            pass
    """, test_b="""
        import os
        import pytest

        TARGET = "::".join(["test_a.py", "test_s"])

        @pytest.mark.depends_on(TARGET, on_failure="run")
        def test_t():
            os.environ["DISCOVER_T"] = "1"

        def test_u():
            pass

        def test_w():
            assert os.environ.get("DISCOVER_T") == "1"
    """)
    monkeypatch.delenv("DISCOVER_T", raising=False)
    result = pytester.runpytest("--depgraph-discover", "--depgraph-discover-verify", "1",
                                "--depgraph-discover-json", "found.json", "-p", "no:randomly")
    assert result.ret == 1, result.stdout.str() + result.stderr.str()
    assert _found(pytester.path / "found.json") == [
        ("needs", "test_w", "test_t")]
    result.stdout.fnmatch_lines(["lists collected their tests afresh, each in a session of its "
                                 "own *"])
