from collections_extra import flatten, unique


def test_unique_removes_repeats():
    assert sorted(unique([3, 1, 3, 2, 1])) == [1, 2, 3]


def test_flatten():
    assert flatten([[1], [2, 3]]) == [1, 2, 3]
