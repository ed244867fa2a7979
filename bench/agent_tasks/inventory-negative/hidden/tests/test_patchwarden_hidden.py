import pytest

from shop.errors import OutOfStock
from shop.inventory import Inventory


def test_cannot_oversell():
    inv = Inventory()
    inv.add("apple", 1)
    inv.remove("apple", 1)
    with pytest.raises(OutOfStock):
        inv.remove("apple", 1)
    assert inv.available("apple") == 0


def test_unknown_item():
    with pytest.raises(OutOfStock):
        Inventory().remove("pear", 2)
