"""``clip``: the one way text is shortened for a message, a report, a record or a result.

Text within the limit comes back unchanged; longer text keeps its first (``keep="head"``)
or last (``keep="tail"``) ``limit`` characters and shows ``mark`` where it was cut.
"""

from __future__ import annotations

from typing import Literal


def clip(text: str, limit: int, *, keep: Literal["head", "tail"] = "head", mark: str = "…") -> str:
    """At most ``limit`` characters of ``text`` plus ``mark`` at the cut (``{cut}`` in the
    mark becomes the number of characters cut)."""
    if len(text) <= limit:
        return text
    shown = mark.format(cut=len(text) - limit) if "{cut}" in mark else mark
    if keep == "tail":
        return shown + text[len(text) - limit :]
    return text[:limit] + shown
