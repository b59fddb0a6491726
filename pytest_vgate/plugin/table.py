"""Plain-text layout for the terminal summary: tables that fit a width, text that wraps
at words and is shortened only at sentence ends. Pure functions, no pytest."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence

NAME_MIN = 16  # a column of names (``whole``) is at least this wide when it must give way
PROSE = 18  # a column of words keeps this width until the names have given way too
MIN_COLUMN = 6  # a column never shrinks below this (or its header's longest word)
_SENTENCE_END = re.compile(r"(?<=[.;!?])\s+(?=\S)")


def wrap(text: str, width: int, indent: str = "", subsequent: str | None = None) -> list[str]:
    """Wrap at spaces; a word longer than the width is broken (paths, node ids)."""
    text = " ".join(text.split())
    if not text:
        return [indent.rstrip()] if indent.strip() else [""]
    if len(indent) + len(text) <= width:  # fits: what textwrap returns, without its work
        return [indent + text]
    return textwrap.wrap(
        text,
        width=max(width, len(indent) + 1, len(subsequent or indent) + 1),
        initial_indent=indent,
        subsequent_indent=indent if subsequent is None else subsequent,
        break_long_words=True,
        break_on_hyphens=False,
    )


_NAME_BREAK = re.compile(r"(?<=[./:_\-\[])")


def wrap_cell(cell: str, width: int) -> list[str]:
    """Wrap a table cell: text at spaces, a name (a gate id, a path) after ``.``, ``/``,
    ``:``, ``_`` or ``-``, and only then anywhere."""
    if not cell:
        return [""]
    if " " in cell.strip() or len(cell) <= width:
        return wrap(cell, width)
    lines = [""]
    for token in _NAME_BREAK.split(cell):
        if lines[-1] and len(lines[-1]) + len(token) > width:
            lines.append("")
        lines[-1] += token
    return [
        piece for line in lines for piece in (wrap(line, width) if len(line) > width else [line])
    ]


def sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE_END.split(" ".join(text.split())) if s]


def leading_sentences(text: str, limit: int) -> tuple[str, bool]:
    """As many whole sentences (or ``;`` clauses) of ``text`` as fit in ``limit``
    characters, never fewer than one; and whether anything was left out."""
    parts = sentences(text)
    if not parts:
        return "", False
    kept = [parts[0]]
    for part in parts[1:]:
        if len(" ".join([*kept, part])) > limit:
            break
        kept.append(part)
    return " ".join(kept), len(kept) < len(parts)


def _word_floor(table: list[list[str]], i: int, least: int, otherwise: int) -> int:
    """A prose column (cells with spaces) keeps ``least`` and its longest word; another
    column gets ``otherwise``."""
    if any(" " in row[i].strip() for row in table[1:]):
        return max(least, *(len(w) for row in table[1:] for w in row[i].split()))
    return otherwise


def _shrink(widths: list[int], floor: list[int], budget: int) -> None:
    """Narrow the widest column above its floor, one step at a time, until all fit."""
    while sum(widths) > budget:
        shrinkable = [i for i, w in enumerate(widths) if w > floor[i]]
        if not shrinkable:
            return
        widest = max(shrinkable, key=lambda i: widths[i])
        widths[widest] -= 1


def _fit_widths(table: list[list[str]], minimum: list[int], budget: int) -> list[int]:
    """Column widths within ``budget``: prose columns (cells with spaces) give way first,
    down to a readable width (``PROSE``, or their longest word); then the widest column,
    whatever it holds."""
    count = len(minimum)
    widths = [max(len(row[i]) for row in table) for i in range(count)]
    words = [
        _word_floor(table, i, max(minimum[i], min(widths[i], PROSE)), widths[i])
        for i in range(count)
    ]
    _shrink(widths, words, budget)
    _shrink(widths, minimum, budget)
    return widths


def _fix_columns(
    table: list[list[str]],
    natural: list[int],
    minimum: list[int],
    budget: int,
    fixed: Sequence[int],
) -> None:
    """Raise the floor of each ``fixed`` column (in priority order) to its natural width
    while every column still fits at its floor (a prose column's floor: its longest word)."""
    floors = [_word_floor(table, i, minimum[i], minimum[i]) for i in range(len(minimum))]
    for i in fixed:
        if sum(floors) - floors[i] + natural[i] <= budget:
            floors[i] = minimum[i] = natural[i]


def elide(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters: its middle gives way to ``…``, so both
    ends of a name (its file, its test) stay readable."""
    if len(text) <= width:
        return text
    keep = max(width - 1, 2)
    return text[: keep - keep // 2] + "\u2026" + text[len(text) - keep // 2 :]


def table_rows(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    width: int,
    *,
    indent: int = 2,
    gap: int = 2,
    whole: int | None = None,
    fixed: Sequence[int] = (),
) -> list[list[str]]:
    """The lines of each row (the header first), all with the same column widths.

    The cells of column ``whole`` (names: gate ids) never wrap: a name wider than its
    column goes on a line of its own above the rest of its row, whole when it fits the
    width, else with its middle elided. The ``fixed`` columns (one-word statuses) keep
    their natural width whenever the others can give way enough."""
    table = [list(header), *[list(r) for r in rows]]
    count = len(header)
    natural = [max(len(row[i]) for row in table) for i in range(count)]
    minimum: list[int] = [
        min(natural[i], max(MIN_COLUMN, *(len(w) for w in header[i].split()))) for i in range(count)
    ]
    budget = width - indent - gap * (count - 1)
    own_line: set[int] = set()
    if whole is not None:
        others = sum(n for i, n in enumerate(natural) if i != whole)
        room = max(budget - others, min(natural[whole], max(NAME_MIN, len(header[whole]))))
        own_line = {k for k, row in enumerate(table) if k and len(row[whole]) > room}
        named = [row[whole] for k, row in enumerate(table) if k not in own_line]
        minimum[whole] = max(len(name) for name in named)
        table_fit = [
            [("" if k in own_line and i == whole else c) for i, c in enumerate(row)]
            for k, row in enumerate(table)
        ]
    else:
        table_fit = table
    _fix_columns(table_fit, natural, minimum, budget, fixed)
    widths = _fit_widths(table_fit, minimum, budget)
    groups = []
    for k, row in enumerate(table_fit):
        cells = [wrap_cell(cell, widths[i]) for i, cell in enumerate(row)]
        group = []
        if k in own_line and whole is not None:
            group.append(" " * indent + elide(table[k][whole], width - indent))
        for n in range(max(len(c) for c in cells)):
            parts = [(c[n] if n < len(c) else "").ljust(widths[i]) for i, c in enumerate(cells)]
            group.append((" " * indent + (" " * gap).join(parts)).rstrip())
        groups.append(group)
    return groups
