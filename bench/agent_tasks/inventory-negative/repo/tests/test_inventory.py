import pytest

from shop.inventory import Inventory


def test_add_and_remove():
    inv = Inventory()
    inv.add("apple", 3)
    inv.remove("apple", 2)
    assert inv.available("apple") == 1


def test_positive_counts():
    with pytest.raises(ValueError):
        Inventory().add("apple", 0)
