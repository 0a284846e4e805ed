"""The xdist scheduler: hand each idle worker one ready test at a time, as the walker decides.

One more strategy in the shape of ``xdist/scheduler/*.py``: :class:`DepGraphScheduling`
implements xdist's ``Scheduling`` protocol and delegates every decision -- what is ready, which
ready test goes first, what must be skipped -- to :class:`~pytest_depgraph.core.walker.Walker`.

* Workers send their plan (the reduced graph over their ``session.items``) before their
  collection; all plans must agree, or nothing runs.
* A test is sent to a worker only once all its dependencies finished; at most N are in flight
  (``--depgraph-parallelism``, default: the number of workers). Each worker holds at most one
  test, which the patched worker runs at once (:mod:`pytest_depgraph.run.worker`).
* Among ready tests the one with the longest remaining path to the end of the graph goes first,
  each test weighted by its duration in the previous run (pytest's cache) -- the mean of the
  known durations, or 1, for the unknown ones; ties in collection order. An idle worker prefers
  a test of the module it ran last when that costs no priority (fixture affinity).
* Pinned groups (:mod:`pytest_depgraph.collect.pinning`) stay on the worker that took their
  first test; that worker takes its group's next test before anything else. A worker that dies
  releases its groups to the others.
* Dependents of an unsatisfied test are reported skipped here, on the controller, and never sent.
* With ``--dist loadfile``, ``loadscope`` or ``loadgroup`` each of xdist's work units runs whole
  on one worker, in order, once all it depends on outside it finished
  (:mod:`pytest_depgraph.core.units`: units are pinned groups).
* A plan without edges, broken or unselected tests, with no ``--depgraph-parallelism``, is
  handed to xdist's own scheduler for the ``--dist`` mode unchanged: the plugin changes nothing
  for a suite that declares no dependencies.
"""

from __future__ import annotations

import json
import time
import warnings
from dataclasses import dataclass
from typing import Any

import pytest
from xdist.remote import Producer  # type: ignore[import-untyped]
from xdist.report import report_collection_diff  # type: ignore[import-untyped]
from xdist.scheduler import LoadScheduling  # type: ignore[import-untyped]
from xdist.workermanage import parse_tx_spec_config  # type: ignore[import-untyped]

from pytest_depgraph.core import units
from pytest_depgraph.core.graph import chain_cover, critical_path
from pytest_depgraph.core.plan import Plan
from pytest_depgraph.core.timeline import WalkStats
from pytest_depgraph.core.walker import Skip, Walker
from pytest_depgraph.run.controller_warnings import record_warning
from pytest_depgraph.run.durations import load_durations
from pytest_depgraph.run.outcomes import FAILED, SYNTHETIC, OutcomeRecorder, skip_reason
from pytest_depgraph.run.state import PLAN_ATTRIBUTE, session_state


@dataclass
class _Worker:
    """What the scheduler knows about one worker."""

    collection: list[str] | None = None
    plan_text: str | None = None
    #: the test it runs now (at most one)
    running: int | None = None
    #: module group of the last test it ran (fixture affinity)
    last_group: int | None = None
    #: False when it collected something else than the others: it gets no test
    usable: bool = True


class DepGraphScheduling:
    """Walk the plan's graph across xdist workers, one test per worker, at most N in flight."""

    def __init__(self, config: pytest.Config, log: Producer | None = None) -> None:
        self.config = config
        self.log = Producer("depgraphsched") if log is None else log.depgraphsched
        self.numnodes = len(parse_tx_spec_config(config))
        self.session = session_state(config)
        parallelism = self.session.settings.parallelism
        self.explicit_limit = parallelism is not None
        self.limit = parallelism if parallelism is not None else self.numnodes
        self.recorder: OutcomeRecorder = self.session.recorder
        self.skips: dict[str, str] = self.session.skips
        self.workers: dict[Any, _Worker] = {}
        self.collection: list[str] | None = None
        self.plan: Plan | None = None
        self.walker: Walker | None = None
        #: xdist's load scheduler, when the plan has nothing for us to do
        self.delegate: Any = None
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
        if self.delegate is not None:
            return bool(self.delegate.tests_finished)
        if not self.collection_is_completed:
            return False
        if self.aborted:
            return True
        if self.walker is None:
            return False
        if any(w.running is not None for w in self.workers.values()):
            return False
        if self.walker.done:
            return True
        # ready tests and no idle usable worker yet (a replacement is starting): wait
        return self.walker.ready_count == 0

    @property
    def has_pending(self) -> bool:
        """Whether tests are still to run (only used for xdist's status line)."""
        if self.delegate is not None:
            return bool(self.delegate.has_pending)
        return self.walker is not None and not self.walker.done

    def add_node(self, node: Any) -> None:
        """A worker started (before it collects)."""
        assert node not in self.workers
        self.workers[node] = _Worker()
        if self.delegate is not None:
            self.delegate.add_node(node)

    def add_node_collection(self, node: Any, collection: list[str]) -> None:
        """A worker collected; its plan arrived just before (same channel, earlier event)."""
        worker = self.workers[node]
        worker.collection = list(collection)
        worker.plan_text = getattr(node, PLAN_ATTRIBUTE, None)
        if self.delegate is not None:
            self.delegate.add_node_collection(node, collection)
            return
        if self.collection is not None and not self._agrees(node, worker):
            worker.usable = False
            node.shutdown()

    def schedule(self) -> None:
        """Start the walk (first call) or put a new worker to work (later calls)."""
        assert self.collection_is_completed
        if self.delegate is not None:
            self.delegate.schedule()
            return
        if self.walker is not None or self.aborted:
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
            self._delegate()
            return
        dist = str(self.config.getoption("dist", "load"))
        if dist in units.MODES:
            unit_errors = units.bind_units(plan, dist)
            if unit_errors:
                for path, message in unit_errors:
                    self.config.hook.pytest_collectreport(
                        report=pytest.CollectReport(path, "failed", longrepr=message, result=[])
                    )
                self.plan_errors = len(unit_errors)
                self._abort()
                return
        self.walker = Walker(
            plan.graph,
            priority=self._priorities(plan),
            group=_padded(plan.group, len(plan.nodeids)),
            limit=self.limit,
            unsatisfied=[*plan.broken, *plan.external],
            pinned=plan.pinned,
        )
        self._warn(plan.warnings)
        for node in sorted(plan.broken):
            self._report_broken(node, plan.broken[node])
        self._report_skips(self.walker.initial.skipped)
        self._stop_surplus_workers(plan, self.walker)
        self._dispatch()

    def mark_test_complete(self, node: Any, item_index: int, duration: float = 0) -> None:
        """A worker finished a test: tell the walker how it went, then hand out more."""
        self._seconds[item_index] = duration
        self._last_done = time.perf_counter()
        if self.delegate is not None:
            self.delegate.mark_test_complete(node, item_index, duration)
            return
        worker = self.workers[node]
        assert worker.running == item_index, (node, worker.running, item_index)
        worker.running = None
        ready = self._finish(item_index, self.recorder.satisfied(self._nodeid(item_index)))
        # A worker continues the chain it runs: a test its last test just made ready, in the
        # same class or module, goes to it before any other test. Otherwise a longer chain
        # elsewhere would take it away and pytest would set the class and module fixtures up
        # again when it comes back.
        self._continue_chain(node, worker, ready)
        # then this worker first: the tests that just became ready are often its own mates
        self._dispatch(first=node)

    def mark_test_pending(self, item: str) -> None:
        """Re-queue a crashed test (pytest-rerunfailures): not possible in a dependency walk.

        Raises NotImplementedError, as xdist's own LoadScope does: the caller then reports the
        crash as the test's failure (a "rerun" report would drop it from the exit code).
        """
        if self.delegate is not None:
            self.delegate.mark_test_pending(item)
            return
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
        if self.delegate is not None:
            self.delegate.remove_pending_tests_from_node(node, indices)
            return
        raise NotImplementedError("pytest-depgraph's xdist scheduler does not steal tests")

    def remove_node(self, node: Any) -> str | None:
        """A worker finished or died; return the node id of the test it died in, if any."""
        worker = self.workers.pop(node)
        if self.delegate is not None:
            crashed: str | None = self.delegate.remove_node(node)
            return crashed
        if self.walker is not None:  # its pinned groups go on elsewhere
            self.walker.release(node)
        if worker.running is None:
            if self.walker is not None:
                self._dispatch()
            return None
        index = worker.running
        nodeid = self._nodeid(index)
        # xdist reports the crash as a failure right after this returns; say so already, so
        # the dependents' skip reason reads "failed"
        self.recorder.mark(nodeid, FAILED)
        self._finish(index, satisfied=False)
        self._dispatch()
        return nodeid

    # -- after the run ---------------------------------------------------------------------

    def walk_stats(self) -> WalkStats | None:
        """Wall time of the walk beside its lower bound, from this run's durations."""
        plan = self.plan
        if plan is None or self._first_sent is None:
            return None
        end = self._last_done if self._last_done is not None else time.perf_counter()
        weights = [self._seconds.get(n, 0.0) for n in range(len(plan.nodeids))]
        remaining = critical_path(plan.graph, weights)
        workers = max(1, min(self.limit, self.numnodes, self.useful))
        return WalkStats(
            wall=end - self._first_sent,
            critical_path=max(remaining, default=0.0),
            total=sum(weights),
            parallelism=workers,
        )

    # -- internals -------------------------------------------------------------------------

    def _nodeid(self, index: int) -> str:
        assert self.plan is not None
        return self.plan.nodeids[index]

    def _agrees(self, node: Any, worker: _Worker) -> bool:
        """Whether a late (replacement) worker collected what the first ones did."""
        assert self.collection is not None and worker.collection is not None
        message = report_collection_diff(
            self.collection, worker.collection, "the first workers", node.gateway.id
        )
        if not message and _comparable(worker.plan_text) != _comparable(self._plan_text):
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
            message = report_collection_diff(
                first.collection, worker.collection, first_node.gateway.id, node.gateway.id
            )
            if not message and _comparable(worker.plan_text) != _comparable(first.plan_text):
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

    def _delegate(self) -> None:
        """Hand the run to xdist's own scheduler for this ``--dist`` mode."""
        from xdist.scheduler import (
            LoadFileScheduling,
            LoadGroupScheduling,
            LoadScopeScheduling,
            WorkStealingScheduling,
        )

        mode = {
            "loadfile": LoadFileScheduling,
            "loadscope": LoadScopeScheduling,
            "loadgroup": LoadGroupScheduling,
            "worksteal": WorkStealingScheduling,
        }.get(str(self.config.getoption("dist", "load")), LoadScheduling)
        delegate = mode(self.config, self.log)
        for node, worker in self.workers.items():
            delegate.add_node(node)
            if worker.collection is not None:
                delegate.add_node_collection(node, worker.collection)
        self.delegate = delegate
        self._first_sent = time.perf_counter()
        delegate.schedule()

    def _abort(self) -> None:
        self.aborted = True
        for node in self.workers:
            node.shutdown()

    def _stop_surplus_workers(self, plan: Plan, walker: Walker) -> None:
        """Shut down the workers that could never get a test: more than the limit, or more
        than the graph lets run at once (a chain keeps one busy).

        xdist starts every worker before any collection, so they cannot be left unstarted;
        they go before the first test is sent.
        """
        never = {*plan.broken, *plan.external, *(skip.node for skip in walker.initial.skipped)}
        width = chain_cover(plan.graph, range(len(plan.nodeids)), never)
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

    def _priorities(self, plan: Plan) -> list[float]:
        known = plan.durations
        default = sum(known.values()) / len(known) if known else 1.0
        weights = [known.get(n, default) for n in range(plan.item_count)]
        weights += [0.0] * (len(plan.nodeids) - plan.item_count)
        return critical_path(plan.graph, weights)

    def _stopping(self) -> bool:
        dsession = self.config.pluginmanager.get_plugin("dsession")
        return bool(getattr(dsession, "shouldstop", False)) or bool(
            getattr(dsession, "shuttingdown", False)
        )

    def _dispatch(self, first: Any = None) -> None:
        """Give every idle worker (``first`` first) the best ready test for it, up to the bound."""
        walker, plan = self.walker, self.plan
        if walker is None or plan is None or self._stopping():
            return
        order = list(self.workers.items())
        if first in self.workers:
            order.sort(key=lambda pair: pair[0] is not first)
        for node, worker in order:
            if worker.running is not None or not worker.usable or worker.collection is None:
                continue
            if node.shutting_down:
                continue
            index = walker.next(prefer_group=worker.last_group, worker=node)
            if index is None:
                if self.limit is not None and walker.in_flight >= self.limit:
                    return
                continue  # what is ready is pinned to other workers
            self._send(node, worker, index)

    def _send(self, node: Any, worker: _Worker, index: int) -> None:
        assert self.plan is not None
        worker.running = index
        worker.last_group = self.plan.group[index] if index < len(self.plan.group) else None
        if self._first_sent is None:
            self._first_sent = time.perf_counter()
        self.session.relay.before_test(node, self.plan, index)  # the values it may read first
        node.send_runtest_some([index])

    def _finish(self, index: int, satisfied: bool) -> list[int]:
        """Tell the walker; report the skips; return the tests that became ready."""
        assert self.walker is not None
        step = self.walker.finish(index, satisfied)
        if not self._stopping():
            self._report_skips(step.skipped)
        return step.ready

    def _continue_chain(self, node: Any, worker: _Worker, ready: list[int]) -> None:
        walker, plan = self.walker, self.plan
        if walker is None or plan is None or self._stopping() or not worker.usable:
            return
        if node.shutting_down or worker.last_group is None:
            return
        if walker.bound_groups(node):
            return  # its pinned group (or --dist unit) comes first: walker.next sees to it
        for index in ready:  # best first
            if plan.group[index] == worker.last_group and walker.may_start(index, node):
                if self.limit is not None and walker.in_flight >= self.limit:
                    return
                walker.start(index, node)
                self._send(node, worker, index)
                return

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


def _comparable(plan_text: str | None) -> object:
    """A plan without the parts that may differ between workers (previous-run durations)."""
    if plan_text is None:
        return None
    data = json.loads(plan_text)
    if isinstance(data, dict):
        data.pop("durations", None)
    return data


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
