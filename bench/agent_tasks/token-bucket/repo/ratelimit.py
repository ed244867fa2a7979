import time


class TokenBucket:
    """``rate`` tokens per second, at most ``capacity`` saved up."""

    def __init__(self, rate: float, capacity: float, clock=time.monotonic):
        self.rate = rate
        self.capacity = capacity
        self.clock = clock
        self.tokens = capacity
        self.updated = clock()

    def _refill(self) -> None:
        now = self.clock()
        elapsed_ms = (now - self.updated) * 1000
        self.tokens = min(self.capacity, self.tokens + elapsed_ms * self.rate / 1000 / 1000)
        self.updated = now

    def allow(self, cost: float = 1.0) -> bool:
        self._refill()
        if self.tokens >= cost:
            self.tokens -= cost
            return True
        return False
