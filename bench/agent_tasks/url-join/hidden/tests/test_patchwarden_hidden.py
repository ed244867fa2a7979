from http_helpers import join_url


def test_one_slash():
    assert join_url("https://api.example.com/v1/", "/users") == "https://api.example.com/v1/users"
    assert join_url("https://x.org/", "users") == "https://x.org/users"
    assert join_url("https://x.org", "/users") == "https://x.org/users"
    assert join_url("https://x.org", "users") == "https://x.org/users"
