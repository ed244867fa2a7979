from units import celsius_to_fahrenheit


def test_c_to_f():
    assert celsius_to_fahrenheit(100) == 212
    assert celsius_to_fahrenheit(0) == 32
