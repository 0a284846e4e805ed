"""The HTML run report: one self-contained page drawn from a :class:`~timeline.Timeline`.

The page is ``report_template.html`` (shipped in the package) with the run as one JSON blob and
the graph as inline SVG: its own styles and scripts are inline, so it opens from a CI artifact
with no network. The graph is Graphviz's drawing of the DOT text of ``--depgraph-dot``.
"""

from __future__ import annotations

import datetime
import html
import json
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from importlib import resources
from typing import Any

from pytest_depgraph import plurals
from pytest_depgraph.core.plan import Plan
from pytest_depgraph.core.timeline import Bound, Timeline
from pytest_depgraph.output import dot, drawing
from pytest_depgraph.run.outcomes import (
    ERROR,
    FAILED,
    NOT_RUN,
    PASSED,
    SKIPPED,
    UPSTREAM,
    XFAILED,
    OutcomeRecorder,
)

SUFFIXES = (".html", ".htm")
#: Graphviz draws 1,000 tests in about a second, as 2 MB of SVG; beyond that the page says so
GRAPH_LIMIT = 1000
#: seconds Graphviz may take before the page goes without the drawing
GRAPH_TIMEOUT = 60.0
_OUTCOMES = (PASSED, FAILED, ERROR, SKIPPED, XFAILED, UPSTREAM, NOT_RUN)
_LABELS = {UPSTREAM: "skipped (upstream)"}
#: the session's phases outside its tests, in the order of a lane (:class:`timeline.Phase`)
PHASES = ("start-up", "collection", "waiting", "finish")
_PLACEHOLDER = re.compile(r"__DEPGRAPH_(TITLE|GRAPH|DATA)__")


class ReportError(Exception):
    """The report cannot be written there; the message says why and what to do."""


def check_path(path: str, option: str) -> str:
    """The absolute path to write the report to; ReportError when it cannot be written there.

    Checked before any test runs, so that a long run does not end without its report.
    ``option`` names where the path came from (``--depgraph-report x`` or the ini line).
    """
    if os.path.isdir(path) or path.endswith(("/", os.sep)):
        raise ReportError(f"{option}: {path} is a directory; give a file name, e.g. "
                          f"{os.path.join(path, 'report.html')}")
    if not path.lower().endswith(SUFFIXES):
        raise ReportError(f"{option}: the report is an HTML page; give a path ending in .html")
    full = os.path.abspath(path)
    parent = os.path.dirname(full)
    if not os.path.isdir(parent):
        raise ReportError(f"{option}: the folder {parent} does not exist; create it first or "
                          "choose another path")
    problem = dot.unwritable(full)
    if problem:
        raise ReportError(f"{option}: cannot write {path}: {problem}")
    return full


def graph_svg(
    plan: Plan, recorder: OutcomeRecorder, skips: Mapping[str, str]
) -> tuple[str, str]:
    """The reduced graph as inline SVG, or ``("", why not)``."""
    if not plan.graph.edge_count:
        return "", "This run has no dependencies between its tests: there is no graph to draw."
    if plan.item_count > GRAPH_LIMIT:
        return "", (f"The graph has {plurals.tests(plan.item_count)}, too many to draw here "
                    f"(at most {GRAPH_LIMIT}). Write it with --depgraph-dot and open it in a "
                    "viewer that can pan and search.")
    program = shutil.which("dot")
    if program is None:
        return "", ("Graphviz is not installed (no 'dot' program on PATH), so the graph is not "
                    "drawn. Install it (e.g. apt-get install graphviz) and run again, or "
                    "write the graph with --depgraph-dot.")
    try:
        svg = drawing.draw(program, plan, recorder, skips, GRAPH_TIMEOUT)
    except subprocess.TimeoutExpired:
        return "", (f"Graphviz took more than {GRAPH_TIMEOUT:.0f} s to lay the graph out; "
                    "write it with --depgraph-dot instead.")
    except OSError as error:
        return "", f"Graphviz could not be run: {error}"
    except drawing.DrawingError as error:
        return "", f"Graphviz failed to draw the graph: {error}"
    # inline SVG: no XML declaration or doctype, which are not allowed inside HTML
    return svg[svg.find("<svg"):], ""


def page_data(timeline: Timeline, title: str, command: str) -> dict[str, Any]:
    """The run as the page's script reads it: compact arrays, one row per test."""
    lanes = {lane: i for i, lane in enumerate(timeline.lanes)}
    outcome_index = {outcome: i for i, outcome in enumerate(_OUTCOMES)}
    node_index = {test.nodeid: i for i, test in enumerate(timeline.tests)}
    tests = [
        [
            test.nodeid,
            outcome_index.get(test.outcome, outcome_index[NOT_RUN]),
            None if test.start is None else round(test.start, 4),
            None if test.end is None else round(test.end, 4),
            -1 if test.lane is None else lanes[test.lane],
            list(test.waits),
            -1 if test.held_by is None else test.held_by,
            [[wait.kind, wait.name, round(wait.since, 4), round(wait.until, 4)]
             for wait in test.lock_waits],
        ]
        for test in timeline.tests
    ]
    stats = timeline.stats
    bound, record = stats.bound, stats.resources
    return {
        "title": title,
        "command": command,
        "created": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M:%S %Z"),
        "outcomes": [_LABELS.get(o, o) for o in _OUTCOMES],
        "outcomeKeys": [o.replace(" ", "-") for o in _OUTCOMES],
        "colours": [dot.FILL[o] for o in _OUTCOMES],
        "lanes": timeline.lanes,
        "busy": [round(timeline.busy.get(lane, 0.0), 4) for lane in timeline.lanes],
        "busyShare": [round(timeline.busy_share(lane), 4) for lane in timeline.lanes],
        "tests": tests,
        "critical": timeline.critical,
        "phaseNames": list(PHASES),
        "phases": [
            [lanes[phase.lane], PHASES.index(phase.name), round(phase.start, 4),
             round(phase.stop, 4)]
            for phase in timeline.phases
        ],
        "stats": {
            "wall": round(stats.wall, 4),
            "span": round(timeline.span, 4),
            "firstTest": round(timeline.first_test, 4),
            "criticalPath": round(stats.critical_path, 4),
            "total": round(stats.total, 4),
            "parallelism": stats.parallelism,
            "lowerBound": round(stats.lower_bound, 4),
            "boundWords": "" if bound is None else bound_formula(bound),
            "bottleneck": None if bound is None else bound.bottleneck,
        },
        "resources": [] if record is None else [
            [use.name, use.capacity, round(use.held, 4), round(use.written, 4),
             round(use.waited, 4), use.waiters]
            for use in record.uses
        ],
        "skipped": [
            [root, node_index.get(root, -1), [node_index[n] for n in skipped]]
            for root, skipped in timeline.skipped.items()
        ],
    }


def bound_formula(bound: Bound) -> str:
    """The lower bound of a run with shared resources, as the page's figure names it."""
    terms = ["critical path", f"total / {bound.parallelism}"]
    capacity = {name: cap for name, _, cap in bound.written}
    turns = dict(bound.read)
    for name, _ in bound.resource_terms():
        parts = [f"{name} writers / {capacity[name]}"] if name in capacity else []
        parts += [f"{name} readers"] if name in turns else []
        terms.append(" + ".join(parts))
    alone = "exclusive + " if bound.alone else ""
    return f"lower bound = {alone}max({', '.join(terms)})"


def render(timeline: Timeline, svg: str, no_graph: str, title: str, command: str) -> str:
    """The whole page as text."""
    template = resources.files("pytest_depgraph.output").joinpath("report_template.html")
    text = template.read_text(encoding="utf-8")
    blob = json.dumps(page_data(timeline, title, command), separators=(",", ":"))
    # inside <script>: no "</script>" or "<!--" may appear, whatever the node ids hold
    blob = blob.replace("<", "\\u003c")
    graph = svg or f'<p class="note" id="no-graph">{html.escape(no_graph, quote=False)}</p>'
    values = {"TITLE": html.escape(title, quote=False), "GRAPH": graph, "DATA": blob}
    # one pass, so that a value holding a placeholder's name is never replaced in turn
    return _PLACEHOLDER.sub(lambda match: values[match.group(1)], text)


def write(path: str, page: str) -> None:
    """Write the page (UTF-8); ReportError naming the path when it cannot be written."""
    try:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(page)
    except OSError as error:
        raise ReportError(f"could not write the run report to {path}: {error}") from None
