import pytest
import six


def test_errors_is_used_for_bytes():
    assert six.ensure_text(b"caf\xe9", errors="replace") == "caf\ufffd"
    assert six.ensure_text(b"caf\xe9", errors="ignore") == "caf"
    assert six.ensure_text(b"caf\xc3\xa9") == "caf\xe9"


def test_strict_still_raises_and_text_passes_through():
    with pytest.raises(UnicodeDecodeError):
        six.ensure_text(b"caf\xe9")
    assert six.ensure_text("déjà") == "déjà"
