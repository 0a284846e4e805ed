"""The house rules hold: tools/import_graph.py --check finds nothing, and finds what breaks them."""

from __future__ import annotations

import importlib.util
import shutil
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


def test_the_package_keeps_the_house_rules() -> None:
    edges, findings = _tool().graph(ROOT)
    assert findings == []
    assert "core.graph" in edges and "plugin" in edges


def test_each_rule_is_found(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "pytest_depgraph", tmp_path / "pytest_depgraph")
    package = tmp_path / "pytest_depgraph"
    with (package / "collect/markers.py").open("a") as f:
        f.write("\nfrom pytest_depgraph.run.state import PLAN_KEY\n")
    with (package / "core/walker.py").open("a") as f:
        f.write("\nimport pytest\nfrom pytest_depgraph.run import role\n")
    with (package / "output/dot.py").open("a") as f:
        f.write("\nfrom pytest_depgraph.collect.build import _module_of\n")
    with (package / "run/state.py").open("a") as f:
        f.write("\nfrom pytest_depgraph.output import dot\n")
    findings = "\n".join(_tool().graph(tmp_path)[1])
    for expected in (
        "collect.markers imports run.state, from a layer above collect",
        "core module core.walker imports pytest",
        "core module core.walker imports run.role, outside the core",
        "output.dot imports the private name collect.build._module_of",
        "run.state imports output.dot, from a layer above run",
        "import cycle: ",
    ):
        assert expected in findings


@pytest.mark.parametrize("flag", ["--check", "--mermaid"])
def test_the_command_line(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert _tool().main([flag]) == 0
    out = capsys.readouterr().out
    assert ("flowchart LR" in out) == (flag == "--mermaid")
