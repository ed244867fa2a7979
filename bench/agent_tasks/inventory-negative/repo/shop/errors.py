class ShopError(Exception):
    pass


class OutOfStock(ShopError):
    """Not enough of an item in stock."""
