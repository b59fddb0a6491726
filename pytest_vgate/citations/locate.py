"""Where is the described entity, when it is not on the cited lines?

Within ±``WINDOW`` lines of the citation the nearest definition, else the nearest code
occurrence (a tie is ambiguous); then the whole file (a line past the end searches only
there), where a unique definition, else a unique occurrence, is the correction.
Entities are tried in priority order; the first one that occurs in the file decides.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_vgate.citations.anchor import PLAIN_MAX_LINES, slack
from pytest_vgate.citations.source import EntityHits, SourceFile
from pytest_vgate.verdict import CitationDescription, CitationStatus

WINDOW = 20


@dataclass(frozen=True)
class Located:
    """The verdict on one file: ``start``/``end`` are the true location when corrected."""

    status: CitationStatus
    reason: str
    start: int | None = None
    end: int | None = None
    candidates: tuple[int, ...] = ()
    beyond_end: bool = False
    description: CitationDescription | None = None  # what became of the description
    description_reason: str = ""


def distance(line: int, start: int, end: int) -> int:
    return start - line if line < start else line - end


def _nearest(lines: tuple[int, ...], start: int, end: int) -> tuple[int, ...]:
    near = [n for n in lines if start - WINDOW <= n <= end + WINDOW]
    if not near:
        return ()
    best = min(distance(n, start, end) for n in near)
    return tuple(n for n in near if distance(n, start, end) == best)


def _shifted(sf: SourceFile, hits: EntityHits, line: int, length: int) -> tuple[int, int]:
    """The corrected (start, end): a range keeps its length, anchored at the definition,
    unless that length is implausible for what was found (then the definition's span)."""
    if length == 0:
        return line, line
    span = next(((s, e) for s, e in hits.spans if s <= line <= e and line in hits.defs), None)
    if span is None:
        return (line, line + length) if length < PLAIN_MAX_LINES else (line, line)
    start, end = span
    size = end - start + 1
    if length + 1 > size + slack(size):
        return start, end
    return start, min(start + length, max(sf.line_count, start))


def search(
    sf: SourceFile,
    named: tuple[str, ...],
    start: int,
    end: int,
    problem: str,
    *,
    near: bool,
    beyond: bool,
) -> Located:
    """The entities are not on the cited lines (``problem`` says why): the first one that
    occurs in the file decides, corrected to one line or dropped as ambiguous."""
    length = max(end - start, 0)
    for entity in named:
        hits = sf.hits(entity)
        if not hits.found:
            continue
        found = _search(hits, start, end, near=near)
        if len(found) == 1:
            new_start, new_end = _shifted(sf, hits, found[0], length)
            kind = "defined" if found[0] in hits.defs else "found"
            why = f"`{entity}` is {kind} at line {found[0]}"
            if (new_start, new_end) == (start, end):
                return Located(CitationStatus.VERIFIED, why)  # never "corrected" to itself
            return Located(
                CitationStatus.CORRECTED,
                f"{problem}; {why}",
                new_start,
                new_end,
                beyond_end=beyond,
            )
        lines = ", ".join(str(x) for x in found)
        return Located(
            CitationStatus.DROPPED,
            f"{problem}; `{entity}` is ambiguous: {len(found)} candidates (lines {lines})",
            candidates=found,
            beyond_end=beyond,
        )
    names = ", ".join(f"`{e}`" for e in named)
    return Located(
        CitationStatus.FABRICATED if beyond else CitationStatus.DROPPED,
        f"{problem}; {names} not found as code anywhere in the file",
        beyond_end=beyond,
    )


def width_note(sf: SourceFile, start: int, end: int) -> str:
    from pytest_vgate.citations.anchor import whole_file

    if whole_file(start, end, sf.line_count):
        return " (the range covers the whole file, too wide for what it names)"
    if all(not sf.code_line(k) for k in range(start, end + 1)):
        return " (blank or comment lines only)"
    return ""


def prose_problem(sf: SourceFile, start: int, end: int, where: str, prose: list[str]) -> str:
    from pytest_vgate.citations.anchor import PROSE_MAX_LINES, is_blank, whole_file

    if whole_file(start, end, sf.line_count) or end - start + 1 > PROSE_MAX_LINES:
        return (
            f"{where} is too wide for a description that names no code "
            f"(at most {PROSE_MAX_LINES} lines); cite the lines it describes"
        )
    if all(is_blank(sf.lines[k - 1]) for k in range(start, end + 1)):
        return f"{where} is blank; the description names nothing to search for"
    said = ", ".join(repr(w) for w in prose[:6])
    return (
        f"none of the description's words ({said}) is on {where}, and it names no code "
        "to search for"
    )


def _search(hits: EntityHits, start: int, end: int, *, near: bool) -> tuple[int, ...]:
    """One line (a correction) or several (ambiguous); never empty when ``hits.found``."""
    if near:
        for pool in (hits.defs, hits.matches):
            close = _nearest(pool, start, end)
            if close:
                return close
    for pool in (hits.defs, hits.matches):
        if pool:
            return pool
    return ()
