"""Other --dist modes: whole work units in dependency order, ordinal groups, fake-node checks."""

from __future__ import annotations

import pytest

from pytest_depgraph.collect.origins import describe
from pytest_depgraph.core.graph.storage import Graph, Kind, Origin
from pytest_depgraph.core.graph.tarjan import find_cycles
from pytest_depgraph.core.plan import Plan
from pytest_depgraph.run.outcomes import FAILED

from .fake_workers import collected_plan, complete, running, start, walked, walks
from .helpers import RAN_CONFTEST, ran


def test_loadfile_units_wait_for_their_dependencies_and_skips_stay_on_the_controller(
    pytester: pytest.Pytester,
) -> None:
    """--dist loadfile: each file runs whole on one worker, in its order (module state is
    shared), and only once the tests it depends on in other files finished. A file goes out
    in one batch: its module fixture is set up once, and its teardown error is reported."""
    pytester.makeconftest(RAN_CONFTEST)
    pytester.makepyfile(
        test_one="""
        import os, time
        import pytest

        @pytest.fixture(scope="module", autouse=True)
        def resource():
            with open(os.path.join(os.path.dirname(__file__), "setups.log"), "a") as log:
                log.write("setup\\n")
            yield
            raise RuntimeError("module teardown failed")

        def test_create():
            pass

        def test_broken():
            assert 0

        @pytest.mark.depends_on("test_broken")
        def test_use():
            pass
        """,
        test_two="""
        import pytest

        STATE = []

        @pytest.mark.depends_on("test_one.py::test_create")
        def test_elsewhere():
            STATE.append(1)

        def test_state():
            assert STATE == [1]
        """,
    )
    result = pytester.runpytest("-n", "2", "-p", "xdist", "--dist", "loadfile", "-rs")
    result.assert_outcomes(failed=1, skipped=1, passed=3, errors=1)
    result.stdout.fnmatch_lines(["*depgraph: upstream test_one.py::test_broken failed*"])
    result.stdout.fnmatch_lines(["*ERROR at teardown of test_broken*", "*module teardown failed"])
    assert (pytester.path / "setups.log").read_text() == "setup\n"
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "cannot honour" not in result.stdout.str()
    worker = ran(pytester.path)
    assert worker["test_create"] == worker["test_broken"]
    assert worker["test_elsewhere"] == worker["test_state"]
    # test_two.py starts once test_create finished, whichever worker finishes first
    plan = collected_plan(pytester)
    outcomes = {"test_one.py::test_broken": FAILED}
    for walk in walked(pytester, plan, dist="loadfile", outcomes=outcomes, seconds=0.5):
        assert "test_one.py::test_create" in walk.after["test_two.py::test_elsewhere"]


def test_tx_workers_order_and_skip(pytester: pytest.Pytester) -> None:
    """Workers made with --tx get the graph over the xdist channel, like remote ones."""
    pytester.makepyfile(
        test_tx="""
        import pytest

        @pytest.mark.depends_on("test_base")
        def test_first_in_file():
            pass

        def test_base():
            pass

        def test_broken():
            assert 0

        @pytest.mark.depends_on("test_broken")
        def test_after_broken():
            pass
        """
    )
    result = pytester.runpytest(
        "-p", "xdist", "--dist", "load", "--tx", "popen", "-rs", "-v"
    )
    result.assert_outcomes(passed=2, failed=1, skipped=1)
    result.stdout.fnmatch_lines(["*depgraph: upstream test_tx.py::test_broken failed*"])
    passed = [line for line in result.outlines if "PASSED" in line]
    assert "test_base" in passed[0]


def test_dot_and_summary_on_the_controller(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_d="""
        import pytest

        def test_a():
            assert 0

        @pytest.mark.depends_on("test_a")
        def test_b():
            pass

        def test_c():
            pass
        """
    )
    out = pytester.path / "g.dot"
    result = pytester.runpytest("-n", "2", "-p", "xdist", f"--depgraph-dot={out}")
    result.assert_outcomes(failed=1, skipped=1, passed=1)
    text = out.read_text()
    assert '"test_d.py::test_a" [label = "test_a", fillcolor = "salmon"' in text
    assert '"test_d.py::test_b" [label = "test_b", fillcolor = "lightgrey"' in text
    assert '"test_d.py::test_c" [label = "test_c", fillcolor = "palegreen"' in text
    result.stdout.fnmatch_lines(
        [
            "*= depgraph =*",
            "1 test skipped because of an upstream test:",
            "  test_d.py::test_a failed:",
            "    test_d.py::test_b",
            "parallel run: * s wall time; best possible * s, the longer of the critical path "
            "(* s) and the total test time per worker (* s / 2)*",
        ]
    )


def test_class_chains_keep_their_class_fixture_on_a_worker(pytester: pytest.Pytester) -> None:
    """Three classes with equal chains: a worker finishes one class before taking another."""
    pytester.makepyfile(
        test_cls="""
        import os, pytest

        @pytest.fixture(scope="class")
        def env(request, tmp_path_factory):
            marker = tmp_path_factory.getbasetemp().parent / f"setup-{request.cls.__name__}"
            assert not marker.exists(), "class fixture set up twice"
            marker.touch()
            return {}

        class TestA:
            def test_1(self, env):
                env["x"] = 1

            @pytest.mark.depends_on("test_1")
            def test_2(self, env):
                assert env["x"] == 1

            @pytest.mark.depends_on("test_2")
            def test_3(self, env):
                assert env["x"] == 1

        class TestB(TestA):
            pass

        class TestC(TestA):
            pass
        """
    )
    result = pytester.runpytest("-n", "2", "-p", "xdist")
    result.assert_outcomes(passed=9)
    # which class a worker takes next depends on timing: the scheduler, in process, under
    # many completion orders (a real run samples one)
    for sent in walks(pytester, collected_plan(pytester)):
        for tests in sent:
            classes = [nodeid.split("::")[1] for nodeid in tests]
            blocks = [c for i, c in enumerate(classes) if i == 0 or classes[i - 1] != c]
            assert len(blocks) == len(set(blocks)), sent   # one class at a time
        assert sum(len(set(t.split("::")[1] for t in tests)) for tests in sent) == 3, sent


def test_order_first_and_last_hold_on_workers(pytester: pytest.Pytester) -> None:
    """pytest-order's "first" finished before the unordered tests start, "last" starts after
    they all finished, on xdist too: after edges between the ordinal groups, shown in DOT (the
    real run on one worker: the order across two is the scheduler's, checked below)."""
    pytester.makepyfile(
        test_o="""
        import pytest

        @pytest.mark.order("last")
        def test_end():
            pass

        def test_u1():
            pass

        def test_u2():
            pass

        def test_u3():
            pass

        @pytest.mark.order("first")
        def test_start():
            pass
        """
    )
    out = pytester.path / "g.dot"
    result = pytester.runpytest(
        "-n", "1", "-p", "xdist", "-p", "no:pytest_order", f"--depgraph-dot={out}"
    )
    result.assert_outcomes(passed=5)
    # whichever worker finishes first
    unordered = {f"test_o.py::test_u{i}" for i in (1, 2, 3)}
    for walk in walked(pytester, collected_plan(pytester, "-p", "no:pytest_order")):
        for name in unordered:
            assert "test_o.py::test_start" in walk.after[name]
        assert unordered <= walk.after["test_o.py::test_end"]
    text = out.read_text()
    assert '"test_o.py::test_u1" -> "test_o.py::test_start" [tooltip = "order marker at ' \
        'test_o.py:' in text
    assert '"test_o.py::test_end" -> "test_o.py::test_u3" [tooltip = "order marker at ' \
        'test_o.py:' in text


POSITIONS = """
import pytest

value = 0

@pytest.mark.order("second")
def test_{f}_second():
    global value
    assert value == 1
    value = 2

def test_{f}_unordered():
    assert value == 2

@pytest.mark.order("first")
def test_{f}_first():
    global value
    value = 1
"""


def test_order_positions_under_loadfile_and_loadscope_give_way_across_units(
    pytester: pytest.Pytester,
) -> None:
    """pytest-order's own way to run on xdist: each file in its own order, state in module
    globals. Under --dist loadfile (pytest-order installed) and loadscope (not installed) the
    positions that would make the files wait for each other give way with one warning naming
    their markers, instead of a collection error; test_c.py's "last" still waits for both."""
    pytester.makepyfile(
        test_a=POSITIONS.format(f="a"), test_b=POSITIONS.format(f="b"),
        test_c="""
        import pytest

        @pytest.mark.order("last")
        def test_c_last():
            pass
        """,
    )
    dot = pytester.path / "g.dot"
    for args in (("--dist", "loadfile", f"--depgraph-dot={dot}"),
                 ("--dist", "loadscope", "-p", "no:pytest_order")):
        result = pytester.runpytest("-n", "2", "-p", "xdist", *args)
        result.assert_outcomes(passed=7)
        unit = "file" if "loadfile" in args else "class or module"
        result.stdout.fnmatch_lines([
            f"*depgraph: test_a.py:5: pytest-order positions that hold within their {unit} but "
            f"not across * under --dist {args[1]}: test_a.py:5, test_b.py:5. Each {unit} runs "
            "whole on one worker, in its own order*",
        ])
        assert result.stdout.str().count("pytest-order positions") == 1
    text = dot.read_text()
    # the position edges inside a file hold, and "last" waits for both files
    assert '"test_a.py::test_a_second" -> "test_a.py::test_a_first"' in text
    assert '"test_c.py::test_c_last" -> "test_a.py::test_a_unordered"' in text
    assert '"test_c.py::test_c_last" -> "test_b.py::test_b_unordered"' in text
    assert '"test_a.py::test_a_second" -> "test_b.py::test_b_first"' not in text


def test_bind_units_gives_way_to_positions_that_tie_units_into_a_cycle() -> None:
    """test_a.py and test_b.py each have a "first" test: across files, each file would wait for
    the other. Only those position edges give way; "last" in test_c.py still holds, a position
    that explicit edges already imply holds, and a cycle of explicit edges stays an error."""
    from pytest_depgraph.run.xdist.units import bind_units

    nodeids = ["a.py::a1", "a.py::a2", "b.py::b1", "b.py::b2", "c.py::c1"]
    first_a, first_b, last = (Origin("ordinal", w) for w in ("a.py:2", "b.py:2", "c.py:2"))
    positions = [(1, 0, first_a), (1, 2, first_b), (3, 0, first_a), (3, 2, first_b),
                 (4, 1, last), (4, 3, last)]

    def plan_with(explicit: list[tuple[int, int]]) -> Plan:
        plan = unit_plan(nodeids, explicit)
        plan.graph.add_edges((u, v, Kind.AFTER, origin) for u, v, origin in positions)
        plan.edge_counts = {"ordinal": len(positions)}
        return plan

    def ordinal(plan: Plan) -> list[tuple[int, int]]:
        return sorted((e.dependent, e.dependency) for e in plan.graph.edges()
                      if e.origin.kind == "ordinal")

    plan, errors = bind_units(plan_with([]), "loadfile")
    assert errors == []
    assert ordinal(plan) == [(1, 0), (3, 2), (4, 1), (4, 3)]
    assert plan.edge_counts["ordinal"] == 4
    assert plan.warnings == [
        "depgraph: a.py:2: pytest-order positions that hold within their file but not across "
        "files under --dist loadfile: a.py:2, b.py:2. Each file runs whole on one worker, in "
        "its own order, and across files these positions would make files wait for each other."
    ]
    # a1 requires b2: test_a.py waits for test_b.py anyway, so a2 after b1 holds
    plan, errors = bind_units(plan_with([(0, 3)]), "loadfile")
    assert errors == []
    assert ordinal(plan) == [(1, 0), (1, 2), (3, 2), (4, 1), (4, 3)]
    assert plan.warnings[0].endswith("loadfile: a.py:2. Each file runs whole on one worker, "
                                     "in its own order, and across files these positions "
                                     "would make files wait for each other.")
    # explicit edges both ways: an error, that names them and no position
    plan, [(_, message)] = bind_units(plan_with([(0, 3), (2, 1)]), "loadfile")
    assert "depends_on at" in message and "order marker" not in message
    assert plan.warnings == []


# -- the scheduler in-process, against fake worker nodes (as xdist's own test_dsession.py) ----


def unit_plan(nodeids: list[str], edges: list[tuple[int, int]]) -> Plan:
    graph = Graph(len(nodeids))
    for dependent, dependency in edges:
        graph.add_edge(dependent, dependency, Kind.REQUIRES, Origin("marker", "t.py:1"))
    return Plan(nodeids=nodeids,
                graph=graph, group=[0] * len(nodeids), item_count=len(nodeids))


FILES = [
    "test_a.py::test_a1",   # 0
    "test_a.py::test_a2",   # 1  depends on test_b.py::test_b1
    "test_a.py::test_a3",   # 2
    "test_b.py::test_b1",   # 3
    "test_b.py::test_b2",   # 4
]


def test_loadfile_units_run_whole_on_one_worker_after_what_they_need(
    pytester: pytest.Pytester,
) -> None:
    """test_a.py needs test_b1 (for test_a2 only): all of test_a.py waits for it, then runs
    on one worker in file order; test_b.py runs whole on the other."""
    scheduler, (gw0, gw1) = start(pytester, unit_plan(FILES, [(1, 3)]), "loadfile")
    # test_b.py goes out whole, in one message; test_a1 is held back with its unit
    assert (gw0.sent, gw1.sent) == ([3, 4], [])
    assert complete(scheduler, gw0) == 3
    assert (gw0.sent, gw1.sent) == ([3, 4], [0, 1, 2])   # the idle worker takes test_a.py
    complete(scheduler, gw0)
    assert gw0.sent == [3, 4]
    complete(scheduler, gw1)
    complete(scheduler, gw1)
    complete(scheduler, gw1)
    assert scheduler.tests_finished


def test_loadfile_failure_skips_dependents_on_the_controller_the_unit_goes_on(
    pytester: pytest.Pytester,
) -> None:
    scheduler, (gw0, gw1) = start(pytester, unit_plan(FILES, [(1, 3)]), "loadfile")
    complete(scheduler, gw0, FAILED)   # test_b1
    while not scheduler.tests_finished:
        complete(scheduler, gw1 if running(scheduler, gw1) is not None else gw0)
    assert scheduler.skips == {"test_a.py::test_a2": "test_b.py::test_b1"}
    assert sorted(gw0.sent + gw1.sent) == [0, 2, 3, 4]
    assert gw1.sent == [0, 2]   # test_a.py on one worker, test_a2 never sent


def test_loadscope_units_are_classes_else_modules(pytester: pytest.Pytester) -> None:
    nodeids = ["test_c.py::TestX::test_1", "test_c.py::TestX::test_2", "test_c.py::test_f",
               "test_c.py::test_g"]
    # test_g needs test_1: the module unit (test_f, test_g) waits for the class's first test
    scheduler, (gw0, gw1) = start(pytester, unit_plan(nodeids, [(3, 0)]), "loadscope")
    assert (gw0.sent, gw1.sent) == ([0, 1], [])
    complete(scheduler, gw0)
    assert (gw0.sent, gw1.sent) == ([0, 1], [2, 3])
    assert scheduler.plan is not None and scheduler.plan.pinned == [[0, 1], [2, 3]]


def test_loadgroup_units_are_xdist_groups(pytester: pytest.Pytester) -> None:
    """Named by xdist's "@group" node-id suffix, or by the plan (pytest 9.2 does not let
    xdist add the suffix); an "@" in parameters names nothing; other tests are alone."""
    nodeids = ["test_g.py::test_1@db", "test_g.py::test_2", "test_h.py::test_3@db",
               "test_h.py::test_4[a@b]", "test_h.py::test_5", "test_h.py::test_6"]
    plan = unit_plan(nodeids, [(1, 0)])
    plan.xdist_groups = {4: "cache", 5: "cache"}
    scheduler, _ = start(pytester, plan, "loadgroup")
    assert scheduler.plan is not None and scheduler.plan.pinned == [[0, 2], [4, 5]]


def test_units_that_wait_for_each_other_are_a_collection_error(
    pytester: pytest.Pytester,
) -> None:
    """test_a1 needs test_b2 and test_b1 needs test_a3: no test cycle, but test_a.py cannot
    start before test_b.py finished, nor test_b.py before test_a.py."""
    reports: list[pytest.CollectReport] = []

    class Catch:
        def pytest_collectreport(self, report: pytest.CollectReport) -> None:
            reports.append(report)

    scheduler, (gw0, gw1) = start(
        pytester, unit_plan(FILES, [(0, 4), (3, 2)]), "loadfile", plugin=Catch()
    )
    assert scheduler.controller.errors == 1 and scheduler.aborted
    assert gw0.sent == gw1.sent == [] and gw0.shutting_down
    [report] = reports
    assert report.failed and report.nodeid == "test_a.py"
    # the plan keeps its own (acyclic) graph: the summary and the DOT file still read it
    assert scheduler.plan is not None and find_cycles(scheduler.plan.graph) == []
    assert str(report.longrepr).splitlines()[:3] == [
        "depgraph: --dist loadfile cannot run these units whole: they wait for each other",
        "  test_a.py waits for test_b.py: test_a.py::test_a1 depends on test_b.py::test_b2 "
        "(depends_on at t.py:1)",
        "  test_b.py waits for test_a.py: test_b.py::test_b1 depends on test_a.py::test_a3 "
        "(depends_on at t.py:1)",
    ]


def test_workers_beyond_what_can_run_at_once_are_stopped_before_any_test(
    pytester: pytest.Pytester,
) -> None:
    """A chain keeps one worker busy: the three others stop before the first test is sent."""
    chain = unit_plan(["t.py::a", "t.py::b", "t.py::c"], [(1, 0), (2, 1)])
    scheduler, nodes = start(pytester, chain, "load", workers=4)
    assert [node.shutting_down for node in nodes] == [False, True, True, True]
    assert nodes[0].sent == [0]
    complete(scheduler, nodes[0])
    complete(scheduler, nodes[0])
    complete(scheduler, nodes[0])
    assert nodes[0].sent == [0, 1, 2] and scheduler.tests_finished
    # independent tests: as many workers as tests, capped by the limit
    _, nodes = start(pytester, unit_plan(["t.py::a", "t.py::b"], []), "load", workers=4,
                     args=("--depgraph-parallelism", "4"))
    assert [node.shutting_down for node in nodes] == [False, False, True, True]


def test_bind_units_merges_pinned_groups_that_span_units_and_gates_each_unit() -> None:
    """A pinned group across two loadscope units makes them one; a unit's first test waits
    for what any of its tests needs outside it; the chain follows plan order."""
    from pytest_depgraph.run.xdist.units import bind_units

    nodeids = ["t.py::A::a1", "t.py::A::a2", "t.py::B::b1", "t.py::B::b2", "t.py::C::c1",
               "t.py::C::c2"]
    plan = unit_plan(nodeids, [(5, 0)])      # c2 needs a1
    plan.pinned = [[1, 2]]                   # a2 and b1 share a module fixture: A and B join
    plan, errors = bind_units(plan, "loadscope")
    assert errors == []
    assert plan.pinned == [[0, 1, 2, 3], [4, 5]]
    gate = plan.graph.edge(4, 0)             # C starts after a1, for c2's sake
    assert gate is not None and gate.kind is Kind.AFTER
    assert describe(gate.origin) == "t.py::C::c2 depends on t.py::A::a1 (depends_on at t.py:1)"
    chain = [(e.dependent, e.dependency) for e in plan.graph.edges() if e.origin.kind == "unit"]
    assert sorted(chain) == [(1, 0), (2, 1), (3, 2), (4, 0), (5, 4)]
    assert plan.edge_counts["unit"] == 5


def test_loadgroup_keeps_its_groups_on_one_worker_without_any_edge(
    pytester: pytest.Pytester,
) -> None:
    """A suite without dependencies on ``--dist loadgroup``: each ``xdist_group`` runs on one
    worker, in order. xdist's own loadgroup lost its groups on pytest 9.2 (they spread over
    the workers, silently): the plugin walks such a suite itself."""
    pytester.makepyfile(
        test_groups="""
        import os, time
        import pytest

        @pytest.mark.xdist_group("db")
        @pytest.mark.parametrize("i", range(4))
        def test_db(i):
            time.sleep(0.05)

        @pytest.mark.xdist_group("net")
        @pytest.mark.parametrize("i", range(4))
        def test_net(i):
            time.sleep(0.05)

        @pytest.mark.parametrize("i", range(4))
        def test_free(i):
            time.sleep(0.05)
        """
    )
    result = pytester.runpytest("-n", "2", "-p", "xdist", "--dist", "loadgroup", "-v")
    result.assert_outcomes(passed=12)
    ran_on: dict[str, set[str]] = {}
    for line in result.stdout.lines:
        if "PASSED test_groups.py::" in line:
            worker, nodeid = line.split()[0], line.split()[-1]
            group = nodeid.split("::")[1].split("[")[0]
            ran_on.setdefault(group, set()).add(worker)
    assert len(ran_on["test_db"]) == 1 and len(ran_on["test_net"]) == 1, ran_on
