"""What a discovery found, in words: the ``depgraph discover`` section and the JSON file."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pytest

from pytest_depgraph.discover.search import CONFLICTS, FLAKY, NEEDS, Discovered, Finding
from pytest_depgraph.plurals import noun, plural, tests

#: what a flaky test is told
FLAKY_ADVICE = (
    "its outcome changed when the same tests ran in the same order: not a dependency; make it "
    "deterministic"
)


@dataclass(frozen=True)
class Named:
    """The tests of a session as the report names them: node ids and ``file:line``."""

    nodeids: Sequence[str]
    locations: Sequence[str]


def target(test: str, written_on: str) -> str:
    """How a marker on ``written_on`` names ``test``: its bare name when both are in one
    module and class (the marker looks there first), else its node id."""
    parent, _, name = test.rpartition("::")
    return name if parent == written_on.rpartition("::")[0] else test


def suggestion(finding: Finding, named: Named) -> str:
    """The declaration that makes a finding explicit (the advice for a flaky test)."""
    nodeids = named.nodeids
    test = nodeids[finding.test]
    if finding.kind == NEEDS and finding.other is not None:
        return f'@pytest.mark.depends_on("{target(nodeids[finding.other], test)}")'
    if finding.kind == CONFLICTS and finding.other is not None:
        other = nodeids[finding.other]
        return f'@pytest.mark.depends_on("{target(test, other)}", on_failure="run")'
    return FLAKY_ADVICE


def as_json(discovered: Discovered, named: Named) -> list[dict[str, object]]:
    """The findings as ``--depgraph-discover-json`` writes them, one object each."""
    return [
        {
            "kind": f.kind,
            "test": named.nodeids[f.test],
            "other": None if f.other is None else named.nodeids[f.other],
            "location": named.locations[f.test],
            "suggestion": suggestion(f, named),
            "executions": f.executions,
        }
        for f in discovered.findings
    ]


def write_json(path: str, discovered: Discovered, named: Named) -> None:
    with open(path, "w", encoding="utf-8") as out:
        json.dump(as_json(discovered, named), out, indent=2)
        out.write("\n")


def line(finding: Finding, named: Named, covered: bool = False) -> str:
    """One finding in one line: kind, test, other test, where the test is, what to add
    (nothing more when ``covered``: a need of the other test on this one orders them so)."""
    nodeids, locations = named.nodeids, named.locations
    test = nodeids[finding.test]
    short = test.rpartition("::")[2]
    if finding.kind == FLAKY or finding.other is None:
        return f"flaky     {test} ({locations[finding.test]}): {FLAKY_ADVICE}"
    other = nodeids[finding.other]
    if finding.kind == NEEDS:
        return (f"needs     {test} needs {other} ({locations[finding.test]}): add "
                f"{suggestion(finding, named)} to {short}")
    if covered:
        return (f"conflicts {test} fails after {other} ({locations[finding.test]}): nothing "
                f"more to add, the needs line of {other.rpartition('::')[2]} keeps it after "
                f"{short}")
    return (f"conflicts {test} fails after {other} ({locations[finding.test]}): add "
            f"{suggestion(finding, named)} to {other.rpartition('::')[2]} "
            f"({locations[finding.other]})")


def covered(findings: Sequence[Finding]) -> set[Finding]:
    """The conflicts whose order a need already gives: T fails after P, and P needs T (the
    need's ``depends_on`` on P keeps P after T, as the conflict's would)."""
    needs = {(f.test, f.other) for f in findings if f.kind == NEEDS}
    return {f for f in findings if f.kind == CONFLICTS and (f.other, f.test) in needs}


def summary(
    terminal: pytest.TerminalReporter, discovered: Discovered, named: Named,
    processes: int, workers: int, seconds: float, written: str | None,
    fallbacks: Mapping[str, str] | None = None,
) -> None:
    """The ``depgraph discover`` section of the terminal summary; ``fallbacks``: slot name
    ("" on this machine) -> why lists there started sessions of their own, instead of being
    forked after one collection."""
    terminal.write_sep("=", "depgraph discover")
    found = discovered.findings
    implied = covered(found)
    for finding in found:
        terminal.write_line(line(finding, named, finding in implied))
    if not found:
        terminal.write_line("no hidden dependency found")
    if discovered.failing:
        terminal.write_line(
            f"failing in pytest's own order, not analysed: {tests(len(discovered.failing))}"
        )
        for test in discovered.failing:
            terminal.write_line(f"  {named.nodeids[test]} ({named.locations[test]})")
    terminal.write_line(
        f"cost: {plural(discovered.orders, 'order')} of every test, "
        f"{plural(discovered.alone, 'test')} alone and "
        f"{plural(discovered.lists - discovered.orders - discovered.alone, 'shorter list')}, "
        f"{plural(discovered.executions, 'test execution')} in "
        f"{processes} {'process' if processes == 1 else 'processes'} ({workers} at once), "
        f"{seconds:.1f} s"
    )
    for slot, why in (fallbacks or {}).items():
        terminal.write_line(
            f"lists{f' on {slot}' if slot else ''} collected their tests afresh, each in a "
            f"session of its own (slower, same findings): {why}"
        )
    if written:
        terminal.write_line(f"findings written to {written}")


def counts(discovered: Discovered) -> str:
    """The findings by kind, for one line: ``2 needs, 1 conflict``."""
    kinds = [(NEEDS, "need"), (CONFLICTS, "conflict"), (FLAKY, "flaky test")]
    parts = []
    for kind, word in kinds:
        number = sum(1 for f in discovered.findings if f.kind == kind)
        if number:
            parts.append(f"{number} {noun(number, word)}")
    return ", ".join(parts) or "nothing hidden"
