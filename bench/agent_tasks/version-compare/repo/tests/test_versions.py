from versions import is_newer


def test_simple():
    assert is_newer("1.2.0", "1.1.0")
    assert not is_newer("1.1.0", "1.2.0")


def test_v_prefix():
    assert is_newer("v2.0.0", "1.0.0")
