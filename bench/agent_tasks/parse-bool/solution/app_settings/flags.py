import os

TRUE = {"1", "true", "yes", "on"}
FALSE = {"0", "false", "no", "off"}


def env_flag(name: str, default: bool = False) -> bool:
    """The boolean environment variable ``name``."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value in TRUE:
        return True
    if value in FALSE:
        return False
    raise ValueError(f"{name}={raw!r} is not a boolean (use true/false, 1/0, yes/no, on/off)")
