from app_settings.settings import load


def test_defaults(monkeypatch):
    monkeypatch.delenv("FEATURE_X", raising=False)
    monkeypatch.delenv("DEBUG", raising=False)
    s = load()
    assert s.feature_x is False and s.debug is False


def test_true(monkeypatch):
    monkeypatch.setenv("FEATURE_X", "1")
    assert load().feature_x is True
