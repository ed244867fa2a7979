import pytest

from resilience.retry import retry


def flaky(failures):
    calls = []

    def fn():
        calls.append(1)
        if len(calls) <= failures:
            raise OSError("boom")
        return len(calls)

    return fn, calls


def test_third_attempt_succeeds():
    fn, calls = flaky(2)
    assert retry(attempts=3)(fn)() == 3


def test_gives_up_after_attempts():
    fn, calls = flaky(5)
    with pytest.raises(OSError):
        retry(attempts=3)(fn)()
    assert len(calls) == 3


def test_single_attempt():
    fn, calls = flaky(1)
    with pytest.raises(OSError):
        retry(attempts=1)(fn)()
    assert len(calls) == 1
