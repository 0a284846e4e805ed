"""Shared resources in the parallel walk: the dispatcher's rules with resources, exclusive tests
and weights, a property test that checks every rule at every event of random walks, the
claims a plan makes, and the blocks bound like units."""

from __future__ import annotations

import random
from collections.abc import Hashable
from itertools import count
from typing import TYPE_CHECKING

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pytest_depgraph.collect.origins import BLOCK_EDGES
from pytest_depgraph.core.graph.storage import Graph, Kind, Origin
from pytest_depgraph.core.graph.toposort import stable_topological_order
from pytest_depgraph.core.plan import READ, WRITE, Block, Plan, Resources
from pytest_depgraph.core.walk.claims import Claims, claims_of
from pytest_depgraph.core.walk.dispatch import Dispatcher, WalkInputs, priorities, weights
from pytest_depgraph.core.walk.resource_books import ALONE, LOCK, SLOTS
from pytest_depgraph.run.xdist.units import bind_units, block_cycles

from .fake_workers import collected_plan, start, walked
from .graph_strategies import PROPERTIES, Drawn, build_dag, dags
from .helpers import RAN_CONFTEST, A, R, make, oracle, ran

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .helpers import Options

W, RD = True, False


def dispatcher(
    graph: Graph, claims: Claims, workers: int = 2, **kw: Unpack[Options]
) -> Dispatcher:
    """A dispatcher of ``graph`` with ``claims``, ``workers`` named w0, w1, ..., and a clock
    that ticks once per reading."""
    made = Dispatcher(WalkInputs(graph, claims=claims, clock=count().__next__, **kw))
    for w in range(workers):
        made.add_worker(f"w{w}")
    return made


def test_a_busy_resource_keeps_its_second_writer_waiting_while_the_rest_goes_ahead() -> None:
    walk = dispatcher(Graph(4), Claims(names=["db"], capacity=[1], tests={0: [(0, W)],
                                                                           1: [(0, W)]}),
                      workers=3, priority=[4, 3, 2, 1])
    assert walk.assign() == [("w0", [0]), ("w1", [2]), ("w2", [3])]
    walk.complete("w0", 0, True)
    assert walk.assign(first="w0") == [("w0", [1])]


def test_a_capacity_lets_that_many_writers_run_at_once() -> None:
    writers = {v: [(0, W)] for v in range(3)}
    walk = dispatcher(Graph(3), Claims(names=["db"], capacity=[2], tests=writers), workers=3)
    assert walk.assign() == [("w0", [0]), ("w1", [1])]
    walk.complete("w1", 1, True)
    assert walk.assign(first="w1") == [("w1", [2])]


def test_readers_share_and_a_waiting_writer_is_not_starved_by_less_urgent_readers() -> None:
    """0 reads, 1 (next in priority) writes, 2..4 read, 5 holds nothing. While 1 waits for 0,
    the readers behind it do not start (they would keep it waiting for ever in a stream of
    readers); 5 goes ahead. Then 1 runs alone, then the readers together."""
    tests = {0: [(0, RD)], 1: [(0, W)], 2: [(0, RD)], 3: [(0, RD)], 4: [(0, RD)]}
    walk = dispatcher(Graph(6), Claims(names=["db"], capacity=[1], tests=tests), workers=4,
                      priority=[6, 5, 4, 3, 2, 1])
    assert walk.assign() == [("w0", [0]), ("w1", [5])]
    walk.complete("w0", 0, True)
    assert walk.assign(first="w0") == [("w0", [1])]
    walk.complete("w0", 1, True)
    assert walk.assign(first="w0") == [("w0", [2]), ("w2", [3]), ("w3", [4])]
    record = walk.record()
    assert record is not None
    (use,) = record.uses
    assert (use.name, use.capacity, use.waiters) == ("db", 1, 4)
    ((kind, name, since, until),) = [(w.kind, w.name, w.since, w.until) for w in record.waits[1]]
    assert (kind, name) == (LOCK, "db") and since < until


def test_a_more_urgent_reader_goes_before_a_waiting_writer() -> None:
    """Critical-path order still decides: a reader more urgent than the waiting writer is
    not held back by it."""
    tests = {0: [(0, RD)], 1: [(0, W)], 2: [(0, RD)]}
    walk = dispatcher(make(3, [(2, 0, R)]), Claims(names=["db"], capacity=[1], tests=tests),
                      workers=2, priority=[9, 5, 8])
    assert walk.assign() == [("w0", [0])]  # 1 waits for the reader
    walk.complete("w0", 0, True)
    assert walk.assign(first="w0") == [("w0", [2])]  # 2, more urgent, reads first


def test_an_exclusive_test_runs_alone_and_holds_back_less_urgent_tests() -> None:
    walk = dispatcher(Graph(4), Claims(exclusive=frozenset({1})), priority=[5, 4, 3, 2])
    assert walk.assign() == [("w0", [0])]  # 1 waits for 0; 2 and 3 wait behind 1
    walk.complete("w0", 0, True)
    assert walk.assign(first="w0") == [("w0", [1])]
    assert walk.assign() == []  # nothing beside it
    walk.complete("w0", 1, True)
    assert walk.assign(first="w0") == [("w0", [2]), ("w1", [3])]
    record = walk.record()
    assert record is not None and [w.kind for w in record.waits[1]] == [ALONE]


def test_a_heavy_test_counts_its_slots_and_waits_for_them_before_lighter_ones() -> None:
    walk = dispatcher(Graph(4), Claims(slots={0: 2, 1: 3}), workers=3,
                      priority=[5, 4, 3, 2], limit=3)
    assert walk.assign() == [("w0", [0])]  # 1 needs the three slots: the light ones wait
    walk.complete("w0", 0, True)
    assert walk.assign(first="w0") == [("w0", [1])]
    walk.complete("w0", 1, True)
    assert walk.assign(first="w0") == [("w0", [2]), ("w1", [3])]
    record = walk.record()
    assert record is not None and record.waits[1][0].kind == SLOTS


def test_tests_that_take_more_than_a_slot_are_never_queued_behind_another() -> None:
    """Short tests queue behind each other; one that holds a resource, weighs two slots or
    runs alone is handed out only to an idle worker, and nothing is queued while it waits
    for one."""
    graph = Graph(12)
    known = dict.fromkeys(range(12), 0.001)
    weight = weights(known, 12, 12)
    claims = Claims(names=["db"], capacity=[1], tests={4: [(0, W)]}, slots={6: 2},
                    exclusive=frozenset({8}))
    walk = dispatcher(graph, claims, workers=1, priority=priorities(graph, weight),
                      weight=weight, hold=16, durations=known, limit=2)
    assert walk.assign() == [("w0", [8])]  # the exclusive test first, alone, nothing behind
    walk.complete("w0", 8, True, 0.001)
    assert walk.assign(first="w0") == [("w0", [0, 1, 2, 3])]
    for node in (0, 1, 2, 3):
        walk.complete("w0", node, True, 0.001)
    assert walk.assign(first="w0") == [("w0", [4, 5])]  # 5 may wait behind 4, not before it
    for node in (4, 5):
        walk.complete("w0", node, True, 0.001)
    assert walk.assign(first="w0") == [("w0", [6, 7, 9, 10, 11])]


def test_the_test_that_waits_for_what_a_test_frees_is_handed_over_behind_it() -> None:
    """0 and 1 write db; while 0 runs on w0, 1 waits for it: 1 is queued behind 0 on w0 at
    once (db promised to it), and starts there the moment 0 finished, without a round trip
    to the controller; nothing comes between them. The short tests spread behind both."""
    graph = Graph(10)
    known = dict.fromkeys(range(10), 0.001)
    weight = weights(known, 10, 10)
    walk = dispatcher(graph, Claims(names=["db"], capacity=[1], tests={0: [(0, W)],
                                                                       1: [(0, W)]}),
                      priority=priorities(graph, weight), weight=weight, hold=16,
                      durations=known)
    given = dict(walk.assign())
    assert given["w0"][:2] == [0, 1] and 1 not in given["w1"]
    assert sorted(given["w0"][2:] + given["w1"]) == list(range(2, 10))
    walk.complete("w0", 0, True, 0.001)  # 1 runs now, on w0
    assert walk.view.held("w0")[0] == 1


def block_plan(nodeids: list[str], edges: list[tuple[int, int, Kind]], resources: Resources,
               pinned: list[list[int]] | None = None) -> Plan:
    graph = make(len(nodeids), edges)
    return Plan(nodeids=nodeids, graph=graph, group=[0] * len(nodeids),
                item_count=len(nodeids), pinned=pinned or [], resources=resources)


def test_a_block_holds_its_lock_back_to_back_on_one_worker_until_its_scope_is_torn_down() -> None:
    """Class C (0, 1, 2: 1 requires 0) holds db as one block; 3 writes db too; 4, 5 hold
    nothing. C's worker takes nothing but C's tests until it started all of them, and is
    asked to settle its held tests: first towards the next test of C, then, at the end,
    towards 3, which waits for the lock C holds until that teardown tore C down."""
    ids = ["t.py::C::a", "t.py::C::b", "t.py::C::c", "u.py::w", "u.py::x", "u.py::y"]
    resources = Resources(capacity={"db": 1}, claims={3: {"db": WRITE}},
                          blocks=[Block((0, 1, 2), (("db", WRITE),), "class t.py::C",
                                        scope="t.py::C")])
    plan, errors = bind_units(block_plan(ids, [(1, 0, R)], resources), "load")
    assert errors == [] and plan.pinned == [[0, 1, 2]]
    assert plan.edge_counts[BLOCK_EDGES] == 1  # 2 after 1 (1 already requires 0)
    walk = dispatcher(plan.graph, claims_of(plan, 2), pinned=plan.pinned, limit=2,
                      priority=[6, 5, 4, 3, 2, 1], group=[0, 0, 0, 1, 1, 1])
    assert walk.assign() == [("w0", [0]), ("w1", [4])]  # 3 waits for db
    walk.complete("w0", 0, True)
    assert walk.assign(first="w0") == [("w0", [1])]
    walk.complete("w1", 4, True)
    assert walk.assign(first="w1") == [("w1", [5])]
    walk.complete("w0", 1, True, held=True)
    assert walk.assign(first="w0") == [] and walk.teardowns() == [("w0", 1, 2)]
    assert walk.settle(1, True).ready == [2]
    assert walk.assign(first="w0") == [("w0", [2])]
    walk.complete("w0", 2, True, held=True)
    walk.complete("w1", 5, True)
    assert walk.assign(first="w1") == []  # db is C's until 2 settled
    assert walk.teardowns() == [("w0", 2, 3)]
    walk.settle(2, True)
    assert walk.assign() == []  # C's class fixtures may live: the teardown says
    walk.torn("w0", ["t.py::C"], by=2)
    assert walk.assign() == [("w0", [3])]
    record = walk.record()
    assert record is not None
    assert [w.name for w in record.waits[3]] == ["db"]


def test_a_kept_block_gives_its_lock_back_once_its_worker_tore_its_scope_down() -> None:
    """Class C (0, 1) holds db as one block; 2 writes db; 3 holds nothing. Once 1 finished,
    C's class fixtures live on w0 until w0 tears C down: 2 waits for that teardown, not for 1.
    Idle w0 is asked (once) to tear C down towards 2; a teardown reported for a test that
    started before C's last one is an earlier set-up's and frees nothing."""
    resources = Resources(capacity={"db": 1}, claims={2: {"db": WRITE}},
                          blocks=[Block((0, 1), (("db", WRITE),), "class t.py::C",
                                        scope="t.py::C")])
    plan, _ = bind_units(block_plan(["t.py::C::a", "t.py::C::b", "u.py::w", "u.py::x"], [],
                                    resources), "load")
    walk = dispatcher(plan.graph, claims_of(plan, 2), pinned=plan.pinned, limit=2,
                      priority=[4, 3, 2, 1], group=[0, 0, 1, 1])
    assert walk.assign() == [("w0", [0]), ("w1", [3])]  # 2 waits for db
    walk.complete("w0", 0, True)
    assert walk.assign(first="w0") == [("w0", [1])]
    walk.complete("w0", 1, True)
    assert walk.assign(first="w0") == []  # C is resolved, its class fixtures live
    assert walk.scope_teardowns() == [("w0", 2, ("t.py::C",))]
    assert walk.scope_teardowns() == []  # asked once
    walk.torn("w0", ["t.py::C"], by=0)  # the teardown of an earlier set-up
    assert walk.assign() == []
    walk.torn("w0", ["t.py::C"], by=1)
    assert walk.assign() == [("w0", [2])]


def test_a_session_block_lends_its_lock_to_its_worker_until_it_ends() -> None:
    """A block of the session (0, 1) writes gpu; 2 and 3 write gpu too; 4 holds nothing.
    The session's fixture lives until w0 ends: 2 and 3 run on w0, after the block, never on
    w1 -- even when w1 is idle."""
    resources = Resources(capacity={"gpu": 1}, claims={2: {"gpu": WRITE}, 3: {"gpu": WRITE}},
                          blocks=[Block((0, 1), (("gpu", WRITE),), "the session")])
    plan, _ = bind_units(block_plan([f"t.py::t{v}" for v in range(5)], [], resources), "load")
    walk = dispatcher(plan.graph, claims_of(plan, 2), pinned=plan.pinned, limit=2,
                      priority=[5, 4, 3, 2, 1])
    assert walk.assign() == [("w0", [0]), ("w1", [4])]
    walk.complete("w0", 0, True)
    assert walk.assign(first="w0") == [("w0", [1])]
    walk.complete("w1", 4, True)
    assert walk.assign(first="w1") == []
    walk.complete("w0", 1, True)
    assert walk.assign(first="w0") == [("w0", [2])]
    assert walk.assign(first="w1") == []  # 3 waits: gpu is w0's
    walk.complete("w0", 2, True)
    assert walk.assign(first="w1") == [("w0", [3])]
    assert walk.scope_teardowns() == [] and walk.ends() == []
    walk.complete("w0", 3, True)
    # 2 and 3 ran under the block's lock, not beside it: one writer at a time, so the
    # seconds gpu was written are those it was held (they were counted twice: the block's
    # whole life, and 2's and 3's own runs again)
    record = walk.record()
    assert record is not None
    (gpu,) = record.uses
    assert gpu.written == gpu.held > 0


def test_a_writer_that_two_sessions_readers_keep_out_waits_for_one_worker_to_end() -> None:
    """Two blocks of the session read db, on w0 and w1; 2 writes db. It cannot run beside
    both: once nothing runs, w0 is shut down (never the last worker), and 2 runs on w1."""
    resources = Resources(capacity={"db": 1}, claims={2: {"db": WRITE}},
                          blocks=[Block((0,), (("db", READ),), "fixture 'a' (the session)"),
                                  Block((1,), (("db", READ),), "fixture 'b' (the session)")])
    plan, _ = bind_units(block_plan(["t.py::a", "t.py::b", "t.py::w"], [], resources), "load")
    walk = dispatcher(plan.graph, claims_of(plan, 2), pinned=plan.pinned, limit=2,
                      priority=[3, 2, 1])
    assert walk.assign() == [("w0", [0]), ("w1", [1])]
    walk.complete("w0", 0, True)
    assert walk.assign(first="w0") == [] and walk.ends() == []  # w1 runs
    walk.complete("w1", 1, True)
    assert walk.assign(first="w1") == [] and walk.scope_teardowns() == []
    assert walk.ends() == ["w0"]
    assert walk.ends() == []  # w1 is the last
    assert walk.remove_worker("w0") is None
    assert walk.assign() == [("w1", [2])]


def test_a_worker_that_dies_gives_its_blocks_lock_back() -> None:
    """Block {0, 1} holds db; 2 writes db. The block's worker dies in 0: 0 failed, and the
    block starts again on the other worker with 1 (an ordering edge), or 2 takes db."""
    resources = Resources(capacity={"db": 1}, claims={2: {"db": WRITE}},
                          blocks=[Block((0, 1), (("db", WRITE),), "class t.py::C")])
    plan, _ = bind_units(block_plan(["t.py::C::a", "t.py::C::b", "u.py::c"], [], resources),
                         "load")
    walk = dispatcher(plan.graph, claims_of(plan, 2), pinned=plan.pinned, limit=2,
                      priority=[3, 2, 1])
    assert walk.assign() == [("w0", [0])]
    assert walk.remove_worker("w0") == 0
    walk.finish(0, False)
    assert walk.assign() == [("w1", [1])]
    walk.complete("w1", 1, True)
    assert walk.assign() == [("w1", [2])]


def test_a_worker_that_dies_wakes_the_test_that_waited_for_what_it_had_promised() -> None:
    """0 writes b; 1 writes b and c; 3 (after 2) writes c. 1 is handed over behind 0 on w0,
    b and c promised to it; 3, more urgent than 1, waits for c. w0 dies in 0: 1 never began,
    c is free again and 3 takes it (1 waits behind it). Before, nothing woke 3, 1 waited
    behind it, and the run hung with both resources free."""
    known = dict.fromkeys(range(4), 0.001)
    weight = weights(known, 4, 4)
    claims = Claims(names=["b", "c"], capacity=[1, 1],
                    tests={0: [(0, W)], 1: [(0, W), (1, W)], 3: [(1, W)]})
    walk = dispatcher(make(4, [(3, 2, R)]), claims, priority=[9, 5, 8, 7], weight=weight,
                      hold=16, durations=known)
    assert walk.assign() == [("w0", [0, 1]), ("w1", [2])]  # 1 handed over behind 0
    walk.complete("w1", 2, True, 0.001)
    assert walk.assign(first="w1") == []  # 3 waits for c, promised to 1
    assert walk.remove_worker("w0") == 0
    walk.finish(0, False)
    assert walk.assign() == [("w1", [3, 1])]
    walk.complete("w1", 3, True, 0.001)
    walk.complete("w1", 1, True, 0.001)
    assert walk.finished and walk.done


def test_a_blocks_exclusive_test_is_woken_whenever_the_run_empties() -> None:
    """Class C (0, 1) holds db as one block, 1 is exclusive; 2 (after 3), exclusive too and
    more urgent, reads db. 2 waits for db, then 1 for the run to empty (4 runs). When 4 ends,
    the empty run wakes 2, which still waits for db -- C's, until 1 ran. 1 must be woken too
    and run alone; before, it never was, and the walk stalled."""
    resources = Resources(capacity={"db": 1}, claims={2: {"db": READ}}, exclusive=[1, 2],
                          blocks=[Block((0, 1), (("db", WRITE),), "class t.py::C")])
    ids = ["t.py::C::a", "t.py::C::b", "u.py::c", "u.py::d", "u.py::e"]
    plan, errors = bind_units(block_plan(ids, [(2, 3, R)], resources), "load")
    assert errors == [] and plan.pinned == [[0, 1]]
    walk = dispatcher(plan.graph, claims_of(plan, 3), workers=3, pinned=plan.pinned,
                      priority=[5, 4, 9, 10, 8])
    assert walk.assign() == [("w0", [3]), ("w1", [4]), ("w2", [0])]
    walk.complete("w0", 3, True)
    assert walk.assign(first="w0") == []  # 2 waits for db
    walk.complete("w2", 0, True)
    assert walk.assign(first="w2") == []  # 1 waits for 4 to end
    walk.complete("w1", 4, True)
    assert walk.assign(first="w1") == [("w2", [1])]
    walk.complete("w2", 1, True)
    assert walk.assign(first="w2") == [("w2", [2])]
    walk.complete("w2", 2, True)
    assert walk.finished and walk.done


CRASH_BEHIND_A_HANDOVER = """
import os, time, pytest

HERE = os.path.dirname(__file__)

@pytest.mark.resource_lock("b")
def test_crashes():
    while not os.path.exists(os.path.join(HERE, "go")):  # test_x waits for c by then
        time.sleep(0.01)
    os._exit(1)

@pytest.mark.resource_lock("b")
@pytest.mark.resource_lock("c")
def test_handed_over():
    pass

def test_d():
    pass

@pytest.mark.depends_on(test_d)
@pytest.mark.resource_lock("c")
def test_x():
    pass

@pytest.mark.depends_on(test_d)
def test_go():
    open(os.path.join(HERE, "go"), "w").close()

@pytest.mark.depends_on(test_x)
def test_y():
    pass

@pytest.mark.depends_on(test_y)
def test_z():
    pass
"""


def _run_in_a_process(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, resources: str,
    files: dict[str, str], workers: int,
) -> pytest.RunResult:
    """A real run of ``files`` on ``-n workers``, in a process of its own (its timeout ends a
    hang), with ``depgraph_resources =<resources>`` and each test logging that it ran."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makeconftest(RAN_CONFTEST)
    pytester.makeini(f"[pytest]\ndepgraph_resources ={resources}\n")
    pytester.makepyfile(**files)
    return pytester.runpytest_subprocess("-p", "xdist", "-p", "depgraph", "-n", str(workers),
                                         timeout=120)


def test_a_run_goes_on_after_a_worker_crashes_with_a_test_handed_over_behind_its_test(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On -n 2: test_handed_over waits for b behind test_crashes and is handed over behind
    it (b and c promised to it); test_x, more urgent, waits for c; test_crashes kills its
    worker once test_go, given out after test_x waited, ran. The crashed test fails, the
    rest runs. Before, test_x waited for ever with c free, the run hung after "replacing
    crashed worker" (a process of its own: the timeout ends a hang)."""
    result = _run_in_a_process(pytester, monkeypatch, "\n    b\n    c",
                               {"test_crash_handover": CRASH_BEHIND_A_HANDOVER}, workers=2)
    result.assert_outcomes(passed=6, failed=1)
    result.stdout.fnmatch_lines(["*crashed while running*test_crashes*"])
    assert set(ran(pytester.path)) == {"test_crashes", "test_handed_over", "test_d", "test_x",
                                       "test_go", "test_y", "test_z"}


#: TestC holds db for the class and its test_b is exclusive; test_c, exclusive too and more
#: urgent (test_f after it), reads db once test_d finished (the sleeps only make the usual
#: order of a real run: test_d, test_a, test_e end in turn)
BLOCK_AND_EXCLUSIVE_READER = {
    "test_block": """
import time, pytest

@pytest.mark.resource_lock("db", scope="class")
class TestC:
    def test_a(self):
        time.sleep(0.5)

    @pytest.mark.exclusive
    def test_b(self):
        pass
""",
    "test_plain": """
import time, pytest

def test_d():
    pass

def test_e():
    time.sleep(1)

@pytest.mark.depends_on(test_d)
@pytest.mark.resource_lock("db", mode="read")
@pytest.mark.exclusive
def test_c():
    pass

@pytest.mark.depends_on(test_c)
def test_f():
    pass
""",
}


def test_a_run_with_a_class_blocks_exclusive_test_and_a_more_urgent_exclusive_reader_ends(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On -n 3 (the sleeps only make the usual order: test_d, test_a, test_e end in turn):
    test_c waits for db, TestC's; test_b, TestC's exclusive test, waits for test_e to end.
    Every test runs. Before, test_e's end woke only test_c, which still waited for db, and the
    run hung after test_e (3 of 3 runs ended by a 15 s timeout)."""
    result = _run_in_a_process(pytester, monkeypatch, " db", BLOCK_AND_EXCLUSIVE_READER,
                               workers=3)
    result.assert_outcomes(passed=6)
    assert set(ran(pytester.path)) == {"test_a", "test_b", "test_c", "test_d", "test_e",
                                       "test_f"}


def test_claims_of_a_plan_hold_a_blocks_tests_claims_with_it_and_cap_weights() -> None:
    resources = Resources(
        capacity={"db": 1, "net": 2},
        claims={1: {"net": READ}, 3: {"net": WRITE}},
        slots={2: 9, 3: 2},
        exclusive=[4],
        blocks=[Block((0, 1), (("db", WRITE),), "class t.py::C"),
                Block((1, 2), (("net", READ),), "module t.py")],
    )
    plan, errors = bind_units(block_plan([f"t.py::t{i}" for i in range(5)], [], resources),
                              "load")
    assert errors == [] and plan.pinned == [[0, 1, 2]]  # two blocks that share a test: one
    claims = claims_of(plan, 4)
    assert claims.names == ["db", "net"] and list(claims.capacity) == [1, 2]
    assert claims.blocks == {0: [(0, True), (1, False)]}
    assert claims.tests == {3: [(1, True)]}
    assert claims.slots == {2: 4, 3: 2} and claims.clamped == ((2, 9),)
    assert claims.exclusive == {4}
    with pytest.raises(ValueError, match="neither"):
        claims_of(block_plan(["t.py::a"], [], Resources({"db": 1}, {0: {"db": "rw"}})), 1)
    unbound = Resources({"db": 1}, blocks=[Block((0, 1), (("db", WRITE),), "module t.py")])
    with pytest.raises(ValueError, match="not bound"):
        claims_of(block_plan(["t.py::a", "t.py::b"], [], unbound), 1)


def test_a_block_inside_a_dist_unit_makes_the_unit_hold_its_lock() -> None:
    """Under --dist loadfile the class block of t.py joins the file's unit, and the unit
    holds the lock; a cycle between blocks is an error that names the tests and edges."""
    ids = ["t.py::a", "t.py::C::b", "t.py::C::c", "u.py::d"]
    resources = Resources(capacity={"db": 1},
                          blocks=[Block((1, 2), (("db", WRITE),), "class t.py::C", "t.py:3")])
    plan, errors = bind_units(block_plan(ids, [], resources), "loadfile")
    assert errors == [] and plan.pinned == [[0, 1, 2]]
    assert claims_of(plan, 2).blocks == {0: [(0, True)]}
    assert block_cycles(block_plan(ids, [], resources)) == []
    # c depends on d, d on b: the block (b, c) would wait for d, which waits for b
    cyclic = block_plan(ids, [(2, 3, R), (3, 1, R)], resources)
    plan, [(path, message)] = bind_units(cyclic, "load")
    assert path == "t.py" and plan.errors == [message]
    assert block_cycles(cyclic) == [(path, message)]
    assert message.splitlines() == [
        "depgraph: these tests cannot hold their resources as blocks: the blocks wait for "
        "each other",
        "  class t.py::C (t.py:3) waits for u.py::d: t.py::C::c depends on u.py::d "
        "(depends_on at t.py:1)",
        "  u.py::d waits for class t.py::C (t.py:3): u.py::d depends on t.py::C::b "
        "(depends_on at t.py:1)",
        '  A block runs whole on one worker once everything its tests depend on outside it '
        'finished. Remove or reverse one of these dependencies, or give the lock test scope '
        '(scope="test") so that each test holds it alone.',
    ]


def test_a_block_that_overlaps_a_pinned_group_joins_it() -> None:
    """A pinned group (a module fixture two linked tests share) that shares a test with a
    block becomes part of it: the whole group holds the block's lock; another pinned group
    stays as it was (no new waits)."""
    ids = ["t.py::a", "t.py::b", "t.py::c", "u.py::d", "u.py::e", "v.py::f"]
    resources = Resources(capacity={"db": 1},
                          blocks=[Block((1, 2), (("db", WRITE),), "class t.py::C")])
    edges = [(1, 0, A), (4, 3, A), (4, 5, R)]
    plan, errors = bind_units(block_plan(ids, edges, resources, pinned=[[0, 1], [3, 4]]),
                              "load")
    assert errors == [] and plan.pinned == [[0, 1, 2], [3, 4]]
    assert plan.graph.edge(3, 5) is None  # the plain pinned group gained no wait
    assert claims_of(plan, 2).blocks == {0: [(0, True)]}


# -- every rule at every event of random walks ------------------------------------------------


@settings(PROPERTIES, max_examples=max(1, PROPERTIES.max_examples // 3))
@given(dags(max_size=70), st.integers(0, 2**32 - 1))
# a worker died in a test with a test handed over behind it: what was promised to that one
# went back without waking the test set aside for it, and the walk stalled
@example(build_dag("dense core", 40, 0.0, 0.5, False, 1550), 1000003)
# a block's exclusive next test waited for an empty run; the empty run woke a more urgent
# exclusive test instead, which waited for the block's lock, and nothing woke the block's
@example(build_dag("layers", 23, 0.3, 1.0, True, 1544861025), 2346169100)
# an idle worker asked to tear a block's scope down, and asked again for another block
# before it acted
@example(build_dag("fans", 55, 0.1, 0.5, True, 1012955297), 2314911706)
def test_random_walks_with_resources_keep_every_rule_at_every_event(
    drawn: Drawn, seed: int
) -> None:
    """Random claims (writers and readers of resources of capacity 1 or 2), weights, exclusive
    tests, blocks (some overlapping pinned groups) on random workers that hold up to 16 tests,
    fail some, hold some (deferred teardowns, settled later) and die. At every event:

    * no resource has more writers than its capacity, nor a reader beside a writer (a block
      holds its resources from its first test handed out until its worker tore its scope down
      after its last test resolved -- on moving on, or when asked because a test waits -- or
      its worker's death);
    * nothing runs beside an exclusive test; the running tests' slots stay within the bound;
    * a test queued behind another takes nothing when it starts (no claim of its own, one
      slot, not exclusive; a block's next test on the block's worker), but the one handed
      over right behind the test that frees what it waited for;
    * a block runs back to back: its worker is given nothing else until it started all of it;
    * a test starts only after its dependencies finished and settled (and never after a
      failed requirement).

    And the walk ends (no test waits for ever: no deadlock, no starvation, no lock held by
    a dead worker), every test runs once, and the skips are the oracle's."""
    walk_randomly(drawn.graph, seed)


def walk_randomly(drawn_graph: Graph, seed: int) -> None:
    """One walk of :func:`test_random_walks_with_resources_keep_every_rule_at_every_event`."""
    rng = random.Random(seed)
    order = stable_topological_order(drawn_graph)
    new_id = [0] * drawn_graph.size
    for position, node in enumerate(order):
        new_id[node] = position  # node order is the serial order, as in a plan
    graph = drawn_graph.relabel(new_id)
    size = graph.size
    names = ["a", "b", "c"][: rng.randint(1, 3)]
    limit = rng.choice([None, 1, 2, 3])
    pinned: list[list[int]] = []
    if rng.random() < 0.5:  # pinned groups, chained in serial order as the plan does
        label = [rng.randrange(-3, 2) for _ in range(size)]
        pinned = [g for g in ([v for v in range(size) if label[v] == u] for u in range(2))
                  if len(g) > 1]
        for group in pinned:
            for before, after in zip(group, group[1:]):
                graph.add_edge(after, before, A, Origin("pin"))
    resources = Resources(
        capacity={name: rng.choice([1, 1, 2]) for name in names},
        claims={v: {n: rng.choice([WRITE, READ]) for n in rng.sample(names, rng.randint(1, 2)
                                                                      if len(names) > 1 else 1)}
                for v in range(size) if rng.random() < 0.3},
        slots={v: rng.randint(2, 5) for v in range(size) if rng.random() < 0.1},
        exclusive=sorted(v for v in range(size) if rng.random() < 0.05),
    )
    for b in range(rng.randint(0, 3)):
        start = rng.randrange(size)
        members = tuple(range(start, min(size, start + rng.randint(1, 4))))
        resources.blocks.append(Block(members, ((rng.choice(names), rng.choice([WRITE, READ])),),
                                      f"block {b}", scope=f"t.py::S{b}"))
    plan = Plan(nodeids=[f"t.py::t{v}" for v in range(size)], graph=graph,
                group=[rng.randrange(3) for _ in range(size)], item_count=size, pinned=pinned,
                resources=resources)
    bound, errors = bind_units(plan, "load")
    if errors:  # blocks that wait for each other: none
        resources.blocks.clear()
        bound, errors = bind_units(plan, "load")
    assert not errors
    claims = claims_of(bound, limit)
    graph, pinned = bound.graph, bound.pinned
    known = {v: rng.choice([0.0005, 0.002, 0.3]) for v in range(size) if rng.random() < 0.7}
    weight = weights(known, size, size)
    walk = Dispatcher(WalkInputs(
        graph, priority=priorities(graph, weight), weight=weight, group=bound.group,
        limit=limit, pinned=pinned, hold=16, durations=known, claims=claims,
        clock=count().__next__,
    ))
    block_of = {v: g for g in claims.blocks for v in pinned[g]}
    failing = {v for v in range(size) if rng.random() < 0.1}
    holding = rng.choice([0.0, 0.5, 1.0])
    deps: dict[int, list[tuple[int, Kind]]] = {v: [] for v in range(size)}
    for u, v, kind in graph.triples():
        deps[u].append((v, kind))
    queues: dict[Hashable, list[int]] = {}
    finished: dict[int, bool] = {}  # node -> satisfied (finished and settled, or skipped)
    held: dict[Hashable, int] = {}  # worker -> its held test, not settled yet
    asked: set[Hashable] = set()
    open_on: dict[int, Hashable] = {}  # block -> the worker it is open on (until torn down)
    asked_scopes: dict[Hashable, tuple[str, ...]] = {}  # worker -> the scopes to tear down
    handed: set[int] = set()  # handed out and not given back (a block's started tests)
    ran: list[int] = []
    handed_to: dict[Hashable, set[int]] = {}
    fresh = 0

    def add() -> None:
        nonlocal fresh
        name = f"w{fresh}"
        fresh += 1
        queues[name] = []
        handed_to[name] = set()
        walk.add_worker(name)

    def check_rules() -> None:
        running = [q[0] for q in queues.values() if q]
        alone = [v for v in running if v in claims.exclusive]
        assert not alone or running == alone, f"{running} beside exclusive {alone}"
        if limit is not None:
            assert sum(claims.slots.get(v, 1) for v in running) <= limit
        for r, capacity in enumerate(claims.capacity):
            holders = [c for v in running for c in claims.tests.get(v, ()) if c[0] == r]
            holders += [c for g in open_on for c in claims.blocks[g] if c[0] == r]
            writers = sum(1 for _, writes in holders if writes)
            assert writers <= capacity, f"{writers} writers of {claims.names[r]}"
            assert not writers or writers == len(holders), f"reader beside writer of {r}"
        for worker, queue in queues.items():
            for at, v in enumerate(queue[1:], 1):
                g = block_of.get(v)
                assert v not in claims.exclusive, f"exclusive {v} queued"
                takes = v in claims.tests or claims.slots.get(v, 1) > 1
                # what it takes is checked above the moment it runs: the test handed over
                # right behind the one that frees what it waited for
                assert (g is None and (not takes or at == 1)
                        ) or (g is not None and open_on.get(g) == worker), f"{v} queued"

    def hand_out(first: Hashable = None) -> None:
        for worker, nodes in walk.assign(first):
            if worker in asked_scopes:
                # asked to tear scopes down, then given a test: the request reached it first
                # (one channel, in order), so it tears down, then runs the test -- the walk
                # may ask it again once it is idle and keeps a block (found by hypothesis)
                tear_down(worker)
            for node in nodes:
                mine = [g for g, w in open_on.items() if w == worker
                        and any(v not in handed and v not in finished for v in pinned[g])]
                assert not mine or block_of.get(node) in mine, "a block's worker strayed"
                g = block_of.get(node)
                if g is not None:
                    open_on.setdefault(g, worker)
                handed.add(node)
                handed_to[worker].add(node)
                queues[worker].append(node)
        for worker, node, _towards in walk.teardowns():
            assert held.get(worker) == node and not queues[worker] and worker not in asked
            asked.add(worker)
        for worker, _towards, scopes in walk.scope_teardowns():
            # asked again before it acted: for other blocks only (each is asked once), and a
            # real worker takes each request off its channel in turn (found by a seed loop)
            before = asked_scopes.get(worker, ())
            assert not queues[worker] and not set(before) & set(scopes)
            assert {bound.resources.blocks[b].scope for b in range(len(bound.resources.blocks))
                    if open_on.get(block_of[bound.resources.blocks[b].tests[0]]) == worker
                    } >= set(scopes)
            asked_scopes[worker] = (*before, *scopes)
        for worker, queue in queues.items():
            assert list(walk.view.held(worker)) == queue
            if queue and worker not in held:
                begin(queue[0])
        check_rules()

    def begin(node: int) -> None:
        if node in ran:
            return
        for d, kind in deps[node]:
            assert d in finished, f"{node} runs before {d} finished and settled"
            assert kind is A or finished[d], f"{node} runs after {d} failed"
        ran.append(node)

    def tear_down(worker: Hashable) -> None:
        """``worker`` tears down the scopes of its blocks whose tests all finished."""
        asked_scopes.pop(worker, None)
        done = [g for g, w in open_on.items() if w == worker
                and all(v in finished for v in pinned[g])]
        scopes = [b.scope for b in bound.resources.blocks if block_of[b.tests[0]] in done]
        mine = [v for v in ran if v in handed_to[worker]]
        if scopes and mine:
            walk.torn(worker, scopes, mine[-1])
            for g in done:
                del open_on[g]

    for _ in range(rng.randint(1, 4)):
        add()
    hand_out()
    while not walk.finished:
        movable = [w for w, q in queues.items()
                   if q or (w in held and w in asked) or w in asked_scopes]
        assert movable, "stalled"
        worker = rng.choice(movable)
        if worker in asked_scopes and not queues[worker] and (
                worker not in held or worker not in asked):
            tear_down(worker)  # asked, with nothing else to do
            hand_out(worker)
            continue
        if rng.random() < 0.03:  # the worker dies (in its test, or in a deferred teardown)
            dead = held.pop(worker, None)
            node = dead if dead is not None else queues[worker][0]
            assert walk.remove_worker(worker) == node
            for given_back in queues.pop(worker)[1 if dead is None else 0:]:
                handed.discard(given_back)
            asked.discard(worker)
            open_on = {g: w for g, w in open_on.items() if w != worker}
            asked_scopes.pop(worker, None)
            step = walk.settle(node, False) if dead is not None else walk.finish(node, False)
            finished[node] = False
            add()
        elif worker in held:
            node = held.pop(worker)
            asked.discard(worker)
            satisfied = node not in failing and rng.random() > 0.1
            step = walk.settle(node, satisfied)
            finished[node] = satisfied
        else:
            node = queues[worker].pop(0)
            satisfied = node not in failing
            holds = not queues[worker] and rng.random() < holding
            step = walk.complete(worker, node, satisfied, known.get(node, 0.001), held=holds)
            if holds:
                held[worker] = node
                if not satisfied:
                    failing.add(node)
            else:
                finished[node] = satisfied
        for skip in step.skipped:
            finished[skip.node] = False
        if worker in queues and rng.random() < 0.3:  # it moved on to a test of another scope
            tear_down(worker)
        hand_out(worker)
    for node in held.values():
        step = walk.settle(node, node not in failing)
        assert not step.ready and not step.skipped, "the walk ended before all could run"
        finished[node] = node not in failing
    assert sorted(finished) == list(range(size))
    assert len(ran) == len(set(ran)) == size - len(walk.view.skipped)
    assert set(walk.view.skipped) == oracle(graph, {v for v in ran if not finished[v]}, set())


# -- the scheduler, on fake workers, in many finishing orders --------------------------------


def resource_plan() -> Plan:
    """Two writers and a reader of db, a heavy test, an exclusive one, class C holding net as
    a block (c2 requires c1), a test that writes net, and plain tests; no edge but C's."""
    names = ["a.py::w1", "a.py::w2", "b.py::r1", "b.py::heavy", "c.py::alone", "c.py::C::c1",
             "c.py::C::c2", "d.py::net", "d.py::p1", "e.py::p2", "e.py::p3"]
    nodeids = [f"t/{name}" for name in names]
    graph = make(len(nodeids), [(6, 5, R)])
    return Plan(
        nodeids=nodeids, graph=graph, group=[0] * 5 + [1, 1] + [0] * 4,
        item_count=len(nodeids),
        resources=Resources(
            capacity={"db": 1, "net": 1},
            claims={0: {"db": WRITE}, 1: {"db": WRITE}, 2: {"db": READ}, 7: {"net": WRITE}},
            slots={3: 5},
            exclusive=[4],
            blocks=[Block((5, 6), (("net", WRITE),), "class t/c.py::C", scope="t/c.py::C")],
        ),
    )


def test_the_scheduler_keeps_every_rule_in_many_finishing_orders(
    pytester: pytest.Pytester,
) -> None:
    """On three workers, in 50 finishing orders (held tests settled when the controller asks
    or the worker moves on), under --dist load and loadfile: db's writers never run together
    nor beside its reader, the exclusive test and the heavy one (weight 5, counted as the
    bound 3) run alone, class C runs back to back on one worker, and nothing else writes net
    from its first test's start until its worker tore C down (asked to, since d.py::net
    waits)."""
    plan = resource_plan()
    block = {"t/c.py::C::c1", "t/c.py::C::c2"}
    asked = 0
    for dist in ("load", "loadfile"):
        for walk in walked(pytester, plan, workers=3, dist=dist, orders=25):
            for now in walk.running:
                assert len({"t/a.py::w1", "t/a.py::w2", "t/b.py::r1"} & now) <= 1, now
                for alone in ("t/c.py::alone", "t/b.py::heavy"):
                    assert alone not in now or now == {alone}, now
                assert not ("t/d.py::net" in now and now & block), now
            (sent,) = [s for s in walk.sent if "t/c.py::C::c1" in s]
            assert sent[sent.index("t/c.py::C::c1") + 1] == "t/c.py::C::c2", sent
            first, last = walk.sent_at["t/c.py::C::c1"], walk.finished_at["t/c.py::C::c2"]
            torn = [e for e in walk.torn_at.get("t/c.py::C", ()) if e > last]
            assert not first <= walk.sent_at["t/d.py::net"] < (torn or [last])[0]
            asked += bool(torn)
    assert asked  # in some orders d.py::net waited for C's worker to tear C down
    # the suite has no dependency edge but C's, yet the walk runs it: xdist's own
    # schedulers know nothing of resources
    scheduler, _ = start(pytester, Plan.from_json(plan.to_json()), None)
    assert scheduler.handed_over is None and scheduler.dispatcher is not None


def test_a_class_blocks_exclusive_test_runs_though_a_more_urgent_exclusive_reader_waits(
    pytester: pytest.Pytester,
) -> None:
    """TestC holds db for the class and its test_b is exclusive; test_c, exclusive too and
    more urgent (test_f after it), reads db once test_d finished. On three workers, in 40
    finishing orders, every test is sent once and the walk ends: when test_b waits for the
    run to empty while test_c waits for db (C's until test_b ran), the empty run wakes both.
    Before, in some orders it woke only test_c, and nothing ran any more."""
    pytester.makeini("[pytest]\ndepgraph_resources = db\n")
    pytester.makepyfile(**BLOCK_AND_EXCLUSIVE_READER)
    plan = collected_plan(pytester)
    assert plan.resources.blocks
    for walk in walked(pytester, plan, workers=3, orders=40):
        for now in walk.running:
            for alone in ("test_block.py::TestC::test_b", "test_plain.py::test_c"):
                assert alone not in now or now == {alone}, now


def test_the_resources_travel_in_the_plan_and_a_shard_keeps_its_tests_ones() -> None:
    from pytest_depgraph.core.shard import restrict

    plan = resource_plan()
    again = Plan.from_json(plan.to_json())
    assert again.resources == plan.resources
    assert Plan.from_json(plan_of_nothing().to_json()).resources == Resources()
    kept = restrict(plan, [0, 3, 5, 6])  # a shard: w1, heavy, c1, c2
    assert kept.resources == Resources(
        capacity={"db": 1, "net": 1}, claims={0: {"db": WRITE}}, slots={1: 5},
        blocks=[Block((2, 3), (("net", WRITE),), "class t/c.py::C", scope="t/c.py::C")],
    )


def plan_of_nothing() -> Plan:
    return Plan(nodeids=["t.py::a"], graph=Graph(1), group=[0], item_count=1)
