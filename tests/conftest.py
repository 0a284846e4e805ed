"""Shared helpers for the integration tests: run pytest on a generated suite, read the order."""

from __future__ import annotations

import re

import pytest

pytest_plugins = ["pytester"]


def passed_order(result: pytest.RunResult) -> list[str]:
    """Node ids in the order pytest reported them (-v output), with their outcome."""
    order = []
    for line in result.outlines:
        match = re.match(r"^(\S+::\S+) (PASSED|FAILED|SKIPPED|ERROR|XFAIL|XPASS)", line)
        if match:
            order.append(match.group(1))
    return order


def names(result: pytest.RunResult) -> list[str]:
    """Test names (the part after the last ::) in run order."""
    return [nodeid.rsplit("::", 1)[-1] for nodeid in passed_order(result)]


@pytest.fixture
def run(pytester: pytest.Pytester):
    """Run pytest in-process with -v and -rs; returns the RunResult."""

    def run_(*args: str) -> pytest.RunResult:
        return pytester.runpytest("-v", "-rs", "-p", "no:randomly", *args)

    return run_


def skip_reasons(result: pytest.RunResult) -> dict[str, str]:
    """Test name -> skip reason, from the reports of an in-process run."""
    reasons = {}
    for report in result.reprec.getreports("pytest_runtest_logreport"):  # type: ignore[attr-defined]
        if report.skipped and report.when == "setup" and not hasattr(report, "wasxfail"):
            reason = report.longrepr[2]
            reasons[report.nodeid.rsplit("::", 1)[-1]] = reason.removeprefix("Skipped: ")
    return reasons
