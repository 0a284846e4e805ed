"""Orders against the item that test_items.py creates."""

from __future__ import annotations

import pytest
from inventory import Inventory, OutOfStock

SKU = "WIDGET-1"


# A marker on a class applies to every test in it. A target with a path is
# resolved from the rootdir (here: examples/, where pytest.ini is).
@pytest.mark.depends_on("test_items.py::test_create_item")
class TestOrders:
    @pytest.mark.parametrize("quantity", [1, 2, 3])
    def test_place_order(self, inventory: Inventory, quantity: int) -> None:
        before = inventory.get_item(SKU).price_cents
        order = inventory.place_order(SKU, quantity)
        after = inventory.get_item(SKU).price_cents
        # On xdist, test_set_price may change the price on another worker meanwhile.
        assert order.total_cents in {quantity * before, quantity * after}

    # A parametrized test named without [params] means all of its instances.
    @pytest.mark.depends_on("test_place_order")
    def test_stock_after_orders(self, inventory: Inventory) -> None:
        assert inventory.get_item(SKU).quantity == 10 - (1 + 2 + 3)

    def test_order_beyond_stock_is_refused(self, inventory: Inventory) -> None:
        with pytest.raises(OutOfStock):
            inventory.place_order(SKU, 1000)
