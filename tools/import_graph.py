"""Draw the package's module import graph and check the house rules.

    python tools/import_graph.py            # the graph as text, then the findings
    python tools/import_graph.py --mermaid  # the graph as a Mermaid flowchart (for the docs)
    python tools/import_graph.py --check    # exit 1 if a rule is broken

Every import counts, also those inside functions (they hide cycles, they do not remove them).
Rules checked: no cycle between the package's modules; no module imports another module's
private (``_``-prefixed) name; the graph core (the ``core`` subpackage, ``CORE`` below) imports
nothing from pytest, pluggy or xdist, nor from the rest of the package outside the core, and
its graph algorithms (``core.graph``, ``GRAPH``) nothing of the core but each other; a
subpackage imports nothing from a layer above it (``LAYERS``: core, hosts, collect, run,
output, discover; the top-level modules -- the plugin and ``__init__`` -- wire them together; every
subpackage but the core and the hosts may read the top-level ``options`` and ``plurals``); the
doors to the hosts (``HOSTS``) import nothing of the package but the core, and only they import
xdist and pytest's private modules (``DOORS_ONLY``; an import under ``if TYPE_CHECKING:``, for
types only, may name ``_pytest`` anywhere); no two modules share a file name, and no module of
the package is imported under another name (a door of the hosts may be named after its host):
a module whose name reads wrong where it is used is renamed; outside the doors, no private
attribute (``_``-prefixed, not a dunder) is read or written on pytest's objects -- a name of
``PYTEST_OBJECTS`` (``config._tw``, ``getattr(terminal, "_tw")``, ``self.session._x``).
Modules are named relative to the package, dotted: ``core.graph.storage``, ``run.xdist.scheduler``.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterator
from pathlib import Path

PACKAGE = "pytest_depgraph"
#: the subpackage whose modules must not know pytest: the graph and its algorithms, the walk,
#: the plan, shards, the timeline, xdist's work units as groups
CORE = "core"
#: the subpackage of the doors to other packages' private API: it imports only the core
HOSTS = "hosts"
#: the core's graph algorithms: they import nothing else of the core (the walk and the plan
#: build on them)
GRAPH = "core.graph"
#: the subpackages from the bottom up: each may import the ones below it, never one above
LAYERS = ("core", HOSTS, "collect", "run", "output", "discover")
#: top-level modules the layers above the hosts may import: the settings every part reads,
#: and counts in a user's words
SHARED = {"options", "plurals"}
HOST = ("pytest", "_pytest", "pluggy", "xdist", "execnet")
#: packages only the doors import at run time (every touch of them goes through ``hosts``)
DOORS_ONLY = ("xdist", "execnet", "_pytest")
#: the names the package gives pytest's objects (its config, session, nodes, terminal
#: reporter, plugin manager, ...): a private attribute of one of them is pytest's internals
PYTEST_OBJECTS = frozenset({
    "config", "session", "item", "node", "collector", "request", "terminal", "reporter",
    "terminalreporter", "pluginmanager", "parser", "report", "fixturedef", "definition",
})
#: the calls that name an attribute by a string: ``getattr(obj, "_name")`` and ours
_ATTRIBUTE_CALLS = frozenset({"getattr", "setattr", "hasattr", "delattr", "attr", "attribute"})


def modules(root: Path) -> dict[str, Path]:
    """Module name (relative to the package, dotted) -> file."""
    found = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = path.relative_to(root / PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts) or "__init__"] = path
    return found


def imports(name: str, path: Path) -> Iterator[tuple[str, str, int, bool]]:
    """(imported module, imported name or '', line, for types only) for every import in one
    module; an import is for types only under ``if TYPE_CHECKING:``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = name.rsplit(".", 1)[0] if "." in name else ""
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and _names_type_checking(node.test)
        for statement in node.body
        for inner in ast.walk(statement)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, "", node.lineno, id(node) in typing_only
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([PACKAGE, *[p for p in parent if p], *([base] if base else [])])
            for alias in node.names:
                yield base, alias.name, node.lineno, id(node) in typing_only


def shared_file_names(mods: dict[str, Path]) -> list[str]:
    """Modules that share a file name (``__init__.py`` aside): one vocabulary, one name each."""
    by_name: dict[str, list[str]] = {}
    for name, path in mods.items():
        if path.name != "__init__.py":
            by_name.setdefault(path.name, []).append(name)
    return [
        f"modules {', '.join(sorted(names))} share the file name {file}"
        for file, names in sorted(by_name.items()) if len(names) > 1
    ]


def renamed_modules(name: str, path: Path, mods: dict[str, Path]) -> Iterator[tuple[int, str]]:
    """(line, module) for each module of the package that ``name`` imports under another name
    (``import ... as``); a door of the hosts may be named after its host."""
    package = name.rsplit(".", 1)[0] if "." in name else ""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            renamed = [a.name for a in node.names if a.asname and a.name.startswith(PACKAGE)]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([PACKAGE, *[p for p in parent if p], *([base] if base else [])])
            renamed = [f"{base}.{a.name}" for a in node.names if a.asname]
        else:
            continue
        for module in renamed:
            relative = module[len(PACKAGE) + 1:] if module.startswith(PACKAGE + ".") else ""
            if relative in mods and not in_hosts(relative):
                yield node.lineno, relative


def private_attributes(path: Path) -> Iterator[tuple[int, str, str]]:
    """(line, object, attribute) of each private attribute (``_``-prefixed, not a dunder) read
    or written on a name of ``PYTEST_OBJECTS`` (or an attribute of that name:
    ``self.config``), or named to ``getattr`` and its kin on one."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute):
            owner, attribute = node.value, node.attr
        elif (
            isinstance(node, ast.Call)
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and (node.func.id if isinstance(node.func, ast.Name) else
                 node.func.attr if isinstance(node.func, ast.Attribute) else "")
            in _ATTRIBUTE_CALLS
        ):
            owner, attribute = node.args[0], node.args[1].value
        else:
            continue
        if not attribute.startswith("_") or attribute.startswith("__"):
            continue
        name = (owner.id if isinstance(owner, ast.Name) else
                owner.attr if isinstance(owner, ast.Attribute) else "")
        if name in PYTEST_OBJECTS:
            yield node.lineno, name, attribute


def _names_type_checking(test: ast.expr) -> bool:
    """Whether an ``if`` tests ``TYPE_CHECKING`` (or ``typing.TYPE_CHECKING``)."""
    if isinstance(test, ast.Attribute):
        return test.attr == "TYPE_CHECKING"
    return isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"


def in_core(name: str) -> bool:
    """Whether the module ``name`` (relative, dotted) belongs to the core."""
    return name == CORE or name.startswith(CORE + ".")


def in_graph(name: str) -> bool:
    """Whether the module ``name`` (relative, dotted) is one of the core's graph algorithms."""
    return name == GRAPH or name.startswith(GRAPH + ".")


def in_hosts(name: str) -> bool:
    """Whether the module ``name`` (relative, dotted) is one of the doors to the hosts."""
    return name == HOSTS or name.startswith(HOSTS + ".")


def layer(name: str) -> int | None:
    """The position of the module's subpackage in ``LAYERS`` (None: a top-level module)."""
    top = name.split(".")[0]
    return LAYERS.index(top) if top in LAYERS and "." in name else None


def graph(root: Path) -> tuple[dict[str, set[str]], list[str]]:
    """Internal edges between modules, and the findings that break a rule."""
    mods = modules(root)
    edges: dict[str, set[str]] = {m: set() for m in mods}
    findings = []
    for name, path in mods.items():
        for module, imported, line, types_only in imports(name, path):
            where = f"{path.relative_to(root)}:{line}"
            if module.split(".")[0] in HOST and in_core(name):
                findings.append(f"{where}: core module {name} imports {module}")
            elif module.split(".")[0] in DOORS_ONLY and not in_hosts(name) and not (
                types_only and module.split(".")[0] == "_pytest"
            ):
                findings.append(f"{where}: {name} imports {module}, outside the {HOSTS} doors")
            if module == PACKAGE:
                base = ""
            elif module.startswith(PACKAGE + "."):
                base = module[len(PACKAGE) + 1:]
            else:
                continue
            submodule = f"{base}.{imported}" if base else imported
            if imported and submodule in mods:
                # from pytest_depgraph.core.graph import storage: the module, not its package
                target, imported = submodule, ""
            elif base in mods:
                target = base
            else:
                continue
            if imported.startswith("_") and not imported.startswith("__"):
                findings.append(f"{where}: {name} imports the private name {target}.{imported}")
            if in_core(name) and not in_core(target):
                findings.append(f"{where}: core module {name} imports {target}, outside the core")
            elif in_graph(name) and not in_graph(target):
                findings.append(
                    f"{where}: graph algorithm {name} imports {target}, outside {GRAPH}"
                )
            if in_hosts(name) and not (in_core(target) or in_hosts(target)):
                findings.append(
                    f"{where}: door {name} imports {target}: doors import the core only"
                )
            low, high = layer(name), layer(target)
            if (
                low is not None
                and not in_core(name)
                and target not in SHARED
                and (high is None or high > low)
            ):
                findings.append(
                    f"{where}: {name} imports {target}, from "
                    f"{'the top level' if high is None else 'a layer above ' + LAYERS[low]}"
                )
            if target != name:
                edges[name].add(target)
    for name, path in mods.items():
        for line, module in renamed_modules(name, path, mods):
            findings.append(
                f"{path.relative_to(root)}:{line}: {name} imports {module} under another name"
            )
    for name, path in mods.items():
        if in_hosts(name):
            continue
        for line, owner, attribute in private_attributes(path):
            findings.append(
                f"{path.relative_to(root)}:{line}: {name} touches pytest's private "
                f"{owner}.{attribute}, outside the {HOSTS} doors"
            )
    findings.extend(shared_file_names(mods))
    findings = list(dict.fromkeys(findings))  # one per line, however many names it imports
    for cycle in cycles(edges):
        findings.append("import cycle: " + " -> ".join([*cycle, cycle[0]]))
    return edges, findings


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (each sorted)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(v: str) -> None:  # the package has a few dozen modules: recursion is fine
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mermaid", action="store_true", help="print a Mermaid flowchart")
    parser.add_argument("--check", action="store_true", help="exit 1 when a rule is broken")
    args = parser.parse_args(argv)
    root = Path(__file__).resolve().parent.parent
    edges, findings = graph(root)
    if args.mermaid:
        print("flowchart LR")
        for source in sorted(edges):
            for target in sorted(edges[source]):
                print(f"    {source.replace('.', '_')} --> {target.replace('.', '_')}")
    else:
        for source in sorted(edges):
            print(f"{source} -> {', '.join(sorted(edges[source])) or '(nothing)'}")
    if findings:
        print(f"\n{len(findings)} finding(s):", file=sys.stderr)
        for finding in findings:
            print(f"  {finding}", file=sys.stderr)
    return 1 if findings and args.check else 0


if __name__ == "__main__":
    raise SystemExit(main())
