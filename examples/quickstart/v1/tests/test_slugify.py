from tinyslug import slugify


def test_lowercases_words():
    assert slugify("Hello") == "hello"


def test_strips_accents():
    assert slugify("Café") == "cafe"
