from toolz import take_nth


def test_every_nth_from_the_first():
    assert list(take_nth(2, [10, 20, 30, 40, 50])) == [10, 30, 50]
    assert list(take_nth(3, range(10))) == [0, 3, 6, 9]
    assert list(take_nth(1, "abc")) == ["a", "b", "c"]
    assert list(take_nth(2, iter("ABCDE"))) == ["A", "C", "E"]
