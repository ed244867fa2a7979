from listing.pagination import paginate
from listing.views import list_view


def test_first_page_starts_at_first_item():
    items = list(range(25))
    assert paginate(items, 1, 10) == list(range(10))
    assert paginate(items, 3, 10) == [20, 21, 22, 23, 24]
    assert list_view(items, page=1)["items"][0] == 0
