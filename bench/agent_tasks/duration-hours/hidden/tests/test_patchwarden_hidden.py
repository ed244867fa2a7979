from timefmt import format_duration


def test_hours():
    assert format_duration(3661) == "1h 1m 1s"
    assert format_duration(7200) == "2h 0m 0s"
    assert format_duration(3599) == "59m 59s"
    assert format_duration(90) == "1m 30s"
