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
(an instance attribute; version-checked, see :func:`install`). The replacement *peeks* at the
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
share stay set up, and anything left is torn down towards the worker's next test later.

pytest drops a test's ``funcargs`` and ``_request`` at the end of its run protocol, but plugins
read them when they make a report (pytest-benchmark does). So the held test gets them back
until its deferred teardown is reported, and loses them after, as in a serial run. Anything
that goes wrong on that deferred path, a plugin's ``pytest_runtest_makereport`` included,
becomes an error report of the held test: an exception there would otherwise end the worker
with an INTERNALERROR and take the teardown error with it.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any, cast

import pytest

from pytest_depgraph.core.plan import PROTOCOL_VERSION, Plan

#: custom channel event carrying the worker's plan as one JSON string (or None)
PLAN_EVENT = "depgraph_plan"
#: worker -> controller, just before xdist's ``runtest_protocol_complete``: the test ran with
#: its teardown of class, module and session fixtures deferred (``item_index``)
HELD_EVENT = "depgraph_held"
#: worker -> controller: the deferred teardown of the held test ``item_index`` was reported
SETTLED_EVENT = "depgraph_settled"
#: controller -> worker: finish the held test's teardown towards the test ``towards``
TEARDOWN_COMMAND = "depgraph_teardown"

_XDIST_TOO_OLD = (
    "pytest-depgraph needs pytest-xdist >= 3.7, < 4 to run tests in dependency order on "
    "workers; this worker's xdist lacks {missing}. Upgrade pytest-xdist "
    "(pip install 'pytest-xdist>=3.7,<4') or run without -n / --depgraph-parallelism."
)


def find_interactor(config: pytest.Config) -> Any:
    """xdist's ``WorkerInteractor`` of this worker.

    It is exec'd as ``__channelexec__`` source and registered without a name, so it is found by
    class name, not ``isinstance``.
    """
    for plugin in config.pluginmanager.get_plugins():
        if type(plugin).__name__ == "WorkerInteractor":
            return plugin
    raise RuntimeError(_XDIST_TOO_OLD.format(missing="a registered WorkerInteractor"))


def send_plan(
    config: pytest.Config, plan: Plan | None, places: bool = True, locations: bool = False
) -> None:
    """Send this worker's plan to the controller (before xdist's ``collectionfinish``);
    without ``places`` when the controller does not show where edges were declared; with the
    items' ``locations`` beside it (not in it) when the controller asked this worker for
    them."""
    find_interactor(config).sendevent(
        PLAN_EVENT,
        plan=None if plan is None else plan.to_json(places=places, locations=False),
        locations=plan.locations if locations and plan is not None else None,
        protocol=PROTOCOL_VERSION,
    )


def install(config: pytest.Config) -> None:
    """Replace the interactor's ``run_one_test`` with :class:`OneAtATime` (before the run loop).

    Raises RuntimeError naming what is missing when xdist's internals are not the ones this
    relies on (``TestQueue.lock`` and ``Marker.SHUTDOWN`` appeared in xdist 3.7).
    """
    interactor = find_interactor(config)
    run_one_test = getattr(interactor, "run_one_test", None)
    torun = getattr(interactor, "torun", None)
    namespace = getattr(getattr(run_one_test, "__func__", None), "__globals__", {})
    marker = getattr(namespace.get("Marker"), "SHUTDOWN", None)
    for missing, present in (
        ("WorkerInteractor.run_one_test", run_one_test is not None),
        ("WorkerInteractor.torun.lock()", callable(getattr(torun, "lock", None))),
        ("WorkerInteractor.sendevent", callable(getattr(interactor, "sendevent", None))),
        ("Marker.SHUTDOWN", marker is not None),
    ):
        if not present:
            raise RuntimeError(_XDIST_TOO_OLD.format(missing=missing))
    one_at_a_time = OneAtATime(interactor, marker)
    interactor.run_one_test = one_at_a_time.run_one_test
    original = interactor.handle_command

    def handle_command(command: Any) -> None:
        # execnet's receiver thread: the request joins the queue the main thread waits on
        if isinstance(command, tuple) and len(command) == 2 and command[0] == TEARDOWN_COMMAND:
            interactor.torun.put(_Teardown(command[1]["towards"]))
            return
        original(command)

    interactor.handle_command = handle_command
    config.pluginmanager.register(one_at_a_time, "depgraph-one-at-a-time")


class _Teardown:
    """A controller's request, queued among the test indices: finish the held test's teardown
    towards test ``towards``."""

    __slots__ = ("towards",)

    def __init__(self, towards: int) -> None:
        self.towards = towards


class OneAtATime:
    """``run_one_test`` that never waits for a second test; higher-scope teardown is deferred."""

    def __init__(self, interactor: Any, shutdown: object) -> None:
        self.interactor = interactor
        self.shutdown = shutdown
        #: index of the last test run with ``nextitem=item.parent``: its scopes are still set up
        self.held: int | None = None
        #: whether the controller was told that the held test's deferred teardown was reported
        self.settled = True
        #: the held test while its deferred teardown runs (see :meth:`pytest_runtest_protocol`)
        self._deferring: pytest.Item | None = None
        #: the ``funcargs`` and ``_request`` of the test whose teardown began last
        self._request_state: tuple[pytest.Item, object, object] | None = None

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> None:
        # The last attempt's objects (pytest-rerunfailures makes new ones per attempt): pytest
        # unbinds them when the protocol ends, the held test needs them back for its report.
        self._request_state = (
            item, getattr(item, "funcargs", None), getattr(item, "_request", None)
        )

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(
        self, item: pytest.Item, nextitem: pytest.Item | None
    ) -> bool | None:
        """The held test's deferred teardown, inside the protocol hook's wrappers (a timer, a
        fault handler): only the teardown runs, and its error is reported."""
        if item is not self._deferring:
            return None
        self._deferring = None
        config: pytest.Config = self.interactor.config
        done = pytest.CallInfo.from_call(
            lambda: self._deferred_teardown(config, item.session, item, nextitem),
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
        interactor = self.interactor
        session: pytest.Session = interactor.session
        items = session.items
        index: int = interactor.nextitem_index
        item = items[index]
        if self.held is not None:
            self._finish_held(item)
        interactor.item_index = index
        with interactor.torun.lock() as queue:
            following = queue.popleft() if queue else None
            if isinstance(following, _Teardown):  # not for this test: after it
                queue.appendleft(following)
                following = None
        nextitem: Any
        if following is None:
            nextitem = item.parent
        elif following is self.shutdown:
            nextitem = None
        else:
            nextitem = items[following]

        self._request_state = None
        start = time.perf_counter()
        interactor.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
        duration = time.perf_counter() - start

        if following is not None:
            interactor.sendevent("runtest_protocol_complete", item_index=index, duration=duration)
            interactor.nextitem_index = following
            return
        self.held, self.settled = index, False
        self._keep_request(item)
        interactor.sendevent(HELD_EVENT, item_index=index)
        interactor.sendevent("runtest_protocol_complete", item_index=index, duration=duration)
        if session.shouldfail or session.shouldstop:
            # xdist's loop ends right after this call: finish the teardown now
            self._finish_held(None)
            interactor.nextitem_index = self.shutdown
            return
        following = interactor.torun.get()
        while isinstance(following, _Teardown):
            self._finish_held(items[following.towards], partly=True)
            following = interactor.torun.get()
        interactor.nextitem_index = following
        if following is self.shutdown:
            self._finish_held(None)

    def _keep_request(self, item: pytest.Item) -> None:
        """Give the held test back what pytest dropped, for the report of its deferred teardown."""
        state, self._request_state = self._request_state, None
        if state is None or state[0] is not item or not hasattr(item, "_request"):
            return
        _, funcargs, request = state
        if getattr(item, "funcargs", None) is None and funcargs is not None:
            item.funcargs = funcargs  # type: ignore[attr-defined]
            item._request = request

    def _finish_held(self, nextitem: pytest.Item | None, partly: bool = False) -> None:
        """Tear the held test down towards ``nextitem``; report an error against the held test;
        tell the controller it settled. ``partly``: the worker's next test is not known yet,
        so the held test stays held with the scopes it shares with ``nextitem``."""
        interactor = self.interactor
        session: pytest.Session = interactor.session
        held = self.held
        assert held is not None
        previous = session.items[held]
        interactor.item_index = held
        config: pytest.Config = interactor.config
        self._deferring = previous
        try:
            done = pytest.CallInfo.from_call(
                lambda: config.hook.pytest_runtest_protocol(item=previous, nextitem=nextitem),
                when="teardown",
                reraise=(pytest.exit.Exception, KeyboardInterrupt),
            )
            if done.excinfo is not None:  # a plugin's wrapper of the protocol failed
                config.hook.pytest_runtest_logreport(
                    report=pytest.TestReport.from_item_and_call(previous, cast(Any, done))
                )
        finally:
            self._deferring = None
            if not partly:
                self.held = None
                if hasattr(previous, "_request"):  # what pytest does at the end of the protocol
                    previous._request = False
                    previous.funcargs = None  # type: ignore[attr-defined]
        if not self.settled:
            self.settled = True
            interactor.sendevent(SETTLED_EVENT, item_index=held)

    def _deferred_teardown(
        self,
        config: pytest.Config,
        session: pytest.Session,
        previous: pytest.Item,
        nextitem: pytest.Item | None,
    ) -> pytest.TestReport | None:
        """Run the deferred teardown; its error report, or None when it passed."""
        capture = config.pluginmanager.getplugin("capturemanager")
        guard = (
            capture.item_capture("teardown", previous)
            if capture is not None
            else contextlib.nullcontext()
        )
        setupstate = session._setupstate
        reraise = (pytest.exit.Exception, KeyboardInterrupt)
        with guard:
            call = pytest.CallInfo.from_call(
                lambda: setupstate.teardown_exact(nextitem), when="teardown", reraise=reraise
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
