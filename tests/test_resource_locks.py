"""Shared resources as a user declares them: the ``resource_lock``, ``exclusive`` and ``weight``
markers, ``@resource_lock`` on fixtures and ``depgraph_resources``; each bad declaration a
collection error at its line; on ``-n``, what they promise (never two writers at once, nothing
beside an exclusive test, a class block back to back on one worker); serially, nothing."""

from __future__ import annotations

from collections import defaultdict

import pytest

from .helpers import assert_clean

MISTAKES = """
import pytest
from pytest_depgraph import resource_lock

@pytest.fixture
@resource_lock("db", mode="wrte")
def conn():
    yield 1

@pytest.mark.resource_lock("")
def test_empty_name(): pass

@pytest.mark.resource_lock(42)
def test_int_name(): pass

@pytest.mark.resource_lock("db", mode="raed")
def test_mode(): pass

@pytest.mark.resource_lock("db", scope="modul")
def test_scope(): pass

@pytest.mark.resource_lock("db", when="now")
def test_keyword(): pass

@pytest.mark.weight(0)
def test_weight0(): pass

@pytest.mark.weight("2")
def test_weight_str(): pass

@pytest.mark.exclusive("x")
def test_exclusive_arg(): pass

def test_fixture(conn): pass

@pytest.mark.resource_lock("db")
def test_fine(): pass
"""


def test_each_bad_declaration_is_an_error_at_its_line_with_close_names(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_bad=MISTAKES)
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:xdist")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    declared = "  (@pytest.mark.{}, declared for test_bad.py::{})"
    result.stdout.fnmatch_lines([
        "depgraph: test_bad.py:9: the resource name '' is not a non-empty string; name the "
        "resource with a string such as 'db'",
        declared.format("resource_lock", "test_empty_name"),
        "depgraph: test_bad.py:12: the resource name 42 is not a non-empty string*",
        "depgraph: test_bad.py:15: mode='raed' is not valid; use mode='write' or mode='read'. "
        "Did you mean 'read'?",
        "depgraph: test_bad.py:18: scope='modul' is not valid; use scope='test', *. "
        "Did you mean 'module'?",
        "depgraph: test_bad.py:21: unknown keyword argument when=; resource_lock takes a name, *",
        "depgraph: test_bad.py:24: weight takes one whole number of at least 1, * not 0",
        declared.format("weight", "test_weight0"),
        "depgraph: test_bad.py:27: weight takes one whole number of at least 1, * not '2'",
        "depgraph: test_bad.py:30: exclusive takes no argument; *",
        declared.format("exclusive", "test_exclusive_arg"),
        "depgraph: test_bad.py:5: mode='wrte' is not valid; *. Did you mean 'write'?",
        "  (@resource_lock on fixture 'conn', declared for test_bad.py::test_fixture)",
        "*Interrupted: 9 errors during collection*",
    ])
    assert_clean(result)


BLOCKS = """
import pytest

@pytest.mark.resource_lock("db", scope="class")
class TestC:
    def test_c1(self): pass
    @pytest.mark.depends_on("test_x")
    def test_c2(self): pass

@pytest.mark.depends_on("TestC::test_c1")
def test_x(): pass

@pytest.mark.resource_lock("dbb")
def test_typo(): pass

@pytest.mark.resource_lock("db")
def test_y(): pass
"""


def test_blocks_that_wait_for_each_other_stop_a_serial_run_and_a_lone_close_name_warns(
    pytester: pytest.Pytester,
) -> None:
    """A class block whose tests depend on a test that depends on the block cannot run whole:
    a collection error before any test, serially too. 'dbb', held by one test, is close to
    'db': a warning at its marker. With depgraph_resources, it is an error instead."""
    pytester.makepyfile(test_cyc=BLOCKS)
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:xdist")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines([
        "depgraph: these tests cannot hold their resources as blocks: the blocks wait for each "
        "other",
        "  class test_cyc.py::TestC (test_cyc.py:3) waits for test_cyc.py::test_x: "
        "test_cyc.py::TestC::test_c2 depends on test_cyc.py::test_x (depends_on at "
        "test_cyc.py:6)",
        "  test_cyc.py::test_x waits for class test_cyc.py::TestC (test_cyc.py:3): *",
        "  A block runs whole on one worker *",
        "*test_cyc.py:12: PytestWarning: depgraph: resource 'dbb' is held by "
        "test_cyc.py::test_typo alone, and its name is close to 'db', which 3 tests hold: *",
        "*Interrupted: 1 error during collection*",
    ])
    result.assert_outcomes(errors=1)
    pytester.makeini("[pytest]\ndepgraph_resources =\n    db: 2\n    net\n")
    listed = pytester.runpytest("-p", "no:randomly", "-p", "no:xdist")
    listed.stdout.fnmatch_lines([
        "depgraph: test_cyc.py:12: resource 'dbb' is not in depgraph_resources (it lists 'db', "
        "'net'): add it there or correct the name. Did you mean 'db'?",
        "  (@pytest.mark.resource_lock, declared for test_cyc.py::test_typo)",
    ])
    assert "PytestWarning" not in listed.stdout.str()
    pytester.makeini("[pytest]\ndepgraph_resources =\n    db: 0\n")
    bad = pytester.runpytest("-p", "no:randomly", "-p", "no:xdist")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines([
        "ERROR: depgraph_resources in tox.ini:3: 'db: 0' is not a resource: write its name, "
        "or 'name: N' with N a whole number of at least 1*",
    ])
    assert_clean(bad)


def test_the_markers_are_registered(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_m="""
        import pytest

        @pytest.mark.resource_lock("db")
        @pytest.mark.exclusive
        @pytest.mark.weight(2)
        def test_a(): pass
    """)
    pytester.runpytest("--strict-markers", "-p", "no:xdist").assert_outcomes(passed=1)
    shown = pytester.runpytest("--markers")
    shown.stdout.fnmatch_lines([
        "@pytest.mark.resource_lock(name, mode='write', scope='test'): on -n, never run *",
        "@pytest.mark.exclusive: on -n, run this test with no other test running.",
        "@pytest.mark.weight(k): on -n, this test counts k toward --depgraph-parallelism*",
    ])


#: every test records (start, end, worker) in a file of its own; the holders of each resource
#: sleep long enough that a broken lock would show as an overlap on three workers
WALKED = """
import os
import time

import pytest
from pytest_depgraph import resource_lock

HERE = os.path.dirname(__file__)


@pytest.fixture(autouse=True)
def record(request):
    start = time.monotonic()
    yield
    time.sleep(0.15)
    end = time.monotonic()
    with open(os.path.join(HERE, "spans.log"), "a") as f:
        f.write(f"{request.node.name} {start} {end} {os.environ.get('PYTEST_XDIST_WORKER')}\\n")


@pytest.fixture
@resource_lock("port")
def server():
    yield 8080


@pytest.mark.resource_lock("db")
def test_w1(): pass
@pytest.mark.resource_lock("db")
def test_w2(): pass
@pytest.mark.resource_lock("db", mode="read")
def test_r1(): pass
@pytest.mark.resource_lock("db", mode="read")
def test_r2(): pass
@pytest.mark.exclusive
def test_alone(): pass
def test_s1(server): pass
def test_s2(server): pass
def test_u1(): pass
def test_u2(): pass
@pytest.mark.weight(2)
def test_heavy(): pass


@pytest.mark.resource_lock("net", scope="class")
class TestC:
    def test_c1(self): pass
    def test_c2(self): pass
    def test_c3(self): pass


@pytest.mark.resource_lock("net")
def test_n1(): pass
"""


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def test_on_three_workers_each_lock_holds(pytester: pytest.Pytester) -> None:
    """Writers of db never overlap each other nor a reader; nothing overlaps the exclusive
    test; the fixture's lock keeps its users apart; class TestC holds net as one block: its
    tests on one worker, and the other holder of net outside the block's whole span."""
    pytester.makepyfile(test_walk=WALKED)
    result = pytester.runpytest("-p", "xdist", "-p", "depgraph", "-n", "3",
                                "-p", "no:randomly")
    result.assert_outcomes(passed=14)
    spans: dict[str, tuple[float, float]] = {}
    worker: dict[str, str] = {}
    for line in (pytester.path / "spans.log").read_text().splitlines():
        name, start, end, on = line.split()
        spans[name], worker[name] = (float(start), float(end)), on
    pairs = [("test_w1", "test_w2"), ("test_s1", "test_s2")]
    pairs += [(w, r) for w in ("test_w1", "test_w2") for r in ("test_r1", "test_r2")]
    pairs += [("test_alone", other) for other in spans if other != "test_alone"]
    for a, b in pairs:
        assert not _overlap(spans[a], spans[b]), (a, b, spans)
    block = ["test_c1", "test_c2", "test_c3"]
    assert len({worker[name] for name in block}) == 1
    whole = (min(spans[n][0] for n in block), max(spans[n][1] for n in block))
    assert not _overlap(whole, spans["test_n1"])
    by_worker: dict[str, list[str]] = defaultdict(list)
    for name in sorted(spans, key=lambda n: spans[n][0]):
        by_worker[worker[name]].append(name)
    run = by_worker[worker["test_c1"]]
    first = run.index("test_c1")
    assert run[first:first + 3] == block  # back to back, in order
    result.stdout.fnmatch_lines([
        "resource db (capacity 1): held * s; *",
        "resource net (capacity 1): held * s; *",
        "resource port (capacity 1): held * s; *",
    ])


#: ``@resource_lock`` on a test function, a class and a module object, as spans of WALKED
DECORATED = """
import os
import sys
import time

import pytest
from pytest_depgraph import resource_lock

HERE = os.path.dirname(__file__)


@pytest.fixture(autouse=True)
def record(request):
    start = time.monotonic()
    yield
    time.sleep(0.2)
    end = time.monotonic()
    with open(os.path.join(HERE, "spans.log"), "a") as f:
        f.write(f"{request.node.name} {start} {end}\\n")


@resource_lock("db")
def test_function(): pass


@resource_lock("db")
class TestClass:
    def test_one(self): pass
    def test_two(self): pass


def test_free(): pass
"""

DECORATED_MODULE = """
import sys

from pytest_depgraph import resource_lock

from test_decorated import record

resource_lock("db")(sys.modules[__name__])

def test_in_module(): pass
"""


def test_the_decorator_on_tests_classes_and_modules_holds_as_the_marker(
    pytester: pytest.Pytester,
) -> None:
    """``@resource_lock`` on a test function, a test class and a module object holds the lock
    for each test below it, as the marker does (it was ignored: two such tests started at
    once on ``-n 2``): no two of them overlap, from the times they logged. A bad argument is
    an error at the decorator's line."""
    pytester.makepyfile(test_decorated=DECORATED, test_decorated_module=DECORATED_MODULE)
    result = pytester.runpytest("-p", "xdist", "-p", "depgraph", "-n", "2",
                                "-p", "no:randomly")
    result.assert_outcomes(passed=5)
    spans: dict[str, tuple[float, float]] = {}
    for line in (pytester.path / "spans.log").read_text().splitlines():
        name, start, end = line.split()
        spans[name] = (float(start), float(end))
    holders = ["test_function", "test_one", "test_two", "test_in_module"]
    for k, a in enumerate(holders):
        for b in holders[k + 1:]:
            assert not _overlap(spans[a], spans[b]), (a, b, spans)
    result.stdout.fnmatch_lines(["resource db (capacity 1): held * s; *"])
    pytester.makepyfile(test_decorated_module="""
        from pytest_depgraph import resource_lock

        @resource_lock("db", mode="wirte")
        def test_bad(): pass
        """)
    bad = pytester.runpytest("-p", "no:randomly", "-p", "no:xdist")
    assert bad.ret == pytest.ExitCode.INTERRUPTED
    bad.stdout.fnmatch_lines([
        "depgraph: test_decorated_module.py:3: mode='wirte' is not valid; *. "
        "Did you mean 'write'?",
        "  (@resource_lock, declared for test_decorated_module.py::test_bad)",
    ])
    assert_clean(bad)
