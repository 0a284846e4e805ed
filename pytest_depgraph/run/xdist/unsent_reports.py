"""Reports the xdist controller makes up for tests it never sends: skips, and tests that cannot run.

A worker reports the tests it runs; a test the controller decides about itself -- skipped
because a dependency was unsatisfied, or broken by a collection error under
``--continue-on-collection-errors`` -- gets its reports here, as pytest's own runner would
make them: a start, a setup report with the outcome, a passed teardown, a finish.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from pytest_depgraph.core.plan import Plan
from pytest_depgraph.run.outcomes import SYNTHETIC, OutcomeRecorder, cause_of, skip_reason

if TYPE_CHECKING:
    from pytest_depgraph.core.walk.walker import Skip

#: where a test is reported: (relative file, 0-based line or None, domain)
Locate = Callable[[int], "tuple[str, int | None, str]"]


def report_skips(
    config: pytest.Config,
    plan: Plan,
    locate: Locate,
    recorder: OutcomeRecorder,
    skips: dict[str, str],
    skipped: list[Skip],
) -> None:
    """Report each test of ``skipped`` skipped, naming its root cause, and note it in
    ``skips`` (node id -> root cause's node id). Dependencies outside the run are not
    reported: they are not part of it."""
    for skip in skipped:
        if skip.node >= plan.item_count:
            continue
        nodeid = plan.nodeids[skip.node]
        skips[nodeid] = cause_of(plan, skip.root_cause, skip.node)
        location = locate(skip.node)
        reason = skip_reason(plan, recorder, skip.root_cause, skip.node)
        # an absolute path, as pytest's own skips carry: -rs shows it from the current
        # directory, the same as on a serial run
        longrepr = (str(config.rootpath / location[0]), (location[1] or 0) + 1,
                    f"Skipped: {reason}")
        _made_up(config, nodeid, location, "skipped", longrepr, synthetic=True)


def report_broken(config: pytest.Config, plan: Plan, locate: Locate) -> None:
    """Report each test that cannot run (``--continue-on-collection-errors``) as an error at
    setup, with the collection error as its reason."""
    for node in sorted(plan.broken):
        _made_up(config, plan.nodeids[node], locate(node), "failed", plan.broken[node],
                 synthetic=False)


def _made_up(
    config: pytest.Config,
    nodeid: str,
    location: tuple[str, int | None, str],
    outcome: str,
    longrepr: object,
    synthetic: bool,
) -> None:
    """The reports of a test that never ran: its setup with ``outcome`` and ``longrepr``, then
    a passed teardown, between a start and a finish. ``synthetic`` flags them so that the
    plugin's own outcome recorder tells them apart."""
    hook = config.hook
    hook.pytest_runtest_logstart(nodeid=nodeid, location=location)
    for report in (
        pytest.TestReport(nodeid, location, {}, outcome, longrepr, "setup"),  # type: ignore[arg-type]
        pytest.TestReport(nodeid, location, {}, "passed", None, "teardown"),
    ):
        if synthetic:
            setattr(report, SYNTHETIC, True)
        hook.pytest_runtest_logreport(report=report)
    hook.pytest_runtest_logfinish(nodeid=nodeid, location=location)
