"""Whether a parsed JSON body can be read at all, whatever its shape: not nested
deeper than :data:`MAX_DEPTH`, every key and string valid Unicode. Webhook intake and
alert intake check this first (app/server.py), and so does the delivery job
(app/webhooks/payloads.py)."""

from __future__ import annotations

from typing import Any

MAX_DEPTH = 32  # GitHub's payloads nest at most 7 deep today


def unsound(payload: Any) -> str | None:
    """What makes a parsed JSON body unusable whatever its shape (too deep, not valid
    Unicode), or None. Checked without recursion: a deep body must not crash this."""
    stack: list[tuple[Any, int]] = [(payload, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            return f"the payload nests deeper than {MAX_DEPTH} levels"
        if isinstance(node, dict):
            for key, value in node.items():
                if not _valid_text(key):
                    return "a key is not valid Unicode (a lone surrogate)"
                stack.append((value, depth + 1))
        elif isinstance(node, list):
            stack.extend((item, depth + 1) for item in node)
        elif isinstance(node, str) and not _valid_text(node):
            return "a string is not valid Unicode (a lone surrogate)"
    return None


def _valid_text(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
