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
from pathlib import Path

import pytest

from pytest_depgraph.collect.readers import READERS
from pytest_depgraph.collect.readers.peer_reader import PeerReader


class NodeIdSelection:
    """What the node-id arguments selected: a per-file list of node-id prefixes."""

    __slots__ = ("by_file", "ignored", "written")

    def __init__(
        self, by_file: dict[str, list[str]], written: dict[str, str], ignored: list[str]
    ) -> None:
        #: rootdir-relative file path -> node ids named on the command line for it
        self.by_file = by_file
        #: the arguments as the user wrote them, by node id (for "not found" messages)
        self.written = written
        #: rootdir-relative files that declarations point to but pytest is told to ignore
        self.ignored = ignored

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
    invocation = config.invocation_params.dir
    rootpath = config.rootpath
    whole: set[str] = set()
    covered_dirs: list[Path] = []
    by_file: dict[str, list[str]] = {}
    written: dict[str, str] = {}
    widened: list[str] = []
    named_files: list[Path] = []
    #: files named only through node ids: the top-level tests named in each
    narrowed: dict[Path, set[str]] = {}
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
        narrowed.setdefault(absolute, set()).add(rest.split("::", 1)[0].split("[", 1)[0])
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
        path for path in referenced_files(
            named_files, rootpath,
            {path: names for path, names in narrowed.items()
             if _relative(rootpath, path) not in whole},
        )
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
                if any(call in text for call in DECLARING_CALLS):
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


#: calls whose string arguments may name tests in other files: every reader's
DECLARING_CALLS = frozenset(call for reader in READERS for call in reader.calls)
#: those of the peer plugins' readers
PEER_CALLS = frozenset(
    call for reader in READERS if issubclass(reader, PeerReader) for call in reader.calls
)


def referenced_files(
    files: list[Path], rootpath: Path, only: dict[Path, set[str]] | None = None
) -> list[Path]:
    """Test files that ``files`` (and the conftest.py files above them) name in dependency
    declarations, transitively — ``"tests/test_db.py::test_q"`` names ``tests/test_db.py``.

    A static scan of string literals in the calls the readers name (:data:`DECLARING_CALLS`:
    ``depends_on``, ``cleanup_of``, ``output_fixture``, ``dependency``, ``order``): a target
    it cannot see (built at run time) is still reported as matching no collected test, never
    skipped silently. ``only`` narrows a file to some of
    its top-level tests (node-id arguments): then only their declarations are read, with those
    of the tests they name in the same file, and of everything in the file that is not a test
    (fixtures, ``pytestmark``); a target in another file is read the same way, narrowed to the
    test it names. So ``pytest a.py::test_x`` imports the files ``test_x`` needs, not those that
    the other tests of ``a.py`` need.
    """
    #: what was read of each file: some top-level tests, or all of it (None)
    scanned: dict[Path, set[str] | None] = {}
    pending: dict[Path, set[str] | None] = {}

    def want(path: Path, names: set[str] | None) -> None:
        done = scanned.get(path, set()) if path in scanned else set()
        if path in scanned and (done is None or (names is not None and names <= done)):
            return
        if path in pending:
            before = pending[path]
            pending[path] = None if names is None or before is None else before | names
        else:
            pending[path] = names

    narrow = only or {}
    for path in files:
        want(path, narrow.get(path))
        for parent in path.parents:
            conftest = parent / "conftest.py"
            if conftest.is_file():
                want(conftest, None)
            if parent == rootpath:
                break
    known = set(pending)
    found: list[Path] = []
    while pending:
        path, names = pending.popitem()
        done = scanned.get(path, set())
        names = None if names is None or done is None else names | done
        scanned[path] = names
        for text in _declared_strings(path, names):
            target, sep, rest = text.partition("::")
            if not target.endswith(".py"):
                continue
            name = rest.split("::", 1)[0].split("[", 1)[0] if sep else ""
            for base in (rootpath, path.parent):
                candidate = (base / target).resolve()
                if candidate.is_file():
                    want(candidate, {name} if name else None)
                    if candidate not in known:
                        known.add(candidate)
                        found.append(candidate)
                    break
    return found


def _declared_strings(path: Path, names: set[str] | None = None) -> list[str]:
    """String arguments of the declaring calls in ``path``; with ``names``, only in the
    top-level tests of those names, the tests they name in the same file (bare names and
    function objects), and everything that is not a test. A file with pytest-dependency or
    pytest-order markers is read whole (their names are aliases and labels)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return []  # pytest reports the file itself when it collects it
    everything, _, other_plugins = _call_strings(tree)
    if names is None or other_plugins:
        return everything
    tests = {
        node.name: node for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and node.name.lower().startswith("test")
    }
    strings: list[str] = []
    for node in tree.body:
        if not (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and tests.get(node.name) is node):
            strings += _call_strings(node)[0]
    queue = [name for name in names if name in tests]
    done: set[str] = set()
    while queue:
        name = queue.pop()
        if name in done:
            continue
        done.add(name)
        texts, referenced, _ = _call_strings(tests[name])
        strings += texts
        for text in texts:
            head = text.split("::", 1)[0].split("[", 1)[0]
            if head in tests:
                queue.append(head)  # a bare name (or Class::test) in this file
        queue.extend(n for n in referenced if n in tests)
    return strings


def _call_strings(tree: ast.AST) -> tuple[list[str], set[str], bool]:
    """The string arguments of the declaring calls in ``tree``, the plain names among their
    arguments (function objects), and whether a pytest-dependency or pytest-order call is
    among them."""
    strings: list[str] = []
    referenced: set[str] = set()
    other_plugins = False
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name not in DECLARING_CALLS:
            continue
        other_plugins = other_plugins or name in PEER_CALLS
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            for leaf in ast.walk(arg):
                if isinstance(leaf, ast.Constant) and isinstance(leaf.value, str):
                    strings.append(leaf.value)
                elif isinstance(leaf, ast.Name):
                    referenced.add(leaf.id)
    return strings, referenced, other_plugins


def _relative(rootpath: Path, path: Path) -> str | None:
    try:
        return path.resolve().relative_to(rootpath.resolve()).as_posix()
    except ValueError:
        return None
