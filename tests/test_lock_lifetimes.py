"""A lock on a class-, module- or session-scoped fixture covers the fixture's whole life on
real workers: checked from what the fixtures and tests themselves logged (set-up, teardown,
start and end, with the time and the worker), never from the plugin's summary."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import pytest

#: a conftest whose fixtures and tests log to ``life.log``: ``setup``/``teardown`` of each
#: fixture instance, ``start``/``end`` of each test (``time.time()``: the workers share a clock)
LOGGING = """
import os
import time

import pytest

LOG = os.path.join(os.path.dirname(__file__), "life.log")


def log(what, name):
    with open(LOG, "a") as f:
        f.write(f"{what} {name} {os.environ.get('PYTEST_XDIST_WORKER')} {time.time()!r}\\n")


def lived(name, seconds=0.05):
    log("setup", name)
    time.sleep(seconds)
    yield name
    time.sleep(seconds)
    log("teardown", name)


@pytest.fixture(autouse=True)
def _spans(request):
    log("start", request.node.name)
    yield
    time.sleep(0.1)
    log("end", request.node.name)
"""


@dataclass(frozen=True)
class Span:
    name: str
    worker: str
    start: float
    end: float

    def overlaps(self, other: Span) -> bool:
        return self.start < other.end and other.start < self.end


def spans(pytester: pytest.Pytester) -> tuple[dict[str, list[Span]], dict[str, Span]]:
    """The fixture instances by fixture name (each from its set-up to its teardown), and the
    tests by name, from the log."""
    opened: dict[tuple[str, str], list[float]] = defaultdict(list)
    fixtures: dict[str, list[Span]] = defaultdict(list)
    began: dict[str, tuple[str, float]] = {}
    tests: dict[str, Span] = {}
    for line in (pytester.path / "life.log").read_text().splitlines():
        what, name, worker, at = line.split()
        time = float(at)
        if what == "setup":
            opened[(name, worker)].append(time)
        elif what == "teardown":
            fixtures[name].append(Span(name, worker, opened[(name, worker)].pop(), time))
        elif what == "start":
            began[name] = (worker, time)
        else:
            tests[name] = Span(name, worker, began[name][1], time)
    assert not any(opened.values()), f"a fixture was never torn down: {dict(opened)}"
    return fixtures, tests


def run(pytester: pytest.Pytester, workers: int, *args: str) -> pytest.RunResult:
    return pytester.runpytest(
        "-p", "xdist", "-p", "depgraph", "-n", str(workers), "-p", "no:randomly", *args
    )


def apart(instances: list[Span], others: list[Span]) -> None:
    """No two of ``instances`` overlap, and none overlaps any of ``others``."""
    for i, a in enumerate(instances):
        for b in instances[i + 1:] + others:
            assert not a.overlaps(b), (a, b)


@pytest.mark.parametrize("dist", ["load", "loadfile", "loadscope"])
def test_a_module_fixtures_lock_lasts_until_its_teardown_on_its_worker(
    pytester: pytest.Pytester, dist: str
) -> None:
    """The issue's suite: a module-scoped ``server`` locks ``port``; three modules use it in
    their first two tests, then run tests that do not (a chain after them: the worker stays in
    the module). A worker tears ``server`` down only when it leaves the module, so another
    module's ``server`` starts only after that teardown; a test that holds ``port`` itself
    never runs while a ``server`` lives. Under ``--dist loadfile`` and ``loadscope`` too."""
    pytester.makeconftest(LOGGING + """
from pytest_depgraph import resource_lock


@pytest.fixture(scope="module")
@resource_lock("port")
def server():
    yield from lived("server")
""")
    for module in ("b", "d", "f"):
        pytester.makepyfile(**{f"test_{module}": f"""
import pytest


def test_{module}1(server): pass
def test_{module}2(server): pass
@pytest.mark.depends_on("test_{module}2")
def test_{module}3(): pass
@pytest.mark.depends_on("test_{module}3")
def test_{module}4(): pass
def test_{module}5(): pass
"""})
    pytester.makepyfile(test_port="""
import pytest


@pytest.mark.resource_lock("port")
def test_binds_port(): pass
def test_other(): pass
""")
    result = run(pytester, 2, "--dist", dist)
    result.assert_outcomes(passed=17)
    fixtures, tests = spans(pytester)
    assert len(fixtures["server"]) == 3
    apart(fixtures["server"], [tests["test_binds_port"]])


def test_class_scopes_hold_until_the_class_is_torn_down_and_readers_share(
    pytester: pytest.Pytester,
) -> None:
    """A class-scoped fixture that writes ``db`` and a ``scope="class"`` lock on a class whose
    class fixture logs; module-scoped readers of ``db`` in two modules may overlap each other,
    never a writer's instance nor a test that writes ``db``; on four workers."""
    pytester.makeconftest(LOGGING + """
from pytest_depgraph import resource_lock


@pytest.fixture(scope="class")
@resource_lock("db")
def writer():
    yield from lived("writer")


@pytest.fixture(scope="module")
@resource_lock("db", mode="read")
def reader():
    yield from lived("reader")


@pytest.fixture(scope="class")
def classy():
    yield from lived("classy")
""")
    for module in ("w1", "w2"):
        pytester.makepyfile(**{f"test_{module}": f"""
import pytest


class TestWrite{module}:
    def test_a(self, writer): pass
    def test_b(self, writer): pass
    @pytest.mark.depends_on("test_b")
    def test_c(self): pass


def test_{module}_after(): pass
"""})
    for module in ("r1", "r2"):
        pytester.makepyfile(**{f"test_{module}": f"""
import pytest


def test_{module}_a(reader): pass
def test_{module}_b(reader): pass
@pytest.mark.depends_on("test_{module}_b")
def test_{module}_c(): pass
def test_{module}_d(): pass
"""})
    pytester.makepyfile(test_marked="""
import pytest


@pytest.mark.resource_lock("db", scope="class")
class TestMarked:
    def test_m1(self, classy): pass
    def test_m2(self, classy): pass

    def test_m3(self): pass


@pytest.mark.resource_lock("db")
def test_writes_db(): pass
def test_plain_1(): pass
def test_plain_2(): pass
""")
    result = run(pytester, 4)
    result.assert_outcomes(passed=22)
    fixtures, tests = spans(pytester)
    assert len(fixtures["writer"]) == 2 and len(fixtures["reader"]) == 2
    writers = fixtures["writer"] + fixtures["classy"]
    apart(writers, fixtures["reader"] + [tests["test_writes_db"]])
    for reader in fixtures["reader"]:
        assert not reader.overlaps(tests["test_writes_db"]), reader


def test_a_session_fixtures_lock_keeps_every_other_holder_on_its_worker(
    pytester: pytest.Pytester,
) -> None:
    """A session-scoped fixture that locks ``gpu`` lives until its worker ends: the tests
    marked with ``gpu`` in the same module run on that worker (before its set-up, between or
    after its users), never beside it on another worker."""
    pytester.makeconftest(LOGGING + """
from pytest_depgraph import resource_lock


@pytest.fixture(scope="session")
@resource_lock("gpu")
def device():
    yield from lived("device")
""")
    pytester.makepyfile(test_gpu="""
import time

import pytest


def test_u1(device): pass
def test_u2(device): pass
@pytest.mark.depends_on("test_u2")
def test_after_1(): time.sleep(0.3)
@pytest.mark.depends_on("test_after_1")
def test_after_2(): time.sleep(0.3)
@pytest.mark.resource_lock("gpu")
def test_m1(): pass
@pytest.mark.resource_lock("gpu")
def test_m2(): pass
@pytest.mark.resource_lock("gpu")
def test_m3(): pass
""")
    result = run(pytester, 2)
    result.assert_outcomes(passed=7)
    fixtures, tests = spans(pytester)
    (device,) = fixtures["device"]
    for name in ("test_m1", "test_m2", "test_m3"):
        marked = tests[name]
        assert marked.worker == device.worker or not marked.overlaps(device), (marked, device)


def test_a_writer_kept_out_by_two_workers_session_readers_runs_once_one_worker_ended(
    pytester: pytest.Pytester,
) -> None:
    """Two session-scoped fixtures read ``db``, each used by its own tests (so each may live
    on its own worker); a test that depends on both writes ``db``. It never runs beside a
    reader instance of another worker: it runs on a reader's worker once the other one ended
    (shut down when nothing else could run), and the run ends."""
    pytester.makeconftest(LOGGING + """
from pytest_depgraph import resource_lock


@pytest.fixture(scope="session")
@resource_lock("db", mode="read")
def first():
    yield from lived("first")


@pytest.fixture(scope="session")
@resource_lock("db", mode="read")
def second():
    yield from lived("second")
""")
    pytester.makepyfile(test_db="""
import time

import pytest


def test_a1(first): time.sleep(0.3)
def test_a2(first): time.sleep(0.3)
def test_b1(second): time.sleep(0.3)
def test_b2(second): time.sleep(0.3)
@pytest.mark.resource_lock("db")
@pytest.mark.depends_on("test_a2", "test_b2")
def test_writes(): pass
""")
    result = run(pytester, 2)
    result.assert_outcomes(passed=5)
    # the worker shut down early is no silent loss: the summary says which and why
    result.stdout.fnmatch_lines([
        "gw? was shut down early: a session-scoped fixture there kept db until its worker's "
        "end, and test_db.py::test_writes waited for it (it could run on no other worker)",
    ])
    fixtures, tests = spans(pytester)
    writer = tests["test_writes"]
    for reader in fixtures["first"] + fixtures["second"]:
        assert reader.worker == writer.worker or not reader.overlaps(writer), (reader, writer)
