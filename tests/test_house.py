"""The house rules hold: tools/import_graph.py --check finds nothing, and finds what breaks them."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("import_graph", ROOT / "tools/import_graph.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("import_graph", module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def tool() -> ModuleType:
    """The tool, its graph of this checkout computed once for the module (a second each time):
    ``main`` reads it through the module's ``graph``, any other folder is computed afresh."""
    module = _tool()
    compute = module.graph
    ours = compute(ROOT)

    def graph(root: Path) -> tuple[dict[str, set[str]], list[str]]:
        if Path(root).resolve() == ROOT:
            return ours[0], list(ours[1])
        result: tuple[dict[str, set[str]], list[str]] = compute(root)
        return result

    setattr(module, "graph", graph)  # noqa: B010 (mypy knows no attribute of a ModuleType)
    return module


def test_the_package_keeps_the_house_rules(tool: ModuleType) -> None:
    edges, findings = tool.graph(ROOT)
    assert findings == []
    assert "core.graph.storage" in edges and "plugin" in edges


def test_each_rule_is_found(tool: ModuleType, tmp_path: Path) -> None:
    shutil.copytree(ROOT / "pytest_depgraph", tmp_path / "pytest_depgraph")
    package = tmp_path / "pytest_depgraph"
    with (package / "collect/dependency_markers.py").open("a") as f:
        f.write("\nfrom pytest_depgraph.run.state import session_state\n")
    with (package / "core/walk/walker.py").open("a") as f:
        f.write("\nimport pytest\nfrom pytest_depgraph.run import role\n")
    with (package / "output/dot.py").open("a") as f:
        f.write("\nfrom pytest_depgraph.collect.build import _module_of\n")
    with (package / "core/graph/paths.py").open("a") as f:
        f.write("\nfrom pytest_depgraph.core.plan import Plan\n")
    with (package / "output/summary.py").open("a") as f:
        f.write("\nfrom pytest_depgraph.output import dot as graphviz\n"
                "from pytest_depgraph.hosts import pytest as host\n")
    (package / "run/xdist/dot.py").write_text('"""A second dot.py."""\n')
    with (package / "run/state.py").open("a") as f:
        f.write("\nfrom pytest_depgraph.output import dot\n")
    with (package / "hosts/pytest.py").open("a") as f:
        f.write("\nfrom pytest_depgraph import options\nfrom pytest_depgraph.run import role\n")
    with (package / "run/serial.py").open("a") as f:
        f.write("\nimport xdist.scheduler\n")
    with (package / "collect/selection.py").open("a") as f:
        f.write("\nfrom pytest_depgraph.hosts import xdist\n")
    with (package / "run/outcomes.py").open("a") as f:
        f.write("\nfrom _pytest.subtests import SubtestReport\n")
    with (package / "output/dot.py").open("a") as f:
        f.write("\nif TYPE_CHECKING:\n    from _pytest.nodes import Node\n")
    with (package / "output/runlog.py").open("a") as f:
        f.write("\ndef _touch(config, terminal, self):\n    config._tw.line()\n"
                "    getattr(terminal, '_numcollected', 0)\n    self.session._setupstate\n"
                "    config.__dict__\n")
    with (package / "hosts/xdist.py").open("a") as f:
        f.write("\ndef _door(config):\n    return config._tw\n")
    found = tool.graph(tmp_path)[1]
    findings = "\n".join(found)
    for expected in (
        "collect.dependency_markers imports run.state, from a layer above collect",
        "core module core.walk.walker imports pytest",
        "core module core.walk.walker imports run.role, outside the core",
        "graph algorithm core.graph.paths imports core.plan, outside core.graph",
        "output.summary imports output.dot under another name",
        "modules output.dot, run.xdist.dot share the file name dot.py",
        "output.dot imports the private name collect.build._module_of",
        "run.state imports output.dot, from a layer above run",
        "door hosts.pytest imports options: doors import the core only",
        "door hosts.pytest imports run.role: doors import the core only",
        "hosts.pytest imports run.role, from a layer above hosts",
        "run.serial imports xdist.scheduler, outside the hosts doors",
        "run.outcomes imports _pytest.subtests, outside the hosts doors",
        "output.runlog touches pytest's private config._tw, outside the hosts doors",
        "output.runlog touches pytest's private terminal._numcollected, outside the hosts doors",
        "output.runlog touches pytest's private session._setupstate, outside the hosts doors",
        "import cycle: ",
    ):
        assert expected in findings
    # a layer below may be imported: collect reads the doors; pytest's private modules may be
    # named for types only
    assert not [f for f in found
                if f.startswith("pytest_depgraph/collect/selection.py") or "_pytest.nodes" in f]
    # a door touches pytest's private attributes; a dunder is nobody's private attribute
    assert not [f for f in found if "hosts.xdist touches" in f or "__dict__" in f]
    # a door of the hosts may be named after its host
    assert not [f for f in found if "hosts.pytest under another name" in f]


@pytest.mark.parametrize("flag", ["--check", "--mermaid"])
def test_the_command_line(
    tool: ModuleType, flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert tool.main([flag]) == 0
    out = capsys.readouterr().out
    assert ("flowchart LR" in out) == (flag == "--mermaid")


def test_session_state_is_one_stash_key() -> None:
    """Every reader goes through run.state.session_state(config): no other module keeps a key
    of its own."""
    keyed = sorted(
        str(path.relative_to(ROOT))
        for path in (ROOT / "pytest_depgraph").rglob("*.py")
        if "StashKey" in path.read_text(encoding="utf-8")
    )
    assert keyed == ["pytest_depgraph/run/state.py"]
    assert (ROOT / "pytest_depgraph/run/state.py").read_text(encoding="utf-8").count(
        "StashKey["
    ) == 1


def test_the_public_surface_is_typed_and_patches_nothing_on_import() -> None:
    """What pytest_depgraph exports has no Any in its signatures, on_failure and a lock's mode
    are each one of two words, and importing the package changes nothing in pytest (the marker
    is installed by the plugin's pytest_configure, and removed after the session)."""
    code = (
        "import typing, pytest\n"
        "before = dict(vars(pytest.mark))\n"
        "import pytest_depgraph as p\n"
        "assert dict(vars(pytest.mark)) == before, 'pytest.mark changed on import'\n"
        "hints = [typing.get_type_hints(f) for f in (p.depends_on, p.output_fixture,"
        " p.DepGraph.publish, p.DepGraph.output, p.cleanup_of, p.resource_lock)]\n"
        "assert all(typing.Any not in h.values() for h in hints), hints\n"
        "assert typing.get_args(hints[0]['on_failure']) == ('skip', 'run'), hints[0]\n"
        "assert hints[3]['return'] is object, hints[3]\n"
        "assert typing.get_args(hints[5]['mode']) == ('write', 'read'), hints[5]\n"
        "assert p.__all__ == ['DepGraph', 'cleanup_of', 'depends_on', 'output_fixture',"
        " 'resource_lock']\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_loading_the_plugin_imports_only_what_every_session_needs() -> None:
    """Every pytest process loads the plugin: what only some runs need (values between tests,
    pickling, close-name suggestions, pinning, the walk's timeline, the installed version, the
    declarations' readers, which an xdist controller never uses) is imported when first used,
    and still there when asked for."""
    # what pytest imports is not the plugin's doing (pytest 8 imports unittest, and so difflib)
    code = (
        "import sys, pytest\n"
        "before = set(sys.modules)\n"
        "import pytest_depgraph.plugin\n"
        "late = ['pytest_depgraph.values', 'pickle', 'difflib', 'pytest_depgraph.collect.pinning',"
        " 'pytest_depgraph.core.timeline', 'pytest_depgraph.collect.readers',"
        " 'pytest_depgraph.collect.selection']\n"
        "early = [m for m in late if m in sys.modules and m not in before]\n"
        "assert not early, early\n"
        "import pytest_depgraph as p\n"
        "assert 'DepGraph' not in vars(p) and '__version__' not in vars(p)\n"
        "from pytest_depgraph import DepGraph, output_fixture\n"
        "from pytest_depgraph.values import DepGraph as D, output_fixture as o\n"
        "assert (DepGraph, output_fixture) == (D, o)\n"
        "assert isinstance(p.__version__, str) and p.__version__, p.__version__\n"
        "try:\n"
        "    p.nothing\n"
        "except AttributeError as error:\n"
        "    assert 'nothing' in str(error)\n"
        "else:\n"
        "    raise AssertionError('no AttributeError')\n"
    )
    # -I: the package as installed, not the sources in the current directory
    done = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
