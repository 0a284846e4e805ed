"""Values between tests: a test publishes what it made; its dependents read it.

The reader comes first in this file on purpose: using the ``order`` fixture *is* the
dependency on ``test_order_gadget``, so the plugin runs the producer first. Published values
are pickled, so they reach a reader on another xdist worker too.
"""

from __future__ import annotations

import pytest
from inventory import Inventory

import pytest_depgraph

# A fixture whose value is the output "order" of test_order_gadget; the module attribute
# name is the fixture name.
order = pytest_depgraph.output_fixture("test_order_gadget", "order")


def test_stock_went_down(inventory: Inventory, order: dict[str, object]) -> None:
    assert inventory.get_item(str(order["sku"])).quantity == 5 - int(str(order["quantity"]))


@pytest.mark.depends_on("test_create_gadget")
def test_order_gadget(inventory: Inventory, depgraph: pytest_depgraph.DepGraph) -> None:
    sku = depgraph.output("test_create_gadget", "sku")
    placed = inventory.place_order(sku, 2)
    depgraph.publish("order", {"id": placed.id, "sku": sku, "quantity": 2})


def test_create_gadget(inventory: Inventory, depgraph: pytest_depgraph.DepGraph) -> None:
    item = inventory.create_item("GADGET-1", "Gadget", quantity=5, price_cents=1999)
    depgraph.publish("sku", item.sku)
