"""Print ``name==version`` for the lower bound of every runtime and test dependency.

CI installs the wheel with these pins on the oldest Python it supports: a lower bound in
pyproject.toml that the suite does not pass on fails CI instead of reaching users.
"""

from __future__ import annotations

import sys
from pathlib import Path

import tomllib
from packaging.requirements import Requirement


def lower_bounds(pyproject: Path) -> list[str]:
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    pins = []
    for line in project["dependencies"] + project["optional-dependencies"]["test"]:
        requirement = Requirement(line)
        floors = [spec.version for spec in requirement.specifier if spec.operator == ">="]
        if len(floors) != 1:
            sys.exit(f"{pyproject}: {line!r} needs exactly one lower bound (>=)")
        pins.append(f"{requirement.name}=={floors[0]}")
    return pins


if __name__ == "__main__":
    print("\n".join(lower_bounds(Path(__file__).resolve().parent.parent / "pyproject.toml")))
