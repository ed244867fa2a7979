from reports.filters import above, between


def test_inclusive_bounds():
    assert between([1, 2, 3, 4, 5], 2, 4) == [2, 3, 4]


def test_above():
    assert above([1, 5, 9], 4) == [5, 9]
