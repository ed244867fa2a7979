from ratelimit import TokenBucket


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_refills_at_rate():
    clock = Clock()
    bucket = TokenBucket(rate=5, capacity=5, clock=clock)
    for _ in range(5):
        assert bucket.allow()
    assert not bucket.allow()
    clock.now += 0.2
    assert bucket.allow()
    assert not bucket.allow()
    clock.now += 10
    for _ in range(5):
        assert bucket.allow()
    assert not bucket.allow()
