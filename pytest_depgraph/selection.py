"""Node ids on the command line, widened to their files so dependencies can be collected.

``pytest tests/test_x.py::test_b`` collects only ``test_b``; the tests it depends on in the
same file would not exist for the graph. The node-id arguments are turned into file arguments
before collection, and after collection everything in those files that the node ids did not
name is deselected like ``--deselect`` would — then the graph pulls the needed ones back in.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass
class NodeIdSelection:
    """What the node-id arguments selected: a per-file list of node-id prefixes."""

    #: rootdir-relative file path -> node ids named on the command line for it
    by_file: dict[str, list[str]]
    #: the arguments as the user wrote them, by node id (for "not found" messages)
    written: dict[str, str]

    def check_found(self, collected: list[pytest.Item]) -> None:
        """A node id that names no test is an error, as in plain pytest."""
        missing = [
            nodeid for nodeids in self.by_file.values() for nodeid in nodeids
            if not any(_matches(item.nodeid, nodeid) for item in collected)
        ]
        if missing:
            args = " ".join(self.written[nodeid] for nodeid in missing)
            raise pytest.UsageError(f"not found: {args}")

    def apply(self, items: list[pytest.Item]) -> tuple[list[pytest.Item], list[pytest.Item]]:
        """Split items into (kept, deselected) by the node ids named for their file."""
        kept: list[pytest.Item] = []
        dropped: list[pytest.Item] = []
        for item in items:
            wanted = self.by_file.get(item.nodeid.split("::", 1)[0])
            if wanted is None or any(_matches(item.nodeid, nodeid) for nodeid in wanted):
                kept.append(item)
            else:
                dropped.append(item)
        return kept, dropped


def _matches(nodeid: str, selector: str) -> bool:
    return nodeid == selector or nodeid.startswith((selector + "::", selector + "["))


def widen_node_id_args(config: pytest.Config) -> NodeIdSelection | None:
    """Rewrite ``config.args`` so node-id arguments collect their whole file."""
    args = list(config.args)
    if not any("::" in arg for arg in args) or config.pluginmanager.has_plugin("dsession"):
        return None  # nothing to widen, or an xdist controller (its workers collect)
    invocation = config.invocation_params.dir
    whole_files: set[str] = set()
    by_file: dict[str, list[str]] = {}
    written: dict[str, str] = {}
    widened: list[str] = []
    for arg in args:
        path, sep, rest = arg.partition("::")
        relative = _relative(config.rootpath, invocation / path)
        if not sep:
            if relative is not None:
                whole_files.add(relative)
            widened.append(arg)
            continue
        if relative is None:
            widened.append(arg)  # outside rootdir: leave it to pytest
            continue
        nodeid = f"{relative}::{rest}"
        by_file.setdefault(relative, []).append(nodeid)
        written[nodeid] = arg
        if path not in widened:
            widened.append(path)
    for relative in whole_files:
        by_file.pop(relative, None)
    if not by_file:
        return None
    config.args[:] = widened
    return NodeIdSelection(by_file, written)


def _relative(rootpath: Path, path: Path) -> str | None:
    try:
        return path.resolve().relative_to(rootpath.resolve()).as_posix()
    except ValueError:
        return None
