"""Which way the run report draws the graph: the narrower way, so that its labels stay legible.

Graphviz draws the graph in layers by depth, the dependencies above (``rankdir = "BT"``, as
``--depgraph-dot`` writes it): a layer is a row, and each file a box beside the others. A suite
of hundreds of tests with few dependencies between them makes one row of hundreds of labels,
and the page, which shrinks the drawing to its width, shows them a few pixels high. Drawn
sideways (``"RL"``, the dependencies on the left), a layer is a column and the files are
stacked downwards: the drawing is as wide as the graph is deep, and grows down the page, which
scrolls. The page keeps the upright drawing while it is narrow enough to read at a laptop's
width, and otherwise takes the narrower of the two, estimated from the labels before
Graphviz runs.
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_depgraph.core.graph import Graph
from pytest_depgraph.core.order import kahn_order
from pytest_depgraph.core.plan import Plan

#: Graphviz's node labels (Helvetica, 14 points): points per character of a test's name, and
#: the box's margins (Graphviz 2.42's drawings of test names, 10 to 40 characters)
CHAR_PT = 7.8
MARGIN_PT = 22.0
#: Graphviz's defaults: between the nodes of a layer, between layers; a file's box's margins
NODE_SEP_PT = 18.0
RANK_SEP_PT = 36.0
CLUSTER_PT = 16.0
#: an upright drawing at most this wide stays upright: a 1,400-pixel window shrinks it to no
#: less than about three quarters, where its labels are 13 pixels high
UPRIGHT_PT = 1000.0


def direction(plan: Plan) -> str:
    """``"BT"`` (upright) or ``"RL"`` (sideways) for the page's drawing. O(V + E)."""
    levels = layers(plan.graph)
    widths = [label_width(nodeid) for nodeid in plan.nodeids]
    upright = upright_width(plan.nodeids, levels, widths)
    if upright <= UPRIGHT_PT:
        return "BT"
    return "RL" if sideways_width(levels, widths) < upright else "BT"


def layers(graph: Graph) -> list[int]:
    """Each node's layer: 0 without dependencies, else one more than its deepest
    dependency's (nodes on a cycle: 0). O(V + E)."""
    level = [0] * graph.size
    order, _ = kahn_order(graph)
    for node in order:
        for dependency in graph.dependencies_of(node):
            level[node] = max(level[node], level[dependency] + 1)
    return level


def label_width(nodeid: str) -> float:
    """The points a node's box takes across: its label is the node id without its file."""
    label = nodeid.split("::", 1)[1] if "::" in nodeid else nodeid
    return len(label) * CHAR_PT + MARGIN_PT


def upright_width(nodeids: Sequence[str], levels: Sequence[int], widths: Sequence[float]
                  ) -> float:
    """Layers as rows: each file's box is as wide as its widest row, the boxes side by side."""
    rows: dict[str, dict[int, float]] = {}
    for node, nodeid in enumerate(nodeids):
        row = rows.setdefault(nodeid.split("::", 1)[0], {})
        row[levels[node]] = row.get(levels[node], -NODE_SEP_PT) + widths[node] + NODE_SEP_PT
    return sum(max(row.values()) + CLUSTER_PT for row in rows.values())


def sideways_width(levels: Sequence[int], widths: Sequence[float]) -> float:
    """Layers as columns, each as wide as its widest label; the files' boxes stacked."""
    columns: dict[int, float] = {}
    for node, level in enumerate(levels):
        columns[level] = max(columns.get(level, 0.0), widths[node])
    return sum(columns.values()) + RANK_SEP_PT * max(len(columns) - 1, 0) + CLUSTER_PT
