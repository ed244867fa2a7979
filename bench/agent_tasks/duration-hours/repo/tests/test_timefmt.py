from timefmt import format_duration


def test_seconds():
    assert format_duration(5) == "5s"


def test_minutes():
    assert format_duration(90) == "1m 30s"
