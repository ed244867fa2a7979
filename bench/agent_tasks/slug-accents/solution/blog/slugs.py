import re
import unicodedata


def slugify(title: str) -> str:
    """A URL slug: lower case ASCII words joined by hyphens."""
    ascii_title = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
    words = re.split(r"[^a-z0-9]+", ascii_title.lower())
    return "-".join(w for w in words if w)
