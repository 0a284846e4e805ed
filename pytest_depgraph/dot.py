"""Graphviz DOT export of the reduced graph, with nodes filled by outcome after a run.

Edges point from the dependent to its dependency, as in ``terraform graph``; after edges are
dashed; edges that come from a fixture are labelled with the fixture's name.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping

from pytest_depgraph.graph import Kind
from pytest_depgraph.outcomes import (
    ERROR,
    FAILED,
    NOT_RUN,
    PASSED,
    SKIPPED,
    UPSTREAM,
    XFAILED,
    OutcomeRecorder,
)
from pytest_depgraph.plan import Plan

_RENDERED = (".svg", ".png", ".pdf")
_FILL = {
    PASSED: "palegreen",
    FAILED: "salmon",
    ERROR: "salmon",
    UPSTREAM: "lightgrey",
    SKIPPED: "khaki",
    XFAILED: "khaki",
    NOT_RUN: "white",
}


class RenderError(Exception):
    """Graphviz could not render the graph; the message says why."""


def needs_graphviz(path: str) -> bool:
    """Whether ``path`` asks for a rendered picture rather than DOT text."""
    return path.lower().endswith(_RENDERED)


def _quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def render(
    plan: Plan, recorder: OutcomeRecorder | None, skips: Mapping[str, str] | None = None
) -> str:
    """The DOT text. Without a recorder (``--collect-only``) nodes carry no outcome."""
    skips = skips or {}
    lines = [
        "digraph depgraph {",
        '  rankdir = "BT";',
        '  node [shape = "box", style = "rounded,filled", fillcolor = "white", '
        'fontname = "Helvetica"];',
        '  edge [fontname = "Helvetica", fontsize = 10];',
    ]
    files: dict[str, list[int]] = {}
    for node, nodeid in enumerate(plan.nodeids):
        files.setdefault(nodeid.split("::", 1)[0], []).append(node)
    for cluster, (path, nodes) in enumerate(files.items()):
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
                tooltip = outcome if nodeid not in skips else f"skipped: {skips[nodeid]} upstream"
                attrs.append(f"fillcolor = {_quote(_FILL.get(outcome, 'white'))}")
                attrs.append(f"tooltip = {_quote(tooltip)}")
            lines.append(f"    {_quote(nodeid)} [{', '.join(attrs)}];")
        lines.append("  }")
    for edge in plan.graph.edges():
        attrs = [f"tooltip = {_quote(edge.origin.describe())}"]
        if edge.kind is Kind.AFTER:
            attrs.append('style = "dashed"')
        if edge.origin.fixture:
            attrs.append(f"label = {_quote(edge.origin.fixture)}")
        lines.append(
            f"  {_quote(plan.nodeids[edge.dependent])} -> "
            f"{_quote(plan.nodeids[edge.dependency])} [{', '.join(attrs)}];"
        )
    lines.append("}")
    return "\n".join(lines) + "\n"


def write(
    path: str, plan: Plan, recorder: OutcomeRecorder | None, skips: Mapping[str, str]
) -> None:
    """Write DOT text to ``path`` (``-``: stdout), or render it with Graphviz by suffix."""
    text = render(plan, recorder, skips)
    if path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    if not needs_graphviz(path):
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        return
    fmt = path.rsplit(".", 1)[-1].lower()
    with tempfile.NamedTemporaryFile("w", suffix=".dot", delete=False, encoding="utf-8") as tmp:
        tmp.write(text)
    try:
        done = subprocess.run(
            ["dot", f"-T{fmt}", "-o", path, tmp.name], capture_output=True, text=True
        )
    except OSError as error:
        raise RenderError(f"could not run Graphviz 'dot' to write {path}: {error}") from None
    finally:
        os.unlink(tmp.name)
    if done.returncode != 0:
        raise RenderError(f"Graphviz 'dot' failed to write {path}: {done.stderr.strip()}")
