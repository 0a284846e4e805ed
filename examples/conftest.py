"""Fixtures shared by the example tests."""

from __future__ import annotations

import os

import pytest
from inventory import Inventory


@pytest.fixture(scope="session")
def inventory(tmp_path_factory: pytest.TempPathFactory) -> Inventory:
    """One service for the whole run: the tests build on each other's changes.

    The service keeps its state in a SQLite file, outside the test process, so a test sees
    what its dependencies did also when they ran on another pytest-xdist worker. Every
    process of one run must open the same file, and each run must start from a new one:

    * serially, the run's base temporary directory (``pytest-N``, new each run) holds it;
    * under xdist (``PYTEST_XDIST_WORKER`` is set), each worker's base temporary directory
      is its own subdirectory of the run's (``pytest-N/popen-gw0``, ...), so the file goes
      in the *parent*: shared by the workers of this run, new for the next run.

    The workers start concurrently, so they may open the file at the same time: creating
    the database and its tables is idempotent (``CREATE TABLE IF NOT EXISTS``).
    """
    basetemp = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        basetemp = basetemp.parent
    return Inventory(basetemp / "inventory.sqlite3")
