"""Resolution of dependency targets (strings, functions, classes) into node numbers.

The rules are those of docs/markers.md, "Target strings". Every node id is indexed once under
each of its boundary prefixes
(``a/``, ``a/test_x.py``, ``a/test_x.py::C``, ``a/test_x.py::C::t``, the full id), so resolving a
target is a few dictionary look-ups instead of a scan over every test.
"""

from __future__ import annotations

import difflib
import posixpath
from collections.abc import Iterator, Sequence


def boundary_prefixes(nodeid: str) -> list[str]:
    """Every prefix of ``nodeid`` that ends at a ``/``, ``::`` or ``[`` boundary, and the id.

    O(len(nodeid)).
    """
    prefixes: list[str] = []
    bracket = nodeid.find("[")
    base = nodeid if bracket < 0 else nodeid[:bracket]
    path, sep, rest = base.partition("::")
    start = 0
    while True:
        slash = path.find("/", start)
        if slash < 0:
            break
        prefixes.append(path[: slash + 1])
        start = slash + 1
    prefixes.append(path)
    if sep:
        end = len(path)
        for part in rest.split("::"):
            end += 2 + len(part)
            prefixes.append(base[:end])
    if bracket >= 0:
        prefixes.append(nodeid)
    return prefixes


def is_path_qualified(target: str) -> bool:
    """Whether a target string is matched against node ids (rule 1) rather than names (2)."""
    return "::" in target or target.endswith((".py", "/"))


class TargetIndex:
    """Node ids indexed by boundary prefix, plus test functions and classes by identity."""

    def __init__(
        self,
        nodeids: Sequence[str],
        functions: Sequence[object | None],
        classes: Sequence[object | None],
    ) -> None:
        self.nodeids = list(nodeids)
        self._by_prefix: dict[str, list[int]] = {}
        self._by_function: dict[int, list[int]] = {}
        self._by_class: dict[int, list[int]] = {}
        for node, nodeid in enumerate(nodeids):
            for prefix in boundary_prefixes(nodeid):
                self._by_prefix.setdefault(prefix, []).append(node)
        for node, function in enumerate(functions):
            if function is not None:
                self._by_function.setdefault(id(function), []).append(node)
        for node, cls in enumerate(classes):
            if cls is not None:
                self._by_class.setdefault(id(cls), []).append(node)
        # keep the objects alive so their ids stay unique while the index exists
        self._objects = [*functions, *classes]
        self._contexts: dict[str, tuple[str, list[str]]] = {}

    def resolve(self, target: object, nodeid: str) -> Sequence[int]:
        """Nodes a target names, for a declaration on (or inherited by) test ``nodeid``.

        An empty sequence means no match. The result is shared: do not change it.
        """
        if isinstance(target, str):
            return self._resolve_string(target.strip(), nodeid)
        function = getattr(target, "__func__", target)
        return self._by_function.get(id(function)) or self._by_class.get(id(target)) or ()

    def _resolve_string(self, target: str, nodeid: str) -> Sequence[int]:
        by_prefix = self._by_prefix
        context = self._contexts.get(nodeid)
        if context is None:
            context = self._contexts[nodeid] = _split(nodeid)
        module, scopes = context
        # the usual cases first: a node id from the rootdir, a file beside the test's own, a
        # name in the test's own module
        if is_path_qualified(target):
            found = by_prefix.get(target)
            if found:
                return found
            directory = module.rpartition("/")[0]
            if directory:
                found = by_prefix.get(f"{directory}/{target}")
                if found:
                    return found
        elif not scopes:
            found = by_prefix.get(f"{module}::{target}")
            if found:
                return found
        for candidate in self._candidates(target, nodeid):
            found = by_prefix.get(candidate)
            if found:
                return found
        return ()

    def _candidates(self, target: str, nodeid: str) -> Iterator[str]:
        """Where ``target`` may point, in the documented order (generated lazily)."""
        context = self._contexts.get(nodeid)
        if context is None:
            context = self._contexts[nodeid] = _split(nodeid)
        module, scopes = context
        if is_path_qualified(target):
            normal = _normalize(target)
            if normal != target:  # the caller tried ``target`` as it is already
                yield normal
            directory = module.rpartition("/")[0]
            if directory and not target.startswith("/"):
                yield _normalize(f"{directory}/{target}")
            if _starts_with_path(target):
                return
            # "TestX::test_y": a class-qualified name, looked up like a bare name
        for depth in range(len(scopes), -1, -1):
            yield "::".join([module, *scopes[:depth], target])

    def suggest(self, target: object, nodeid: str, limit: int = 3) -> list[str]:
        """Close names for a target that matched nothing (difflib), best first."""
        if not isinstance(target, str):
            name = getattr(target, "__name__", "")
            target = str(name)
        module, _ = _split(nodeid)
        pool: set[str]
        if is_path_qualified(target):
            pool = set(self._by_prefix)
        else:
            # names in the same module first, then everywhere
            local = [p[len(module) + 2 :] for p in self._by_prefix if p.startswith(module + "::")]
            close = difflib.get_close_matches(target, local, n=limit, cutoff=0.6)
            if close:
                return close
            pool = {_last_name(p) for p in self._by_prefix if "::" in p}
        return difflib.get_close_matches(target, list(pool), n=limit, cutoff=0.6)


def _split(nodeid: str) -> tuple[str, list[str]]:
    """``path::C::t[x]`` -> (``path``, [``C``]): the module and the enclosing classes."""
    base = nodeid.split("[", 1)[0]
    parts = base.split("::")
    return parts[0], parts[1:-1]


def _normalize(target: str) -> str:
    """Normalise the path part of a target (``./a/../b.py::t`` -> ``b.py::t``)."""
    path, sep, rest = target.partition("::")
    if "\\" in path:
        path = path.replace("\\", "/")
    elif not (path.startswith(".") or "/." in path or "//" in path):
        return target  # nothing to normalise: the common case, and cheap
    trailing = "/" if path.endswith("/") and not sep else ""
    return posixpath.normpath(path) + trailing + sep + rest


def _starts_with_path(target: str) -> bool:
    head = target.split("::", 1)[0]
    return head.endswith(".py") or "/" in head


def _last_name(prefix: str) -> str:
    return prefix.rsplit("::", 1)[-1]
