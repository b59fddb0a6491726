"""Is the described entity at the cited line, and if not, where is it?

Verified: an entity occurs on a cited line, or (Python) the cited line lies inside an
entity's definition, from its first decorator to ``end_lineno``. Otherwise the search:
within ±``WINDOW`` lines of the citation the nearest definition, else the nearest
occurrence (a tie is ambiguous); then the whole file, where a unique definition, else a
unique occurrence, is the correction. Entities are tried in priority order; the first
one that occurs in the file decides.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_vgate.citations.files import EntityHits, SourceFile
from pytest_vgate.verdict import CitationStatus

WINDOW = 20
FAST_LINES = 64  # ranges shorter than this are checked line by line first


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


def _on_citation(hits: EntityHits, start: int, end: int) -> str | None:
    """How the entity vouches for the cited lines, or None."""
    for n in hits.matches:
        if start <= n <= end:
            return f"on line {n}"
    for s, e in hits.spans:
        if s <= start <= e:
            return f"line {start} lies inside its definition (lines {s}-{e})"
    return None


def _shifted(sf: SourceFile, hits: EntityHits, line: int, length: int) -> tuple[int, int]:
    """The corrected (start, end): a range keeps its length, anchored at the definition."""
    if length == 0:
        return line, line
    start = next((s for s, _e in hits.spans if s <= line <= _e and line in hits.defs), line)
    return start, min(start + length, max(sf.line_count, start))


def locate(sf: SourceFile, start: int, end: int, entities: tuple[str, ...]) -> Located:
    """Judge a citation of lines ``start``..``end`` of ``sf`` that names ``entities``."""
    n = sf.line_count
    shape_ok = 1 <= start <= end
    beyond = end > n or start > n
    where = f"line {start}" if start == end else f"lines {start}-{end}"
    if beyond:
        problem = f"{where} is beyond the end of the {n}-line file"
    elif not shape_ok:
        problem = f"{where} is not a valid location"
    else:
        problem = ""
    if not problem:
        if end - start < FAST_LINES:  # the common case: no whole-file work at all
            for entity in entities:
                for n in range(start, end + 1):
                    if sf.line_has(n, entity):
                        return Located(CitationStatus.VERIFIED, f"`{entity}`: on line {n}")
        for entity in entities:
            how = _on_citation(sf.hits(entity), start, end)
            if how is not None:
                return Located(CitationStatus.VERIFIED, f"`{entity}`: {how}")
        if not entities:
            return Located(
                CitationStatus.VERIFIED,
                f"{where} exists; the description names nothing more to check",
            )
        problem = f"{', '.join(f'`{e}`' for e in entities)} not on {where}"
    elif not entities:
        status = CitationStatus.FABRICATED if beyond else CitationStatus.DROPPED
        return Located(
            status, f"{problem} and the description names nothing to search for", beyond_end=beyond
        )
    length = max(end - start, 0)
    for entity in entities:
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
    names = ", ".join(f"`{e}`" for e in entities)
    return Located(
        CitationStatus.FABRICATED if beyond else CitationStatus.DROPPED,
        f"{problem}; {names} not found anywhere in the file",
        beyond_end=beyond,
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
