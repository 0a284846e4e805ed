"""The life of one item: create it, read it, update it, delete it.

Set DEPGRAPH_EXAMPLE_FAIL=1 to make the create step fail: every test that needs the
item is then reported skipped, naming test_create_item as the root cause, and only
the cleanup tests still run (test_cleanup, an ordering-only dependency, and
test_remove_database, a cleanup_of the tests that fill the database).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from inventory import AlreadyExists, Inventory, Item, NotFound

from pytest_depgraph import depends_on

SKU = "WIDGET-1"


# This test is written *before* the test it depends on: the plugin holds it back until
# test_create_item has run (no test ever runs earlier than its place in pytest's order).
@pytest.mark.depends_on("test_create_item")
def test_item_is_listed(inventory: Inventory) -> None:
    # The inventory is shared: on xdist, test_values.py's gadget may be listed as well.
    assert SKU in [item.sku for item in inventory.list_items()]


def test_create_item(inventory: Inventory) -> None:
    # The failure switch sends a bad request, as a broken client would.
    quantity = -1 if os.environ.get("DEPGRAPH_EXAMPLE_FAIL") == "1" else 10
    item = inventory.create_item(SKU, name="Widget", quantity=quantity, price_cents=250)
    assert item == Item(SKU, "Widget", 10, 250)


# A fixture can carry a dependency: every test that uses `widget` (directly or
# through another fixture) depends on test_create_item.
@pytest.fixture
@depends_on("test_create_item")
def widget(inventory: Inventory) -> Item:
    return inventory.get_item(SKU)


def test_item_details(widget: Item) -> None:
    assert (widget.name, widget.price_cents) == ("Widget", 250)


def test_duplicate_sku_is_rejected(inventory: Inventory, widget: Item) -> None:
    with pytest.raises(AlreadyExists):
        inventory.create_item(widget.sku, name="Another widget", quantity=1, price_cents=1)


# on_failure="run" is ordering only: change the price after test_item_details
# has read it, whether or not that test passed.
@pytest.mark.depends_on(test_item_details, on_failure="run")
def test_set_price(inventory: Inventory, widget: Item) -> None:
    assert inventory.set_price(widget.sku, 300).price_cents == 300


# A class or a file is a target too: restock only once all orders are done,
# since TestOrders counts the stock.
@pytest.mark.depends_on("test_orders.py::TestOrders", on_failure="run")
def test_restock(inventory: Inventory, widget: Item) -> None:
    before = widget.quantity
    assert inventory.restock(widget.sku, 5).quantity == before + 5


# Several markers accumulate. Function objects are refactor-safe targets.
@pytest.mark.depends_on(test_set_price, test_restock)
@pytest.mark.depends_on(test_item_is_listed, test_duplicate_sku_is_rejected, on_failure="run")
def test_delete_item(inventory: Inventory) -> None:
    inventory.delete_item(SKU)
    with pytest.raises(NotFound):
        inventory.get_item(SKU)


# Cleanup runs last, whatever happened before it.
@pytest.mark.depends_on(test_delete_item, on_failure="run")
def test_cleanup(inventory: Inventory) -> None:
    inventory.delete_item(SKU, missing_ok=True)
    assert SKU not in [item.sku for item in inventory.list_items()]


# The database file outlives the run unless a test removes it. A cleanup runs after its
# targets and after every test that depends on them, here every test of examples/ (on any
# xdist worker), whatever their outcomes; it is skipped only if no target ran at all.
@pytest.mark.cleanup_of(test_create_item, "test_values.py::test_create_gadget")
def test_remove_database(inventory: Inventory) -> None:
    Path(inventory.path).unlink()
    assert not Path(inventory.path).exists()
