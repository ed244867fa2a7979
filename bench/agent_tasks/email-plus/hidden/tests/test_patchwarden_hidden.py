from accounts.signup import signup
from accounts.validation import is_valid_email


def test_plus_addressing():
    assert is_valid_email("jane+news@example.com")
    assert signup("Jane+News@Example.com") == {"email": "jane+news@example.com"}
    assert is_valid_email("first.last-x@example.co.uk")
    assert not is_valid_email("a@b")
    assert not is_valid_email("@example.com")
    assert not is_valid_email("jane news@example.com")
