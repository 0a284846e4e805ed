"""Resolution of dependency targets (strings, functions, classes) into node numbers.

The rules are those of docs/markers.md, "Target strings". Every node id is indexed once under
each of its boundary prefixes
(``a/``, ``a/test_x.py``, ``a/test_x.py::C``, ``a/test_x.py::C::t``, the full id), so resolving a
target is a few dictionary look-ups instead of a scan over every test.
"""

from __future__ import annotations

import posixpath
import types
from collections.abc import Iterator, Sequence
from typing import Callable, Optional, Union


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


def _name_prefixes(nodeid: str) -> list[str]:
    """The boundary prefixes of ``nodeid`` that hold ``::`` (those of
    :func:`boundary_prefixes` but the folders and the file), without cutting the path."""
    bracket = nodeid.find("[")
    base = nodeid if bracket < 0 else nodeid[:bracket]
    end = base.find("::")
    prefixes: list[str] = []
    if end >= 0:
        while True:  # as base.split("::"): each separator after the previous one
            end = base.find("::", end + 2)
            if end < 0:
                prefixes.append(base)
                break
            prefixes.append(base[:end])
    if bracket >= 0:
        prefixes.append(nodeid)
    return prefixes


def is_path_qualified(target: str) -> bool:
    """Whether a target string is matched against node ids (rule 1) rather than names (2)."""
    return "::" in target or target.endswith((".py", "/"))


#: the functions or classes of the nodes, or what makes them when first needed
Objects = Union[Sequence[Optional[object]], Callable[[], Sequence[Optional[object]]]]


class TargetIndex:
    """Node ids indexed by boundary prefix, plus test functions and classes by identity.

    Each table is made when the first target that needs it is resolved: the prefixes that
    hold ``::`` (a test, its parametrized instances, a class: what nearly every target names),
    the paths (a file or folder: only for a target naming one), the objects (only for a
    function or class target). A suite whose targets are test names never indexes its files.
    """

    def __init__(self, nodeids: Sequence[str], functions: Objects, classes: Objects) -> None:
        self.nodeids = list(nodeids)
        #: prefixes with ``::`` (and node ids with ``[``) -> nodes; None until needed
        self._by_name: dict[str, list[int]] | None = None
        #: prefixes without ``::``: folders, files (and such node ids with ``[``) -> nodes
        self._by_path: dict[str, list[int]] | None = None
        self._functions = functions
        self._classes = classes
        self._by_object: tuple[dict[int, list[int]], dict[int, list[int]]] | None = None
        #: one context per class or module, shared by the node ids in it
        self._scopes: dict[str, tuple[str, list[str]]] = {}
        #: class or module -> the prefixes of a name in it, innermost first (``m::C::``, ``m::``)
        self._outward: dict[str, list[str]] = {}
        self._files: tuple[dict[str, list[str]], dict[str, list[str]]] | None = None
        self._last_names: list[str] | None = None

    def _prefixes(self, key: str) -> list[int] | None:
        """The nodes under the boundary prefix ``key`` (None: none)."""
        if "::" in key:
            by_name = self._by_name
            if by_name is None:
                by_name = self._by_name = self._index(with_names=True)
            return by_name.get(key)
        by_path = self._by_path
        if by_path is None:
            by_path = self._by_path = self._index(with_names=False)
        return by_path.get(key)

    def _index(self, with_names: bool) -> dict[str, list[int]]:
        """The boundary prefixes (:func:`boundary_prefixes`) with ``::`` (``with_names``) or
        those without, each with its nodes in order. O(total length of the node ids)."""
        table: dict[str, list[int]] = {}
        prefixes_of = _name_prefixes if with_names else boundary_prefixes
        for node, nodeid in enumerate(self.nodeids):
            for prefix in prefixes_of(nodeid):
                if ("::" in prefix) is with_names:
                    table.setdefault(prefix, []).append(node)
        return table

    def _objects(self) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
        if self._by_object is None:
            functions = self._functions() if callable(self._functions) else self._functions
            classes = self._classes() if callable(self._classes) else self._classes
            by_function: dict[int, list[int]] = {}
            by_class: dict[int, list[int]] = {}
            for node, function in enumerate(functions):
                if function is not None:
                    by_function.setdefault(id(function), []).append(node)
            for node, cls in enumerate(classes):
                if cls is not None:
                    by_class.setdefault(id(cls), []).append(node)
            # keep the objects alive so their ids stay unique while the index exists
            self._functions, self._classes = list(functions), list(classes)
            self._by_object = (by_function, by_class)
        return self._by_object

    def resolve(self, target: object, nodeid: str) -> Sequence[int]:
        """Nodes a target names, for a declaration on (or inherited by) test ``nodeid``.

        An empty sequence means no match. The result is shared: do not change it.
        """
        if issubclass(type(target), str):
            # a str subclass's own methods are never called
            return self._resolve_string(str.__str__(target).strip(), nodeid)
        # a target is any object: it is looked up by identity, never asked anything but a
        # method's function
        function = target.__func__ if type(target) is types.MethodType else target
        by_function, by_class = self._objects()
        return by_function.get(id(function)) or by_class.get(id(target)) or ()

    def resolve_all(
        self, targets: Sequence[object], nodeid: str, outward: list[str] | None = None
    ) -> list[tuple[object, Sequence[int]]]:
        """Each target with :meth:`resolve` of it, for one declaration. The usual target of
        a large suite, the name of a test, is looked up directly in each scope around the test,
        innermost first, as :meth:`_candidates` would name them (``outward``:
        :meth:`outward_of` the test, when the caller has it)."""
        # measured: onefile10k's 30,000 targets (names outside classes) resolve in 62-75 ->
        # 21-43 ms (min of 7 a run, 4 runs each side, loaded machine): through
        # _resolve_string -> directly; real10k's node ids and names in classes call
        # _resolve_string 14,267 -> 3,093 times, the build 1.48M -> 1.41M calls
        if outward is None:
            outward = self.outward_of(nodeid)
        by_name = self._by_name
        if by_name is None:
            by_name = self._by_name = self._index(with_names=True)
        resolved: list[tuple[object, Sequence[int]]] = []
        for target in targets:
            text = target.strip() if type(target) is str else ""
            found: Sequence[int] = ()
            if not text:
                found = self.resolve(target, nodeid)
            elif "::" in text:
                # the other usual target, a node id, is tried as written first
                found = by_name.get(text) or self._resolve_string(text, nodeid)
            elif text.endswith((".py", "/")):  # a file or folder (is_path_qualified)
                found = self._resolve_string(text, nodeid)
            else:
                for prefix in outward:
                    hit = by_name.get(prefix + text)
                    if hit:
                        found = hit
                        break
            resolved.append((target, found))
        return resolved

    def _resolve_string(self, target: str, nodeid: str) -> Sequence[int]:
        """The nodes of the first place ``target`` may point to that holds any: the target as
        written when it is path-qualified (a node id from the rootdir, a file, a folder), then
        :meth:`_candidates`."""
        if is_path_qualified(target):
            found = self._prefixes(target)
            if found:
                return found
        for candidate in self._candidates(target, nodeid):
            found = self._prefixes(candidate)
            if found:
                return found
        return ()

    def _context_of(self, nodeid: str) -> tuple[str, list[str]]:
        """:func:`_split` of ``nodeid``, one tuple per class or module (a node id's context
        is its module and classes: the part before its last ``::``)."""
        base = nodeid.split("[", 1)[0]
        scope = base.rpartition("::")[0]
        if not scope:
            return _split(nodeid)  # a node id without a class or module part (rare)
        context = self._scopes.get(scope)
        if context is None:
            context = self._scopes[scope] = _split(nodeid)
        return context

    def outward_of(self, nodeid: str) -> list[str]:
        """The prefixes of a name in the scopes around ``nodeid``, innermost first (``m::C::``,
        ``m::``), one list per class or module (as :meth:`_context_of`)."""
        scope = nodeid.split("[", 1)[0].rpartition("::")[0]
        outward = self._outward.get(scope) if scope else None
        if outward is None:
            module, scopes = self._context_of(nodeid)
            outward = ["::".join([module, *scopes[:depth], ""])
                       for depth in range(len(scopes), -1, -1)]
            if scope:
                self._outward[scope] = outward
        return outward

    def _candidates(self, target: str, nodeid: str) -> Iterator[str]:
        """Where ``target`` may point besides itself, in the documented order (generated
        lazily)."""
        module = self._context_of(nodeid)[0]
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
        for prefix in self.outward_of(nodeid):
            yield prefix + target

    def missing_path(self, target: str, nodeid: str) -> str:
        """The path part of a path-qualified ``target`` when no collected file or folder is
        there (relative to the rootdir or to the test's own folder), else ""."""
        target = target.strip()
        if not _starts_with_path(target):
            return ""  # a name, or "TestX::test_y": a class-qualified name
        path = target.split("::", 1)[0]
        if ":" in path:
            return ""  # 'tests/test_m.py:test_a': a node id with one colon, not a path
        module = self._context_of(nodeid)[0]
        directory = module.rpartition("/")[0]
        tried = [path, _normalize(path)]
        if directory and not path.startswith("/"):
            tried.append(_normalize(f"{directory}/{path}"))
        for candidate in tried:
            if self._prefixes(candidate) or self._prefixes(candidate.rstrip("/") + "/"):
                return ""
        return path

    def suggest(self, target: object, nodeid: str, limit: int = 3) -> list[str]:
        """Close names for a target string that matched nothing, best first; never the test
        it is declared for.

        Cheap whatever the suite: a missing file is compared with the collected files (same
        file name first), a missing name with the names of its file, then with the distinct
        test names of the session.
        """
        if not isinstance(target, str) or len(target) > _SUGGEST_LIMIT:
            return []  # difflib indexes every character of the target: not for a megabyte
        import difflib  # only a target that matches nothing needs it

        target = target.strip()
        module, _ = self._context_of(nodeid)
        own = nodeid.split("[", 1)[0]
        if ":" in target and "::" not in target:
            fixed = target.replace(":", "::", 1)  # 'test_m.py:test_a'
            if self.resolve(fixed, nodeid):
                return [fixed]
        if _starts_with_path(target):
            path, sep, rest = target.partition("::")
            missing = self.missing_path(target, nodeid)
            if missing:
                moved = (f"{p}{sep}{rest}" for p in self._close_files(missing, limit))
                return [target for target in moved if self.resolve(target, nodeid)]
            if not sep:
                return []
            found = self.resolve(path, nodeid)
            if not found:
                return []
            file = self.nodeids[found[0]].split("::", 1)[0]
            pool = [n for n in self._names_of(file) if f"{file}::{n}" != own]
            return [f"{path}::{n}" for n in difflib.get_close_matches(rest, pool, n=limit)]
        # names in the same module first, then everywhere
        own_name = own.split("::", 1)[-1]
        local = [n for n in self._names_of(module) if n != own_name]
        close = difflib.get_close_matches(target, local, n=limit)
        if close:
            return close
        pool = [n for n in self._all_names() if n != own.rsplit("::", 1)[-1]]
        return difflib.get_close_matches(target, pool, n=limit)

    def _suggestion_index(self) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        """File -> names in it (``test_a``, ``TestC``, ``TestC::test_x``), and file name ->
        files; made once, when the first suggestion is asked for. O(prefixes)."""
        if self._files is None:
            names: dict[str, list[str]] = {}
            # every prefix, in the order of its first node (as one table would hold them)
            prefixes = sorted(
                {**self._index(with_names=False), **self._index(with_names=True)}.items(),
                key=lambda entry: entry[1][0],
            )
            for prefix, _nodes in prefixes:
                file, sep, rest = prefix.partition("::")
                if sep:
                    names.setdefault(file, []).append(rest)
                elif not prefix.endswith("/"):
                    names.setdefault(file, [])
            by_basename: dict[str, list[str]] = {}
            for file in names:
                by_basename.setdefault(file.rpartition("/")[2], []).append(file)
            self._files = (names, by_basename)
        return self._files

    def _names_of(self, file: str) -> list[str]:
        return self._suggestion_index()[0].get(file, [])

    def _all_names(self) -> list[str]:
        if self._last_names is None:
            self._last_names = sorted(
                {_last_name(n) for names in self._suggestion_index()[0].values() for n in names}
            )
        return self._last_names

    def _close_files(self, path: str, limit: int) -> list[str]:
        """Collected files like ``path``: the same file name in another folder first."""
        by_basename = self._suggestion_index()[1]
        base = path.rstrip("/").rpartition("/")[2]
        same = by_basename.get(base, [])
        if same:
            return sorted(same)[:limit]
        import difflib

        close = difflib.get_close_matches(base, list(by_basename), n=limit)
        return [file for name in close for file in sorted(by_basename[name])][:limit]


#: longest target string that close names are looked for (longer is no typo of a name)
_SUGGEST_LIMIT = 1000


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
