from listing.pagination import page_count, paginate


def list_view(items, page=1, per_page=10):
    return {
        "items": paginate(items, page, per_page),
        "page": page,
        "pages": page_count(len(items), per_page),
    }
