def join_url(base: str, path: str) -> str:
    """``base`` and ``path`` joined with one slash."""
    if not path:
        return base
    return base + "/" + path if not base.endswith("/") else base + path
