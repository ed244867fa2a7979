REPLACEMENTS = [("<", "&lt;"), (">", "&gt;"), ('"', "&quot;"), ("&", "&amp;")]


def escape(text: str) -> str:
    """``text`` safe to put inside HTML."""
    for raw, entity in REPLACEMENTS:
        text = text.replace(raw, entity)
    return text
