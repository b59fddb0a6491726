"""``clip``: the one shortening rule, and the places that use it keep their limits."""

from __future__ import annotations

import pytest

from pytest_vgate.clip import clip


def test_text_within_the_limit_is_unchanged() -> None:
    assert clip("", 0) == ""
    assert clip("abc", 3) == "abc"
    assert clip("abc", 3, keep="tail", mark="[...]") == "abc"


def test_the_head_is_kept_and_the_cut_marked() -> None:
    assert clip("abcdef", 3) == "abc…"
    assert clip("abcdef", 3, mark="...") == "abc..."


def test_the_tail_is_kept_for_output_where_errors_are() -> None:
    assert clip("abcdef", 2, keep="tail", mark="[...]") == "[...]ef"


def test_the_mark_can_say_how_much_was_cut() -> None:
    mark = "[... {cut} characters cut ...]\n"
    assert clip("x" * 10 + "tail", 4, keep="tail", mark=mark) == (
        "[... 10 characters cut ...]\ntail"
    )


@pytest.mark.parametrize("size", [0, 1, 299, 300, 301, 5000])
def test_a_why_line_stays_within_300_characters(size: int) -> None:
    """why.py keeps a decisive line of a base run whole up to 300 characters."""
    from pytest_vgate.evidence.why import decisive_lines

    line = "E" + "x" * max(size - 1, 0) if size else ""
    shown = decisive_lines(line, "")
    assert all(len(row) <= 300 for row in shown)


def test_a_zero_limit_keeps_only_the_mark() -> None:
    assert clip("abc", 0, keep="tail", mark="[...]") == "[...]"
    assert clip("abc", 0) == "…"
