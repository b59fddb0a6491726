"""Ordinary tests and a Python verifier, collected next to the gates."""

from __future__ import annotations

import sys
from pathlib import Path

from pytest_vgate import Outcome, verifier

sys.path.insert(0, str(Path(__file__).parent / "src"))
from textstats import longest_word, word_count


def test_word_count_of_nothing() -> None:
    assert word_count("") == 0


@verifier(id="longest-word-is-a-word", timeout=10)
def check_longest_word(ctx):  # type: ignore[no-untyped-def]
    got = longest_word("to be or not")
    return Outcome.passed(f"got {got!r}") if got == "not" else Outcome.failed(f"got {got!r}")
