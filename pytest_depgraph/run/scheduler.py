"""The xdist scheduler: xdist's ``Scheduling`` protocol in front of the dispatch policy.

One more strategy in the shape of ``xdist/scheduler/*.py``, and as thin: every decision --
what is ready, which ready test goes to which worker, what must be skipped -- is the
:class:`~pytest_depgraph.core.dispatch.Dispatcher`'s. This module only speaks xdist's protocol:

* workers send their plan (the reduced graph over their ``session.items``) before their
  collection; all plans must agree, or nothing runs;
* the dispatcher's choices go to the workers as ``runtests`` commands, several tests each
  (with the values the tests may read, :mod:`pytest_depgraph.run.channel_values`); a
  worker's completion goes back to the dispatcher with the test's outcome, and the tests
  that will never run are reported skipped here, on the controller, naming their root cause;
* a worker that dies fails the test it ran; its pinned groups go on elsewhere;
* with ``--dist loadfile``, ``loadscope`` or ``loadgroup`` each of xdist's work units is a
  pinned group (:mod:`pytest_depgraph.run.units`);
* a plan without edges, broken or unselected tests, with no ``--depgraph-parallelism``, is
  handed to xdist's own scheduler for the ``--dist`` mode (:class:`DepGraphScheduling`):
  the plugin changes nothing for a suite that declares no dependencies.
"""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pytest

from pytest_depgraph.core.plan import Plan
from pytest_depgraph.hosts import xdist
from pytest_depgraph.run.controller_warnings import record_warning
from pytest_depgraph.run.durations import load_durations
from pytest_depgraph.run.outcomes import FAILED, SYNTHETIC, OutcomeRecorder, skip_reason
from pytest_depgraph.run.state import (
    HELD_ATTRIBUTE,
    LOCATIONS_ATTRIBUTE,
    PLAN_ATTRIBUTE,
    session_state,
)
from pytest_depgraph.run.worker import TEARDOWN_COMMAND

if TYPE_CHECKING:
    from pytest_depgraph.core.dispatch import Dispatcher, Skip
    from pytest_depgraph.core.timeline import WalkStats

# The dispatch policy, the work units and the timeline are imported where the walk begins
# (``WalkScheduling.schedule``): a plan without edges is handed to xdist without them.


class DepGraphScheduling:
    """What ``pytest_xdist_make_scheduler`` returns: the walk, or xdist's own scheduler once
    the plan turned out to have nothing to walk.

    Every member of xdist's protocol goes to the strategy in charge. Once :meth:`schedule`
    decided, xdist's session is pointed at that strategy itself, so nothing of ours stays on
    the path of its events.
    """

    def __init__(self, config: pytest.Config, log: Any = None) -> None:
        self.walk = WalkScheduling(config, log, self)
        self._current: Any = self.walk

    def __getattr__(self, name: str) -> Any:
        # only reached for names not defined here: the protocol's other members
        return getattr(self._current, name)

    def schedule(self) -> None:
        """Start (or go on with) the walk; hand the run over when there is nothing to walk."""
        self._current.schedule()
        handed = self.walk.handed_over
        if handed is not None and self._current is self.walk:
            self._current = handed

    def _priorities(self, plan: Plan) -> list[float]:
        """The walk's priorities (bench/xdist_bench.py replaces this to measure plain
        collection order)."""
        from pytest_depgraph.core import dispatch

        return dispatch.priorities(plan.graph, self.walk.weights(plan))


class _Worker:
    """What the scheduler knows about one worker before it gets tests."""

    __slots__ = ("collection", "plan_text", "usable")

    def __init__(self) -> None:
        self.collection: list[str] | None = None
        self.plan_text: str | None = None
        #: False when it collected something else than the others: it gets no test
        self.usable = True


class WalkScheduling:
    """xdist's ``Scheduling`` protocol over a :class:`Dispatcher`."""

    def __init__(
        self, config: pytest.Config, log: Any, front: DepGraphScheduling
    ) -> None:
        self.config = config
        self.front = front
        self.log = xdist.scheduler_log(log)
        self.numnodes = xdist.worker_count(config)
        self.session = session_state(config)
        parallelism = self.session.settings.parallelism
        self.explicit_limit = parallelism is not None
        self.limit = parallelism if parallelism is not None else self.numnodes
        self.recorder: OutcomeRecorder = self.session.recorder
        self.skips: dict[str, str] = self.session.skips
        self.workers: dict[Any, _Worker] = {}
        self.collection: list[str] | None = None
        self.plan: Plan | None = None
        self.dispatcher: Dispatcher | None = None
        #: xdist's scheduler for the ``--dist`` mode, when the plan has nothing to walk
        self.handed_over: Any = None
        #: nothing will be sent: the collections or plans differ, or the plan has errors
        self.aborted = False
        #: depgraph errors that stopped the run (reported as collection errors by the workers)
        self.plan_errors = 0
        self._completed = False
        self._plan_text: str | None = None
        self._seconds: dict[int, float] = {}
        self._first_sent: float | None = None
        #: how many workers can have a test at once (limit and graph width)
        self.useful = self.limit
        self._last_done: float | None = None
        self._relay = self.session.relay
        self.session.scheduler = self

    # -- the xdist Scheduling protocol -------------------------------------------------------

    @property
    def nodes(self) -> list[Any]:
        """Every worker the scheduler knows."""
        return list(self.workers)

    @property
    def collection_is_completed(self) -> bool:
        """All initially expected workers collected (stays True once reached)."""
        if not self._completed:
            collected = sum(1 for w in self.workers.values() if w.collection is not None)
            self._completed = collected >= self.numnodes
        return self._completed

    @property
    def tests_finished(self) -> bool:
        """Nothing in flight and nothing left to send."""
        if not self._completed and not self.collection_is_completed:
            return False
        if self.aborted:
            return True
        dispatcher = self.dispatcher
        return dispatcher is not None and dispatcher.finished

    @property
    def walking(self) -> bool:
        """Whether the walk runs the tests (not aborted, not handed over to xdist)."""
        return self.dispatcher is not None and not self.aborted

    @property
    def has_pending(self) -> bool:
        """Whether tests are still to run (only used for xdist's status line)."""
        return self.dispatcher is not None and not self.dispatcher.done

    def add_node(self, node: Any) -> None:
        """A worker started (before it collects)."""
        assert node not in self.workers
        self.workers[node] = _Worker()

    def add_node_collection(self, node: Any, collection: Sequence[str]) -> None:
        """A worker collected; its plan arrived just before (same channel, earlier event)."""
        worker = self.workers[node]
        worker.collection = list(collection)
        worker.plan_text = getattr(node, PLAN_ATTRIBUTE, None)
        if self.collection is None:
            return
        if not self._agrees(node, worker):
            worker.usable = False
            node.shutdown()
        elif self.dispatcher is not None:  # a replacement of a worker that died
            self.dispatcher.add_worker(node)

    def schedule(self) -> None:
        """Start the walk (first call) or put a new worker to work (later calls)."""
        assert self.collection_is_completed
        if self.dispatcher is not None or self.aborted:
            self._dispatch()
            return
        plan = self._agreed_plan()
        if plan is None:
            self._abort()
            return
        self.plan = plan
        self.session.plan = plan
        known = load_durations(self.config, plan.nodeids[: plan.item_count])
        if known:  # the controller's cache is the one this run writes to
            plan.durations = known
        if plan.errors and not self.config.option.continue_on_collection_errors:
            self.plan_errors = len(plan.errors)
            self._abort()
            return
        if self._nothing_to_walk(plan):
            self._hand_over()
            return
        from pytest_depgraph.core.dispatch import MAX_HOLD, Dispatcher
        from pytest_depgraph.run import units

        dist = str(self.config.getoption("dist", "load"))
        if units.has_units(dist):
            plan, unit_errors = units.bind_units(plan, dist)
            self.plan = self.session.plan = plan
            if unit_errors:
                for path, message in unit_errors:
                    self.config.hook.pytest_collectreport(
                        report=pytest.CollectReport(path, "failed", longrepr=message, result=[])
                    )
                self.plan_errors = len(unit_errors)
                self._abort()
                return
        size = len(plan.nodeids)
        dispatcher = self.dispatcher = Dispatcher(
            plan.graph,
            priority=self.front._priorities(plan),
            weight=self.weights(plan),
            group=_padded(plan.group, size),
            limit=self.limit,
            unsatisfied=[*plan.broken, *plan.external],
            pinned=plan.pinned,
            hold=MAX_HOLD,
            durations=plan.durations,
        )
        self._warn(plan.warnings)
        for node in sorted(plan.broken):
            self._report_broken(node, plan.broken[node])
        self._report_skips(dispatcher.initial.skipped)
        self._stop_surplus_workers(plan, dispatcher)
        for node, worker in self.workers.items():
            if worker.usable and worker.collection is not None and not node.shutting_down:
                dispatcher.add_worker(node)
        self._dispatch()

    def mark_test_complete(self, node: Any, item_index: int, duration: float = 0) -> None:
        """A worker finished a test, or the teardown of a test it held: tell the dispatcher how
        it went, then hand out more.

        A held test (its worker deferred the teardown of its class, module and session
        fixtures, :mod:`pytest_depgraph.run.worker`) completes twice: when it ran, and when its
        worker reported that teardown (``depgraph_settled``, passed on by ``xdist_hooks``); its
        dependents wait for the second, as serially they wait for its teardown."""
        dispatcher = self.dispatcher
        assert dispatcher is not None
        satisfied = self.recorder.satisfied(self._nodeid(item_index))
        if dispatcher.unsettled(item_index):
            step = dispatcher.settle(item_index, satisfied)
        else:
            self._seconds[item_index] = duration
            self._last_done = time.perf_counter()
            assert dispatcher.running_on(node) == item_index, (node, item_index)
            held: set[int] = getattr(node, HELD_ATTRIBUTE, set())
            was_held = item_index in held
            held.discard(item_index)
            step = dispatcher.complete(node, item_index, satisfied, duration, held=was_held)
        if self._stopping():  # once per event
            return
        if step.skipped:
            self._report_skips(step.skipped)
        # this worker first: the tests that just became ready are often its own mates
        self._send(first=node)

    def mark_test_pending(self, item: str) -> None:
        """Re-queue a crashed test (pytest-rerunfailures): not possible in a dependency walk.

        Raises NotImplementedError, as xdist's own LoadScope does: the caller then reports the
        crash as the test's failure (a "rerun" report would drop it from the exit code).
        """
        warnings.warn(
            pytest.PytestWarning(
                f"depgraph: {item} crashed its worker and stays failed: a dependency walk "
                "cannot re-run a test after its dependents were decided"
            ),
            stacklevel=1,
        )
        raise NotImplementedError(
            "pytest-depgraph's xdist scheduler cannot re-run a crashed test: its dependents "
            "were already decided"
        )

    def remove_pending_tests_from_node(self, node: Any, indices: list[int]) -> None:
        """Answer to ``steal``, which this scheduler never sends."""
        raise NotImplementedError("pytest-depgraph's xdist scheduler does not steal tests")

    def remove_node(self, node: Any) -> str | None:
        """A worker finished or died; return the node id of the test it died in, if any."""
        del self.workers[node]
        dispatcher = self.dispatcher
        if dispatcher is None:
            return None
        # its pinned groups go on elsewhere, and so do the tests queued behind its last one
        index = dispatcher.remove_worker(node)
        if index is None:
            self._dispatch()
            return None
        nodeid = self._nodeid(index)
        # xdist reports the crash as a failure right after this returns; say so already, so
        # the dependents' skip reason reads "failed"
        self.recorder.mark(nodeid, FAILED)
        if dispatcher.unsettled(index):  # it died in the teardown it had deferred
            step = dispatcher.settle(index, satisfied=False)
        else:
            step = dispatcher.finish(index, satisfied=False)
        if not self._stopping():
            self._report_skips(step.skipped)
            self._send()
        return nodeid

    # -- after the run ---------------------------------------------------------------------

    def walk_stats(self) -> WalkStats | None:
        """Wall time of the walk beside its lower bound, from this run's durations."""
        plan = self.plan
        if plan is None or self.dispatcher is None or self._first_sent is None:
            return None
        from pytest_depgraph.core.timeline import walk_stats

        end = self._last_done if self._last_done is not None else time.perf_counter()
        workers = min(self.limit, self.numnodes, self.useful)
        return walk_stats(plan.graph, self._seconds, end - self._first_sent, workers)

    def weights(self, plan: Plan) -> list[float]:
        """Each test's expected seconds (the previous run's), for the priorities."""
        from pytest_depgraph.core import dispatch

        return dispatch.weights(plan.durations, plan.item_count, len(plan.nodeids))

    # -- internals -------------------------------------------------------------------------

    def _nodeid(self, index: int) -> str:
        assert self.plan is not None
        return self.plan.nodeids[index]

    def _agrees(self, node: Any, worker: _Worker) -> bool:
        """Whether a late (replacement) worker collected what the first ones did."""
        assert self.collection is not None and worker.collection is not None
        message = xdist.collection_diff(
            self.collection, worker.collection, "the first workers", node.gateway.id
        )
        if not message and not _same_plan(worker.plan_text, self._plan_text):
            message = f"depgraph: worker {node.gateway.id} built a different dependency graph"
        if message:
            self.log(message)
            return False
        return True

    def _agreed_plan(self) -> Plan | None:
        """The one plan all workers agree on; None (after reporting why) when they do not."""
        collected = [(n, w) for n, w in self.workers.items() if w.collection is not None]
        first_node, first = collected[0]
        assert first.collection is not None
        problems: list[tuple[Any, str]] = []
        for node, worker in collected[1:]:
            assert worker.collection is not None
            message = xdist.collection_diff(
                first.collection, worker.collection, first_node.gateway.id, node.gateway.id
            )
            if not message and not _same_plan(worker.plan_text, first.plan_text):
                message = (
                    f"depgraph: workers {first_node.gateway.id} and {node.gateway.id} built "
                    "different dependency graphs (the markers must not depend on the process)"
                )
            if message:
                problems.append((node, message))
        plan: Plan | None = None
        if not problems:
            try:
                plan = (
                    Plan.from_json(first.plan_text)
                    if first.plan_text is not None
                    else _edgeless_plan(first.collection)
                )
            except ValueError as error:
                problems.append((first_node, str(error)))
            else:
                if plan.nodeids[: plan.item_count] != first.collection:
                    problems.append(
                        (first_node, "depgraph: the plan does not match the collected tests")
                    )
                plan.locations = _sent_locations([n for n, _ in collected], len(plan.nodeids))
        for node, message in problems:
            self.log(message)
            self.config.hook.pytest_collectreport(
                report=pytest.CollectReport(
                    nodeid=node.gateway.id, outcome="failed", longrepr=message, result=[]
                )
            )
        if problems:
            return None
        self.collection = first.collection
        self._plan_text = first.plan_text
        return plan

    def _nothing_to_walk(self, plan: Plan) -> bool:
        return (
            not self.explicit_limit
            and plan.graph.edge_count == 0
            and not plan.broken
            and plan.item_count == len(plan.nodeids)
        )

    def _hand_over(self) -> None:
        """Hand the run to xdist's own scheduler for this ``--dist`` mode."""
        from pytest_depgraph.run.units import MODES

        self.handed_over = xdist.hand_over(
            self.config,
            self.log,
            MODES[str(self.config.getoption("dist", "load"))].xdist_scheduler,
            [(node, worker.collection) for node, worker in self.workers.items()],
            instead_of=self.front,
        )

    def _abort(self) -> None:
        self.aborted = True
        for node in self.workers:
            node.shutdown()

    def _stop_surplus_workers(self, plan: Plan, dispatcher: Dispatcher) -> None:
        """Shut down the workers that could never get a test: more than the limit, or more
        than the graph lets run at once (a chain keeps one busy).

        xdist starts every worker before any collection, so they cannot be left unstarted;
        they go before the first test is sent.
        """
        from pytest_depgraph.core import dispatch

        never = {*plan.broken, *plan.external, *(s.node for s in dispatcher.initial.skipped)}
        width = dispatch.width(plan.graph, never)
        self.useful = max(1, min(self.limit, width))
        usable = [
            node for node, worker in self.workers.items()
            if worker.usable and worker.collection is not None and not node.shutting_down
        ]
        surplus = usable[self.useful:]
        for node in surplus:
            self.workers[node].usable = False
            node.shutdown()
        terminal = self.config.pluginmanager.get_plugin("terminalreporter")
        if surplus and terminal is not None:
            why = (
                "--depgraph-parallelism" if self.limit < width
                else "the tests and their dependencies"
            )
            terminal.write_line(
                f"depgraph: at most {_tests(self.useful)} can run at once ({why}): "
                f"stopped {len(surplus)} of {len(usable)} workers"
            )

    def _stopping(self) -> bool:
        return xdist.stopping(self.config)

    def _dispatch(self) -> None:
        """Send the tests the dispatcher hands out, unless the run is stopping."""
        if self.dispatcher is not None and not self._stopping():
            self._send()

    def _send(self, first: Any = None) -> None:
        """Send the tests the dispatcher hands out (``first`` worker first)."""
        dispatcher, plan = self.dispatcher, self.plan
        assert dispatcher is not None and plan is not None
        for known in self.workers:
            if known.shutting_down:
                dispatcher.retire(known)
        given = dispatcher.assign(first)
        # idle workers whose held test a dependent waits for: finish its teardown now
        for worker, held, towards in dispatcher.teardowns():
            self.log(f"{self._nodeid(held)}: teardown towards {self._nodeid(towards)}")
            worker_node: Any = worker
            worker_node.sendcommand(TEARDOWN_COMMAND, towards=towards)
        if not given:
            return
        if self._first_sent is None:
            self._first_sent = time.perf_counter()
        relay = self._relay
        # a value reaches the store before the completion of the test that published it, so
        # what the tests given here may read is all there (or nothing is: the usual case)
        values = bool(relay.store)
        for worker, indices in given:
            node: Any = worker
            if values:
                for index in indices:
                    relay.before_test(node, plan, index)  # the values it may read first
            node.send_runtest_some(indices)

    def _warn(self, messages: list[str]) -> None:
        """Show the plan's warnings once, on the controller (workers would repeat them)."""
        for message in messages:
            record_warning(self.config, message)

    def _report_skips(self, skipped: list[Skip]) -> None:
        plan = self.plan
        assert plan is not None
        hook = self.config.hook
        for skip in skipped:
            nodeid = plan.nodeids[skip.node]
            if skip.node >= plan.item_count:
                continue
            self.skips[nodeid] = plan.nodeids[skip.root_cause]
            location = plan.location(skip.node)
            reason = skip_reason(plan, self.recorder, skip.root_cause, skip.node)
            # an absolute path, as pytest's own skips carry: -rs shows it from the current
            # directory, the same as on a serial run
            path = str(self.config.rootpath / location[0])
            longrepr = (path, (location[1] or 0) + 1, f"Skipped: {reason}")
            hook.pytest_runtest_logstart(nodeid=nodeid, location=location)
            for report in (
                pytest.TestReport(nodeid, location, {}, "skipped", longrepr, "setup"),
                pytest.TestReport(nodeid, location, {}, "passed", None, "teardown"),
            ):
                setattr(report, SYNTHETIC, True)
                hook.pytest_runtest_logreport(report=report)
            hook.pytest_runtest_logfinish(nodeid=nodeid, location=location)

    def _report_broken(self, node: int, message: str) -> None:
        """A test that cannot run (``--continue-on-collection-errors``): an error at setup."""
        plan = self.plan
        assert plan is not None
        nodeid, location = plan.nodeids[node], plan.location(node)
        hook = self.config.hook
        hook.pytest_runtest_logstart(nodeid=nodeid, location=location)
        for report in (
            pytest.TestReport(nodeid, location, {}, "failed", message, "setup"),
            pytest.TestReport(nodeid, location, {}, "passed", None, "teardown"),
        ):
            hook.pytest_runtest_logreport(report=report)
        hook.pytest_runtest_logfinish(nodeid=nodeid, location=location)


def _same_plan(text: str | None, other: str | None) -> bool:
    """Whether two workers' plans agree. Equal texts say so without parsing; otherwise they
    may differ only in the previous-run durations (each worker read its own cache)."""
    return text == other or _comparable(text) == _comparable(other)


def _comparable(plan_text: str | None) -> object:
    """A plan without the parts that may differ between workers (previous-run durations)."""
    if plan_text is None:
        return None
    data = json.loads(plan_text)
    if isinstance(data, dict):
        data.pop("durations", None)
    return data


def _sent_locations(
    nodes: Sequence[Any], size: int
) -> list[tuple[str, int | None, str] | None]:
    """The items' locations, from the worker asked for them (none when it sent none: the
    reports then name each test's file from its node id)."""
    for node in nodes:
        sent = getattr(node, LOCATIONS_ATTRIBUTE, None)
        if isinstance(sent, (list, tuple)) and len(sent) <= size:
            return [None if loc is None else (str(loc[0]), loc[1], str(loc[2])) for loc in sent]
    return []


def _edgeless_plan(collection: list[str]) -> Plan:
    """Stand-in when a worker sent no plan (the depgraph plugin did not build one there)."""
    from pytest_depgraph.core.graph import Graph

    modules: dict[str, int] = {}
    return Plan(
        nodeids=list(collection),
        locations=[],
        graph=Graph(len(collection)),
        group=[modules.setdefault(nodeid.split("::")[0], len(modules)) for nodeid in collection],
        item_count=len(collection),
    )


def _tests(count: int) -> str:
    return f"{count} test" if count == 1 else f"{count} tests"


def _padded(group: list[int], size: int) -> list[int]:
    return group + [-1] * (size - len(group)) if len(group) < size else group[:size]
