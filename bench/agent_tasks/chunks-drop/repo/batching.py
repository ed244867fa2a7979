def chunked(items, size):
    """Split ``items`` into lists of ``size`` items, in order."""
    if size < 1:
        raise ValueError("size must be at least 1")
    return [items[i : i + size] for i in range(0, len(items) - size + 1, size)]
