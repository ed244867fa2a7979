def join_url(base: str, path: str) -> str:
    """``base`` and ``path`` joined with one slash."""
    if not path:
        return base
    return base.rstrip("/") + "/" + path.lstrip("/")
