"""The price of a cart: the sum of its items, less a coupon's discount, and shipping."""

MAX_DISCOUNT = 50  # percent: no coupon takes more than half


def subtotal(prices: list[float]) -> float:
    """The sum of the item prices."""
    return sum(prices)


def total(prices: list[float], discount: int = 0) -> float:
    """The subtotal less ``discount`` percent, at most ``MAX_DISCOUNT``."""
    return subtotal(prices) * (100 - min(discount, MAX_DISCOUNT)) / 100


def shipping(amount: float) -> float:
    """Free from 50 up, 4.95 below."""
    if amount >= 50:
        return 0.0
    return 4.95
