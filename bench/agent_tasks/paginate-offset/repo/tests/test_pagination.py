import pytest

from listing.pagination import page_count, paginate


def test_page_count():
    assert page_count(25, 10) == 3
    assert page_count(0, 10) == 1


def test_page_zero_refused():
    with pytest.raises(ValueError):
        paginate([1, 2, 3], 0)
