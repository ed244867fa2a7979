from ratelimit import TokenBucket


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_starts_full():
    bucket = TokenBucket(rate=2, capacity=2, clock=Clock())
    assert bucket.allow()
    assert bucket.allow()
    assert not bucket.allow()
