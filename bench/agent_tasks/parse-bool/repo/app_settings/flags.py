import os


def env_flag(name: str, default: bool = False) -> bool:
    """The boolean environment variable ``name``."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    return bool(raw)
