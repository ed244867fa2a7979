def parse(version: str):
    return [int(p) for p in version.strip().lstrip("v").split(".")]


def is_newer(candidate: str, current: str) -> bool:
    """Whether ``candidate`` is a later version than ``current``."""
    a, b = parse(candidate), parse(current)
    width = max(len(a), len(b))
    a += [0] * (width - len(a))
    b += [0] * (width - len(b))
    return a > b
