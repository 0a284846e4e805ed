"""Per-session state shared between the plugin's hooks, kept in ``config.stash``."""

from __future__ import annotations

from typing import Protocol

import pytest

from pytest_depgraph.core.plan import Plan
from pytest_depgraph.core.timeline import WalkStats
from pytest_depgraph.run.outcomes import OutcomeRecorder


class Walking(Protocol):
    """What the session's hooks read from the xdist scheduler
    (:class:`~pytest_depgraph.run.scheduler.DepGraphScheduling`), named here without importing
    it: it imports xdist's scheduling modules, which only a controller that walks needs."""

    #: how many collection errors the workers' plans hold (the run stops on any)
    plan_errors: int

    def walk_stats(self) -> WalkStats | None:
        """Statistics of the walk, once it ran."""

#: the plan built after collection (serial session and every xdist worker)
PLAN_KEY = pytest.StashKey[Plan]()
#: folded outcomes of every test seen by this process (on the xdist controller: all tests)
RECORDER_KEY = pytest.StashKey[OutcomeRecorder]()
#: tests skipped by an unsatisfied dependency: node id -> root cause node id
SKIPS_KEY = pytest.StashKey[dict[str, str]]()


#: statistics of the parallel walk (xdist controller only)
WALK_KEY = pytest.StashKey[WalkStats]()

#: the xdist scheduler of this session, once xdist asked for it (controller only)
SCHEDULER_KEY = pytest.StashKey[Walking]()
#: ``WorkerController`` attribute where the receiver thread leaves the worker's plan text
PLAN_ATTRIBUTE = "_depgraph_plan"


def active_scheduler(config: pytest.Config) -> Walking | None:
    """The scheduler of this session, once xdist asked for it."""
    return config.stash.get(SCHEDULER_KEY, None)
