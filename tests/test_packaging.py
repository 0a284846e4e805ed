"""What users install: the wheel and the sdist hold what they should, and the tests ran on it.

The wheel and the sdist are the ones in ``$DEPGRAPH_DIST`` when it is set (CI builds them
once, installs the wheel and runs this suite against it), else built here with ``build``.
With ``DEPGRAPH_TEST_INSTALLED=1`` (CI sets it), the package the tests import must be the
installed one, not the sources of this checkout.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import pytest_depgraph

ROOT = Path(__file__).resolve().parent.parent

#: tracked files that stay out of the sdist: CI's script and git's own files
NOT_IN_SDIST = (".ci/", ".gitignore", "examples/.gitignore")
#: what setuptools adds to every sdist
SDIST_METADATA = ("PKG-INFO", "setup.cfg", "pytest_depgraph.egg-info/")


def _tracked_files() -> list[str]:
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout: the file lists are checked against git's tracked files")
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    return sorted(path for path in listed.split("\0") if path)


def _dists(tmp_path: Path) -> tuple[Path, Path]:
    """The wheel and the sdist: CI's when ``$DEPGRAPH_DIST`` is set, else built from here."""
    folder = os.environ.get("DEPGRAPH_DIST")
    if folder is None:
        folder = str(tmp_path)
        built = subprocess.run(
            [sys.executable, "-m", "build", *_isolation(), "--outdir", folder, str(ROOT)],
            capture_output=True,
            text=True,
        )
        assert built.returncode == 0, built.stdout + built.stderr
    wheels = sorted(Path(folder).glob("pytest_depgraph-*.whl"))
    sdists = sorted(Path(folder).glob("pytest_depgraph-*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, f"one wheel and one sdist in {folder}"
    return wheels[0], sdists[0]


def _isolation() -> list[str]:
    """``--no-isolation`` when this environment has the build backend pyproject.toml asks
    for (the test extra installs it): the same sdist and wheel, without a fresh virtualenv
    installing setuptools for each of them (about half of this test's time)."""
    try:
        version = importlib.metadata.version("setuptools")
    except importlib.metadata.PackageNotFoundError:
        return []
    parts = tuple(int(p) for p in re.findall(r"\d+", version)[:3])
    return ["--no-isolation"] if parts >= (77, 0, 3) else []


def _difference(shipped: set[str], expected: set[str], what: str) -> list[str]:
    problems = [f"{what} lacks {path}" for path in sorted(expected - shipped)]
    problems += [f"{what} holds {path}, not a tracked file" for path in sorted(shipped - expected)]
    return problems


def test_the_wheel_and_the_sdist_hold_every_tracked_file(tmp_path: Path) -> None:
    """The wheel holds every tracked file of the package (modules, py.typed, the report's
    template) and nothing else; the sdist holds every tracked file but CI's own, so that its
    tests, docs and examples work unpacked."""
    tracked = _tracked_files()
    wheel, sdist = _dists(tmp_path)
    with zipfile.ZipFile(wheel) as archive:
        in_wheel = set(archive.namelist())
        dist_info = f"pytest_depgraph-{wheel.name.split('-')[1]}.dist-info/"
        entry_points = archive.read(dist_info + "entry_points.txt").decode()
        metadata = archive.read(dist_info + "METADATA").decode()
    package = {path for path in tracked if path.startswith("pytest_depgraph/")}
    in_package = {path for path in in_wheel if not path.startswith(dist_info)}
    problems = _difference(in_package, package, "the wheel")
    if dist_info + "licenses/LICENSE" not in in_wheel:
        problems.append("the wheel lacks the LICENSE file")
    if "depgraph = pytest_depgraph.plugin" not in entry_points:
        problems.append(f"the wheel's pytest11 entry point is missing:\n{entry_points}")
    if "License-Expression: MIT" not in metadata.splitlines():
        problems.append("the wheel's metadata has no License-Expression: MIT")

    with tarfile.open(sdist) as archive:
        top = sdist.name.removesuffix(".tar.gz") + "/"
        in_sdist = {
            member.name.removeprefix(top) for member in archive.getmembers() if member.isfile()
        }
    in_sdist = {path for path in in_sdist if not path.startswith(SDIST_METADATA)}
    wanted = {path for path in tracked if not path.startswith(NOT_IN_SDIST)}
    problems += _difference(in_sdist, wanted, "the sdist")
    assert not problems, "\n".join(problems)


def test_the_tests_import_the_installed_package() -> None:
    """In CI the suite runs against the wheel it built: a module of this checkout that shadows
    the installed package (``python -m pytest`` puts the current directory on sys.path, an
    editable install points at the sources) would test something users never get."""
    if os.environ.get("DEPGRAPH_TEST_INSTALLED") != "1":
        pytest.skip("DEPGRAPH_TEST_INSTALLED=1 (set by CI) checks where the package comes from")
    imported = Path(pytest_depgraph.__file__).resolve()
    # (a virtualenv in the checkout, .venv, is fine: its site-packages is not the sources)
    assert imported.parent != ROOT / "pytest_depgraph", f"imported from the sources: {imported}"
    plugin = Path(sys.modules["pytest_depgraph.plugin"].__file__ or "").resolve()
    assert plugin.parent == imported.parent, f"pytest loaded the plugin from {plugin}"
    # the metadata beside the package (the checkout's own pytest_depgraph.egg-info may come
    # first on sys.path): a wheel's lists the modules it installed, an editable install's not
    found = importlib.metadata.distributions(
        name="pytest-depgraph", path=[str(imported.parent.parent)]
    )
    recorded = {str(path) for distribution in found for path in distribution.files or ()}
    assert "pytest_depgraph/__init__.py" in recorded, "the installed package is not a wheel's"


def test_the_readme_has_no_link_that_dies_on_the_registry() -> None:
    """The README is the package's page on the registry, where a relative link (or one to a
    heading) leads nowhere: it names files of the repository instead of linking them."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)\s]+)", readme) + re.findall(r'(?:src|href)="([^"]+)"', readme)
    relative = [t for t in targets if not re.match(r"(https?:|mailto:)", t)]
    assert not relative, f"relative links in README.md: {relative}"
