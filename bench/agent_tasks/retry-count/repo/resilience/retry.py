import functools
import time


def retry(attempts: int = 3, delay: float = 0.0, exceptions=(Exception,)):
    """Call the function up to ``attempts`` times in all until it does not raise."""
    if attempts < 1:
        raise ValueError("attempts must be at least 1")

    def wrap(fn):
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            for attempt in range(1, attempts):
                try:
                    return fn(*args, **kwargs)
                except exceptions:
                    if attempt == attempts - 1:
                        raise
                    time.sleep(delay)
        return inner

    return wrap
