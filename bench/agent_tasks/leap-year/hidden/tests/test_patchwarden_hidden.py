from calendar_utils.dates import days_in_february, is_leap_year


def test_century_rule():
    assert not is_leap_year(1900)
    assert not is_leap_year(2100)
    assert is_leap_year(2000)
    assert is_leap_year(2400)
    assert days_in_february(1900) == 28
