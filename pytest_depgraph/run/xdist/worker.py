"""The xdist worker side: run each test the moment it arrives, and send the plan to the controller.

Why xdist's worker holds its last test
--------------------------------------
pytest tears a test down *towards the next one*: ``runtestprotocol(item, nextitem)`` ends with
``SetupState.teardown_exact(nextitem)``, which keeps the module, class and session fixtures
that ``nextitem`` shares with ``item`` and tears down the rest (everything when ``nextitem`` is
None). So xdist's ``WorkerInteractor.run_one_test`` first blocks on its queue until it knows the
*next* test index (or a shutdown) and only then runs the current test. xdist's own schedulers
live with that by always keeping two tests queued per worker. The depgraph scheduler sends a
test only once its dependencies have finished, so for a chain ``a -> b -> c`` a worker is given
``a`` alone: a stock worker would wait for a second test that is only sent after ``a`` ran --
a deadlock.

What we do
----------
On workers driven by the depgraph scheduler, the interactor's ``run_one_test`` is replaced
(an instance attribute; version-checked: every touch of xdist's worker goes through
:class:`~pytest_depgraph.hosts.xdist.WorkerLoop`, and of pytest's setup stack through
:mod:`pytest_depgraph.hosts.pytest`). The replacement *peeks* at the
queue without blocking:

* the next index is already queued: exactly xdist's behaviour (``nextitem`` = that test);
* a shutdown is queued: ``nextitem=None``, as in xdist;
* nothing is queued: the test runs at once with ``nextitem=item.parent``. ``teardown_exact``
  then tears down only what is below the test's parent -- the test's own function-scope
  fixtures, exactly what pytest tears down between two tests of one class or module -- and
  the worker reports the test complete, then blocks for the next index.

How teardown stays correct
--------------------------
The worker remembers the *held* test. When the next index arrives it first finishes the held
test's teardown towards the new test (``teardown_exact(next)``): module, class and session
fixtures the new test shares are kept, the others are finalised -- the same sequence as a
serial run of the two tests, so consecutive tests of one module on one worker set module
fixtures up once. A shutdown finishes it with ``teardown_exact(None)``, as pytest does at the end
of a session. An error there is reported as a ``teardown`` error report of the held test (while
the interactor's ``item_index`` still names it, which xdist asserts), so a failing module
fixture finaliser is attributed to the last test that used it, as in pytest.

That deferred teardown runs inside a call of the ``pytest_runtest_protocol`` hook for the held
test, which our own first implementation answers with the teardown alone: every plugin that
wraps a test's protocol -- pytest-timeout's timer, pytest's ``faulthandler_timeout``, its
warning capture -- covers it as it covers any teardown, and the capture manager captures its
output. A teardown that hangs is timed out and reported, not left to run past the test's timer.

Serially a test's dependents start after its teardown; so do they here. The worker tells the
controller that a test is held (``depgraph_held``, before xdist's ``runtest_protocol_complete``)
and when its deferred teardown was reported (``depgraph_settled``); the controller starts the
test's dependents only then. A worker that gets nothing else to run is told to finish the held
test's teardown towards the dependent that waits for it (``depgraph_teardown``); the scopes both
share stay set up, and anything left is torn down towards the worker's next test later. A test
that leaves nothing of a wider scope to tear down (no class, module or session fixture, no
setup error kept) is not held: its deferred teardown would run nothing, and its dependents
would wait for a round trip to the worker for no reason.

A lock held as one block by the tests of a class, a module or a fixture's users is given back
once that scope's fixtures are torn down on the worker, not when its last test reports
(:mod:`pytest_depgraph.core.walk.resource_books`): the worker says which of the plan's locked scopes
each teardown tore down (``depgraph_torn``, before the test's completion or settling), and a
request to finish a held test's teardown may name scopes to tear down beyond the test it goes
towards (``beyond``: the controller asks so when another test waits for the lock and the
worker has nothing else to run). A test that leaves nothing to tear down reports the locked
scopes still on the setup stack torn down: they hold nothing.

pytest drops a test's ``funcargs`` and ``_request`` at the end of its run protocol, but plugins
read them when they make a report (pytest-benchmark does). So the held test gets them back
until its deferred teardown is reported, and loses them after, as in a serial run. Anything
that goes wrong on that deferred path, a plugin's ``pytest_runtest_makereport`` included,
becomes an error report of the held test: an exception there would otherwise end the worker
with an INTERNALERROR and take the teardown error with it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Union, cast

import pytest

from pytest_depgraph.core.plan import PROTOCOL_VERSION, Plan
from pytest_depgraph.hosts import pytest as host
from pytest_depgraph.hosts.xdist import WorkerLoop, send_event, worker_loop
from pytest_depgraph.run.state import SessionState, session_state
from pytest_depgraph.run.xdist.locations import at_start

#: a test or a collector: what a teardown goes towards
Node = Union[pytest.Item, pytest.Collector]

#: custom channel event carrying the worker's plan as one JSON string (or None)
PLAN_EVENT = "depgraph_plan"
#: worker -> controller, just before xdist's ``runtest_protocol_complete``: the test ran with
#: its teardown of class, module and session fixtures deferred (``item_index``)
HELD_EVENT = "depgraph_held"
#: worker -> controller: the deferred teardown of the held test ``item_index`` was reported
SETTLED_EVENT = "depgraph_settled"
#: worker -> controller: the teardown of test ``item_index`` (its own, or one it deferred) tore
#: down the locked ``scopes`` (node ids of the plan's blocks' scopes)
TORN_EVENT = "depgraph_torn"
#: the index of the completion that stands for a ``depgraph_torn`` event on the controller
#: (xdist's session passes its scheduler a worker's events as completions only)
TORN_INDEX = -1
#: controller -> worker: finish the held test's teardown towards the test ``towards``, and
#: beyond the scopes ``beyond`` (node ids; optional)
TEARDOWN_COMMAND = "depgraph_teardown"


def send_plan(
    config: pytest.Config,
    plan: Plan | None,
    items: Sequence[pytest.Item],
    places: bool = True,
    locations: tuple[int, int] | None = None,
) -> None:
    """Send this worker's plan to the controller (before xdist's ``collectionfinish``);
    without ``places`` when the controller does not show where edges were declared; with its
    share of the ``locations`` of its ``items`` a walk may need at its start beside it (not in
    it) when the controller asked this worker for one
    (:func:`~pytest_depgraph.run.xdist.locations.at_start`)."""
    send_event(
        config,
        PLAN_EVENT,
        plan=None if plan is None else plan.to_json(places=places),
        locations=(
            None if locations is None or plan is None
            else at_start(plan, items, *locations)
        ),
        protocol=PROTOCOL_VERSION,
    )


def install(config: pytest.Config) -> None:
    """Run each test with :class:`OneAtATime` (before the run loop), and take the controller's
    requests to finish a held test's teardown.

    Raises RuntimeError naming what is missing when xdist's worker is not the one this relies
    on (:func:`~pytest_depgraph.hosts.xdist.worker_loop`).
    """
    loop = worker_loop(config)
    one_at_a_time = OneAtATime(loop, session_state(config))
    loop.run_tests_with(one_at_a_time.run_one_test)
    # execnet's receiver thread: the request joins the queue the main thread waits on
    loop.on_command(
        TEARDOWN_COMMAND,
        lambda kwargs: loop.put(_Teardown(kwargs["towards"], tuple(kwargs.get("beyond", ())))),
    )
    config.pluginmanager.register(one_at_a_time, "depgraph-one-at-a-time")


def _beyond(nextitem: pytest.Item | None, scopes: tuple[str, ...]) -> Node | None:
    """Where a teardown towards ``nextitem`` goes to tear down ``scopes`` as well: the parent
    of the outermost of them that ``nextitem`` is in (the session's is never asked for)."""
    if nextitem is None or not scopes:
        return nextitem
    for node in nextitem.listchain():
        if node.nodeid in scopes and node.parent is not None:
            return node.parent
    return nextitem


def _keeps_all(session: pytest.Session, towards: Node | None) -> bool:
    """Whether a teardown towards ``towards`` keeps every node set up: they are the start of
    its chain (``teardown_exact`` then pops nothing). False when nothing reads as set up."""
    stack = host.set_up(session)
    return bool(stack) and towards is not None and towards.listchain()[: len(stack)] == stack


class _Teardown:
    """A controller's request, queued among the test indices: finish the held test's teardown
    towards test ``towards``, and beyond the scopes ``beyond``. (A plain class: every worker
    imports this module, and a frozen dataclass is written and compiled at import, 0.37 ms.)"""

    __slots__ = ("beyond", "towards")

    def __init__(self, towards: int, beyond: tuple[str, ...] = ()) -> None:
        self.towards = towards
        self.beyond = beyond


class OneAtATime:
    """``run_one_test`` that never waits for a second test; higher-scope teardown is deferred."""

    def __init__(self, loop: WorkerLoop, state: SessionState) -> None:
        self.loop = loop
        #: the session's state, whose ``running`` names the test this loop runs (read by the
        #: values between tests and pytest-dependency's runtime check)
        self.state = state
        #: index of the last test run with ``nextitem=item.parent``: its scopes are still set up
        self.held: int | None = None
        #: whether the controller was told that the held test's deferred teardown was reported
        self.settled = True
        #: the held test while its deferred teardown runs (see :meth:`pytest_runtest_protocol`)
        self._deferring: pytest.Item | None = None
        #: the ``funcargs`` and ``_request`` of the test whose teardown began last
        self._request_state: host.RequestState | None = None
        #: the node ids of the scopes the plan's blocks hold locks for (read once there is one)
        self._locked: frozenset[str] | None = None
        #: the locked scopes set up when the running test's teardown began
        self._alive: list[Node] = []

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> None:
        # The last attempt's objects (pytest-rerunfailures makes new ones per attempt): pytest
        # unbinds them when the protocol ends, the held test needs them back for its report.
        self._request_state = host.request_state(item)
        self._alive.extend(n for n in self._locked_alive() if n not in self._alive)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(
        self, item: pytest.Item, nextitem: pytest.Item | None
    ) -> bool | None:
        """The held test's deferred teardown, inside the protocol hook's wrappers (a timer, a
        fault handler): only the teardown runs, and its error is reported."""
        if item is not self._deferring:
            return None
        self._deferring = None
        config = self.loop.config
        done = pytest.CallInfo.from_call(
            lambda: self._deferred_teardown(config, item, nextitem),
            when="teardown",
            reraise=(pytest.exit.Exception, KeyboardInterrupt),
        )
        # our own path failing is an error of the held test too, never an INTERNALERROR
        report = (
            done.result
            if done.excinfo is None
            else pytest.TestReport.from_item_and_call(item, cast(Any, done))
        )
        if report is not None:
            config.hook.pytest_runtest_logreport(report=report)
        return True

    def run_one_test(self) -> None:
        loop = self.loop
        session = loop.session
        items = session.items
        index: int = loop.next_index()
        item = items[index]
        if self.held is not None:
            self._finish_held(item)
        loop.announce(index)
        following = loop.take_queued()
        if isinstance(following, _Teardown):  # not for this test: after it
            loop.put_back(following)
            following = None
        nextitem: Any
        if following is None:
            nextitem = item.parent
        elif following is loop.shutdown:
            nextitem = None
        else:
            nextitem = items[following]

        self._request_state = None
        self._alive = []
        state = self.state
        # the running test named here, not by a protocol wrapper of the recorder's (measured,
        # callgrind: 2,000 no-op tests on -n 4, a worker's run loop 1,690 -> 1,680 M
        # instructions, xdist alone 1,668 M)
        state.running = item
        start = time.perf_counter()
        try:
            loop.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
        finally:
            state.running = None
        duration = time.perf_counter() - start

        if following is not None:
            self._report_torn(index, self._alive)
            loop.send("runtest_protocol_complete", item_index=index, duration=duration)
            loop.set_next_index(following)
            return
        # nothing of a wider scope set up: the teardown towards the next test will run
        # nothing, so the test is done as if its next test had been known (its dependents
        # need not wait for it)
        done = host.nothing_to_tear_down(session)
        # what is left holds nothing: a lock kept for it would wait for nothing
        self._report_torn(index, self._alive, everything=done)
        self.held, self.settled = index, done
        host.give_back_request(item, self._request_state)
        self._request_state = None
        if not done:
            loop.send(HELD_EVENT, item_index=index)
        loop.send("runtest_protocol_complete", item_index=index, duration=duration)
        if session.shouldfail or session.shouldstop:
            # xdist's loop ends right after this call: finish the teardown now
            self._finish_held(None)
            loop.set_next_index(loop.shutdown)
            return
        following = loop.wait()
        while isinstance(following, _Teardown):
            self._finish_held(items[following.towards], partly=True, beyond=following.beyond)
            following = loop.wait()
        loop.set_next_index(following)
        if following is loop.shutdown:
            self._finish_held(None)

    def _finish_held(
        self, nextitem: pytest.Item | None, partly: bool = False, beyond: tuple[str, ...] = ()
    ) -> None:
        """Tear the held test down towards ``nextitem`` (and beyond the scopes ``beyond``);
        report an error against the held test; say which locked scopes went; tell the
        controller it settled. ``partly``: the worker's next test is not known yet, so the held
        test stays held with the scopes it shares with ``nextitem``."""
        loop = self.loop
        held = self.held
        assert held is not None
        previous = loop.session.items[held]
        loop.announce(held)
        config = loop.config
        alive = self._locked_alive()
        towards = _beyond(nextitem, beyond)
        if _keeps_all(loop.session, towards) or host.nothing_to_tear_down(loop.session):
            # the teardown runs nothing: ``towards`` shares every scope set up (the held
            # test's next one in its module), or nothing is set up but the nodes' own empty
            # teardowns (a test that drained its worker, in a suite without class or module
            # fixtures). No plugin's protocol wrapper, capture or report has anything to
            # cover (that protocol call cost a worker 170 us a drained test)
            host.teardown_towards(previous, towards)
            if not partly:
                self.held = None
                host.drop_request(previous)
            self._report_torn(held, alive, asked=beyond)
            self._settle(held)
            return
        self._deferring = previous
        self.state.running = previous
        try:
            done = pytest.CallInfo.from_call(
                lambda: config.hook.pytest_runtest_protocol(item=previous, nextitem=towards),
                when="teardown",
                reraise=(pytest.exit.Exception, KeyboardInterrupt),
            )
            if done.excinfo is not None:  # a plugin's wrapper of the protocol failed
                config.hook.pytest_runtest_logreport(
                    report=pytest.TestReport.from_item_and_call(previous, cast(Any, done))
                )
        finally:
            self._deferring = None
            self.state.running = None
            if not partly:
                self.held = None
                host.drop_request(previous)  # what pytest does at the end of the protocol
        self._report_torn(held, alive, asked=beyond)
        self._settle(held)

    def _settle(self, held: int) -> None:
        """Tell the controller that the deferred teardown of ``held`` was reported, once."""
        if not self.settled:
            self.settled = True
            self.loop.send(SETTLED_EVENT, item_index=held)

    def _locked_alive(self) -> list[Node]:
        """The nodes set up now whose scope a block of the plan holds a lock for."""
        locked = self._locked
        if locked is None:
            plan = self.state.plan
            if plan is None:
                return []
            locked = self._locked = frozenset(b.scope for b in plan.resources.blocks)
        if not locked:
            return []
        return [n for n in host.set_up(self.loop.session) if n.nodeid in locked]

    def _report_torn(
        self, index: int, alive: list[Node], everything: bool = False,
        asked: tuple[str, ...] = (),
    ) -> None:
        """Tell the controller which of the locked scopes ``alive`` before the teardown of test
        ``index`` are gone now (``everything``: all of them, they hold nothing), and that the
        scopes it ``asked`` to tear down are."""
        if not alive and not asked:
            return
        now = {n.nodeid for n in self._locked_alive()}
        gone = [n.nodeid for n in alive if everything or n.nodeid not in now]
        gone += [scope for scope in asked if scope not in now]
        if gone:
            self.loop.send(TORN_EVENT, item_index=index, scopes=sorted(set(gone)))

    def _deferred_teardown(
        self, config: pytest.Config, previous: pytest.Item, nextitem: Node | None
    ) -> pytest.TestReport | None:
        """Run the deferred teardown; its error report, or None when it passed."""
        reraise = (pytest.exit.Exception, KeyboardInterrupt)
        with host.capture(config, "teardown", previous):
            call = pytest.CallInfo.from_call(
                lambda: host.teardown_towards(previous, nextitem),
                when="teardown",
                reraise=reraise,
            )
        if call.excinfo is None:
            return None
        made = pytest.CallInfo.from_call(
            lambda: config.hook.pytest_runtest_makereport(item=previous, call=call),
            when="teardown",
            reraise=reraise,
        )
        if made.excinfo is None:
            report: pytest.TestReport = made.result
            return report
        # a plugin's report hook failed: report the teardown error without it, and say why
        report = pytest.TestReport.from_item_and_call(previous, call)
        report.sections.append(
            (
                "depgraph",
                "a plugin's pytest_runtest_makereport raised while reporting this deferred "
                f"teardown error:\n{made.excinfo.getrepr(style='short')}",
            )
        )
        return report
