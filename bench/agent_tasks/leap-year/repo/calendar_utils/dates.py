"""Small date helpers."""


def is_leap_year(year: int) -> bool:
    """Whether ``year`` has a 29 February."""
    return year % 4 == 0


def days_in_february(year: int) -> int:
    return 29 if is_leap_year(year) else 28
