"""Canaries of the doors to pytest's, xdist's and pytest-dependency's internals
(``pytest_depgraph/hosts``).

One test per door: it drives the door against the installed package and fails with a
message naming the upstream behaviour that changed, so an upgrade that breaks a door says
which one, before a user's run does.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import execnet
import pytest
import pytest_dependency  # type: ignore[import-untyped]
from xdist import remote  # type: ignore[import-untyped]
from xdist.dsession import DSession  # type: ignore[import-untyped]
from xdist.workermanage import WorkerController  # type: ignore[import-untyped]

from pytest_depgraph.hosts import dependency as books
from pytest_depgraph.hosts import pytest as host
from pytest_depgraph.hosts import xdist as door
from pytest_depgraph.run.xdist.units import MODES

from .fake_workers import FakeNode
from .helpers import plan_of

# -- xdist's worker ------------------------------------------------------------------------


def _worker(pytester: pytest.Pytester) -> tuple[pytest.Config, Any, list[tuple[str, Any]]]:
    """A configuration with xdist's real WorkerInteractor on a channel that records what the
    worker sends."""
    config = pytester.parseconfig()
    # xdist gives a worker's configuration this attribute, untyped
    config.workerinput = {"workerid": "gw0", "testrunuid": "x", "workercount": 1}  # type: ignore[attr-defined]
    sent: list[tuple[str, Any]] = []
    channel = SimpleNamespace(
        gateway=SimpleNamespace(execmodel=execnet.gateway_base.get_execmodel("thread")),
        send=sent.append,
        setcallback=lambda *args, **kwargs: None,
    )
    interactor = remote.WorkerInteractor(config, channel)
    return config, interactor, sent


def test_the_worker_loop_runs_each_queued_test_until_the_shutdown(
    pytester: pytest.Pytester,
) -> None:
    config, interactor, _ = _worker(pytester)
    loop = door.worker_loop(config)
    assert loop.shutdown is remote.Marker.SHUTDOWN, (
        "xdist's worker no longer queues Marker.SHUTDOWN to end its loop"
    )
    ran: list[int] = []

    def run_one_test() -> None:
        ran.append(loop.next_index())
        loop.set_next_index(loop.wait())

    loop.run_tests_with(run_one_test)
    assert door.worker_loop(config).shutdown is loop.shutdown  # found again once replaced
    loop.put(3)
    loop.put(4)
    loop.put(loop.shutdown)
    interactor.session = SimpleNamespace(shouldfail=False, shouldstop=False)
    interactor.pytest_runtestloop(interactor.session)
    assert ran == [3, 4], (
        "xdist's pytest_runtestloop no longer calls run_one_test for nextitem_index, taken "
        "from its queue, until Marker.SHUTDOWN"
    )


def test_the_worker_queue_can_be_peeked_without_waiting(pytester: pytest.Pytester) -> None:
    config, _, _ = _worker(pytester)
    loop = door.worker_loop(config)
    assert loop.take_queued() is None
    loop.put(1)
    loop.put(2)
    assert loop.take_queued() == 1
    loop.put_back(1)
    assert (loop.wait(), loop.wait()) == (1, 2), (
        "xdist's TestQueue no longer yields its deque under lock() (it appeared in xdist 3.7)"
    )


def test_the_worker_takes_our_commands_and_passes_on_its_own(pytester: pytest.Pytester) -> None:
    config, interactor, _ = _worker(pytester)
    loop = door.worker_loop(config)
    taken: list[dict[str, Any]] = []
    loop.on_command("depgraph_x", taken.append)
    interactor.handle_command(("depgraph_x", {"towards": 2}))
    interactor.handle_command(("runtests", {"indices": [5, 6]}))
    assert taken == [{"towards": 2}]
    assert (loop.wait(), loop.wait()) == (5, 6), (
        "xdist's worker no longer takes the controller's commands in handle_command "
        "(runtests queues the indices)"
    )


def test_the_worker_names_the_running_test_in_its_reports(pytester: pytest.Pytester) -> None:
    config, interactor, sent = _worker(pytester)
    loop = door.worker_loop(config)
    interactor.session = SimpleNamespace(items=[SimpleNamespace(nodeid="t.py::a")] * 2)
    loop.announce(1)
    loop.send("depgraph_event", value=1)
    interactor.pytest_runtest_logreport(
        report=pytest.TestReport("t.py::a", ("t.py", 0, "a"), {}, "passed", None, "call")
    )
    assert sent[0] == ("depgraph_event", {"value": 1})
    assert sent[1][0] == "testreport" and sent[1][1]["data"]["item_index"] == 1, (
        "xdist's worker no longer sends item_index (the test it names as running) with reports"
    )
    assert loop.config is config and loop.session is interactor.session


def test_a_worker_without_what_the_doors_need_is_named(pytester: pytest.Pytester) -> None:
    config, interactor, sent = _worker(pytester)
    door.send_event(config, "depgraph_plan", plan=None)
    assert sent == [("depgraph_plan", {"plan": None})]
    del interactor.torun
    with pytest.raises(RuntimeError, match=r"lacks WorkerInteractor.torun.lock\(\)"):
        door.worker_loop(config)
    with pytest.raises(RuntimeError, match="lacks a registered WorkerInteractor"):
        door.find_interactor(pytester.parseconfig())


# -- xdist's controller --------------------------------------------------------------------


def _node(pytester: pytest.Pytester) -> tuple[Any, list[tuple[str, dict[str, Any]]]]:
    """xdist's real WorkerController, with a queue of the events it hands its session."""
    events: list[tuple[str, dict[str, Any]]] = []
    manager = SimpleNamespace(specs=[None], testrunuid="x")
    node = WorkerController(manager, SimpleNamespace(id="gw0"), pytester.parseconfig(),
                            events.append)
    return node, events


def test_our_events_are_taken_before_xdist_sees_them(pytester: pytest.Pytester) -> None:
    node, events = _node(pytester)
    taken: list[str] = []

    def take(name: str, kwargs: object) -> bool:
        if name.startswith("depgraph"):
            taken.append(name)
            return True
        return False

    door.take_events(node, take)
    node.process_from_remote(("depgraph_plan", {"plan": None}))
    node.process_from_remote(("runtest_protocol_complete", {"item_index": 1, "duration": 0.5}))
    door.forward_completion(node, 2)
    assert taken == ["depgraph_plan"]
    assert events == [
        ("runtest_protocol_complete", {"node": node, "item_index": 1, "duration": 0.5}),
        ("runtest_protocol_complete", {"node": node, "item_index": 2, "duration": 0.0}),
    ], "xdist's WorkerController no longer queues a worker's events with notify_inproc"
    assert {"node", "item_index", "duration"} <= set(
        inspect.signature(DSession.worker_runtest_protocol_complete).parameters
    ), "xdist's session takes runtest_protocol_complete with other arguments"
    setup = inspect.getsource(WorkerController.setup)
    assert setup.index("pytest_configure_node") < setup.index("setcallback"), (
        "xdist no longer calls pytest_configure_node before it hands process_from_remote to "
        "the channel"
    )


def test_the_session_is_found_and_says_when_it_stops(pytester: pytest.Pytester) -> None:
    assert not door.is_controller(pytester.parseconfigure("-p", "xdist"))
    config = pytester.parseconfigure("-p", "xdist", "--dist", "load", "--tx", "3*popen")
    session = door.dsession(config)
    assert door.is_controller(config) and isinstance(session, DSession), (
        "xdist no longer registers its controller session as the plugin 'dsession'"
    )
    assert door.worker_count(config) == 3
    assert not door.stopping(config)
    session.shuttingdown = True
    assert door.stopping(config)
    session.shuttingdown = False
    session.shouldstop = "stopping after 1 failures"
    assert door.stopping(config)
    assert "shouldstop" in DSession.__annotations__, "xdist's session has no shouldstop"


def test_workers_are_started_as_for_n(pytester: pytest.Pytester) -> None:
    ours = pytester.parseconfig("-p", "xdist")
    door.start_workers(ours, 3)
    theirs = pytester.parseconfig("-p", "xdist", "-n", "3")
    from xdist.plugin import pytest_cmdline_main  # type: ignore[import-untyped]

    pytest_cmdline_main(theirs)
    assert (ours.option.tx, ours.option.dist) == (theirs.option.tx, theirs.option.dist), (
        "xdist's -n no longer means N popen gateways in option.tx with --dist load"
    )
    assert door.worker_count(ours) == 3
    assert door.version() >= door.MIN_VERSION


def test_collections_are_compared_by_xdist(pytester: pytest.Pytester) -> None:
    assert door.collection_diff(["a", "b"], ["a", "b"], "gw0", "gw1") is None
    message = door.collection_diff(["a", "b"], ["a", "c"], "gw0", "gw1")
    assert message is not None and "gw0" in message and "gw1" in message
    log = door.scheduler_log(None)
    assert "depgraphsched" in repr(log) and "depgraphsched" in repr(
        door.scheduler_log(remote.Producer("dsession"))
    ), "xdist's Producer no longer makes a child log per attribute"


@pytest.mark.parametrize("dist", sorted(MODES))
def test_the_run_is_handed_to_xdists_own_scheduler(pytester: pytest.Pytester, dist: str) -> None:
    from xdist import scheduler as schedulers

    config = pytester.parseconfigure("-p", "xdist", "--dist", dist, "--tx", "2*popen")
    plan = plan_of(["t.py::a", "t.py::b", "u.py::c"], [])
    nodes = [FakeNode(f"gw{i}") for i in range(2)]
    session = door.dsession(config)
    ours = object()
    session.sched = ours
    name = MODES[dist].xdist_scheduler
    scheduler = door.hand_over(
        config, door.scheduler_log(None), name, [(n, plan.nodeids) for n in nodes], ours
    )
    assert isinstance(scheduler, getattr(schedulers, name)), name
    assert session.sched is scheduler, "xdist's session no longer reads its scheduler as sched"
    assert scheduler.collection_is_completed and list(scheduler.nodes) == nodes
    assert sorted(n for node in nodes for n in node.sent) == [0, 1, 2]


# -- pytest --------------------------------------------------------------------------------

HELD_CONFTEST = """
import pytest

from pytest_depgraph.hosts import pytest as host

LOG = []


@pytest.fixture(scope="module")
def res():
    LOG.append("setup")
    yield 1
    print("captured-bye")
    LOG.append("teardown")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    result = yield
    if item.name == "test_a":
        assert item._request is False and item.funcargs is None, "pytest no longer drops them"
        host.give_back_request(item, item.config.kept)
        assert item.funcargs["res"] == 1, "funcargs not given back"
        host.drop_request(item)
        assert item.funcargs is None
        # test_a ran towards test_b: the module fixture is still set up
        with host.capture(item.config, "teardown", item):
            host.teardown_towards(item, None)
        LOG.append("torn down early")
    return result


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item):
    item.config.kept = host.request_state(item)


def pytest_runtest_setup(item):
    if item.name == "test_s":
        host.skip_at_test("skipped where the test is")
"""

HELD_TESTS = """
from conftest import LOG


def test_a(res):
    pass


def test_b(res):
    assert LOG == ["setup", "teardown", "torn down early", "setup"], LOG


def test_s():
    pass
"""


def test_a_held_tests_fixtures_teardown_and_capture(pytester: pytest.Pytester) -> None:
    """The doors of a worker's held test: its fixtures given back after pytest dropped them,
    its teardown towards another test run on pytest's setup stack, under pytest's capture;
    and a skip at the test's own line."""
    pytester.makeconftest(HELD_CONFTEST)
    pytester.makepyfile(test_held=HELD_TESTS)
    result = pytester.runpytest("-p", "no:randomly", "-rs")
    result.assert_outcomes(passed=2, skipped=1)
    assert "captured-bye" not in result.stdout.str(), "the teardown's output was not captured"
    result.stdout.fnmatch_lines(["SKIPPED [[]1[]] test_held.py:12: skipped where the test is"])
    result = pytester.runpytest("-p", "no:randomly", "-p", "no:capture", "-k", "not test_s")
    result.assert_outcomes(passed=2)
    assert "captured-bye" in result.stdout.str()


def test_what_is_left_to_tear_down_is_read_from_the_setup_stack(
    pytester: pytest.Pytester,
) -> None:
    """A test torn down towards the next one leaves nothing to tear down when no fixture of a
    wider scope is set up; a module fixture's finaliser is something. The door says False
    when it cannot read pytest's stack: this checks it still reads it."""
    pytester.makeconftest(
        """
        import pytest
        from pytest_depgraph.hosts import pytest as host

        FOUND = {}

        @pytest.hookimpl(wrapper=True)
        def pytest_runtest_teardown(item, nextitem):
            yield
            FOUND[item.name] = host.nothing_to_tear_down(item.session)

        def pytest_sessionfinish(session):
            print("found", sorted(FOUND.items()))
        """
    )
    pytester.makepyfile(
        test_a="""
        import pytest

        @pytest.fixture(scope="module")
        def res():
            yield 1

        def test_plain(): pass
        def test_uses(res): pass
        def test_after(): pass
        """,
    )
    result = pytester.runpytest("-p", "no:randomly", "-s")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines([
        "*found [[]('test_after', True), ('test_plain', True), ('test_uses', False)[]]",
    ])


def test_what_is_set_up_is_read_from_the_setup_stack_and_a_collector_is_torn_down_towards(
    pytester: pytest.Pytester,
) -> None:
    """The nodes set up during a test are its chain, session first; a teardown towards a
    collector keeps that collector's chain and tears the rest down (a class's fixture goes,
    the module's stays). The door reads nothing when it cannot read pytest's stack: this
    checks it still reads it."""
    pytester.makeconftest(
        """
        import pytest
        from pytest_depgraph.hosts import pytest as host

        @pytest.hookimpl(wrapper=True)
        def pytest_runtest_teardown(item, nextitem):
            print("up", [n.name for n in host.set_up(item.session)][2:])
            host.teardown_towards(item, item.parent.parent)
            print("left", [n.name for n in host.set_up(item.session)][2:])
            yield
        """
    )
    pytester.makepyfile(
        test_a="""
        import pytest

        @pytest.fixture(scope="class")
        def res():
            yield 1
            print("class fixture gone")

        class TestC:
            def test_in_class(self, res): pass
        """,
    )
    result = pytester.runpytest("-p", "no:randomly", "-s")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([
        "*up [[]'test_a.py', 'TestC', 'test_in_class'[]]",
        "*class fixture gone",
        "*left [[]'test_a.py'[]]",
    ])


def test_last_failed_collects_everything_and_reruns_what_we_keep(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_a="def test_fails():\n    assert 0\n",
                        test_b="import pytest\n\ndef test_skips():\n    pytest.skip('x')\n",
                        test_c="def test_passes():\n    pass\n")
    pytester.makeconftest(
        "import pytest\nfrom pytest_depgraph.hosts import pytest as host\n\n"
        "def pytest_configure(config):\n"
        "    global CONFIG\n"
        "    CONFIG = config\n\n"
        "@pytest.hookimpl(trylast=True)\n"
        "def pytest_runtest_logreport(report):\n"
        "    if report.skipped:\n"
        "        host.keep_last_failed(CONFIG, report.nodeid)\n\n"
        "def pytest_sessionstart(session):\n"
        "    host.collect_all_for_last_failed(session.config)\n"
    )
    pytester.runpytest("-p", "no:randomly").assert_outcomes(failed=1, skipped=1, passed=1)
    result = pytester.runpytest("-p", "no:randomly", "--lf")
    result.assert_outcomes(failed=1, skipped=1)  # the skipped test runs again
    # without the door, --lf would skip test_c.py while collecting ("skipped 1 file")
    result.stdout.fnmatch_lines(["collected 3 items / 1 deselected / 2 selected"])
    assert "skipped 1 file" not in result.stdout.str(), (
        "--lf's plugin no longer narrows collection through lfplugin-collwrapper/collskip, or "
        "no longer keeps the tests to run again in LFPlugin.lastfailed"
    )


def test_the_terminals_counts(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_c="def test_1():\n    pass\n\ndef test_2():\n    pass\n"
                        "\ndef test_3():\n    pass\n")
    pytester.makeconftest(
        "from pytest_depgraph.hosts import pytest as host\n\n"
        "def pytest_collection_modifyitems(config, items):\n"
        "    config.hook.pytest_deselected(items=[items[2]])\n"
        "    host.undo_deselection(config, {items[2].nodeid})\n"
        "    host.uncount_collected(config, 1)\n"
        "    del items[2]\n"
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["collected 2 items"])
    assert "deselected" not in result.stdout.str(), (
        "pytest's terminal no longer counts deselected tests in stats['deselected'] or "
        "collected ones in _numcollected"
    )


@pytest.mark.parametrize("dist", [d for d in sorted(MODES) if MODES[d].unit is not None])
def test_our_units_are_xdists(pytester: pytest.Pytester, dist: str) -> None:
    """run/xdist/units.py splits the tests into --dist units as xdist's own scheduler does
    (``_split_scope``), which it cannot call before the run is handed to it."""
    from xdist import scheduler as schedulers

    config = pytester.parseconfigure("-p", "xdist", "--dist", dist, "--tx", "1*popen")
    theirs = getattr(schedulers, MODES[dist].xdist_scheduler)(config)
    unit = MODES[dist].unit
    assert unit is not None
    nodeids = ["a/test_x.py::test_f", "a/test_x.py::test_f2", "a/test_x.py::TestC::test_m[1]",
               "a/test_x.py::TestC::test_n", "test_y.py::test_g@db", "test_z.py::test_k@db",
               "test_y.py::test_h[a@b]", "test_y.py::test_i"]

    def partition(split: Callable[[str], str]) -> set[frozenset[str]]:
        units: dict[str, set[str]] = {}
        for nodeid in nodeids:
            units.setdefault(split(nodeid), set()).add(nodeid)
        return {frozenset(members) for members in units.values()}

    assert partition(unit) == partition(theirs._split_scope), (
        f"xdist's {MODES[dist].xdist_scheduler} splits the tests into other units"
    )


# -- pytest's fixtures, marks and reports ----------------------------------------------------


FIXTURE_TESTS = """
import pytest

@pytest.fixture(params=[1, 2])
def base(request):
    return request.param

@pytest.fixture
def top(base):
    return base

def test_t(top):
    pass
"""


def test_a_tests_fixtures_and_the_sessions(pytester: pytest.Pytester) -> None:
    first, second = pytester.getitems(FIXTURE_TESTS)
    info = host.fixture_info(first)
    assert info is not None and info is host.fixture_info(second), (
        "pytest no longer keeps one _fixtureinfo per test definition, shared by its instances"
    )
    assert {"top", "base"} <= set(host.fixture_closure(info)), (
        "pytest's FuncFixtureInfo no longer lists the fixtures a test uses in names_closure"
    )
    top = host.fixtures_by_name(info)["top"][-1]
    assert getattr(host.fixture_function(top), "__name__", None) == "top", (
        "pytest's FuncFixtureInfo.name2fixturedefs or FixtureDef.func changed"
    )
    assert tuple(host.fixture_arguments(top)) == ("base",), (
        "pytest's FixtureDef no longer lists the fixtures it requests in argnames"
    )
    session = first.session
    definitions = host.session_fixtures(session)
    assert definitions is not None and ("top", top) in definitions, (
        "pytest's fixture manager no longer keeps the session's definitions in "
        "_arg2fixturedefs (pytest < 9) or _arg2node2fixturedefs (pytest >= 9)"
    )
    assert "top" in host.session_fixture_names(session)
    assert (host.param_index(first, "base"), host.param_index(second, "base")) == (0, 1), (
        "pytest's Function.callspec no longer says which parameter a test uses (indices)"
    )
    assert host.param_index(first, "top") is None


def test_a_mark_whose_first_call_takes_its_arguments() -> None:
    def target() -> None:
        pass

    def test() -> None:
        pass

    calls: list[tuple[object, ...]] = []

    def decorated(args: tuple[object, ...], kwargs: object) -> bool:
        calls.append(args)
        return False

    host.install_mark("depgraph_canary", decorated)
    try:
        decorator = pytest.mark.depgraph_canary(target)
        assert isinstance(decorator, pytest.MarkDecorator) and decorator.mark.args == (target,), (
            "pytest.mark no longer takes a decorator set on it, or MarkDecorator.with_args changed"
        )
        assert decorator(test) is test and getattr(test, "pytestmark", None) == [decorator.mark], (
            "pytest's MarkDecorator no longer stores its mark on the function it decorates"
        )
        assert calls == [(target,)]
    finally:
        host.uninstall_mark("depgraph_canary")
    assert "depgraph_canary" not in vars(pytest.mark)

    def bare() -> None:
        pass

    host.store_bare_mark("depgraph_canary", bare)
    marks = getattr(bare, "pytestmark", [])
    assert [(m.name, m.args, m.kwargs) for m in marks] == [("depgraph_canary", (), {})], (
        "pytest's Mark or MarkDecorator constructor changed (_ispytest)"
    )


@pytest.mark.skipif(int(pytest.__version__.split(".")[0]) < 9, reason="pytest 9's subtests")
def test_subtests_reports_are_told_from_their_tests(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        "def test_s(subtests):\n    with subtests.test(msg='one'):\n        pass\n"
    )
    reports = pytester.inline_run("-p", "no:randomly").getreports("pytest_runtest_logreport")
    assert [host.is_subtest_report(r) for r in reports if r.when == "call"] == [True, False], (
        "pytest's subtests no longer report each subtest as a _pytest.subtests.SubtestReport"
    )


@pytest.mark.skipif(int(pytest.__version__.split(".")[0]) < 9, reason="pytest 9 rejects it")
def test_a_mark_on_a_fixture_is_rejected_by_pytest(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        "import pytest\n\n@pytest.mark.skip\n@pytest.fixture\ndef f():\n    pass\n\n"
        "def test_t(f):\n    pass\n"
    )
    reports = pytester.inline_run("-p", "no:randomly").getreports("pytest_collectreport")
    assert [report for report in reports if host.rejects_marked_fixture(report)], (
        "pytest no longer fails the collection of a module that marks a fixture with "
        "'Marks cannot be applied to fixtures'"
    )


# -- pytest-dependency -----------------------------------------------------------------------


def test_pytest_dependencys_check_and_books() -> None:
    original = pytest_dependency.DependencyManager.checkDepend
    asked: list[object] = []
    undo = books.wrap_check(pytest_dependency, lambda manager, names, item: asked.append(names))
    assert undo is not None, (
        "pytest-dependency no longer has DependencyManager.checkDepend, addResult and ScopeCls"
    )
    try:
        manager = pytest_dependency.DependencyManager("module")
        item = SimpleNamespace(nodeid="t.py::test_a", name="test_b")
        assert books.manager_scope(manager) == "module"
        assert not books.has_passed(manager, "test_a")
        books.record_passed(manager, item, "test_a")
        assert books.has_passed(manager, "test_a"), (
            "pytest-dependency's addResult no longer records a phase's report in results, or "
            "isSuccess no longer says that setup, call and teardown passed"
        )
        manager.checkDepend(["test_a"], item)
        with pytest.raises(pytest.skip.Exception):
            manager.checkDepend(["test_c"], item)
        assert asked == [["test_a"], ["test_c"]], (
            "pytest-dependency's marker and depends() no longer check through checkDepend"
        )
    finally:
        undo()
    assert pytest_dependency.DependencyManager.checkDepend is original
    assert books.version(pytest_dependency) == pytest_dependency.__version__


def test_a_command_line_is_cut_into_its_options(pytester: pytest.Pytester) -> None:
    """pytest's argparse parser and its actions' ``nargs``: valued options (next word, ``=``,
    glued to a short one), grouped short flags, positional arguments, unknown words."""
    config = pytester.parseconfig()
    parts = host.split_command_line(config, [
        "-n", "2", "tests/t.py::a", "-vx", "-kfoo", "--maxfail=3", "-p", "no:x", "--weird",
        "--", "b",
    ])
    assert parts == [
        ("numprocesses", ["-n", "2"]), ("", ["tests/t.py::a"]), ("verbose", ["-v"]),
        ("maxfail", ["-x"]), ("keyword", ["-kfoo"]), ("maxfail", ["--maxfail=3"]),
        ("plugins", ["-p", "no:x"]), ("?", ["--weird"]), ("", ["b"]),
    ]


def test_the_option_as_given_before_plugins_change_it(pytester: pytest.Pytester) -> None:
    config = pytester.parseconfig("-n", "2", "--dist", "loadfile")
    config.option.dist = "load"  # as a plugin's pytest_cmdline_main may change it
    assert host.given_on_command_line(config, "dist") == "loadfile", (
        "pytest no longer keeps the known arguments as parsed in config.known_args_namespace"
    )
    assert host.given_on_command_line(config, "no_such_option") is None


def test_a_line_is_started_after_the_terminals_progress(pytester: pytest.Pytester) -> None:
    config = pytester.parseconfigure()
    terminal: Any = config.pluginmanager.get_plugin("terminalreporter")
    terminal.write("....")
    terminal.currentfspath = "test_a.py"
    host.start_a_line(config)
    assert terminal._tw.width_of_current_line == 0 and terminal.currentfspath is None, (
        "pytest's TerminalReporter no longer writes through _tw (a TerminalWriter with "
        "width_of_current_line) or no longer starts a file's line from currentfspath"
    )


def test_pytests_plugins_are_imported_without_being_registered() -> None:
    host.import_pytest_plugins()
    import sys

    assert "_pytest.python" in sys.modules and "_pytest.terminal" in sys.modules


def test_a_sessions_temporary_folder_is_made_afresh_elsewhere(pytester: pytest.Pytester) -> None:
    """``config._tmp_path_factory``, made from ``--basetemp`` at configure time and returned by
    the ``tmp_path_factory`` fixture: after its first use, pointed at another folder, which
    is made at the next use (a discovery's list, forked after collection)."""
    pytester.makeconftest("""
        from pytest_depgraph.hosts.pytest import fresh_basetemp

        def pytest_collection_finish(session):
            first = session.config._tmp_path_factory.getbasetemp()
            (first / "left").write_text("x")
            fresh_basetemp(session.config, str(first.parent / "second"))
    """)
    pytester.makepyfile(test_t="""
        def test_t(tmp_path_factory, tmp_path):
            base = tmp_path_factory.getbasetemp()
            assert base.name == "second" and not (base / "left").exists()
            assert base in tmp_path.parents
    """)
    result = pytester.runpytest(f"--basetemp={pytester.path / 'first'}")
    assert result.ret == 0, "pytest's TempPathFactory is no longer config._tmp_path_factory"
    assert (pytester.path / "first" / "left").exists()


def test_workers_asked_for_are_counted_and_not_started(pytester: pytest.Pytester) -> None:
    config = pytester.parseconfig("-n", "2")
    config.option.tx = ["2*popen"]  # as xdist's own pytest_cmdline_main would leave it
    config.option.dist = "load"
    assert door.keep_workers_off(config) == 2
    assert (config.option.tx, config.option.dist, config.option.numprocesses) == ([], "no", 0)


def test_a_discoverys_gateways_are_made_and_fed_as_xdists(pytester: pytest.Pytester) -> None:
    """The specs as xdist reads them, its NodeManager's gateways and rsync, its rule for a
    gateway in a folder of its own and its paths relative to the roots, execnet's
    remote_exec: a discovery's slots (``discover/gateways.py``)."""
    suite = pytester.mkpydir("suite")
    (suite / "test_x.py").write_text("def test_x():\n    pass\n")
    elsewhere = pytester.path / "elsewhere"
    config = pytester.parseconfig("-p", "xdist", "--tx", "2*popen", "--rsyncdir", str(suite))
    assert door.tx_specs(config) == ["popen", "popen"], "xdist no longer reads 2*popen as two"
    gateways = door.Gateways(config, ["popen", f"popen//chdir={elsewhere}"])
    try:
        assert suite in gateways.roots, "xdist's NodeManager no longer keeps the rsync roots"
        local, remote = gateways.open(0), gateways.open(1)
        assert (local.id, door.is_remote(local)) == ("gw0", False)
        assert (remote.id, door.is_remote(remote)) == ("gw1", True)
        assert (elsewhere / "suite" / "test_x.py").exists(), "rsync_roots sent nothing"
        assert door.relative_to_roots(gateways.roots, [str(suite / "test_x.py"), "-q"]) == [
            "suite/test_x.py", "-q"
        ], "make_reltoroot no longer names a path by its root's name"
        with pytest.raises(ValueError):
            door.relative_to_roots([suite], [str(pytester.path)])
        channel = door.execute(remote, "import os; channel.send(os.getcwd())")
        assert channel.receive(10) == str(elsewhere), "remote_exec no longer runs in chdir"
    finally:
        gateways.close()
    with pytest.raises(door.GatewayFailed, match=r"^ValueError: .*'nonsense'$"):
        door.Gateways(config, ["nonsense"]).open(0)


def test_a_configure_time_warning_can_be_placed_at_a_line_of_a_file(
    pytester: pytest.Pytester,
) -> None:
    """``warn_at``: pytest takes a configure-time warning's place from the frame that issues
    it; a warning placed at an ini line shows there, and is a usage error under -W error. If
    pytest changes where it takes the place from, this fails first."""
    pytester.makeconftest(
        "from pytest_depgraph.hosts.pytest import warn_at\n"
        "import pytest\n\n"
        "def pytest_configure(config):\n"
        "    warn_at(config, pytest.PytestWarning('canary'), 'pytest.ini', 7)\n"
    )
    pytester.makepyfile(test_a="def test_a():\n    pass\n")
    shown = pytester.runpytest("-p", "no:depgraph")
    shown.stdout.fnmatch_lines(["pytest.ini:7", "  pytest.ini:7: PytestWarning: canary"])
    refused = pytester.runpytest("-p", "no:depgraph", "-W", "error::pytest.PytestWarning")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(["ERROR: canary"])


def test_a_package_is_taken_off_assertion_rewriting(pytester: pytest.Pytester) -> None:
    from _pytest.assertion.rewrite import AssertionRewritingHook

    hook = AssertionRewritingHook(pytester.parseconfig())  # as pytest installs it
    sys.meta_path.insert(0, hook)
    try:
        hook.mark_rewrite("depgraph_canary_pkg")
        assert host.not_rewritten("depgraph_canary_pkg"), (
            "pytest's AssertionRewritingHook no longer keeps the marked packages in _must_rewrite"
        )
        state: Any = SimpleNamespace(trace=lambda message: None)
        assert not hook._is_marked_for_rewrite("depgraph_canary_pkg.mod", state)
        assert not host.not_rewritten("depgraph_canary_pkg")
    finally:
        sys.meta_path.remove(hook)
