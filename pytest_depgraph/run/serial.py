"""The serial walk: items run in plan order; dependents of unsatisfied tests skip before setup."""

from __future__ import annotations

import pytest

from pytest_depgraph.core.plan import Plan
from pytest_depgraph.core.walk.walker import Walker
from pytest_depgraph.hosts.pytest import skip_at_test
from pytest_depgraph.run.outcomes import cause_of, skip_reason
from pytest_depgraph.run.state import SessionState


class SerialWalk:
    """Drives a :class:`Walker` from pytest's own run loop (one process, plan order).

    One hook runs per test, at the start of its setup: it tells the walker the outcome of the
    test that ran before (all its reports are in by then, every attempt of a re-run test
    included: pytest-rerunfailures runs them all inside one run protocol), then lets this test
    start or skips it. A test's outcome is thus told to the walker only when the next test
    starts, which is the first moment the walker's answer is needed.

    ``strict=False`` is for an xdist worker under another ``--dist`` mode: it sees only the
    tests sent to it, so a dependency it never ran does not hold a test back; dependents of a
    test that ran here and was unsatisfied are still skipped.
    """

    def __init__(self, state: SessionState, plan: Plan, strict: bool = True) -> None:
        self.strict = strict
        # the plan is read through the state, which lets it go at the session's end
        # (run_session.release); what every test's hook reads is kept here
        self._state = state
        self.recorder = recorder = state.recorder
        self.skips = state.skips
        self._nodeids = nodeids = plan.nodeids
        self.walker = Walker(
            plan.graph, unsatisfied=[*plan.broken, *plan.external],
            cleanups={n: cleanup.targets for n, cleanup in plan.cleanups.items()},
            ran=lambda node: recorder.ran(nodeids[node]),
        )
        #: node id -> node of each test of the plan
        self._node_of = {nodeid: n for n, nodeid in enumerate(nodeids[: plan.item_count])}
        #: the node that started last; its outcome is told to the walker when the next starts
        self._running = -1

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        nodeids = self._nodeids
        nodeid = item.nodeid
        running = self._running
        if running >= 0:
            if nodeids[running] == nodeid:
                # another attempt of the test that is running (pytest-rerunfailures calls the
                # whole run protocol again inside ours): it was let in once; its last attempt
                # decides, when the next test starts
                return
            self._running = -1
            self.walker.finish(running, self.recorder.satisfied(nodeids[running]))
        node = self._node_of.get(nodeid)
        if node is None:
            return  # not in the plan
        if self.walker.is_ready(node):
            self.walker.start(node)
            self._running = node
            return
        self._hold_back(item, node)

    def _hold_back(self, item: pytest.Item, node: int) -> None:
        """Fail or skip a test that may not start: broken, skipped, or not ready."""
        plan = self._state.plan
        assert plan is not None  # (let go only once the session ended)
        if node in plan.broken:
            pytest.fail(plan.broken[node], pytrace=False)
        root = self.walker.root_cause(node)
        if root is not None:
            # recorded when the skip is reported, so -x runs list only what pytest reports
            self.skips[item.nodeid] = cause_of(plan, root, node)
            _skip(item, skip_reason(plan, self.recorder, root, node))
        if not self.strict:
            return  # its dependencies run elsewhere: nothing to say about them here
        waiting = [
            plan.nodeids[d] for d in plan.graph.dependencies_of(node)
            if plan.nodeids[d] not in self.recorder
        ]
        _skip(
            item,
            f"depgraph: {', '.join(waiting)} has not run (another plugin changed the order "
            "or the selection of the tests after pytest-depgraph built the graph)"
        )


def _skip(item: pytest.Item, reason: str) -> None:
    """Skip ``item`` at its own location, as skip markers do; at ours when pytest knows no line
    of it (an item of another plugin without ``reportinfo``: pytest would stop on it)."""
    if _known_line(item):
        skip_at_test(reason)
    pytest.skip(reason)


def _known_line(item: pytest.Item) -> bool:
    try:
        return item.location[1] is not None
    except Exception:  # another plugin's item whose reportinfo raises
        return False
