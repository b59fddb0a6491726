"""The base of every item pytest-vgate makes, the failure they raise and its junit-safe
text: shared by gate, verifier and citation items, so that none of them imports another."""

from __future__ import annotations

from typing import Any

import pytest


class VgateFailure(Exception):
    """A failed gate, verifier or citation; its text is the whole failure report."""


def failure_text(excinfo: pytest.ExceptionInfo[BaseException]) -> str | None:
    if isinstance(excinfo.value, VgateFailure):
        return junit_safe(str(excinfo.value))
    return None


class PluginItem(pytest.Item):
    """A gate, verifier, citation or document item: its failure report is its own text."""

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        return failure_text(excinfo) or super().repr_failure(excinfo)


def junit_safe(text: str) -> str:
    """Drop characters XML 1.0 cannot carry, so --junitxml never chokes on a report."""
    return "".join(
        ch if ch in "\t\n\r" or (" " <= ch <= "\ud7ff") or ("\ue000" <= ch <= "\ufffd") else "?"
        for ch in text
    )
