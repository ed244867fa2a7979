def parse_amount(text: str) -> float:
    """An amount such as "12.50", "$12.50" or "1,234.50", in currency units."""
    text = text.strip()
    if not text:
        raise ValueError("empty amount")
    return round(float(text.lstrip("$").replace(",", "")), 2)
