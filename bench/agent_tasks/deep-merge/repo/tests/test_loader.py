from config.loader import load


def test_flat_override():
    assert load('{"debug": false, "name": "x"}', '{"debug": true}') == {"debug": True, "name": "x"}
