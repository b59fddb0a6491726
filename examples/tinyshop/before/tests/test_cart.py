from tinyshop.cart import subtotal, total


def test_subtotal_adds_prices():
    assert subtotal([1.5, 2.5]) == 4.0


def test_total_without_coupon():
    assert total([10, 20]) == 30
