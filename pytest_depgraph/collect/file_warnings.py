"""What collection reads in the test files to say more than pytest would: a test function imported
into another module to be named as a target (collected there too, it runs twice), and a
``depends_on`` mark on a fixture (pytest 9 rejects it with an error of its own)."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

from pytest_depgraph.collect import problems, safe
from pytest_depgraph.collect.context import function_of
from pytest_depgraph.collect.readers.fixtures import FIXTURE_MARKS
from pytest_depgraph.core.plan import Plan
from pytest_depgraph.hosts.pytest import rejects_marked_fixture


def warn_imported_targets(plan: Plan, items: list[pytest.Item]) -> None:
    """A test function imported into another module to be named as a target is collected
    there as well and runs twice; warn at the importing module, once per copy.

    O(items) attribute reads, each module's name read once; the edges are looked at only
    when a test's function was defined in another module than the one it is collected in."""
    if not plan.graph.edge_count:
        return
    copies: set[int] = set()
    module_of: dict[int, str | None] = {}  # id(parent) -> name of the module collected in
    for n, item in enumerate(items):
        parent = item.parent
        # a method inherited from a class of another module: usual and harmless (the test of
        # a class is never a copy)
        if isinstance(parent, pytest.Class):
            continue
        if id(parent) not in module_of:
            module_of[id(parent)] = safe.text_attr(getattr(item, "module", None), "__name__")
        module = module_of[id(parent)]
        defined_in = safe.text_attr(function_of(item), "__module__")
        if module and defined_in and defined_in != module and getattr(item, "cls", None) is None:
            copies.add(n)
    warned: set[int] = set()
    for _dependent, dependency, _kind in plan.graph.triples() if copies else ():
        if dependency not in copies or dependency in warned:
            continue
        warned.add(dependency)
        item = items[dependency]
        function = getattr(item, "function", None)
        name = getattr(function, "__name__", item.name)
        original = next((other.nodeid for other in items if other is not item
                         and getattr(other, "function", None) is function),
                        f"path/to/test_file.py::{name}")
        warnings.warn_explicit(
            pytest.PytestWarning(problems.imported_target(
                name, str(getattr(function, "__module__", None)),
                str(module_of[id(item.parent)]), item.nodeid, original,
            )),
            pytest.PytestWarning, str(item.path), _import_line(item.path, name),
        )


def _import_line(path: Path, name: str) -> int:
    """The line of ``path`` that imports ``name`` (1 when it cannot be found)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return 1
    pattern = re.compile(rf"\bimport\b.*\b{re.escape(name)}\b")
    return next((n for n, line in enumerate(lines, 1) if pattern.search(line)), 1)


def explain_marked_fixture(collector: pytest.Collector, report: object) -> None:
    """pytest >= 9 rejects marks on fixtures itself, at import: when a module that mentions
    one of this plugin's marks fails so, say what to use instead beside pytest's error."""
    if rejects_marked_fixture(report):
        marker = _mentioned_marker(collector)
        if marker is not None:
            assert isinstance(report, pytest.CollectReport)
            report.sections.append(("depgraph", problems.fixture_mark_hint(marker)))


def _mentioned_marker(collector: pytest.Collector) -> str | None:
    """The first of this plugin's marks that the collector's file mentions (None: none)."""
    path = getattr(collector, "path", None)
    try:
        text = "" if path is None else path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return next((name for name in FIXTURE_MARKS if f"mark.{name}" in text), None)
