"""The ``depgraph`` section of the terminal summary, at pytest's verbosity.

Default: the counts, the critical path, and at most :data:`SHOWN_PER_CAUSE` skipped tests per
root cause; after a parallel walk, what each shared resource cost (how long it was held, how
long tests waited for it), and the wall time beside the best any schedule could do;
``-v``: every test; ``-q``: one line; ``-qq``: nothing. A run stopped by a collection error
prints nothing (its graph was never walked: the errors say it all).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

import pytest

from pytest_depgraph.collect.origins import BLOCK_EDGES, BLOCK_LABEL, WORDS, OriginKind
from pytest_depgraph.core.plan import Plan, ShardInfo
from pytest_depgraph.plurals import plural
from pytest_depgraph.run.outcomes import (
    ERROR,
    FAILED,
    PASSED,
    XFAILED,
    OutcomeRecorder,
    describe,
    idle_cleanups,
)
from pytest_depgraph.run.role import Role, role
from pytest_depgraph.run.state import session_state

if TYPE_CHECKING:
    from pytest_depgraph.core.timeline import Bound, WalkStats
    from pytest_depgraph.core.walk.resource_cost import Record

#: skipped tests listed per root cause at the default verbosity (``-v`` lists all)
SHOWN_PER_CAUSE = 10
#: a critical path longer than this (characters) shows its ends only (``-v``: every test)
_PATH_WIDTH = 120


class View(NamedTuple):
    """How much to say: pytest's verbosity, and whether tests ran on xdist workers. (A named
    tuple: a frozen dataclass cost every summary 2.5 M instructions more to make at import,
    measured with callgrind.)"""

    verbosity: int = 0
    parallel: bool = False


def summary(
    terminal: pytest.TerminalReporter,
    plan: Plan,
    recorder: OutcomeRecorder,
    skips: Mapping[str, str],
) -> None:
    """Write the section (called only when it has something to say: ``output.session``)."""
    config = terminal.config
    view = View(config.get_verbosity(), role(config) is Role.CONTROLLER)
    if view.verbosity <= -2:
        return
    if _stopped_by_collection_errors(terminal) or _listing_fixtures(config):
        return
    walk = session_state(config).walk
    idle = idle_cleanups(plan, recorder, skips)
    upstream = {nodeid: root for nodeid, root in skips.items() if nodeid not in idle} if idle \
        else skips
    if view.verbosity == -1:
        terminal.write_line(one_line(plan, upstream, view, len(idle)))
        return
    terminal.write_sep("=", "depgraph")
    # one chain for the critical path line and the parallel run's bound: one figure, on the
    # clock of the run report's bars
    seconds = seconds_per_test(terminal)
    chain = critical_chain(plan, recorder, skips, seconds)
    for line in lines(plan, recorder, upstream, view, chain, idle):
        terminal.write_line(line)
    if walk is not None:
        items = plan.nodeids[: plan.item_count]
        total = sum(seconds.get(nodeid, 0.0) for nodeid in items)
        bound = None
        if plan.resources:
            from pytest_depgraph.core.timeline import resource_bound

            per_node = [seconds.get(nodeid, 0.0) for nodeid in plan.nodeids]
            bound = resource_bound(plan, per_node, walk.parallelism)
        if walk.resources is not None:
            for line in resource_lines(walk.resources, plan):
                terminal.write_line(line)
        terminal.write_line(walk_line(walk, chain[1], total, bound))


def _listing_fixtures(config: pytest.Config) -> bool:
    """``--fixtures`` and ``--fixtures-per-test`` collect to list fixtures, not to run."""
    return bool(getattr(config.option, "showfixtures", False)
                or getattr(config.option, "show_fixtures_per_test", False))


def _stopped_by_collection_errors(terminal: pytest.TerminalReporter) -> bool:
    """pytest (and xdist) run nothing when collection failed, unless told to
    (``--continue-on-collection-errors``)."""
    if terminal.config.getoption("continue_on_collection_errors", False):
        return False
    return any(isinstance(r, pytest.CollectReport) for r in terminal.stats.get("error", ()))


def _edges(plan: Plan, view: View) -> tuple[int, str]:
    """Edge total and its parts, in each origin kind's words (:data:`WORDS`); pinning edges
    only count where they mean something (xdist)."""
    counts = plan.edge_counts
    pins = counts.get(OriginKind.PIN, 0)
    total = sum(counts.values()) - (0 if view.parallel else pins)
    labels: dict[str, int] = {}
    for kind, words in WORDS.items():
        count = counts.get(kind, 0)
        if (count or words.always) and (view.parallel or not words.parallel_only):
            labels[words.label] = labels.get(words.label, 0) + count
    blocks = counts.get(BLOCK_EDGES, 0)
    if blocks:
        labels[BLOCK_LABEL] = blocks
    return total, ", ".join(f"{count} {label}" for label, count in labels.items())


def _pulled_in(plan: Plan) -> str:
    """``2 dependencies pulled in by selection``, the cleanups pulled in apart."""
    cleanups = sum(1 for n in plan.added if n in plan.cleanups)
    dependencies = len(plan.added) - cleanups
    parts = [plural(dependencies, "dependency")] if dependencies else []
    if cleanups:
        parts.append(plural(cleanups, "cleanup"))
    return f"{' and '.join(parts)} pulled in by selection"


def one_line(plan: Plan, skips: Mapping[str, str], view: View, idle: int = 0) -> str:
    """The ``-q`` summary: counts only (``idle``: the cleanups that nothing needed)."""
    total, _ = _edges(plan, view)
    parts = [plural(plan.item_count, "test"), plural(total, "edge")]
    if plan.shard is not None:
        parts.insert(0, f"shard {plan.shard.index}/{plan.shard.count}")
    if plan.added:
        parts.append(_pulled_in(plan))
    if skips:
        causes = len(set(skips.values()))
        parts.append(f"{plural(len(skips), 'test')} skipped because of "
                     f"{plural(causes, 'upstream test')}")
    if idle:
        parts.append(f"{plural(idle, 'cleanup')} with nothing to clean up")
    return "depgraph: " + ", ".join(parts)


def lines(
    plan: Plan,
    recorder: OutcomeRecorder,
    skips: Mapping[str, str],
    view: View,
    chain: tuple[list[int], float],
    idle: Sequence[str] = (),
) -> list[str]:
    """The summary as text lines (without the wall-time line of a parallel walk); ``chain``:
    the run's :func:`critical_chain`; ``idle``: the cleanups that did not run because none of
    their targets ran (not in ``skips``)."""
    verbose = view.verbosity > 0
    out = [] if plan.shard is None else shard_lines(plan.shard)
    if not (plan.graph.edge_count or plan.errors or skips or idle):
        return out  # a sharded run without dependencies: the shard is all there is to say
    total, parts = _edges(plan, view)
    out.append(
        f"{plural(plan.item_count, 'test')}, {plural(total, 'edge')} ({parts}); "
        f"{plan.removed_edges} removed by transitive reduction"
    )
    if plan.added:
        out.append(_pulled_in(plan) + (":" if verbose else ""))
        if verbose:
            out.extend(f"  {plan.nodeids[n]}" for n in plan.added)
    external = list(plan.external)
    if external:
        out.append(f"{plural(len(external), 'dependency')} not selected (--depgraph-no-deps)")
    if plan.graph.edge_count and plan.item_count:
        path, seconds = chain
        out.extend(_critical_path(plan, path, seconds if _any_ran(plan, recorder) else None,
                                  verbose))
    groups: dict[str, list[str]] = {}
    for nodeid, root in skips.items():
        groups.setdefault(root, []).append(nodeid)
    if groups:
        out.append(f"{plural(len(skips), 'test')} skipped because of an upstream test:")
        for root, skipped in groups.items():
            not_selected = root in plan.nodeids[plan.item_count :]
            why = "was not selected" if not_selected else describe(recorder.outcome(root))
            out.append(f"  {root} {why}:")
            shown = skipped if verbose or len(skipped) <= SHOWN_PER_CAUSE else (
                skipped[:SHOWN_PER_CAUSE]
            )
            out.extend(f"    {nodeid}" for nodeid in shown)
            if len(shown) < len(skipped):
                out.append(f"    … and {len(skipped) - len(shown)} more (-v lists them all)")
    if idle:
        their = "its" if len(idle) == 1 else "their"
        out.append(f"{plural(len(idle), 'cleanup')} did not run, with nothing to clean up "
                   f"(none of {their} targets ran):")
        listed = idle if verbose or len(idle) <= SHOWN_PER_CAUSE else idle[:SHOWN_PER_CAUSE]
        out.extend(f"  {nodeid}" for nodeid in listed)
        if len(listed) < len(idle):
            out.append(f"  … and {len(idle) - len(listed)} more (-v lists them all)")
    return out


def shard_lines(info: ShardInfo) -> list[str]:
    """``shard K/N: T tests in C groups, expected S s of total X s (ideal X/N s)``, and where
    the durations came from (a split computed from other durations is another split)."""
    from pytest_depgraph.core.shard import seconds  # only a sharded run shows it

    return [
        f"shard {info.index}/{info.count}: {plural(info.tests, 'test')} in "
        f"{plural(info.groups, 'group')}, expected {seconds(info.expected)} of total "
        f"{seconds(info.total)} (ideal {seconds(info.total / info.count)})",
        f"durations from {info.source}: {info.known} of {plural(info.selected, 'test')} known",
    ]


#: the outcomes of a test that ran: the critical path of a run goes through these only (not
#: through a test that was skipped, by pytest or because of an upstream test)
RAN = frozenset((PASSED, FAILED, ERROR, XFAILED))


def critical_chain(
    plan: Plan, recorder: OutcomeRecorder, skips: Mapping[str, str], seconds: Mapping[str, float]
) -> tuple[list[int], float]:
    """The longest chain of tests that ran, weighted with their ``seconds``
    (:func:`seconds_per_test`), and its seconds; before any test ran (nothing reported), the
    planned chain by test count."""
    # only the full summary shows the critical path: -q and the edge counts do not load it
    from pytest_depgraph.core import timeline

    if not _any_ran(plan, recorder):
        return timeline.critical_chain(plan, None)
    outcome = recorder.outcome
    return timeline.critical_chain(
        plan,
        lambda nodeid: seconds.get(nodeid, 0.0)
        if outcome(nodeid) in RAN and nodeid not in skips else None,
    )


def seconds_per_test(terminal: pytest.TerminalReporter) -> dict[str, float]:
    """Each test's seconds from its setup's start to its teardown's end, from the reports the
    terminal kept: the clock of the run report's bars, so that the page and the summary name
    one critical path of one length (the phases' own durations, which ``--durations`` adds
    up, leave out pytest's work between them)."""
    from pytest_depgraph.output.runlog import SpanLog

    log = SpanLog()
    for reports in terminal.stats.values():
        for report in reports:
            if isinstance(report, pytest.TestReport):
                log.record(report)
    return {nodeid: span.stop - span.start for nodeid, span in log.spans.items()}


def _any_ran(plan: Plan, recorder: OutcomeRecorder) -> bool:
    return any(nodeid in recorder for nodeid in plan.nodeids[: plan.item_count])


def _critical_path(
    plan: Plan, path: list[int], seconds: float | None, verbose: bool
) -> list[str]:
    """``critical path: N tests (S s)``; ``seconds`` None: the planned path, by test count."""
    if not path:
        return []  # tests were reported, and none of them ran: no chain to name
    names = [plan.nodeids[n] for n in path]
    length = "by test count" if seconds is None else f"{_as_on_the_page(seconds)} s"
    head = f"critical path: {plural(len(path), 'test')} ({length})"
    if verbose and len(names) > 1:
        return [f"{head}:", *(f"  {name}" for name in names)]
    joined = " -> ".join(names)
    if len(head) + len(joined) + 2 > _PATH_WIDTH and len(names) > 3:
        # the ends say where the chain starts and finishes; -v lists every test
        joined = f"{names[0]} -> … {len(names) - 2} more … -> {names[-1]}"
    if len(head) + len(joined) + 2 > _PATH_WIDTH:
        return [f"{head}:", *(f"  {name}" for name in joined.split(" -> "))]
    return [f"{head}: {joined}"]


def _as_on_the_page(seconds: float) -> str:
    """``seconds`` as the run report shows them: rounded to 4 digits first, as the page
    stores its figures, so that one length never reads 0.03 s here and 0.04 s there
    (0.034996 s)."""
    return f"{round(seconds, 4):.2f}"


def resource_lines(record: Record, plan: Plan) -> list[str]:
    """What the shared resources cost a parallel walk: per resource how long a test held it
    and how long tests waited for it; the exclusive tests' time; the tests that waited for
    slots of the bound, or for the run to empty; each weight that counted as the bound; each
    worker shut down early for what a fixture of its session kept."""
    # only a walk that kept resource books reports them: a summary without one never loads
    # the books' module (measured: 13.3-13.8 ms of its dataclasses at every -q summary)
    from pytest_depgraph.core.walk.resource_books import ALONE, SLOTS

    out = []
    for use in record.uses:
        waited = (f"{plural(use.waiters, 'test')} waited {use.waited:.2f} s for it"
                  if use.waiters else "no test waited for it")
        out.append(f"resource {use.name} (capacity {use.capacity}): held {use.held:.2f} s; "
                   f"{waited}")
    if plan.resources.exclusive:
        out.append(f"exclusive tests: {record.alone:.2f} s with no other test running")
    for kind, what in ((SLOTS, "slots of --depgraph-parallelism (a heavy test's weight)"),
                       (ALONE, "every other test to finish (an exclusive test)")):
        seconds = [sum(w.until - w.since for w in waits if w.kind == kind)
                   for waits in record.waits.values() if any(w.kind == kind for w in waits)]
        if seconds:
            out.append(f"{plural(len(seconds), 'test')} waited {sum(seconds):.2f} s for {what}")
    for node, weight in record.clamped:
        out.append(f"{plan.nodeids[node]} has weight {weight}: it counts as {record.limit}, "
                   "the whole of --depgraph-parallelism")
    for ended in record.ended:
        out.append(f"{ended.worker} was shut down early: a session-scoped fixture there kept "
                   f"{', '.join(ended.resources)} until its worker's end, and "
                   f"{plan.nodeids[ended.test]} waited for it (it could run on no other worker)")
    return out


def walk_line(
    walk: WalkStats, critical_path: float, total: float, bound: Bound | None = None
) -> str:
    """The wall time of a parallel run beside the best any schedule could do.

    ``critical_path`` and ``total``: the summary's own figures (the reports' durations), so
    that the critical path has one length in the whole summary; the wall time and the
    number of workers are the walk's. ``bound``: the bound of a run with shared resources,
    exclusive tests or weights, from the same durations."""
    if bound is None:
        best = max(critical_path, total / walk.parallelism)
        line = (
            f"parallel run: {walk.wall:.2f} s wall time; best possible {best:.2f} s, the longer "
            f"of the critical path ({_as_on_the_page(critical_path)} s) and the total test "
            f"time per worker ({total:.2f} s / {walk.parallelism})"
        )
    else:
        best = bound.value
        line = f"parallel run: {walk.wall:.2f} s wall time; best possible {best:.2f} s, " + (
            bound_words(bound)
        )
    bound_seconds = best
    if bound_seconds >= 0.05:  # against a bound of instants a percentage says nothing
        line += f"; {max(0.0, walk.wall / bound_seconds - 1) * 100:.0f}% above it"
    if walk.weighed_by:
        line += f"; longest first by the durations in {walk.weighed_by}"
    return line


def bound_words(bound: Bound) -> str:
    """The terms of a :class:`~pytest_depgraph.core.timeline.Bound` in a user's words, and
    the resource that bound the run, if one did."""
    outside = " outside them" if bound.alone else ""
    weights = ", weights counted" if bound.weighted else ""
    terms = [f"the critical path{outside} ({bound.chain:.2f} s)",
             f"the total test time per worker{weights} ({bound.work:.2f} s / "
             f"{bound.parallelism})"]
    turns = dict(bound.read)
    written = {name: (seconds, capacity) for name, seconds, capacity in bound.written}
    for name, _ in bound.resource_terms():
        parts = []
        if name in written:
            seconds, capacity = written[name]
            parts.append(f"{name}'s writers' time ({seconds:.2f} s / {capacity})")
        if name in turns:
            whose = "its" if parts else f"{name}'s"
            parts.append(f"{whose} readers' turn ({turns[name]:.2f} s)")
        terms.append(" plus ".join(parts))
    longest = ("the longer of " if len(terms) == 2 else "the longest of ") + (
        ", ".join(terms[:-1]) + " and " + terms[-1]
    )
    words = f"{bound.alone:.2f} s of exclusive tests plus {longest}" if bound.alone else longest
    if bound.bottleneck is not None:
        words += f": {bound.bottleneck} bound the run"
    return words
