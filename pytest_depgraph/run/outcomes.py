"""Test outcomes as the graph sees them: which reports make a dependency satisfied, and why not.

A dependency is satisfied when its setup, call and teardown all passed; a non-strict XPASS
counts as passed; skip, xfail, failure and error do not (docs/how-it-works.md). The recorder
folds the reports of each test, from whichever process ran it, into one outcome per node id.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from pytest_depgraph.core.graph import Kind

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
    XFAILED: "xfailed",
    NOT_RUN: "did not run",
}

#: attribute set on the reports this plugin makes up, so its own hooks can tell them apart
SYNTHETIC = "_depgraph_synthetic"


class _Phases:
    """One test's folded outcome (a plain class with slots: one is made per test)."""

    __slots__ = ("duration", "outcome", "ran")

    def __init__(self, outcome: str = PASSED) -> None:
        self.outcome = outcome
        self.duration = 0.0
        #: a report of a phase that really ran arrived (not only an outcome set by this plugin)
        self.ran = False


class OutcomeRecorder:
    """Folds setup/call/teardown reports into one outcome per node id."""

    def __init__(self) -> None:
        self._by_nodeid: dict[str, _Phases] = {}

    def record(self, report: pytest.TestReport) -> None:
        """Take one phase report (any process); the last attempt of a re-run test decides.

        ``rerun`` reports (pytest-rerunfailures) are ignored; the setup report of a new
        attempt starts the outcome afresh, so a test that passes on a rerun is satisfied.
        Durations add up over all attempts: that is the time the test took.
        """
        nodeid = report.nodeid
        phases = self._by_nodeid.get(nodeid)
        if phases is None:
            phases = self._by_nodeid[nodeid] = _Phases()
        outcome, when = report.outcome, report.when
        phases.duration += report.duration
        if outcome == "passed" and phases.outcome == PASSED:
            phases.ran = True  # the common case: a phase passed in a test that passed so far
            return
        if outcome not in ("passed", "failed", "skipped"):
            return  # e.g. "rerun" from pytest-rerunfailures: this attempt does not count
        synthetic = getattr(report, SYNTHETIC, False)
        if when == "setup" and phases.ran and not synthetic:
            phases.outcome = PASSED  # a new attempt: the last decides
        if synthetic:
            phases.outcome = UPSTREAM
        elif outcome == "failed":
            phases.outcome = FAILED if when == "call" else _worse(phases.outcome, ERROR)
        elif outcome == "skipped" and phases.outcome == PASSED:
            phases.outcome = XFAILED if hasattr(report, "wasxfail") else SKIPPED
        if phases.outcome != UPSTREAM:
            phases.ran = True

    def mark(self, nodeid: str, outcome: str) -> None:
        """Set an outcome that no report carries (a crashed worker, a test never started)."""
        phases = self._by_nodeid.get(nodeid)
        if phases is None:
            self._by_nodeid[nodeid] = _Phases(outcome)
        else:
            phases.outcome = outcome

    def outcome(self, nodeid: str) -> str:
        """The folded outcome; NOT_RUN for a test with no report."""
        phases = self._by_nodeid.get(nodeid)
        return phases.outcome if phases is not None else NOT_RUN

    def satisfied(self, nodeid: str) -> bool:
        """Whether dependents of this test may run."""
        return self.outcome(nodeid) == PASSED

    def duration(self, nodeid: str) -> float:
        """Seconds spent in setup, call and teardown (0.0 for a test with no report)."""
        phases = self._by_nodeid.get(nodeid)
        return phases.duration if phases is not None else 0.0

    def durations(self) -> dict[str, float]:
        """Seconds of every test that ran (setup, call and teardown), by node id."""
        return {nodeid: p.duration for nodeid, p in self._by_nodeid.items() if p.ran}

    def __contains__(self, nodeid: str) -> bool:
        return nodeid in self._by_nodeid


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
    test ``node`` requires, so the user sees at once all they would have to select."""
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


def _unselected_requirements(plan: Plan, node: int) -> list[str]:
    """Node ids of the unselected tests ``node`` requires, directly or through others."""
    reached = plan.graph.reachable((node,), "dependencies", (Kind.REQUIRES,))
    return [plan.nodeids[n] for n in sorted(n for n in reached if n >= plan.item_count)]
