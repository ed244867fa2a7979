from resilience.retry import retry


def test_success_first_time():
    calls = []

    @retry(attempts=3)
    def ok():
        calls.append(1)
        return "ok"

    assert ok() == "ok"
    assert len(calls) == 1
