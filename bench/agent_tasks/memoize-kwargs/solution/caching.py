import functools


def memoize(fn):
    """Cache ``fn``'s results by its arguments."""
    cache = {}

    @functools.wraps(fn)
    def inner(*args, **kwargs):
        key = (args, tuple(sorted(kwargs.items())))
        if key not in cache:
            cache[key] = fn(*args, **kwargs)
        return cache[key]

    inner.cache = cache
    return inner
