from datetime import datetime, timedelta

from dateutil.utils import within_delta


def test_both_bounds_are_inclusive():
    a = datetime(2024, 1, 1, 12, 0, 0)
    b = a + timedelta(seconds=1)
    assert within_delta(a, b, timedelta(seconds=1))
    assert within_delta(b, a, timedelta(seconds=1))


def test_beyond_the_bound_is_not_within():
    a = datetime(2024, 1, 1, 12, 0, 0)
    b = a + timedelta(seconds=2)
    assert not within_delta(b, a, timedelta(seconds=1))
    assert not within_delta(a, b, timedelta(seconds=1))
