"""The child's side of a discovery: the given tests, in the given order, each outcome recorded.

A child is a fresh pytest process the discovery starts for one list of tests
(``--depgraph-discover-child ORDER``): the file ``ORDER`` holds the node ids to run, in order,
and the path of the record, where a line is written (and flushed) for each test as it starts
and for each of its reports, so a test that ends its process leaves the lines before it; the
process that started the child sends the record back to the discovery (:mod:`.server`).
The list is consistent with the declared graph and holds what its tests require, so the
plugin's own walk (with ``--depgraph-ignore-deps``) neither moves nor skips a test for a
dependency that is not there.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import IO

import pytest

#: one record line: {"start": node id} when a test starts; {"test": node id, "when": phase,
#: "outcome": "passed" | "failed" | "skipped"} for each of its reports
STARTED = "start"


class OrderKeeper:
    """The child's plugin: keeps the listed tests in the listed order and records them."""

    def __init__(self, path: str) -> None:
        with open(path, encoding="utf-8") as given:
            order = json.load(given)
        self.order: list[str] = list(order["tests"])
        self._position = {nodeid: at for at, nodeid in enumerate(self.order)}
        self._record: IO[str] = open(order["record"], "a", encoding="utf-8")  # noqa: SIM115

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config,
                                      items: list[pytest.Item]) -> None:
        """Only the listed tests (the rest deselected), in the list's order: the plan is built
        on these once every plugin selected."""
        kept = [item for item in items if item.nodeid in self._position]
        dropped = [item for item in items if item.nodeid not in self._position]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = self._ordered(kept)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """The list's order again, after the plan's stable sort (which may keep a module's
        tests together where the list does not)."""
        session.items[:] = self._ordered(session.items)

    def _ordered(self, items: Iterable[pytest.Item]) -> list[pytest.Item]:
        return sorted(items, key=lambda item: self._position.get(item.nodeid, len(self.order)))

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        self._write({STARTED: nodeid})

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self._write({"test": report.nodeid, "when": report.when, "outcome": report.outcome})

    def _write(self, line: dict[str, object]) -> None:
        self._record.write(json.dumps(line) + "\n")
        self._record.flush()

    def pytest_unconfigure(self) -> None:
        self._record.close()


def read_record(text: str) -> tuple[dict[str, bool], str | None]:
    """What a child recorded (``text``, the record's lines, sent back from where the child
    ran): node id -> passed (setup, call and teardown all passed; a non-strict XPASS passes),
    for each test that finished, and the test that started and never finished (it ended the
    process: it failed), or None."""
    phases: dict[str, list[str]] = {}
    started: list[str] = []
    for written in text.splitlines():
        try:
            line = json.loads(written)
        except ValueError:
            break  # the last line, cut by the end of its process
        if STARTED in line:
            started.append(line[STARTED])
            phases.setdefault(line[STARTED], [])
        else:
            phases.setdefault(line["test"], []).append(f"{line['when']}:{line['outcome']}")
    outcomes: dict[str, bool] = {}
    crashed = None
    for nodeid, seen in phases.items():
        if not any(phase.startswith("teardown:") for phase in seen):
            outcomes[nodeid] = False
            if nodeid in started:
                crashed = nodeid
            continue
        outcomes[nodeid] = "call:passed" in seen and all(
            phase.endswith(":passed") for phase in seen
        )
    return outcomes, crashed
