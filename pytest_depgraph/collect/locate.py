"""Where declarations were written: ``file:line`` relative to the rootdir, found on demand.

Only error messages, cycle reports and the DOT file show where a marker was written, so its
line is looked up when first asked for (reading the source), not for every test.
"""

from __future__ import annotations

import inspect
import linecache
import re
from pathlib import Path
from types import CodeType
from typing import TYPE_CHECKING

import pytest

from pytest_depgraph.collect import safe
from pytest_depgraph.collect.origins import OriginKind
from pytest_depgraph.core.graph.storage import Origin

if TYPE_CHECKING:
    from _pytest.nodes import Node


class Locator:
    """Turns code objects, paths and marks into ``file:line`` strings; caches per file."""

    def __init__(self, rootpath: Path) -> None:
        self._root = rootpath.resolve()
        self._relative_paths: dict[str, str] = {}
        self._mark_lines: dict[tuple[int, str], list[int]] = {}
        #: :meth:`mark`, one bound method that the origins of every marker share
        self.mark_where = self.mark

    def relative(self, filename: str) -> str:
        """``/abs/path/f.py:12`` (or a path) relative to rootdir, with forward slashes."""
        path, sep, line = filename.rpartition(":")
        if not sep or not line.isdigit():
            path, sep, line = filename, "", ""
        rel = self._relative_paths.get(path)
        if rel is None:
            try:
                rel = Path(path).resolve().relative_to(self._root).as_posix()
            except ValueError:
                rel = Path(path).as_posix()
            self._relative_paths[path] = rel
        return f"{rel}{sep}{line}"

    def definition(self, obj: object) -> str:
        """``file:line`` of a function's definition."""
        code = _code(obj)
        if code is None:
            return "<unknown>"
        return self.relative(f"{code.co_filename}:{code.co_firstlineno}")

    def mark(self, node: Node, mark: pytest.Mark) -> str:
        """``file:line`` of the decorator (or ``pytestmark``) that wrote ``mark`` on ``node``.

        The file is where the marked function or class was written, which is not the node's
        file when a module imports a test class or a class inherits tests from one in another
        module; a class marker is found on the class of the MRO that holds it.
        """
        obj = safe.attr(node, "obj")
        path = getattr(node, "path", None)
        if path is None:
            return node.nodeid
        filename = str(path)
        if not isinstance(node, pytest.Module):
            obj = _holder(obj, mark)
            filename = _source_file(obj) or filename
        rel = self.relative(filename)
        lines = self._marker_lines(node, obj, filename, mark.name)
        if not lines:
            return rel
        if len(lines) == 1:
            return f"{rel}:{lines[0]}"
        own = [m for m in own_marks(obj) if m.name == mark.name]
        # decorators apply bottom-up, so the last declared mark is the top line
        for k, candidate in enumerate(own):
            if candidate is mark and len(own) == len(lines):
                return f"{rel}:{lines[len(own) - 1 - k]}"
        return f"{rel}:{lines[0]}"

    def _marker_lines(self, node: object, obj: object, filename: str, name: str) -> list[int]:
        """1-based lines that mention marker ``name`` in ``obj``'s decorators or
        ``pytestmark``."""
        key = (id(obj), name)
        if key in self._mark_lines:
            return self._mark_lines[key]
        found: list[int] = []
        if isinstance(node, pytest.Module):
            lines = linecache.getlines(filename)
            for number, text in enumerate(lines, 1):
                if re.match(r"\s*pytestmark\b", text):
                    found.append(number)
                    break
        else:
            first = first_line(obj)
            if first:
                lines = linecache.getlines(filename)
                for number in range(first, min(first + 200, len(lines)) + 1):
                    text = lines[number - 1]
                    if name in text:
                        found.append(number)
                    elif text.lstrip().startswith(("def ", "async def", "class ")):
                        break
                if not found:
                    found.append(first)
        self._mark_lines[key] = found
        return found


def marker_origin(
    locator: Locator, node: Node, mark: pytest.Mark, kind: OriginKind = OriginKind.MARKER
) -> Origin:
    """The origin of a marker's edges, whose ``file:line`` (:meth:`Locator.mark`) is found
    when first read: only error messages, cycle reports and the DOT file show it. (The
    locator's one bound method and two arguments, rather than an argument tuple: one object
    less per marker, kept until the process ends. Measured, callgrind: onefile10k's
    ``--collect-only``, 10,000 markers: the build, the summary and the process's end 2,548 ->
    2,533 M instructions, the end alone 376 -> 366 M.)"""
    # by position: keywords cost the call (0.49 -> 0.26 us, timeit, best of 7)
    return Origin(kind, locator.mark_where, "", node, mark)


def _holder(obj: object, mark: pytest.Mark) -> object:
    """The class of ``obj``'s MRO whose own ``pytestmark`` holds ``mark`` (``obj`` itself when
    it is not a class or nothing else holds it)."""
    if not safe.is_class(obj):
        return obj
    for cls in safe.attr(obj, "__mro__", ()) or ():
        stored = safe.attr(cls, "__dict__", {}).get("pytestmark") if safe.is_class(cls) else None
        if stored is None:
            continue
        stored = stored if type(stored) in (list, tuple) else [stored]
        if any(m is mark or getattr(m, "mark", None) is mark for m in stored):
            return cls
    return obj


def _source_file(obj: object) -> str:
    """The file a function or class was written in ("" when unknown)."""
    code = _code(obj)
    if code is not None:
        return code.co_filename
    if not safe.is_class(obj):
        return ""
    try:
        return inspect.getsourcefile(obj) or ""  # type: ignore[arg-type]
    except Exception:  # a class made at run time, or a strange one
        return ""


def own_marks(obj: object) -> list[pytest.Mark]:
    """The marks stored on ``obj`` itself (``pytestmark`` may be one mark or a list)."""
    stored = safe.attr(obj, "pytestmark", [])
    if type(stored) not in (list, tuple):
        stored = [stored]
    marks = [m.mark if issubclass(type(m), pytest.MarkDecorator) else m for m in stored]
    return [m for m in marks if type(m) is pytest.Mark]


def _code(obj: object) -> CodeType | None:
    """The code of a function, or of the function it wraps (``functools.wraps``)."""
    for _ in range(100):
        if safe.is_function(obj):
            inner = safe.attr(obj, "__wrapped__")
            if inner is None:
                code: CodeType = obj.__code__  # type: ignore[attr-defined]
                return code
            obj = inner
        elif safe.is_method(obj):
            obj = safe.attr(obj, "__func__")
        else:
            inner = safe.attr(obj, "__wrapped__") or safe.attr(obj, "_fixture_function")
            if inner is None:
                return None
            obj = inner
    return None


def first_line(obj: object) -> int:
    """The first line of a function's or class's definition (its first decorator); 0 if
    unknown."""
    code = _code(obj)
    if code is not None:
        return int(code.co_firstlineno)
    if not safe.is_class(obj):
        return 0
    try:
        return inspect.getsourcelines(obj)[1]  # type: ignore[arg-type]
    except Exception:  # no source (a class made at run time), or a strange one
        return 0
