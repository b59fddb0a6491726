"""A tiny module the example gates and the example answer talk about."""

from __future__ import annotations


def word_count(text: str) -> int:
    """Count whitespace-separated words."""
    return len(text.split())


def longest_word(text: str) -> str:
    """The longest word; the first one wins a tie; '' for no words."""
    words = text.split()
    if not words:
        return ""
    return max(words, key=len)
