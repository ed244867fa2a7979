from iniconfig import IniConfig


def test_the_default_comes_back_for_what_is_missing():
    config = IniConfig("x.ini", data="[s]\na = 1\n")
    assert config.get("s", "missing", default="fallback") == "fallback"
    assert config.get("nope", "a", default=3) == 3
    assert config["s"].get("missing", "fallback") == "fallback"
    assert config.get("s", "missing") is None


def test_present_values_and_conversion():
    config = IniConfig("x.ini", data="[s]\na = 1\n")
    assert config.get("s", "a") == "1"
    assert config.get("s", "a", convert=int) == 1
