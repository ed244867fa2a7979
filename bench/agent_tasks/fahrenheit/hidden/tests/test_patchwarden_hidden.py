import pytest

from units import fahrenheit_to_celsius


def test_f_to_c():
    assert fahrenheit_to_celsius(212) == pytest.approx(100)
    assert fahrenheit_to_celsius(32) == pytest.approx(0)
    assert fahrenheit_to_celsius(-40) == pytest.approx(-40)
