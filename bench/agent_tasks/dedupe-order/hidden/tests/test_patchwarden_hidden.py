from collections_extra import unique


def test_first_seen_order():
    assert unique(["b", "a", "b", "c"]) == ["b", "a", "c"]
    assert unique([3, 1, 3, 2, 1]) == [3, 1, 2]
    assert unique([]) == []
