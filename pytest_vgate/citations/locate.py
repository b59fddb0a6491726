"""Is the described entity at the cited lines, and if not, where is it?

Verified: an entity of the description stands as its own code on the cited lines, in a
range that is not implausibly wide for it (``anchor``); a description that names no code
is verified by its words on a short, non-blank range. Otherwise the search: within
±``WINDOW`` lines of the citation the nearest definition, else the nearest code
occurrence (a tie is ambiguous); then the whole file, where a unique definition, else a
unique occurrence, is the correction. Entities are tried in priority order; the first
one that occurs in the file decides.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_vgate.citations.anchor import PLAIN_MAX_LINES, prose_words, slack, strong
from pytest_vgate.citations.source import EntityHits, SourceFile
from pytest_vgate.verdict import CitationStatus

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


def _distance(line: int, start: int, end: int) -> int:
    return start - line if line < start else line - end


def _nearest(lines: tuple[int, ...], start: int, end: int) -> tuple[int, ...]:
    near = [n for n in lines if start - WINDOW <= n <= end + WINDOW]
    if not near:
        return ()
    best = min(_distance(n, start, end) for n in near)
    return tuple(n for n in near if _distance(n, start, end) == best)


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


def locate(
    sf: SourceFile, start: int, end: int, entities: tuple[str, ...], description: str = ""
) -> Located:
    """Judge a citation of lines ``start``..``end`` of ``sf`` that names ``entities``."""
    n = sf.line_count
    shape_ok = 1 <= start <= end
    beyond = end > n or start > n
    where = f"line {start}" if start == end else f"lines {start}-{end}"
    named = tuple(e for e in entities if strong(e))
    if beyond:
        problem = f"{where} is beyond the end of the {n}-line file"
    elif not shape_ok:
        problem = f"{where} is not a valid location"
    else:
        problem = ""
    if not problem:
        subject = named[0] if named else ""
        for entity in named:
            how = sf.anchor(entity, start, end)
            if how is None:
                continue
            if entity == subject:
                return Located(CitationStatus.VERIFIED, f"`{entity}`: {how}")
            inside = sf.inside_definition(subject, start, end)
            if inside is not None:  # a detail of the subject, inside the subject
                return Located(
                    CitationStatus.VERIFIED, f"`{entity}`: {how}, inside `{subject}` ({inside})"
                )
        if not named:
            prose = prose_words(description)
            if entities and not prose:
                weak = ", ".join(f"`{e}`" for e in entities)
                return Located(
                    CitationStatus.DROPPED,
                    f"the description names only {weak}: punctuation, keywords and builtin "
                    "names match any code, so they verify nothing",
                )
            how = sf.prose_anchor(prose, start, end)
            if how is not None:
                return Located(CitationStatus.VERIFIED, how)
            return Located(CitationStatus.DROPPED, _prose_problem(sf, start, end, where, prose))
        problem = f"{', '.join(f'`{e}`' for e in named)} not on {where}" + _width_note(
            sf, start, end
        )
    elif not named:
        status = CitationStatus.FABRICATED if beyond else CitationStatus.DROPPED
        return Located(
            status, f"{problem} and the description names nothing to search for", beyond_end=beyond
        )
    length = max(end - start, 0)
    for entity in named:
        hits = sf.hits(entity)
        if not hits.found:
            continue
        found = _search(hits, start, end, near=shape_ok and not beyond)
        if len(found) == 1:
            new_start, new_end = _shifted(sf, hits, found[0], length)
            kind = "defined" if found[0] in hits.defs else "found"
            return Located(
                CitationStatus.CORRECTED,
                f"{problem}; `{entity}` is {kind} at line {found[0]}",
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


def _width_note(sf: SourceFile, start: int, end: int) -> str:
    from pytest_vgate.citations.anchor import whole_file

    if whole_file(start, end, sf.line_count):
        return " (the range covers the whole file, too wide for what it names)"
    if all(not sf.code_line(k) for k in range(start, end + 1)):
        return " (blank or comment lines only)"
    return ""


def _prose_problem(sf: SourceFile, start: int, end: int, where: str, prose: list[str]) -> str:
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
