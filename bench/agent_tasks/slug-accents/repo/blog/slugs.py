import re


def slugify(title: str) -> str:
    """A URL slug: lower case ASCII words joined by hyphens."""
    words = re.split(r"[^a-z0-9]+", title.lower())
    return "-".join(w for w in words if w)
