import pytest

from billing.money import parse_amount


def test_plain():
    assert parse_amount("12.50") == 12.5
    assert parse_amount("$3") == 3.0


def test_empty():
    with pytest.raises(ValueError):
        parse_amount("  ")
