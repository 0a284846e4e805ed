"""Command-line paths and node ids, widened so that their dependencies can be collected.

``pytest tests/test_x.py::test_b`` collects only ``test_b``; the tests it depends on in the
same file — or in a file not named at all — would not exist for the graph. Before collection,
node-id arguments become file arguments, and the files that the named files and directories'
declarations point to are added (unless pytest is told to ignore them); after collection,
everything the user did not name is dropped, and the graph pulls back in what the selected
tests need. Tests collected only for this never count as "collected" or "deselected": the
terminal shows what the user named plus what was pulled in.
"""

from __future__ import annotations

import ast
import fnmatch
import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest


@dataclass
class NodeIdSelection:
    """What the node-id arguments selected: a per-file list of node-id prefixes."""

    #: rootdir-relative file path -> node ids named on the command line for it
    by_file: dict[str, list[str]]
    #: the arguments as the user wrote them, by node id (for "not found" messages)
    written: dict[str, str]
    #: rootdir-relative files that declarations point to but pytest is told to ignore
    ignored: list[str] = field(default_factory=list)

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
    """Rewrite ``config.args`` so node-id arguments collect their whole file, and the files
    that named files and directories depend on (found by :func:`referenced_files`) are
    collected too -- except files pytest is told to ignore (``--ignore``, ``collect_ignore``),
    which are remembered for the "not collected" message."""
    args = list(config.args)
    if config.pluginmanager.has_plugin("dsession"):
        return None  # an xdist controller: its workers collect
    invocation = config.invocation_params.dir
    rootpath = config.rootpath
    whole: set[str] = set()
    covered_dirs: list[Path] = []
    by_file: dict[str, list[str]] = {}
    written: dict[str, str] = {}
    widened: list[str] = []
    named_files: list[Path] = []
    for arg in args:
        path, sep, rest = arg.partition("::")
        absolute = (invocation / path).resolve()
        relative = _relative(rootpath, absolute)
        if absolute.is_dir():
            covered_dirs.append(absolute)
        elif absolute.is_file() and relative is not None:
            named_files.append(absolute)
        if not sep or relative is None:
            if relative is not None and not sep:
                whole.add(relative)
            widened.append(arg)  # a file, a directory, or outside the rootdir: as given
            continue
        nodeid = f"{relative}::{rest}"
        by_file.setdefault(relative, []).append(nodeid)
        written[nodeid] = arg
        if path not in widened:
            widened.append(path)
    # files below directory arguments declare dependencies too; a directory holding the
    # rootdir (a whole-suite run) reaches every target already, so it is not read
    given = config.args_source == pytest.Config.ArgsSource.ARGS
    for directory in covered_dirs if given else ():
        if directory != rootpath.resolve() and rootpath.resolve() in directory.parents:
            named_files.extend(_test_files(directory, config))
    extra = [
        path for path in referenced_files(named_files, rootpath)
        if not any(path == d or d in path.parents for d in covered_dirs)
    ]
    ignored: list[str] = []
    for extra_path in extra:
        extra_relative = _relative(rootpath, extra_path)
        if extra_relative is None or extra_relative in whole | set(by_file):
            continue
        if _ignored(config, extra_path):
            ignored.append(extra_relative)
            continue
        by_file[extra_relative] = []  # collected so it can be depended on; not selected
        widened.append(str(extra_path))
    for relative in whole:
        by_file.pop(relative, None)
    if not by_file:
        return NodeIdSelection({}, {}, ignored) if ignored else None
    config.args[:] = widened
    return NodeIdSelection(by_file, written, ignored)


def _ignored(config: pytest.Config, path: Path) -> bool:
    """Whether pytest would leave ``path`` out when it met it in a directory: the file or a
    folder above it (below the rootdir) is ignored."""
    root = config.rootpath.resolve()
    for candidate in [path, *path.parents]:
        if candidate == root or root not in candidate.parents:
            return False
        try:
            if config.hook.pytest_ignore_collect(collection_path=candidate, config=config):
                return True
        except Exception:  # a plugin's hook that expects a real collection: collect it
            return False
    return False


def _test_files(directory: Path, config: pytest.Config) -> list[Path]:
    """Test files and conftest.py files below ``directory`` that may declare dependencies
    (their text names a declaring call), skipping ``norecursedirs`` and hidden folders."""
    patterns = [str(p) for p in config.getini("python_files")] + ["conftest.py"]
    norecurse = [str(p) for p in config.getini("norecursedirs")]
    found: list[Path] = []
    for folder, dirs, files in os.walk(directory):
        dirs[:] = [d for d in dirs if not d.startswith(".")
                   and not any(fnmatch.fnmatch(d, p) for p in norecurse)]
        for name in files:
            if name.endswith(".py") and any(fnmatch.fnmatch(name, p) for p in patterns):
                path = Path(folder, name)
                try:
                    text = path.read_text(encoding="utf-8")
                except (OSError, UnicodeDecodeError):
                    continue
                if any(call in text for call in _DECLARING_CALLS):
                    found.append(path)
    return found


def uncollected_file(target: object, nodeid: str, rootpath: Path,
                     collected_files: set[str]) -> str | None:
    """The rootdir-relative file a path-qualified target names when that file exists but
    none of its tests was collected (None otherwise): the hint is then to collect it."""
    if not isinstance(target, str):
        return None
    path = target.split("::", 1)[0]
    if not path.endswith(".py"):
        return None
    own_dir = Path(nodeid.split("::", 1)[0]).parent
    for candidate in (rootpath / path, rootpath / own_dir / path):
        relative = _relative(rootpath, candidate) if candidate.is_file() else None
        if relative is not None and relative not in collected_files:
            return relative
    return None


#: calls whose string arguments may name tests in other files
_DECLARING_CALLS = {"depends_on", "output_fixture", "dependency", "order"}


def referenced_files(files: list[Path], rootpath: Path) -> list[Path]:
    """Test files that ``files`` (and the conftest.py files above them) name in dependency
    declarations, transitively — ``"tests/test_db.py::test_q"`` names ``tests/test_db.py``.

    A static scan of string literals in ``depends_on``/``output_fixture``/``dependency``/
    ``order`` calls: a target it cannot see (built at run time) is still reported as matching
    no collected test, never skipped silently.
    """
    seen: set[Path] = set(files)
    queue = list(files)
    for path in files:
        for parent in path.parents:
            conftest = parent / "conftest.py"
            if conftest.is_file() and conftest not in seen:
                seen.add(conftest)
                queue.append(conftest)
            if parent == rootpath:
                break
    found: list[Path] = []
    while queue:
        path = queue.pop()
        for text in _declared_strings(path):
            target = text.split("::", 1)[0]
            if not target.endswith(".py"):
                continue
            for base in (rootpath, path.parent):
                candidate = (base / target).resolve()
                if candidate.is_file() and candidate not in seen:
                    seen.add(candidate)
                    found.append(candidate)
                    queue.append(candidate)
                    break
    return found


def _declared_strings(path: Path) -> list[str]:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return []  # pytest reports the file itself when it collects it
    strings: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name not in _DECLARING_CALLS:
            continue
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            for leaf in ast.walk(arg):
                if isinstance(leaf, ast.Constant) and isinstance(leaf.value, str):
                    strings.append(leaf.value)
    return strings


def _relative(rootpath: Path, path: Path) -> str | None:
    try:
        return path.resolve().relative_to(rootpath.resolve()).as_posix()
    except ValueError:
        return None
