"""Dependencies declared for other plugins (pytest-dependency, pytest-order), as graph sources.

Placeholder until the compatibility layer lands: declares nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_depgraph.build import _Builder, _Source


def sources(builder: _Builder, position: int) -> Iterator[_Source]:
    """Sources from ``dependency`` and ``order`` markers on the item at ``position``."""
    del builder, position
    return iter(())


def register(config: Any) -> None:
    """Register markers and runtime patches for the other plugins (nothing yet)."""
    del config
