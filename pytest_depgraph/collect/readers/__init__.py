"""Every way to declare dependencies: one module a marker or plugin read, each reader behind
one protocol (:mod:`.base`), in the one list below.

A new way to declare is a module here with a class of the :class:`~.base.Reader` protocol and a
line in :data:`READERS`.
"""

from __future__ import annotations

from pytest_depgraph.collect.readers.base import Reader
from pytest_depgraph.collect.readers.cleanup_of import Cleanups
from pytest_depgraph.collect.readers.depends_on import Decorated, OwnMarks, ParentMarks
from pytest_depgraph.collect.readers.fixtures import Fixtures
from pytest_depgraph.collect.readers.pytest_dependency import DependencyReader
from pytest_depgraph.collect.readers.pytest_order import OrderReader
from pytest_depgraph.collect.readers.resource_lock import (
    DecoratedLocks,
    FixtureLocks,
    ResourceMarks,
)

#: the readers, in the order their declarations apply to a test: the first edge declared
#: between two tests keeps its origin, and problems are reported in the order found
READERS: tuple[type[Reader], ...] = (
    OwnMarks,  # @pytest.mark.depends_on on the test
    ParentMarks,  # @pytest.mark.depends_on on its classes, modules, packages
    Decorated,  # @depends_on on its function and class
    Fixtures,  # @depends_on and output_fixture on the fixtures it uses
    DependencyReader,  # pytest-dependency's marker and depends() calls
    OrderReader,  # pytest-order's marker
    Cleanups,  # cleanup_of: read for every collected test, resolved by a phase of its own
    ResourceMarks,  # resource_lock, exclusive and weight marks (claims, not edges)
    DecoratedLocks,  # @resource_lock on its function, class and module
    FixtureLocks,  # @resource_lock on the fixtures it uses
)
