"""pytest-depgraph: run tests in dependency order, serially or on pytest-xdist.

The public surface is small: :func:`depends_on` (for fixtures), :func:`output_fixture`
(values between tests) and the ``depgraph`` fixture. Everything else is private.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from pytest_depgraph.collect.markers import depends_on
from pytest_depgraph.values import DepGraph, output_fixture

__all__ = ["DepGraph", "depends_on", "output_fixture"]
try:
    __version__ = version("pytest-depgraph")
except PackageNotFoundError:  # pragma: no cover - run from a source tree that is not installed
    __version__ = "0+unknown"
