"""The price of a cart: the sum of its items, less a coupon's discount."""


def subtotal(prices: list[float]) -> float:
    """The sum of the item prices."""
    return sum(prices)


def total(prices: list[float], discount: int = 0) -> float:
    """The subtotal less ``discount`` percent."""
    return subtotal(prices) * (100 - discount) / 100
