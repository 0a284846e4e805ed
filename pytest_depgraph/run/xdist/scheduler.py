"""The xdist scheduler: xdist's ``Scheduling`` protocol in front of the plan and the dispatcher.

One more strategy in the shape of ``xdist/scheduler/*.py``, and as thin. The plan is the
controller's (:mod:`pytest_depgraph.run.xdist.controller`: the workers' plans agreed on, the
``--dist`` units, durations and locations bound); every decision -- what is ready, which ready
test goes to which worker, how many workers are of any use, what must be skipped -- is the
:class:`~pytest_depgraph.core.walk.dispatch.Dispatcher`'s. This module only speaks xdist's protocol:

* the workers' collections go to the controller, which agrees on the plan once all collected;
* the dispatcher's choices go to the workers as ``runtests`` commands, several tests each
  (with the values the tests may read, :mod:`pytest_depgraph.run.xdist.value_relay`), and its
  requests to finish a held test's teardown, or to tear a locked scope down, as
  ``depgraph_teardown`` commands; a worker's completion goes back to the dispatcher with the
  test's outcome, and so do the locked scopes it tore down; the tests that will never run are
  reported skipped here, on the controller (:mod:`pytest_depgraph.run.xdist.unsent_reports`);
* a worker that dies fails the test it ran; its pinned groups go on elsewhere;
* a plan with nothing to walk and no ``--depgraph-parallelism`` is handed to xdist's own
  scheduler for the ``--dist`` mode, once (:func:`~pytest_depgraph.hosts.xdist.hand_over`):
  the plugin changes nothing for a suite that declares no dependencies -- nor resources,
  exclusive tests or weights, which xdist's schedulers know nothing of.
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import pytest

from pytest_depgraph.core.plan import Plan
from pytest_depgraph.hosts import xdist
from pytest_depgraph.plurals import tests
from pytest_depgraph.run.outcomes import FAILED, OutcomeRecorder
from pytest_depgraph.run.state import session_state
from pytest_depgraph.run.xdist import units, unsent_reports
from pytest_depgraph.run.xdist.controller import controller
from pytest_depgraph.run.xdist.controller_warnings import record_warning
from pytest_depgraph.run.xdist.worker import TEARDOWN_COMMAND, TORN_INDEX

if TYPE_CHECKING:
    from pytest_depgraph.core.timeline import WalkStats
    from pytest_depgraph.core.walk.dispatch import Dispatcher, Skip

# The dispatch policy and the timeline are imported where the walk begins (``schedule``): a
# plan without edges is handed to xdist without them.


class _Worker:
    """What the scheduler knows about one worker. (A plain class: every xdist controller
    imports this module, and a dataclass is written and compiled at import, 0.26 ms.)"""

    __slots__ = ("collection", "held", "torn", "usable")

    def __init__(self) -> None:
        self.collection: list[str] | None = None
        #: False when it collected something else than the others: it gets no test
        self.usable = True
        #: the tests it ran with their teardown deferred whose completion was not taken yet
        #: (execnet's receiver thread adds them, :meth:`DepGraphScheduling.note_held`)
        self.held: set[int] = set()
        #: the locked scopes it tore down, not taken yet: (the test whose teardown it was,
        #: the scopes' node ids) (execnet's receiver thread adds them,
        #: :meth:`~DepGraphScheduling.note_torn`)
        self.torn: list[tuple[int, list[str]]] = []


class DepGraphScheduling:
    """xdist's ``Scheduling`` protocol over the controller's plan and a :class:`Dispatcher`."""

    def __init__(self, config: pytest.Config, log: Any = None) -> None:
        self.config = config
        self.log = xdist.scheduler_log(log)
        self.numnodes = xdist.worker_count(config)
        state = self._state = session_state(config)
        self.controller = controller(config)
        parallelism = state.settings.parallelism
        self.explicit_limit = parallelism is not None
        self.limit = parallelism if parallelism is not None else self.numnodes
        self.recorder = state.recorder
        self.skips = state.skips
        self.relay = state.relay
        self.workers: dict[Any, _Worker] = {}
        self.dispatcher: Dispatcher | None = None
        #: xdist's scheduler for the ``--dist`` mode, when the plan has nothing to walk
        self.handed_over: Any = None
        #: nothing will be sent: the collections or plans differ, or the plan has errors
        self.aborted = False
        self._completed = False
        #: workers that sent their collection, also those gone since (a worker whose
        #: collection failed, say on a missing file argument, ends right after sending it)
        self._collections = 0
        self._seconds: dict[int, float] = {}
        self._first_sent: float | None = None
        self._last_done: float | None = None
        state.scheduler = self

    @property
    def plan(self) -> Plan | None:
        """The session's plan, once the workers agreed on it (the controller writes it)."""
        return self._state.plan

    # -- the xdist Scheduling protocol -------------------------------------------------------

    @property
    def nodes(self) -> list[Any]:
        """Every worker the scheduler knows."""
        return list(self.workers)

    @property
    def collection_is_completed(self) -> bool:
        """All initially expected workers collected (stays True once reached)."""
        if not self._completed:
            self._completed = self._collections >= self.numnodes
        return self._completed

    @property
    def tests_finished(self) -> bool:
        """Nothing in flight and nothing left to send."""
        dispatcher = self.dispatcher
        if dispatcher is not None and not self.aborted:
            # the walk runs (so the collection completed): xdist asks after every event, six
            # a test, so this comes first (callgrind of bench/controller_drive.py, the random
            # 2,000-test DAG: 884.4 -> 874.4 M instructions a walk, spread 0.6 M)
            return dispatcher.finished
        # no walk runs: not yet (the workers still collect, or their plans are awaited), or it
        # was aborted, which ends the run once every worker collected
        return self.collection_is_completed and self.aborted

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
        self._collections += 1
        if not self.controller.agreed:
            return
        if not self.controller.agrees(node, collection, self.log):
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
        collected = [(n, w.collection) for n, w in self.workers.items() if w.collection is not None]
        if not any(collection for _, collection in collected):
            # no test to run: the workers collected none (those whose collection failed, on
            # a missing file argument say, have ended already), and the session ends as
            # pytest's does, with nothing to agree on or hand over
            self._abort()
            return
        plan = self.controller.agree(collected, self.log)
        if plan is None:
            self._abort()
            return
        dist = str(self.config.getoption("dist", "load"))
        # xdist's own loadgroup finds its groups by a suffix it writes into the tests' ids on
        # the workers, which pytest 9.2 no longer keeps (pytest-xdist issue 1386: the groups
        # silently spread over the workers); the plan knows them from the marks
        keeps_groups = dist == "loadgroup" and bool(plan.xdist_groups)
        if not (self.explicit_limit or plan.needs_parallel_walk or self._longest_first()
                or keeps_groups):
            self.handed_over = xdist.hand_over(
                self.config,
                self.log,
                units.MODES[dist].xdist_scheduler,
                [(node, worker.collection) for node, worker in self.workers.items()],
                instead_of=self,
            )
            return
        if units.has_units(dist) or plan.resources.blocks:
            bound = self.controller.bind_units(dist)
            if bound is None:
                self._abort()
                return
            plan = bound
        dispatcher = self.dispatcher = _dispatcher(plan, self.controller.durations, self.limit,
                                                   self.recorder)
        for message in plan.warnings:  # shown once, here: every worker would repeat them
            record_warning(self.config, message)
        unsent_reports.report_broken(self.config, plan, self.controller.location)
        self._report_skips(dispatcher.initial.skipped)
        for node, worker in self.workers.items():
            if worker.usable and worker.collection is not None and not node.shutting_down:
                dispatcher.add_worker(node)
        self._stop_surplus_workers(dispatcher)
        self._dispatch()

    def _longest_first(self) -> bool:
        """Whether a suite with nothing to wait for is still walked: its durations are known
        (the longest tests start first, so no worker is left alone with one at the end) and
        the user chose no ``--dist`` mode of their own."""
        return bool(self.controller.durations) and not units.dist_chosen(self.config)

    def mark_test_complete(self, node: Any, item_index: int, duration: float = 0) -> None:
        """A worker finished a test, or the teardown of a test it held: tell the dispatcher how
        it went, then hand out more.

        A held test (its worker deferred the teardown of its class, module and session
        fixtures, :mod:`pytest_depgraph.run.xdist.worker`) completes twice: when it ran, and when
        its worker reported that teardown (``depgraph_settled``, passed on by
        ``run/xdist/hooks.py``); its dependents wait for the second, as serially they wait for its
        teardown."""
        dispatcher, plan = self.dispatcher, self.plan
        assert dispatcher is not None and plan is not None
        if item_index == TORN_INDEX:
            self._take_torn(node, dispatcher)
            return
        satisfied = self.recorder.satisfied(plan.nodeids[item_index])
        # the walk lasts until its last report, a deferred teardown's included
        self._last_done = time.perf_counter()
        if dispatcher.unsettled(item_index):
            step = dispatcher.settle(item_index, satisfied)
        else:
            self._seconds[item_index] = duration
            assert dispatcher.running_on(node) == item_index, (node, item_index)
            held = self.workers[node].held
            was_held = item_index in held
            held.discard(item_index)
            step = dispatcher.complete(node, item_index, satisfied, duration, held=was_held)
        if xdist.stopping(self.config):  # once per event
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
        dispatcher, plan = self.dispatcher, self.plan
        if dispatcher is None or plan is None:
            return None
        # its pinned groups go on elsewhere, and so do the tests queued behind its last one
        index = dispatcher.remove_worker(node)
        if index is None:
            self._dispatch()
            return None
        nodeid = plan.nodeids[index]
        # xdist reports the crash as a failure right after this returns; say so already, so
        # the dependents' skip reason reads "failed"
        self.recorder.mark(nodeid, FAILED)
        if dispatcher.unsettled(index):  # it died in the teardown it had deferred
            step = dispatcher.settle(index, satisfied=False)
        else:
            step = dispatcher.finish(index, satisfied=False)
        if not xdist.stopping(self.config):
            self._report_skips(step.skipped)
            self._send()
        return nodeid

    # -- from the other hooks ----------------------------------------------------------------

    @property
    def walking(self) -> bool:
        """Whether the walk runs the tests (not aborted, not handed over to xdist)."""
        return self.dispatcher is not None and not self.aborted

    def note_held(self, node: Any, index: int) -> None:
        """``node``'s worker ran test ``index`` with its teardown deferred (execnet's receiver
        thread, just before the test's completion on the same channel)."""
        worker = self.workers.get(node)
        if worker is not None:
            worker.held.add(index)

    def note_torn(self, node: Any, index: int, scopes: list[str]) -> bool:
        """``node``'s worker tore down the locked ``scopes`` in the teardown of test ``index``
        (execnet's receiver thread, before that test's completion or settling on the same
        channel). True when the scheduler takes it (as a completion of :data:`TORN_INDEX`)."""
        worker = self.workers.get(node)
        if worker is None or not self.walking:
            return False
        worker.torn.append((index, scopes))
        return True

    def _take_torn(self, node: Any, dispatcher: Dispatcher) -> None:
        """The locked scopes ``node``'s worker tore down give back what their blocks kept."""
        worker = self.workers.get(node)
        if worker is None:
            return
        while worker.torn:
            index, scopes = worker.torn.pop(0)
            dispatcher.torn(node, scopes, index)
        if not xdist.stopping(self.config):
            self._send(first=node)

    def walk_stats(self) -> WalkStats | None:
        """Wall time of the walk beside its lower bound, from this run's durations."""
        plan, dispatcher = self.plan, self.dispatcher
        if plan is None or dispatcher is None or self._first_sent is None:
            return None
        from pytest_depgraph.core.timeline import walk_stats

        end = self._last_done if self._last_done is not None else time.perf_counter()
        workers = min(self.numnodes, dispatcher.at_once())
        stats = walk_stats(plan.graph, self._seconds, end - self._first_sent, workers)
        return dataclasses.replace(
            stats, weighed_by=self.controller.durations_from, resources=dispatcher.record()
        )

    # -- internals -------------------------------------------------------------------------

    def _abort(self) -> None:
        self.aborted = True
        for node in self.workers:
            node.shutdown()

    def _stop_surplus_workers(self, dispatcher: Dispatcher) -> None:
        """Shut down the workers the dispatcher finds of no use (xdist starts every worker
        before any collection, so they cannot be left unstarted; they go before the first
        test is sent), and say so."""
        surplus: list[Any] = dispatcher.surplus()
        for node in surplus:
            self.workers[node].usable = False
            node.shutdown()
        terminal = self.config.pluginmanager.get_plugin("terminalreporter")
        if surplus and terminal is not None:
            at_once = dispatcher.at_once()
            why = (
                "--depgraph-parallelism" if self.limit < dispatcher.width()
                else "the tests and their dependencies"
            )
            terminal.write_line(
                f"depgraph: at most {tests(at_once)} can run at once ({why}): "
                f"stopped {len(surplus)} of {at_once + len(surplus)} workers"
            )

    def _dispatch(self) -> None:
        """Send the tests the dispatcher hands out, unless the run is stopping."""
        if self.dispatcher is not None and not xdist.stopping(self.config):
            self._send()

    def _send(self, first: Any = None) -> None:
        """Send the tests the dispatcher hands out (``first`` worker first)."""
        dispatcher, plan = self.dispatcher, self.plan
        assert dispatcher is not None and plan is not None
        if dispatcher.nothing_to_decide(first):
            # no test to hand out, no teardown to ask for, no worker to end (most completions
            # of short tests); a worker that shuts down is retired at the next event that
            # decides something (callgrind of bench/controller_drive.py, the random 2,000-test
            # DAG: 897.1 -> 884.4 M instructions a walk, spread 0.6 M)
            return
        for known in self.workers:
            if known.shutting_down:
                dispatcher.retire(known)
        given = dispatcher.assign(first)
        asked = False
        # idle workers whose held test a dependent waits for: finish its teardown now
        for worker, held, towards in dispatcher.teardowns():
            asked = True
            self.log(f"{plan.nodeids[held]}: teardown towards {plan.nodeids[towards]}")
            worker_node: Any = worker
            self._to_worker(worker_node, worker_node.sendcommand, TEARDOWN_COMMAND,
                            towards=towards)
        # idle workers that keep a lock for a scope another test waits for: tear it down now
        for worker, towards, scopes in dispatcher.scope_teardowns():
            asked = True
            self.log(f"teardown of {', '.join(scopes)} towards {plan.nodeids[towards]}")
            worker_node = worker
            self._to_worker(worker_node, worker_node.sendcommand, TEARDOWN_COMMAND,
                            towards=towards, beyond=list(scopes))
        if not given and not asked:
            # a lock that only a worker's end gives back (its session's fixture keeps it)
            for worker in dispatcher.ends(name=_gateway_id):
                self.log(f"{worker}: shut down, its session keeps a lock another test waits for")
                worker_node = worker
                worker_node.shutdown()
        if not given:
            return
        if self._first_sent is None:
            self._first_sent = time.perf_counter()
        # a value reaches the store before the completion of the test that published it, so
        # what the tests given here may read is all there (or nothing is: the usual case)
        values = bool(self.relay.store)
        for worker, indices in given:
            self._to_worker(worker, self._give, worker, plan, indices, values)

    def _give(self, node: Any, plan: Plan, indices: list[int], values: bool) -> None:
        """Send ``node`` the tests ``indices`` (and first the values they may read, when any
        test published one: ``values``)."""
        if values:
            for index in indices:
                self.relay.before_test(node, plan, index)
        node.send_runtest_some(indices)

    def _to_worker(
        self, node: Any, send: Callable[..., None], *args: Any, **kwargs: Any
    ) -> None:
        """``send(*args, **kwargs)``: a command to ``node``'s worker. A worker that died a
        moment ago (a test ended its process while the controller handled the completion of
        the one before) has a closed channel that xdist has not reported yet: what it was
        given stays with it, and goes to the others with the rest of its queue when xdist
        reports it down (:meth:`remove_node`), which fails the test it died in."""
        try:
            send(*args, **kwargs)
        except OSError as error:  # execnet's "cannot send (already closed?)"
            self.log(f"{node}: not sent, its worker is gone: {error}")

    def _report_skips(self, skipped: list[Skip]) -> None:
        plan = self.plan
        assert plan is not None
        unsent_reports.report_skips(
            self.config, plan, self.controller.location, self.recorder, self.skips, skipped
        )


def _dispatcher(
    plan: Plan, durations: dict[int, float], limit: int, recorder: OutcomeRecorder
) -> Dispatcher:
    """The dispatcher of a walk of ``plan``: the critical path first, each test weighted by its
    previous run's seconds, at most ``limit`` tests running, each worker holding a few, the
    tests' resources granted by the books (on this process's clock, the run report's); a
    cleanup runs if one of its targets ran (as ``recorder`` says)."""
    from pytest_depgraph.core.walk import dispatch, inputs

    nodeids = plan.nodeids
    return dispatch.Dispatcher(inputs.from_plan(
        plan, durations, limit, dispatch.MAX_HOLD, clock=time.time,
        ran=lambda node: recorder.ran(nodeids[node]),
    ))


def _gateway_id(worker: Any) -> str:
    """An xdist worker's name (``gw1``), as the summary says it."""
    return str(worker.gateway.id)
