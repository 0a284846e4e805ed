"""The serial walk: items run in plan order; dependents of unsatisfied tests skip before setup."""

from __future__ import annotations

from collections.abc import Generator

import pytest

from pytest_depgraph.core.plan import Plan
from pytest_depgraph.core.walker import Walker
from pytest_depgraph.run.outcomes import OutcomeRecorder, skip_reason

try:  # a skip that reports the test's location, not ours (what skip markers use)
    from _pytest.outcomes import Skipped as _Skipped
except ImportError:  # pragma: no cover - pytest moved it
    _Skipped = None  # type: ignore[assignment,misc]


class SerialWalk:
    """Drives a :class:`Walker` from pytest's own run loop (one process, plan order).

    ``strict=False`` is for an xdist worker under another ``--dist`` mode: it sees only the
    tests sent to it, so a dependency it never ran does not hold a test back; dependents of a
    test that ran here and was unsatisfied are still skipped.
    """

    def __init__(
        self, plan: Plan, recorder: OutcomeRecorder, skips: dict[str, str], strict: bool = True
    ) -> None:
        self.strict = strict
        self.plan = plan
        self.recorder = recorder
        self.skips = skips
        self.node_of = {nodeid: n for n, nodeid in enumerate(plan.nodeids[: plan.item_count])}
        self.walker = Walker(plan.graph, unsatisfied=[*plan.broken, *plan.external])
        self.started: set[int] = set()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        node = self.node_of.get(item.nodeid)
        if node is None:
            return
        if node in self.started:
            # another attempt of a test that is running (pytest-rerunfailures calls the whole
            # run protocol again inside ours): it was let in once; its last attempt decides
            return
        if node in self.plan.broken:
            pytest.fail(self.plan.broken[node], pytrace=False)
        root = self.walker.root_cause(node)
        if root is not None:
            # recorded when the skip is reported, so -x runs list only what pytest reports
            self.skips[item.nodeid] = self.plan.nodeids[root]
            _skip(skip_reason(self.plan, self.recorder, root, node))
        if not self.walker.is_ready(node):
            if not self.strict:
                return  # its dependencies run elsewhere: nothing to say about them here
            waiting = [
                self.plan.nodeids[e.dependency] for e in self.plan.graph.dependencies(node)
                if self.plan.nodeids[e.dependency] not in self.recorder
            ]
            _skip(
                f"depgraph: {', '.join(waiting)} has not run (another plugin changed the order "
                "or the selection of the tests after pytest-depgraph built the graph)"
            )
        self.walker.start(node)
        self.started.add(node)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(
        self, item: pytest.Item, nextitem: pytest.Item | None
    ) -> Generator[None, object, object]:
        result = yield
        node = self.node_of.get(item.nodeid)
        if node is not None and node in self.started:
            self.started.discard(node)
            self.walker.finish(node, self.recorder.satisfied(item.nodeid))
        return result


def _skip(reason: str) -> None:
    if _Skipped is not None:
        raise _Skipped(reason, _use_item_location=True)
    pytest.skip(reason)
