from calendar_utils.dates import days_in_february, is_leap_year


def test_ordinary_leap_year():
    assert is_leap_year(2024)
    assert not is_leap_year(2023)


def test_february():
    assert days_in_february(2024) == 29
    assert days_in_february(2023) == 28
