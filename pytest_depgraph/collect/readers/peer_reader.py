"""What the peer plugins' readers share: the base class that reports a bad name.

A peer reader (:mod:`.pytest_dependency`, :mod:`.pytest_order`) reads one other plugin's markers,
test by test; this module holds its base class: the ``file:line`` of a marker, a problem for the
test, and the warning (or, with ``--depgraph-strict``, the error) for a name that matches no
test.
"""

from __future__ import annotations

import linecache
import re
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_depgraph.collect import problems
from pytest_depgraph.collect.context import Context
from pytest_depgraph.collect.locate import first_line
from pytest_depgraph.collect.readers.base import Place, PlaceReader, Sharing


class PeerReader(PlaceReader):
    """The base of a peer plugin's reader: read test by test (a marker of another plugin
    applies by its own rules), where a marker was written, and its problems."""

    sharing = Sharing.TEST

    def __init__(self, context: Context) -> None:
        super().__init__(context)
        self.settings = context.settings
        self._where: dict[tuple[int, str], str] = {}

    def places(self, item: pytest.Item, position: int) -> Sequence[Place]:
        return (Place(position, item),)

    def report(self, position: int, message: str) -> None:
        """A collection error for the test at ``position`` (``{more}`` left for the count)."""
        item = self.context.collected[position]
        problem = self.context.problem(message, report_nodeid=item.nodeid.split("::", 1)[0])
        problem.items.add(position)

    def stale(
        self, position: int, message: str, where: str, name: str, plugin: str,
        skip: str | None = None,
    ) -> None:
        """A name in another plugin's marker that matches no test: with ``--depgraph-strict`` a
        collection error; else that plugin's own treatment -- a warning at the marker, then the
        marker ignored (pytest-order) or the dependent skipped with ``skip`` as its reason
        (pytest-dependency) -- so that a suite with a stale name still runs unedited."""
        if self.settings.strict:
            self.report(position, message)
            return
        if skip is not None:
            item = self.context.collected[position]
            if not any(m.kwargs.get("reason") == skip for m in item.iter_markers("skip")):
                item.add_marker(pytest.mark.skip(reason=skip))
        text = problems.stale_warning(message, where, plugin, skip is not None)

        def warn() -> None:
            warned = self.context.warned
            if (where, name) in warned:
                return
            warned.add((where, name))
            try:
                warn_at(text, self.context.rootpath, where)
            except Warning:  # -W error: the warning is an error, reported as one
                self.report(position, message)

        # given once the tests read with this one are, in the order of the tests
        self.context.warnings.append((position, warn))

    def where(self, node: Any, mark: pytest.Mark) -> str:
        """``file:line`` of the decorator, ``pytestmark`` or ``pytest.param`` with ``mark``."""
        path = getattr(node, "path", None)
        if path is None:
            return str(node.nodeid)
        obj = getattr(node, "obj", None)
        key = (id(obj), mark.name)
        if key not in self._where:
            self._where[key] = self._find_where(node, obj, str(path), mark.name)
        return self._where[key]

    def _find_where(self, node: object, obj: object, filename: str, name: str) -> str:
        rel = self.context.relative(filename)
        lines = linecache.getlines(filename)
        if isinstance(node, pytest.Module):
            for number, text in enumerate(lines, 1):
                if re.match(r"\s*pytestmark\b", text):
                    return f"{rel}:{number}"
            return rel
        first = first_line(obj)
        if not first:
            return rel
        for number in range(first, min(first + 200, len(lines)) + 1):
            text = lines[number - 1]
            if re.match(r"\s*(async\s+def|def|class)\s", text):
                break
            if f"mark.{name}" in text:
                return f"{rel}:{number}"
        return f"{rel}:{first}"


def warn_at(message: str, rootpath: Path, where: str) -> None:
    """Warn at ``where`` (``file:line`` relative to ``rootpath``): pytest's warnings summary
    shows the marker's place, not ours."""
    filename, _, line = where.rpartition(":")
    if not line.isdigit():
        filename, line = where, "0"
    warnings.warn_explicit(
        pytest.PytestWarning(message), pytest.PytestWarning, str(rootpath / filename),
        int(line),
    )
