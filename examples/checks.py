"""Python verifiers referenced from gates.yaml (``module:function``)."""

from __future__ import annotations

import sys

from pytest_vgate import Outcome

sys.path.insert(0, "src")
from textstats import longest_word, word_count


def counts_words(ctx):
    return word_count("a b  c") == 3


def longest_breaks_ties_left(ctx):
    got = longest_word("ab cd e")
    return Outcome.passed() if got == "ab" else Outcome.failed(f"got {got!r}")


def cli_reports_version(ctx):
    r = ctx.run("python", "--version")
    return (
        Outcome.passed()
        if r.exit_code == 0 and r.stdout.startswith("Python 3.")
        else Outcome.failed(f"exit {r.exit_code}, stdout {r.stdout!r}")
    )
