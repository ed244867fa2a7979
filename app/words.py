"""How Patchwarden writes counts in English: ``1 file``, ``3 files``, never ``file(s)``."""

from __future__ import annotations


def plural(count: int, word: str, many: str | None = None) -> str:
    """``count`` and ``word``, the word in the plural unless ``count`` is 1.

    The plural is ``word + "s"`` unless ``many`` gives it (``plural(2, "entry",
    "entries")``).
    """
    return f"{count} {word if count == 1 else (many or word + 's')}"
