"""A tiny in-memory inventory service: the system under test of the example suite.

It keeps its state in one process, like a fake of a real service would in a test
suite. The tests in this folder create an item, use it, update it and delete it, and
the order of those steps is what pytest-depgraph takes care of.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass


class InventoryError(Exception):
    """Base class of the errors the service raises."""


class NotFound(InventoryError):
    """No item with that SKU."""


class AlreadyExists(InventoryError):
    """An item with that SKU exists already."""


class OutOfStock(InventoryError):
    """Not enough items in stock for an order."""


@dataclass(frozen=True)
class Item:
    sku: str
    name: str
    quantity: int
    price_cents: int


@dataclass(frozen=True)
class Order:
    id: int
    sku: str
    quantity: int
    total_cents: int


class Inventory:
    """Items by SKU, and the orders placed against them."""

    def __init__(self) -> None:
        self._items: dict[str, Item] = {}
        self._orders: dict[int, Order] = {}

    def create_item(self, sku: str, name: str, quantity: int, price_cents: int) -> Item:
        if sku in self._items:
            raise AlreadyExists(f"item {sku!r} exists already")
        if quantity < 0:
            raise ValueError(f"quantity must not be negative, got {quantity}")
        if price_cents < 0:
            raise ValueError(f"price must not be negative, got {price_cents}")
        item = Item(sku, name, quantity, price_cents)
        self._items[sku] = item
        return item

    def get_item(self, sku: str) -> Item:
        try:
            return self._items[sku]
        except KeyError:
            raise NotFound(f"no item {sku!r}") from None

    def list_items(self) -> list[Item]:
        return sorted(self._items.values(), key=lambda item: item.sku)

    def set_price(self, sku: str, price_cents: int) -> Item:
        if price_cents < 0:
            raise ValueError(f"price must not be negative, got {price_cents}")
        return self._replace(sku, price_cents=price_cents)

    def restock(self, sku: str, quantity: int) -> Item:
        if quantity <= 0:
            raise ValueError(f"restock quantity must be positive, got {quantity}")
        return self._replace(sku, quantity=self.get_item(sku).quantity + quantity)

    def place_order(self, sku: str, quantity: int) -> Order:
        item = self.get_item(sku)
        if quantity > item.quantity:
            raise OutOfStock(f"{quantity} x {sku!r} ordered, {item.quantity} in stock")
        self._replace(sku, quantity=item.quantity - quantity)
        order = Order(len(self._orders) + 1, sku, quantity, quantity * item.price_cents)
        self._orders[order.id] = order
        return order

    def delete_item(self, sku: str, *, missing_ok: bool = False) -> None:
        if self._items.pop(sku, None) is None and not missing_ok:
            raise NotFound(f"no item {sku!r}")

    def _replace(self, sku: str, **changes: int) -> Item:
        item = dataclasses.replace(self.get_item(sku), **changes)
        self._items[sku] = item
        return item
