"""Graphviz DOT export of the reduced graph, with nodes filled by outcome after a run.

Edges point from the dependent to its dependency, as in ``terraform graph``; after edges are
dashed; edges that come from a fixture are labelled with the fixture's name, a cleanup's with
``cleanup_of``; the edges that
keep pinned tests on one worker are dotted, blue and labelled ``pinned``. A legend cluster
explains the fills and edge styles the graph uses.

The path is checked when pytest starts (:func:`check_path`), so a run never ends with a graph
that cannot be written; after the run :class:`DotExport` writes it and says where, as junitxml
does, and an error that still happens then is reported without hiding the run's results.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from typing import Callable

import pytest

from pytest_depgraph.collect.origins import OriginKind, describe
from pytest_depgraph.core.graph.storage import Edge, Kind
from pytest_depgraph.core.plan import Plan
from pytest_depgraph.hosts import pytest as host
from pytest_depgraph.output.written import WrittenFile
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
from pytest_depgraph.run.state import session_state

#: suffixes written as DOT text
TEXT_SUFFIXES = ("dot", "gv")
#: suffixes rendered by Graphviz ``dot -T<suffix>``: pictures and printable documents
RENDERED_SUFFIXES = (
    "svg", "svgz", "png", "pdf", "jpg", "jpeg", "gif", "webp", "bmp", "tif", "tiff", "ps", "eps",
)
FILL = {
    PASSED: "palegreen",
    FAILED: "salmon",
    ERROR: "salmon",
    UPSTREAM: "lightgrey",
    SKIPPED: "khaki",
    XFAILED: "khaki",
    NOT_RUN: "white",
}
#: legend entries for fills, in this order; outcomes that share a colour share an entry
_FILL_LEGEND = (
    ((PASSED,), "passed"),
    ((FAILED, ERROR), "failed or error"),
    ((UPSTREAM,), "skipped: a dependency failed"),
    ((SKIPPED, XFAILED), "skipped or xfailed"),
    ((NOT_RUN,), "not run"),
)
_PIN_STYLE = ('style = "dotted"', 'color = "steelblue"', 'penwidth = 2')
_LEGEND_PREFIX = "depgraph legend: "


class RenderError(Exception):
    """The graph could not be written or rendered; the message says why."""


def suffix(path: str) -> str:
    """The lower-case extension of ``path`` without the dot ("" for none)."""
    name = os.path.basename(path)
    return name.rsplit(".", 1)[1].lower() if "." in name.strip(".") else ""


def needs_graphviz(path: str) -> bool:
    """Whether ``path`` asks for a rendered picture rather than DOT text."""
    return suffix(path) in RENDERED_SUFFIXES


def check_path(
    path: str, option: str, formats: Callable[[], set[str] | None] | None = None
) -> None:
    """Refuse, before any test runs, a path the graph could not be written to.

    ``option`` names where the path came from (``--depgraph-dot x`` or the ini line), for the
    message. A directory, a missing parent folder, an unwritable place, an unknown extension
    and a picture format without Graphviz (or one this Graphviz cannot write) are usage errors.
    ``formats`` lists the output formats of the installed ``dot`` (default: ask it).
    """
    if path == "-":
        return
    if os.path.isdir(path) or path.endswith(("/", os.sep)):
        raise pytest.UsageError(
            f"{option}: {path} is a directory; give a file name, e.g. "
            f"{os.path.join(path, 'depgraph.dot')}"
        )
    kind = suffix(path)
    if kind not in TEXT_SUFFIXES and kind not in RENDERED_SUFFIXES:
        what = f"extension '.{kind}'" if kind else "no extension"
        raise pytest.UsageError(
            f"{option}: {path} has {what}; use .dot or .gv for DOT text, or one of "
            f"{', '.join('.' + s for s in RENDERED_SUFFIXES)} for a picture drawn by Graphviz"
        )
    if kind in RENDERED_SUFFIXES:
        _check_graphviz(path, option, kind, formats or graphviz_formats)
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise pytest.UsageError(
            f"{option}: the folder {parent} does not exist; create it first or choose another "
            "path"
        )
    problem = unwritable(path)
    if problem:
        raise pytest.UsageError(f"{option}: cannot write {path}: {problem}")


def _check_graphviz(
    path: str, option: str, kind: str, formats: Callable[[], set[str] | None]
) -> None:
    if shutil.which("dot") is None:
        raise pytest.UsageError(
            f"{option}: rendering to {kind.upper()} needs Graphviz's 'dot' program, which is "
            "not on PATH. Install Graphviz (e.g. apt-get install graphviz) or write a .dot file."
        )
    known = formats()
    if known is not None and kind not in known:
        offered = sorted(s for s in RENDERED_SUFFIXES if s in known)
        raise pytest.UsageError(
            f"{option}: the installed Graphviz cannot write {kind.upper()} ({path}); it can "
            f"write {', '.join('.' + s for s in offered) or 'none of the picture formats'}, "
            "or write a .dot file."
        )


def graphviz_formats() -> set[str] | None:
    """The output formats ``dot -T?`` lists; None when they cannot be read."""
    try:
        done = subprocess.run(["dot", "-T?"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(r"Use one of:(.*)", done.stderr + done.stdout)
    if found is None:
        return None
    return {name.split(":", 1)[0] for name in found.group(1).split()}


def unwritable(path: str) -> str:
    """Why ``path`` cannot be written ("" when it can): tried, not guessed from permissions."""
    if os.path.exists(path):
        if not os.path.isfile(path):
            return "it is not a regular file"
        if not os.access(path, os.W_OK):
            return "permission denied"
        return ""
    try:
        with open(path, "x", encoding="utf-8"):
            pass
    except OSError as error:
        return error.strerror or str(error)
    os.unlink(path)
    return ""


def _quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


#: the label of a cleanup's edges
CLEANUP_LABEL = "cleanup_of"


def _edge_attrs(edge: Edge) -> list[str]:
    attrs = [f"tooltip = {_quote(describe(edge.origin))}"]
    fixture = edge.origin.name
    if edge.origin.kind == OriginKind.PIN:
        # not a fixture edge, though a shared fixture may be why: its label says "pinned"
        attrs.extend(_PIN_STYLE)
        attrs.append(f"label = {_quote(f'pinned: {fixture}' if fixture else 'pinned')}")
        return attrs
    if edge.kind is Kind.AFTER:
        attrs.append('style = "dashed"')
    if edge.origin.kind == OriginKind.CLEANUP:
        attrs.append(f"label = {_quote(CLEANUP_LABEL)}")
    elif fixture:
        attrs.append(f"label = {_quote(fixture)}")
    return attrs


def render(
    plan: Plan,
    recorder: OutcomeRecorder | None,
    skips: Mapping[str, str] | None = None,
    *,
    rankdir: str = "BT",
) -> str:
    """The DOT text. Without a recorder (``--collect-only``) nodes carry no outcome.

    ``rankdir``: where the dependencies are drawn, ``"BT"`` above their dependents, ``"RL"``
    to their left (the run report's choice for a wide graph, :mod:`.drawing`).
    """
    skips = skips or {}
    lines = [
        "digraph depgraph {",
        f"  rankdir = {_quote(rankdir)};",
        '  fontname = "Helvetica";',
        '  node [shape = "box", style = "rounded,filled", fillcolor = "white", '
        'fontname = "Helvetica"];',
        '  edge [fontname = "Helvetica", fontsize = 10];',
    ]
    files: dict[str, list[int]] = {}
    for node, nodeid in enumerate(plan.nodeids):
        files.setdefault(nodeid.split("::", 1)[0], []).append(node)
    outcomes: set[str] = set()
    clusters = list(enumerate(files.items()))
    if rankdir in ("LR", "RL"):
        clusters.reverse()  # drawn sideways, dot stacks the files last-written on top
    for cluster, (path, nodes) in clusters:
        lines.append(f"  subgraph {_quote(f'cluster_{cluster}')} {{")
        lines.append(f"    label = {_quote(path)};")
        for node in nodes:
            nodeid = plan.nodeids[node]
            label = nodeid.split("::", 1)[1] if "::" in nodeid else nodeid
            attrs = [f"label = {_quote(label)}"]
            if node >= plan.item_count:
                attrs.append('style = "rounded,dashed"')
                attrs.append(_quote("tooltip") + " = " + _quote("not selected"))
            elif recorder is not None:
                outcome = UPSTREAM if nodeid in skips else recorder.outcome(nodeid)
                outcomes.add(outcome)
                tooltip = outcome if nodeid not in skips else f"skipped: {skips[nodeid]} upstream"
                attrs.append(f"fillcolor = {_quote(FILL.get(outcome, 'white'))}")
                attrs.append(f"tooltip = {_quote(tooltip)}")
            lines.append(f"    {_quote(nodeid)} [{', '.join(attrs)}];")
        lines.append("  }")
    edges = plan.graph.edges()
    for edge in edges:
        lines.append(
            f"  {_quote(plan.nodeids[edge.dependent])} -> "
            f"{_quote(plan.nodeids[edge.dependency])} [{', '.join(_edge_attrs(edge))}];"
        )
    lines.extend(_legend(outcomes, plan.item_count < len(plan.nodeids), edges))
    lines.append("}")
    return "\n".join(lines) + "\n"


def _legend(outcomes: set[str], unselected: bool, edges: list[Edge]) -> list[str]:
    """A cluster that explains the fills and the edge styles this graph uses."""
    entries: list[str] = []
    for members, text in _FILL_LEGEND:
        if outcomes.intersection(members):
            fill = FILL[members[0]]
            entries.append(
                f"    {_quote(_LEGEND_PREFIX + text)} [label = {_quote(text)}, "
                f"fillcolor = {_quote(fill)}];"
            )
    if unselected:
        entries.append(
            f"    {_quote(_LEGEND_PREFIX + 'not selected')} [label = \"not selected\", "
            'style = "rounded,dashed"];'
        )
    styles: dict[str, list[str]] = {}
    for edge in edges:
        if edge.origin.kind == OriginKind.PIN:
            styles.setdefault(
                "pinned: one worker, in this order", [*_PIN_STYLE, 'label = "pinned"']
            )
        elif edge.origin.kind == OriginKind.CLEANUP:
            styles.setdefault("cleans up after: runs after it and its dependents",
                              ['style = "dashed"', f"label = {_quote(CLEANUP_LABEL)}"])
        elif edge.kind is Kind.AFTER:
            styles.setdefault('runs after, whatever the outcome (on_failure="run")',
                              ['style = "dashed"'])
        else:
            styles.setdefault("requires: skipped unless it passed", [])
        if edge.origin.name and edge.origin.kind != OriginKind.PIN:
            styles.setdefault("from that fixture", ['label = "fixture name"'])
    for number, (text, attrs) in enumerate(styles.items()):
        dependent = _quote(f"{_LEGEND_PREFIX}edge {number} dependent")
        dependency = _quote(f"{_LEGEND_PREFIX}edge {number} dependency")
        entries.append(f"    {dependent} [label = \"test\"];")
        entries.append(f"    {dependency} [label = {_quote(text)}];")
        style = f" [{', '.join(attrs)}]" if attrs else ""
        entries.append(f"    {dependent} -> {dependency}{style};")
    if not entries:
        return []
    return [
        '  subgraph "cluster_legend" {',
        '    label = "legend"; style = "rounded"; color = "grey60"; fontname = "Helvetica";',
        '    node [fontsize = 10, fillcolor = "white"];',
        *entries,
        "  }",
    ]


def write(
    path: str, plan: Plan, recorder: OutcomeRecorder | None, skips: Mapping[str, str]
) -> None:
    """Write DOT text to ``path`` (``-``: stdout), or render it with Graphviz by suffix.

    Raises :class:`RenderError` saying what went wrong.
    """
    text = render(plan, recorder, skips)
    if path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        if not needs_graphviz(path):
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)
            return
        _render_with_graphviz(path, text)
    except OSError as error:
        raise RenderError(f"could not write {path}: {error.strerror or error}") from None


def _render_with_graphviz(path: str, text: str) -> None:
    with tempfile.NamedTemporaryFile("w", suffix=".dot", delete=False, encoding="utf-8") as tmp:
        tmp.write(text)
    try:
        done = subprocess.run(
            ["dot", f"-T{suffix(path)}", "-o", path, tmp.name], capture_output=True, text=True
        )
    except OSError as error:
        raise RenderError(f"could not run Graphviz 'dot' to write {path}: {error}") from None
    finally:
        os.unlink(tmp.name)
    if done.returncode != 0:
        raise RenderError(f"Graphviz 'dot' failed to write {path}: {done.stderr.strip()}")


class DotExport(WrittenFile):
    """Writes the graph after the run and says where (registered on the controller only)."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        config = session.config
        state = session_state(config)
        if state.plan is None:
            return
        recorder = None if config.option.collectonly else state.recorder
        if self.path == "-":
            host.start_a_line(config)
        try:
            write(self.path, state.plan, recorder, state.skips)
        except RenderError as error:
            self.failed(session, str(error))
            return
        if self.path != "-":
            what = "DOT" if suffix(self.path) in TEXT_SUFFIXES else suffix(self.path).upper()
            self.written(f"generated depgraph {what} file: {os.path.abspath(self.path)}")
