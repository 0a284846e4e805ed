"""A tiny inventory service: the system under test of the example suite.

It keeps its state in a SQLite database file, like a real service keeps it outside the
test process: every pytest-xdist worker that opens the same file sees the same items. The
tests in this folder create an item, use it, update it and delete it, and the order of
those steps is what pytest-depgraph takes care of.

Every call opens its own connection and runs in one transaction, so concurrent workers
never lose an update: a write takes the database's write lock up front (``BEGIN
IMMEDIATE``), and an order takes its stock with one conditional ``UPDATE``.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
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


_SCHEMA = """
CREATE TABLE IF NOT EXISTS items (
    sku TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    quantity INTEGER NOT NULL,
    price_cents INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS orders (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    sku TEXT NOT NULL,
    quantity INTEGER NOT NULL,
    total_cents INTEGER NOT NULL
);
"""

_ITEM_COLUMNS = "sku, name, quantity, price_cents"


class Inventory:
    """Items by SKU, and the orders placed against them, in the SQLite file at ``path``.

    Several processes may open the same file at once, also while it is being created.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        with self._transaction() as db:
            # Idempotent: the workers of one run may all create the schema at the same time.
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)

    def create_item(self, sku: str, name: str, quantity: int, price_cents: int) -> Item:
        with self._transaction() as db:
            if self._find(db, sku) is not None:
                raise AlreadyExists(f"item {sku!r} exists already")
            if quantity < 0:
                raise ValueError(f"quantity must not be negative, got {quantity}")
            if price_cents < 0:
                raise ValueError(f"price must not be negative, got {price_cents}")
            item = Item(sku, name, quantity, price_cents)
            db.execute(
                f"INSERT INTO items ({_ITEM_COLUMNS}) VALUES (?, ?, ?, ?)",
                (item.sku, item.name, item.quantity, item.price_cents),
            )
            return item

    def get_item(self, sku: str) -> Item:
        with self._transaction(write=False) as db:
            return self._get(db, sku)

    def list_items(self) -> list[Item]:
        with self._transaction(write=False) as db:
            rows = db.execute(f"SELECT {_ITEM_COLUMNS} FROM items ORDER BY sku").fetchall()
        return [Item(*row) for row in rows]

    def set_price(self, sku: str, price_cents: int) -> Item:
        if price_cents < 0:
            raise ValueError(f"price must not be negative, got {price_cents}")
        with self._transaction() as db:
            self._update(db, sku, "price_cents = ?", (price_cents,))
            return self._get(db, sku)

    def restock(self, sku: str, quantity: int) -> Item:
        if quantity <= 0:
            raise ValueError(f"restock quantity must be positive, got {quantity}")
        with self._transaction() as db:
            self._update(db, sku, "quantity = quantity + ?", (quantity,))
            return self._get(db, sku)

    def place_order(self, sku: str, quantity: int) -> Order:
        with self._transaction() as db:
            # Take the stock only if there is enough of it: one statement, no lost update.
            taken = db.execute(
                "UPDATE items SET quantity = quantity - ? WHERE sku = ? AND quantity >= ?",
                (quantity, sku, quantity),
            ).rowcount
            item = self._get(db, sku)
            if not taken:
                raise OutOfStock(f"{quantity} x {sku!r} ordered, {item.quantity} in stock")
            total_cents = quantity * item.price_cents
            cursor = db.execute(
                "INSERT INTO orders (sku, quantity, total_cents) VALUES (?, ?, ?)",
                (sku, quantity, total_cents),
            )
            assert cursor.lastrowid is not None
            return Order(cursor.lastrowid, sku, quantity, total_cents)

    def delete_item(self, sku: str, *, missing_ok: bool = False) -> None:
        with self._transaction() as db:
            deleted = db.execute("DELETE FROM items WHERE sku = ?", (sku,)).rowcount
        if not deleted and not missing_ok:
            raise NotFound(f"no item {sku!r}")

    @contextmanager
    def _transaction(self, *, write: bool = True) -> Iterator[sqlite3.Connection]:
        """A new connection, in one transaction: committed on success, else rolled back.

        A write transaction takes the write lock when it begins, so two workers never both
        read and then both try to write (which SQLite would refuse to one of them at once);
        ``timeout`` is how long a call waits for another worker's transaction to end.
        """
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        try:
            db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield db
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
        finally:
            db.close()

    @staticmethod
    def _find(db: sqlite3.Connection, sku: str) -> Item | None:
        row = db.execute(f"SELECT {_ITEM_COLUMNS} FROM items WHERE sku = ?", (sku,)).fetchone()
        return None if row is None else Item(*row)

    @classmethod
    def _get(cls, db: sqlite3.Connection, sku: str) -> Item:
        item = cls._find(db, sku)
        if item is None:
            raise NotFound(f"no item {sku!r}")
        return item

    @staticmethod
    def _update(db: sqlite3.Connection, sku: str, assignment: str, values: tuple[int, ...]) -> None:
        if not db.execute(f"UPDATE items SET {assignment} WHERE sku = ?", (*values, sku)).rowcount:
            raise NotFound(f"no item {sku!r}")
