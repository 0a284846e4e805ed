"""What collection reads in the test files to say more than pytest would: a test function imported
into another module to be named as a target (collected there too, it runs twice), and a
``depends_on`` mark on a fixture (pytest 9 rejects it with an error of its own)."""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from types import FunctionType

import pytest

from pytest_depgraph.collect import problems, safe
from pytest_depgraph.core.plan import Plan
from pytest_depgraph.hosts.pytest import rejects_marked_fixture


def warn_imported_targets(plan: Plan, items: list[pytest.Item]) -> None:
    """A test function imported into another module to be named as a target is collected
    there as well and runs twice; warn at the importing module, once per copy.

    O(tests): each module's namespace is read once for the functions it imported (usually
    none); a test that is a dependency is a copy when its name there is one of them; the edges
    are looked at only when a module holds such a copy."""
    if not plan.graph.edge_count:
        return
    # the modules that imported a function, by id(parent) of their tests, each looked at once
    # through one of its tests; none for a class: a method inherited from a class of another
    # module is usual and harmless (the test of a class is never a copy). The dependencies are
    # looked at only when a module imported one, usually none (measured, callgrind:
    # onefile10k's --collect-only, each dependency's parent looked up -> each parent of the
    # run's tests: pytest_collection_modifyitems 2,047 -> 2,027 M instructions; earlier,
    # real10k, a read of each dependency's function and module -> of each module's names
    # once: 0.210 -> 0.085 s profiled)
    imported_of: dict[int, frozenset[str]] = {}
    for key, item in {id(item.parent): item for item in items}.items():
        if not isinstance(item.parent, pytest.Class):
            imported = _imported_functions(getattr(item, "module", None))
            if imported:
                imported_of[key] = imported
    if not imported_of:
        return
    copies = {
        n for n in set(plan.graph.columns()[1])
        if n < len(items)  # not a dependency outside the run
        and getattr(items[n], "originalname", None) in imported_of.get(id(items[n].parent), ())
    }
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
                safe.text_attr(getattr(item, "module", None), "__name__"), item.nodeid,
                original,
            )),
            pytest.PytestWarning, str(item.path), _import_line(item.path, name),
        )


def _imported_functions(module: object) -> frozenset[str]:
    """The names under which ``module`` holds a function defined in another module."""
    name = safe.text_attr(module, "__name__")
    namespace = safe.attr(module, "__dict__")
    if not name or type(namespace) is not dict:
        return frozenset()
    return frozenset(
        key for key, value in namespace.items()
        if type(value) is FunctionType and value.__module__ != name
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
    # the readers are imported by the processes that read declarations, not by every one
    # (an xdist controller reads none)
    from pytest_depgraph.collect.readers.fixtures import FIXTURE_MARKS

    path = getattr(collector, "path", None)
    try:
        text = "" if path is None else path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return next((name for name in FIXTURE_MARKS if f"mark.{name}" in text), None)
