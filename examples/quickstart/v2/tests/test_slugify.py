from tinyslug import slugify


def test_lowercases_words():
    assert slugify("Hello") == "hello"


def test_strips_accents():
    assert slugify("Café") == "cafe"


def test_collapses_repeated_separators():
    """Punctuation and runs of spaces become one separator, none at the ends."""
    assert slugify("Hello,  World!") == "hello-world"
