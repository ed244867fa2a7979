from http_helpers import join_url


def test_plain():
    assert join_url("https://x.org", "users") == "https://x.org/users"


def test_empty_path():
    assert join_url("https://x.org", "") == "https://x.org"
