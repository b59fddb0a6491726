from tinyshop import cart


def test_shipping_is_computed():
    cart.shipping(10)
    cart.shipping(80)
