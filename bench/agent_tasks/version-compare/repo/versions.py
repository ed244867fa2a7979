def parse(version: str):
    return version.strip().lstrip("v").split(".")


def is_newer(candidate: str, current: str) -> bool:
    """Whether ``candidate`` is a later version than ``current``."""
    return parse(candidate) > parse(current)
