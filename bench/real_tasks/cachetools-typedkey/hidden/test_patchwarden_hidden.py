from cachetools.keys import hashkey, typedkey


def test_keyword_types_count():
    assert typedkey(x=1) != typedkey(x=1.0)
    assert typedkey(1, y="a") != typedkey(1, y=b"a")


def test_equal_calls_still_share_a_key():
    assert typedkey(1, x=2) == typedkey(1, x=2)
    assert typedkey(x=1, y=2) == typedkey(y=2, x=1)
    assert typedkey(1) != typedkey(1.0)
    assert hashkey(x=1) == hashkey(x=1.0)  # untyped keys do not care
