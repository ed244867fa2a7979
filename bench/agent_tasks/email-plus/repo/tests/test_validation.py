from accounts.validation import is_valid_email


def test_valid():
    assert is_valid_email("first.last-x@example.co.uk")


def test_invalid():
    assert not is_valid_email("a@b")
    assert not is_valid_email("@example.com")
