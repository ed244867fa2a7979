import pytest

from app_settings.flags import env_flag
from app_settings.settings import load


@pytest.mark.parametrize("value", ["false", "False", " 0 ", "no", "OFF"])
def test_false_values(monkeypatch, value):
    monkeypatch.setenv("FEATURE_X", value)
    assert load().feature_x is False


@pytest.mark.parametrize("value", ["true", "1", "Yes", "on"])
def test_true_values(monkeypatch, value):
    monkeypatch.setenv("FEATURE_X", value)
    assert load().feature_x is True


def test_typo_is_an_error(monkeypatch):
    monkeypatch.setenv("FEATURE_X", "flase")
    with pytest.raises(ValueError, match="FEATURE_X"):
        env_flag("FEATURE_X")
