"""pytest-depgraph: run tests in dependency order, serially or on pytest-xdist.

The public surface is small: :func:`depends_on` (for fixtures), :func:`cleanup_of` (a test
that cleans up after others), :func:`output_fixture` (values between tests),
:func:`resource_lock` (shared resources, for fixtures) and the
``depgraph`` fixture. Everything else is private.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_depgraph.hosts.pytest import not_rewritten

# before the package's other modules are imported: pytest would rewrite their asserts
not_rewritten(__name__)

from pytest_depgraph.collect.dependency_markers import cleanup_of, depends_on  # noqa: E402
from pytest_depgraph.collect.resource_markers import resource_lock  # noqa: E402

if TYPE_CHECKING:
    from pytest_depgraph.values import DepGraph, output_fixture

__all__ = ["DepGraph", "cleanup_of", "depends_on", "output_fixture", "resource_lock"]

#: the version is read from the installed metadata when first asked for, and the values'
#: module imported when first named: every pytest process imports this package, most of
#: them never need either
__version__: str


def __getattr__(name: str) -> object:
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            found = version("pytest-depgraph")
        except PackageNotFoundError:  # pragma: no cover - a source tree that is not installed
            found = "0+unknown"
        globals()["__version__"] = found
        return found
    if name in ("DepGraph", "output_fixture"):
        from pytest_depgraph import values

        found_value: object = getattr(values, name)
        globals()[name] = found_value
        return found_value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
