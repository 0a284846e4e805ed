"""pytest-depgraph: run tests in dependency order, serially or on pytest-xdist.

The public surface is small: :func:`depends_on` (for fixtures), :func:`output_fixture`
(values between tests) and the ``depgraph`` fixture. Everything else is private.
"""

from __future__ import annotations

from pytest_depgraph.markers import depends_on

__all__ = ["depends_on"]
__version__ = "0.1.0"
