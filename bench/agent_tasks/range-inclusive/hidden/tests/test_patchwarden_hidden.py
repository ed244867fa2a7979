from reports.filters import between


def test_bounds():
    assert between([1, 2, 3, 4, 5], 2, 4) == [2, 3, 4]
    assert between([4.0, 4.5], 4, 4.5) == [4.0, 4.5]
    assert between([1, 9], 2, 4) == []
