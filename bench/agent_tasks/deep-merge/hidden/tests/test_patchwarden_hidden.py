import copy

from config.merge import deep_merge


def test_nested_merge():
    base = {"db": {"host": "localhost", "port": 5432, "opts": {"ssl": True}}, "tags": [1, 2]}
    override = {"db": {"port": 6543, "opts": {"timeout": 3}}, "tags": [3]}
    before = copy.deepcopy((base, override))
    assert deep_merge(base, override) == {
        "db": {"host": "localhost", "port": 6543, "opts": {"ssl": True, "timeout": 3}},
        "tags": [3],
    }
    assert (base, override) == before


def test_scalar_replaces_section():
    assert deep_merge({"a": {"b": 1}}, {"a": 2}) == {"a": 2}
