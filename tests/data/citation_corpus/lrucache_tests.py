# ruff: noqa  (corpus source: written in the style of the library it models)
"""Tests of the LRU cache, in the manner of cachetools' own tests."""

import unittest

import pytest

from lrucache import Cache, LRUCache, cached


class CacheTest(unittest.TestCase):
    def test_insert(self):
        cache = LRUCache(maxsize=2)
        cache[1] = 1
        cache[2] = 2
        self.assertEqual(len(cache), 2)
        self.assertEqual(cache[1], 1)

    def test_missing(self):
        cache = Cache(maxsize=2)
        with self.assertRaises(KeyError):
            cache[3]

    def test_too_large(self):
        cache = Cache(maxsize=1, getsizeof=len)
        with self.assertRaises(ValueError):
            cache["a"] = "xyz"
        self.assertEqual(len(cache), 0)

    def test_popitem_empty(self):
        cache = LRUCache(maxsize=2)
        with self.assertRaises(KeyError):
            cache.popitem()


def test_iterating_while_inserting_is_safe():
    cache = LRUCache(maxsize=3)
    cache[1] = 1
    for key in list(cache):
        cache[key + 10] = key
    assert len(cache) == 3


def test_cached_without_cache():
    with pytest.raises(TypeError):
        cached(None)


def test_cached_memoizes():
    calls = []

    @cached(LRUCache(maxsize=4))
    def double(x):
        calls.append(x)
        return 2 * x

    assert double(2) == 4
    assert double(2) == 4
    assert calls == [2]


def test_currsize_counts_items():
    cache = Cache(maxsize=3)
    cache["a"] = 1
    assert cache.currsize == 1
    del cache["a"]
    assert cache.currsize == 0


def test_hashkey_is_stable():
    from lrucache import hashkey

    assert hashkey(1, b=2) == hashkey(1, b=2)
