"""tinyshop: what a shopping cart costs."""
