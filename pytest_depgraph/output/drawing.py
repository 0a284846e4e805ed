"""The run report's drawing of the graph: upright, or sideways when that is narrower.

Graphviz draws the graph in layers by depth, the dependencies above (``rankdir = "BT"``, as
``--depgraph-dot`` writes it): a layer is a row, and each file a box beside the others. A suite
of hundreds of tests with few dependencies between them makes one row of hundreds of labels,
and the page, which shrinks the drawing to its width, showed them a pixel high. Drawn sideways
(``"RL"``, the dependencies on the left), a layer is a column and the files' boxes are stacked
downwards: the drawing is as wide as the graph is deep and grows down the page, which scrolls.
The page keeps the upright drawing while it is narrow enough to read at a laptop's width;
otherwise Graphviz draws it sideways too, and the narrower of the two is kept. (Estimates
from the labels chose wrongly: edge labels widen a sideways drawing, and Graphviz packs an
upright one tighter than its layers suggest.)
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping

from pytest_depgraph.core.plan import Plan
from pytest_depgraph.output import dot
from pytest_depgraph.run.outcomes import OutcomeRecorder

#: an upright drawing at most this wide (points) stays upright: a 1,400-pixel window shrinks
#: it to no less than about three quarters, where its labels are 13 pixels high
UPRIGHT_PT = 1000.0
_WIDTH = re.compile(r'<svg width="([0-9.]+)pt"')


class DrawingError(Exception):
    """Graphviz failed; the message is its own."""


def draw(
    program: str, plan: Plan, recorder: OutcomeRecorder, skips: Mapping[str, str],
    timeout: float,
) -> str:
    """The graph as SVG text, upright or sideways (at most two runs of Graphviz's ``program``,
    each within ``timeout`` seconds: subprocess.TimeoutExpired, OSError, DrawingError)."""
    upright = _run(program, dot.render(plan, recorder, skips, rankdir="BT"), timeout)
    if width(upright) <= UPRIGHT_PT:
        return upright
    sideways = _run(program, dot.render(plan, recorder, skips, rankdir="RL"), timeout)
    return sideways if width(sideways) < width(upright) else upright


def width(svg: str) -> float:
    """The drawing's width in points, as Graphviz wrote it (0.0 when it did not say)."""
    found = _WIDTH.search(svg)
    return float(found.group(1)) if found else 0.0


def _run(program: str, text: str, timeout: float) -> str:
    done = subprocess.run(
        # newrank: layers by depth across the files' boxes (without it, a box with no
        # dependency inside it is drawn as one row, however deep the graph through it)
        [program, "-Tsvg", "-Gnewrank=true"],
        input=text, capture_output=True, text=True, timeout=timeout,
    )
    if done.returncode != 0:
        raise DrawingError(done.stderr.strip())
    return done.stdout
