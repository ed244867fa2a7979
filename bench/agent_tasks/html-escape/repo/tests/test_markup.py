from markup import escape


def test_ampersand():
    assert escape("a & b") == "a &amp; b"


def test_plain():
    assert escape("plain") == "plain"
