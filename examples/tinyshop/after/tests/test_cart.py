from tinyshop.cart import subtotal, total


def test_subtotal_adds_prices():
    assert subtotal([1.5, 2.5]) == 4.0


def test_total_without_coupon():
    assert total([10, 20]) == 30


def test_a_coupon_takes_at_most_half():
    assert total([100], discount=20) == 80
    assert total([100], discount=90) == 50
