"""The plugin's pytest-xdist hooks: start workers, choose the scheduler, carry each plan across.

Registered by ``plugin.py`` through :func:`register` when xdist is active; every xdist hook is
``optionalhook`` so nothing breaks when xdist is not. On the controller: ``--depgraph-parallelism
N`` without ``-n`` starts N workers; with ``--dist load`` (the default of ``-n``), ``worksteal``,
``loadfile``, ``loadscope`` or ``loadgroup`` the
:class:`~pytest_depgraph.run.xdist.scheduler.DepGraphScheduling` takes over; with another ``--dist``
mode a warning names the dependencies that mode cannot honour. On workers: the plan is sent to the
controller before xdist's ``collectionfinish``, and the worker loop is patched
(:mod:`pytest_depgraph.run.xdist.worker`).
"""

from __future__ import annotations

import re
from collections.abc import Generator
from typing import Any

import pytest

from pytest_depgraph.core.plan import PROTOCOL_VERSION, Plan
from pytest_depgraph.hosts import xdist
from pytest_depgraph.plurals import plural
from pytest_depgraph.run import durations
from pytest_depgraph.run.role import (
    WORKERINPUT_KEY,
    Role,
    controller_shows_places,
    role,
    sends_locations,
)
from pytest_depgraph.run.state import session_state
from pytest_depgraph.run.xdist import value_relay
from pytest_depgraph.run.xdist.locations import LOCATED_EVENT

# the controller's and the workers' modules (units, worker, controller, controller_warnings)
# are imported by the hooks that only xdist calls, or only on a worker: a serial run never
# loads them (measured: bare10k's registration of these hooks 26.6 -> 7.9 M instructions,
# of a 7.78 G process)

_NAME = "depgraph-xdist"
#: what the name of every event of the plugin's workers begins with
_EVENT_PREFIX = "depgraph_"


def register(config: pytest.Config) -> None:
    """Register the hooks (and the duration log) on ``config``; idempotent.

    Call it from ``pytest_configure`` at the latest, before xdist's own (``trylast``) one: that
    is when the workers ``--depgraph-parallelism`` asks for are added.
    """
    durations.install(config)
    if not config.pluginmanager.has_plugin("xdist") or config.pluginmanager.has_plugin(_NAME):
        return
    config.pluginmanager.register(XdistHooks(), _NAME)


def shows_places(config: pytest.Config) -> bool:
    """Whether this controller shows where edges were declared: in the DOT file, the run
    report, or an error of a ``--dist`` unit. Otherwise its workers leave that out of their
    plans (:meth:`~pytest_depgraph.core.plan.Plan.to_json`): it reads the source of every
    declaration."""
    from pytest_depgraph.run.xdist import units

    settings = session_state(config).settings
    return bool(settings.dot or settings.report) or units.has_units(config.getoption("dist", "no"))


def walks(config: pytest.Config) -> bool:
    """Whether this controller's tests are scheduled by :class:`DepGraphScheduling`."""
    from pytest_depgraph.run.xdist import units

    return role(config) is Role.CONTROLLER and units.walked(config.getoption("dist", "no"))


class XdistHooks:
    """xdist-side hook implementations of the depgraph plugin (controller and workers)."""

    def __init__(self) -> None:
        self._warned = False
        #: workers asked for a share of the items' locations (the first ones configured)
        self._locating = 0

    # -- controller ------------------------------------------------------------------------

    def pytest_configure(self, config: pytest.Config) -> None:
        this = role(config)
        if this.is_worker:
            return
        parallelism = session_state(config).settings.parallelism
        distributing = bool(config.getoption("numprocesses", None)) or (
            parallelism is not None and parallelism > 1
        )
        if distributing and xdist.version() < xdist.MIN_VERSION:
            raise pytest.UsageError(
                "pytest-depgraph needs pytest-xdist >= 3.7, < 4 for -n / --depgraph-parallelism; "
                f"found {'.'.join(map(str, xdist.version()))}. "
                "Upgrade it: pip install 'pytest-xdist>=3.7,<4'"
            )
        if (
            parallelism is not None
            and parallelism > 1
            and config.getoption("numprocesses", None) is None
            and not config.getoption("tx", None)
            and not config.getoption("collectonly")
            and not config.getoption("usepdb", False)
            and this is Role.SERIAL  # not already an xdist controller
        ):
            # xdist's pytest_configure (trylast) has not run yet: its session starts them
            xdist.start_workers(config, parallelism)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        from pytest_depgraph.run.xdist import worker
        from pytest_depgraph.run.xdist.controller import controller

        walk = walks(node.config)
        # the controller reports a test itself (a skip, a test that cannot run) under the
        # location a worker computed; those the walk may need at its start every worker would
        # compute the same, so the first workers each compute a share, at once (one worker
        # computing all of them held the walk's start back: 59 against 8 ms of CPU from the
        # end of its collection to its plan sent, the random 2,000-test DAG on -n 4); should
        # one die before sending its share, the controller reads those tests' lines from the
        # source (the others come when needed: run/xdist/locations.py)
        count = xdist.worker_count(node.config)
        locations: list[int] | bool = False
        if walk and self._locating < count:
            locations = [self._locating, count]
            self._locating += 1
        node.workerinput[WORKERINPUT_KEY] = {
            "protocol": PROTOCOL_VERSION,
            "walk": walk,
            "places": shows_places(node.config),
            "locations": locations,
        }
        # xdist drops a node on an unknown event: take ours out of the stream first. This runs
        # in execnet's receiver thread, so it only hands on what came; the main thread reads it.
        state = session_state(node.config)
        plans = controller(node.config)
        relay = state.relay

        def take(name: str, kwargs: dict[str, Any]) -> bool:
            if not name.startswith(_EVENT_PREFIX):
                return False  # xdist's own: 6 events a test, each shown here first
            if name == worker.PLAN_EVENT:
                plans.received(node, kwargs.get("plan"), kwargs.get("locations"))
                return True
            if name == LOCATED_EVENT:  # before the report that may skip those tests
                plans.located(kwargs["nodes"], kwargs["locations"])
                return True
            if name == worker.HELD_EVENT:
                # comes just before the test's runtest_protocol_complete, on the same channel
                if state.scheduler is not None:
                    state.scheduler.note_held(node, kwargs["item_index"])
                return True
            if name == worker.TORN_EVENT:
                # the scheduler takes it in the main thread, before the completion or the
                # settling that follows it on the same channel
                scheduler = state.scheduler
                if scheduler is not None and scheduler.note_torn(
                    node, kwargs["item_index"], kwargs["scopes"]
                ):
                    xdist.forward_completion(node, worker.TORN_INDEX)
                return True
            if name == worker.SETTLED_EVENT:
                # the scheduler takes it in the main thread, as a second completion of the test
                # (xdist's own scheduler, when the walk handed the run over, never sees it)
                if state.scheduler is not None and state.scheduler.walking:
                    xdist.forward_completion(node, kwargs["item_index"])
                return True
            return value_relay.take_event(relay, node, name, kwargs)

        xdist.take_events(node, take)

    @pytest.hookimpl(tryfirst=True, optionalhook=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        if walks(config):
            # imported here: it loads xdist's scheduling modules, which only a walk needs
            from pytest_depgraph.run.xdist.scheduler import DepGraphScheduling

            return DepGraphScheduling(config, log)
        return None

    @pytest.hookimpl(tryfirst=True, optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        # first: the other hooks (shards, the run report) read the first worker's plan
        from pytest_depgraph.run.xdist.controller import controller
        from pytest_depgraph.run.xdist.controller_warnings import record_warning

        config = node.config
        controller(config).collected(node, ids)
        plan = session_state(config).plan
        if self._warned or walks(config) or plan is None:
            return
        self._warned = True
        message = unhonoured_message(plan, str(config.getoption("dist")))
        if message:
            record_warning(config, message, dist_location(config))

    @pytest.hookimpl(wrapper=True, optionalhook=True)
    def pytest_handlecrashitem(
        self, crashitem: str, report: Any, sched: Any
    ) -> Generator[None, object, object]:
        # pytest-rerunfailures asks the scheduler to re-run a test that crashed its worker,
        # which a dependency walk cannot (mark_test_pending raises NotImplementedError);
        # releases before 16.1, the last on Python 3.9, let that error stop pytest. The
        # report stays "failed": the crash is the test's failure.
        try:
            return (yield)
        except NotImplementedError:
            return None

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        result = yield
        plans = session_state(session.config).controller
        if plans is not None and plans.errors:
            raise session.Interrupted(f"{plural(plans.errors, 'error')} during collection")
        return result

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        state = session_state(session.config)
        if state.scheduler is None:
            return
        stats = state.scheduler.walk_stats()
        if stats is not None:
            state.walk = stats

    # -- workers ---------------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        config = session.config
        this = role(config)
        if not this.is_worker:
            return
        from pytest_depgraph.run.xdist import locations, worker

        if this.sends_plan:
            worker.send_plan(
                config,
                session_state(config).plan,
                session.items,
                places=controller_shows_places(config),
                locations=sends_locations(config),
            )
        if this is Role.WALKED_WORKER:
            worker.install(config)
            locations.install(config, session_state(config).plan, session.items)
            value_relay.install_worker(config, session_state(config).outputs)


def dist_location(config: pytest.Config) -> tuple[str, int]:
    """Where ``--dist`` was given: the ini file's line that sets it, else the command line."""
    args = config.invocation_params.args
    inipath = config.inipath
    given = any(a == "--dist" or a.startswith("--dist=") or re.match(r"-d\w", a) for a in args)
    if inipath is not None and not given:
        try:
            text = inipath.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            text = ""
        for number, line in enumerate(text.splitlines(), 1):
            if re.search(r"--dist\b|^\s*dist\s*=", line):
                return str(inipath), number
    return "pytest command line", 0


def unhonoured_message(plan: Plan, dist: str) -> str:
    """The warning for a ``--dist`` mode the scheduler does not run ('' when nothing is lost).

    ``each`` runs every test on every worker in the plan's order, so each worker honours every
    dependency on its own; another mode (a plugin's) may split any of them across workers.
    """
    if dist == "each":
        return ""
    edges = plan.graph.edges()
    if not edges:
        return ""
    shown = [
        f"  {plan.nodeids[e.dependent]} -> {plan.nodeids[e.dependency]}" for e in edges[:5]
    ]
    more = f"\n  ... and {len(edges) - 5} more" if len(edges) > 5 else ""
    return (
        f"depgraph: --dist {dist} cannot honour {len(edges)} of "
        f"{plural(len(edges), 'dependency')}: "
        "their tests may run on different workers, in any order, and a failure does not skip "
        "its dependents:\n" + "\n".join(shown) + more + "\n"
        "Use --dist load (the default of -n), loadfile, loadscope or loadgroup to run them in "
        "dependency order."
    )
