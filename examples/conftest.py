"""Fixtures shared by the example tests."""

from __future__ import annotations

import pytest
from inventory import Inventory


@pytest.fixture(scope="session")
def inventory() -> Inventory:
    """One service for the whole run: the tests build on each other's changes.

    The state lives in this process, so the example runs serially (no ``-n``):
    xdist workers would each have their own empty inventory.
    """
    return Inventory()
