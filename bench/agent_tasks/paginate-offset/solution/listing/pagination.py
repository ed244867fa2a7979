import math


def page_count(total: int, per_page: int) -> int:
    return max(1, math.ceil(total / per_page))


def paginate(items, page: int, per_page: int = 10):
    """The items on ``page`` (numbered from 1)."""
    if page < 1:
        raise ValueError("pages are numbered from 1")
    start = (page - 1) * per_page
    return items[start : start + per_page]
