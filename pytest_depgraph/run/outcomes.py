"""Test outcomes as the graph sees them: which reports make a dependency satisfied, and why not.

A dependency is satisfied when its setup, call and teardown all passed; a non-strict XPASS
counts as passed; skip, xfail, failure and error do not (docs/how-it-works.md). The test's own
reports decide, not its subtests': a skipped subtest leaves the test passed, a failing one
fails it (as pytest does). The recorder folds the reports of each test, from whichever process
ran it, into one outcome per node id.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import pytest

from pytest_depgraph.core.graph.paths import reachable
from pytest_depgraph.core.graph.storage import Kind
from pytest_depgraph.hosts.pytest import is_subtest_report

if TYPE_CHECKING:
    from pytest_depgraph.core.plan import Plan

PASSED = "passed"
FAILED = "failed"
ERROR = "error"
SKIPPED = "skipped"
XFAILED = "xfailed"
#: skipped by this plugin because a dependency was unsatisfied
UPSTREAM = "upstream"
#: never started (the run stopped first)
NOT_RUN = "not run"

_WORDS = {
    FAILED: "failed",
    ERROR: "errored",
    SKIPPED: "was skipped",
    # a cleanup skipped because none of its targets ran (on xdist: a report made up here)
    UPSTREAM: "was skipped",
    XFAILED: "xfailed",
    NOT_RUN: "did not run",
}

#: the outcomes of a test that never started
_NOT_RAN = frozenset((SKIPPED, UPSTREAM, NOT_RUN))

#: attribute set on the reports this plugin makes up, so its own hooks can tell them apart
SYNTHETIC = "_depgraph_synthetic"


class OutcomeRecorder:
    """Folds setup/call/teardown reports into one outcome per node id."""

    def __init__(self) -> None:
        # Plain dicts of strings and floats, no object per test: the recorder lives as long
        # as the session, and the cyclic GC walks every object that lives that long.
        self._outcomes: dict[str, str] = {}
        #: seconds of every phase reported so far (every attempt)
        self._durations: dict[str, float] = {}
        #: tests with an outcome but no report of a phase that really ran (only an outcome
        #: set by :meth:`mark`, by a synthetic report or a ``rerun`` report): rare
        self._unran: set[str] = set()

    def record(self, report: pytest.TestReport) -> None:
        """Take one phase report (any process); the last attempt of a re-run test decides.

        ``rerun`` reports (pytest-rerunfailures) are ignored; the setup report of a new
        attempt starts the outcome afresh, so a test that passes on a rerun is satisfied.
        Durations add up over all attempts: that is the time the test took.
        """
        nodeid = report.nodeid
        outcome = report.outcome
        outcomes, durations, unran = self._outcomes, self._durations, self._unran
        if report.when == "call" and is_subtest_report(report):
            # its time is part of the call's; only a failure counts (pytest fails the test)
            if outcome == "failed":
                outcomes[nodeid] = FAILED
            return
        current = outcomes.get(nodeid)
        durations[nodeid] = durations.get(nodeid, 0.0) + report.duration
        if current is None:
            current = outcomes[nodeid] = PASSED
            unran.add(nodeid)
        if outcome not in ("passed", "failed", "skipped"):
            return  # e.g. "rerun" from pytest-rerunfailures: this attempt does not count
        synthetic = getattr(report, SYNTHETIC, False)
        when = report.when
        if when == "setup" and not synthetic and nodeid not in unran:
            current = PASSED  # a new attempt: the last decides
        if synthetic:
            current = UPSTREAM
        elif outcome == "failed":
            current = FAILED if when == "call" else _worse(current, ERROR)
        elif outcome == "skipped" and current == PASSED:
            current = XFAILED if hasattr(report, "wasxfail") else SKIPPED
        outcomes[nodeid] = current
        if current != UPSTREAM:
            unran.discard(nodeid)

    def mark(self, nodeid: str, outcome: str) -> None:
        """Set an outcome that no report carries (a crashed worker, a test never started)."""
        if nodeid not in self._outcomes:
            self._unran.add(nodeid)
        self._outcomes[nodeid] = outcome

    def outcome(self, nodeid: str) -> str:
        """The folded outcome; NOT_RUN for a test with no report."""
        return self._outcomes.get(nodeid, NOT_RUN)

    def satisfied(self, nodeid: str) -> bool:
        """Whether dependents of this test may run."""
        return self._outcomes.get(nodeid) == PASSED

    def ran(self, nodeid: str) -> bool:
        """Whether this test started: it passed, failed, errored or xfailed -- not skipped
        (by a marker, by this plugin) nor never run. Its cleanups run only if one of their
        targets did."""
        return self._outcomes.get(nodeid, NOT_RUN) not in _NOT_RAN

    def duration(self, nodeid: str) -> float:
        """Seconds spent in setup, call and teardown (0.0 for a test with no report)."""
        return self._durations.get(nodeid, 0.0)

    def durations(self) -> dict[str, float]:
        """Seconds of every test that ran (setup, call and teardown), by node id."""
        unran = self._unran
        return {nodeid: s for nodeid, s in self._durations.items() if nodeid not in unran}

    def __contains__(self, nodeid: str) -> bool:
        return nodeid in self._outcomes


def _worse(current: str, new: str) -> str:
    return current if current == FAILED else new


def describe(outcome: str) -> str:
    """How an unsatisfied outcome reads after a node id: ``failed``, ``was skipped``, ..."""
    return _WORDS.get(outcome, outcome)


def upstream_reason(root_cause: str, outcome: str) -> str:
    """The skip reason of a test whose dependency chain has an unsatisfied root cause."""
    return f"depgraph: upstream {root_cause} {describe(outcome)}"


def skip_reason(
    plan: Plan, recorder: OutcomeRecorder, root_cause: int, node: int | None = None
) -> str:
    """The skip reason for ``node``, a dependent of ``root_cause`` (nodes of ``plan``).

    An unselected root cause (``--depgraph-no-deps``) is named with every other unselected
    test ``node`` requires, so the user sees at once all they would have to select. A cleanup
    that is its own root cause had nothing to clean up: its targets are named."""
    if node == root_cause and node in plan.cleanups:
        return cleanup_reason(plan, recorder, node)
    nodeid = plan.nodeids[root_cause]
    if root_cause >= plan.item_count:
        missing = [nodeid] if node is None else _unselected_requirements(plan, node)
        shown = ", ".join(missing[:_SHOWN_MISSING])
        if len(missing) > _SHOWN_MISSING:
            shown += f" and {len(missing) - _SHOWN_MISSING} more"
        were = "was" if len(missing) == 1 else "were"
        return (
            f"depgraph: upstream {shown} {were} not selected (--depgraph-no-deps; select "
            f"{'it' if len(missing) == 1 else 'them'} too, drop --depgraph-no-deps to pull "
            "them in, or use --depgraph-ignore-deps to run without them)"
        )
    return upstream_reason(nodeid, recorder.outcome(nodeid))


#: unselected dependencies named in one skip reason
_SHOWN_MISSING = 5


def cause_of(plan: Plan, root_cause: int, node: int) -> str:
    """The node id of the test that made ``node`` skip, its ``root_cause``: for a cleanup
    skipped as its own root cause, its first target (none of which ran)."""
    cleanup = plan.cleanups.get(node) if node == root_cause else None
    if cleanup is None:
        return plan.nodeids[root_cause]
    if cleanup.targets:
        return plan.nodeids[cleanup.targets[0]]
    return cleanup.absent[0] if cleanup.absent else plan.nodeids[node]


def cleanup_reason(plan: Plan, recorder: OutcomeRecorder, node: int) -> str:
    """Why the cleanup ``node`` is skipped: none of its targets ran; each named with what
    became of it (the first few)."""
    cleanup = plan.cleanups[node]
    named = [
        *(f"{plan.nodeids[t]} {describe(recorder.outcome(plan.nodeids[t]))}"
          for t in cleanup.targets),
        *(f"{nodeid} is not in this run" for nodeid in cleanup.absent),
    ]
    shown = ", ".join(named[:_SHOWN_MISSING])
    if len(named) > _SHOWN_MISSING:
        shown += f" and {len(named) - _SHOWN_MISSING} more"
    return f"depgraph: nothing to clean up: no target of this cleanup ran ({shown})"


def idle_cleanups(plan: Plan, recorder: OutcomeRecorder, skipped: Iterable[str]) -> list[str]:
    """The node ids among ``skipped`` of cleanups that did not run because none of their
    targets ran: nothing needed them, so they are neither a failure to run again (``--lf``)
    nor skipped because of an upstream test. In the plan's order. O(cleanups)."""
    if not plan.cleanups:
        return []
    among = set(skipped)
    return [
        plan.nodeids[node] for node, cleanup in sorted(plan.cleanups.items())
        if plan.nodeids[node] in among
        and not any(recorder.ran(plan.nodeids[target]) for target in cleanup.targets)
    ]


def _unselected_requirements(plan: Plan, node: int) -> list[str]:
    """Node ids of the unselected tests ``node`` requires, directly or through others."""
    reached = reachable(plan.graph, (node,), "dependencies", (Kind.REQUIRES,))
    return [plan.nodeids[n] for n in sorted(n for n in reached if n >= plan.item_count)]
