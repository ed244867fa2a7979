def deep_merge(base: dict, override: dict) -> dict:
    """``base`` with ``override`` applied on top of it."""
    merged = dict(base)
    merged.update(override)
    return merged
