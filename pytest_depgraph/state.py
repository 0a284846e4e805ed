"""Per-session state shared between the plugin's hooks, kept in ``config.stash``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

from pytest_depgraph.outcomes import OutcomeRecorder
from pytest_depgraph.plan import Plan

if TYPE_CHECKING:
    # the scheduler imports xdist's scheduling modules: only a controller that walks needs them
    from pytest_depgraph.scheduler import DepGraphScheduling

#: the plan built after collection (serial session and every xdist worker)
PLAN_KEY = pytest.StashKey[Plan]()
#: folded outcomes of every test seen by this process (on the xdist controller: all tests)
RECORDER_KEY = pytest.StashKey[OutcomeRecorder]()
#: tests skipped by an unsatisfied dependency: node id -> root cause node id
SKIPS_KEY = pytest.StashKey[dict[str, str]]()


@dataclass(frozen=True)
class WalkStats:
    """How the parallel walk went, for the summary (set on the xdist controller after the run)."""

    #: seconds from the first test sent to the last test finished
    wall: float
    #: longest dependency chain, weighted with this run's durations (seconds)
    critical_path: float
    #: sum of this run's test durations (seconds)
    total: float
    #: at most this many tests in flight
    parallelism: int

    @property
    def lower_bound(self) -> float:
        """No schedule can finish sooner: ``max(critical path, total / N)``."""
        return max(self.critical_path, self.total / self.parallelism)


#: statistics of the parallel walk (xdist controller only)
WALK_KEY = pytest.StashKey[WalkStats]()

#: the xdist scheduler of this session, once xdist asked for it (controller only)
SCHEDULER_KEY = pytest.StashKey["DepGraphScheduling"]()
#: ``WorkerController`` attribute where the receiver thread leaves the worker's plan text
PLAN_ATTRIBUTE = "_depgraph_plan"


def active_scheduler(config: pytest.Config) -> DepGraphScheduling | None:
    """The scheduler of this session, once xdist asked for it."""
    return config.stash.get(SCHEDULER_KEY, None)
