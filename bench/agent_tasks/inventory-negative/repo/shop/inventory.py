from collections import defaultdict


class Inventory:
    def __init__(self):
        self.stock = defaultdict(int)

    def add(self, sku: str, count: int) -> None:
        if count <= 0:
            raise ValueError("count must be positive")
        self.stock[sku] += count

    def remove(self, sku: str, count: int) -> None:
        if count <= 0:
            raise ValueError("count must be positive")
        self.stock[sku] -= count

    def available(self, sku: str) -> int:
        return self.stock[sku]
