"""Does the located line do what the description says? Verbs, starts and words.

``locate`` finds where the entity is; this module asks the rest of the description,
at that place (the cited lines when verified, the true ones when corrected):

1. **Verbs** (Python, by the AST): a description that says the lines return, raise,
   yield, import, call, assign, delete or assert, or that a test asserts equality, a
   raise or no raise, needs lines that do it. A contradiction moves the citation to
   the nearest line within ``WINDOW`` that does it and still holds the entity, or
   drops it with what the lines do instead.
2. **Starts**: "defined here", "starts here", "the signature of" need the entity's
   ``def``/``class`` line (or its first decorator); otherwise the citation is
   corrected to it.
3. **Words**: the description's remaining content words must appear, word-split and
   lightly stemmed, in the covered lines' identifiers, strings or comments; else the
   citation is ``unsupported``.

A correction is checked like the citation it replaces, so a fixed citation verifies
on the next run; a correction to the cited location itself is never made.
"""

from __future__ import annotations

from dataclasses import replace

from pytest_vgate.citations.anchor import same_word, strong, text_words
from pytest_vgate.citations.claims import Claim, Verb, read_claim
from pytest_vgate.citations.locate import WINDOW, Located, _distance
from pytest_vgate.citations.parse import Citation
from pytest_vgate.citations.source import SourceFile
from pytest_vgate.citations.syntax import Facts, holds, what_it_does
from pytest_vgate.verdict import CitationStatus

VERIFIED = CitationStatus.VERIFIED
CORRECTED = CitationStatus.CORRECTED
DROPPED = CitationStatus.DROPPED
UNSUPPORTED = CitationStatus.UNSUPPORTED


def _where(start: int, end: int) -> str:
    return f"line {start}" if start == end else f"lines {start}-{end}"


def judge(sf: SourceFile, c: Citation, loc: Located) -> Located:
    """``loc`` when the description's verbs, start and words hold where it points."""
    if loc.status not in (VERIFIED, CORRECTED):
        return loc
    if loc.status is CORRECTED and (loc.start, loc.end) == (c.start_line, c.end_line):
        # the entity is found where the citation points: correcting it would change
        # nothing, and --vgate-fix could never clear it
        loc = Located(VERIFIED, loc.reason.split("; ")[-1])
    named = tuple(e for e in c.entities if strong(e))
    claim = read_claim(c.description, c.entities)
    if not named:
        return loc  # a description that names no code was matched by its words already
    start, end = (c.start_line, c.end_line) if loc.status is VERIFIED else (loc.start, loc.end)
    if start is None or end is None:
        return loc
    subject = named[0]
    facts = sf.facts()
    moved = _verbs(sf, facts, claim, subject, start, end) if facts is not None else None
    if moved is None and claim.starts:
        moved = _starts(sf, subject, start, end)
    if moved is not None:
        status, reason, new = moved
        loc = _moved(c, loc, status, reason, new)
        if loc.status is not CORRECTED or loc.start is None or loc.end is None:
            return loc
        start, end = loc.start, loc.end
        again = _verbs(sf, facts, claim, subject, start, end) if facts is not None else None
        if again is not None or (claim.starts and _starts(sf, subject, start, end)):
            return Located(DROPPED, f"{loc.reason}; and that line does not hold all of it")
    return _words(sf, facts, claim, subject, loc, start, end)


def _moved(
    c: Citation, loc: Located, status: CitationStatus, reason: str, new: tuple[int, int] | None
) -> Located:
    prefix = f"{loc.reason}; " if loc.status is CORRECTED else ""
    if status is CORRECTED and new is not None:
        if (new[0], new[1]) == (c.start_line, c.end_line):
            return Located(VERIFIED, f"{prefix}{reason}")  # never "corrected" to itself
        return Located(CORRECTED, prefix + reason, new[0], new[1], beyond_end=loc.beyond_end)
    return Located(DROPPED, prefix + reason, candidates=loc.candidates, beyond_end=loc.beyond_end)


_Move = tuple[CitationStatus, str, tuple[int, int] | None]


def _verbs(
    sf: SourceFile, facts: Facts, claim: Claim, subject: str, start: int, end: int
) -> _Move | None:
    """None when a claimed verb holds on the lines (or none is claimed)."""
    if not claim.verbs:
        return None
    acts = facts.acts_in(start, end)
    if any(holds(v, acts) for v in claim.verbs):
        return None
    said = f"the description says {claim.said}; {what_it_does(acts, start, end)}"
    if set(claim.verbs) == {Verb.ASSERTS_NO_RAISE}:
        return DROPPED, f"{said}: the test asserts the opposite", None  # no other line will do
    found: dict[int, None] = {}
    for act in facts.acts:
        if not start - WINDOW <= act.line <= end + WINDOW or start <= act.line <= end:
            continue
        if act.line in found or not any(holds(v, [act]) for v in claim.verbs):
            continue  # only a line that does it itself, not one inside a statement that does
        if sf.anchor(subject, act.line, act.line) is None:
            continue
        if any(holds(v, facts.acts_in(act.line, act.line)) for v in claim.verbs) and _supported(
            sf, facts, claim, act.line, act.line
        ):
            found[act.line] = None
    if found:
        best = min(_distance(n, start, end) for n in found)
        nearest = [n for n in found if _distance(n, start, end) == best]
        if len(nearest) == 1:
            n = nearest[0]
            return CORRECTED, f"{said}; line {n} does ({_detail(facts, n, claim)})", (n, n)
        lines = ", ".join(str(n) for n in nearest)
        return DROPPED, f"{said}; lines {lines} do, at the same distance: ambiguous", None
    rest = " and shows the description's other words" if claim.behaviour else ""
    return DROPPED, f"{said}; no line within {WINDOW} lines that holds `{subject}` does{rest}", None


def _detail(facts: Facts, line: int, claim: Claim) -> str:
    acts = facts.acts_in(line, line)
    for verb in claim.verbs:
        for act in acts:
            if holds(verb, [act]):
                return act.detail
    return claim.said


def _starts(sf: SourceFile, subject: str, start: int, end: int) -> _Move | None:
    """None when the lines begin at a definition of ``subject``."""
    hits = sf.hits(subject)
    heads = set(hits.defs)
    firsts = {s for s, _e in hits.spans}
    if start in heads or start in firsts:
        return None
    said = f"the description says where `{subject}` starts; {_where(start, end)} is not its "
    said += "definition line"
    length = end - start
    enclosing = [(s, e) for s, e in hits.spans if s <= start and end <= e]
    if enclosing:
        s, _e = max(enclosing)
        head = min(h for h in heads if h >= s)
        return CORRECTED, f"{said}; `{subject}` is defined at line {head}", (head, head + length)
    near = [h for h in heads if start - WINDOW <= h <= end + WINDOW]
    pool = near or list(heads)
    if not pool:
        return DROPPED, f"{said}, and no definition of `{subject}` is in the file", None
    best = min(_distance(h, start, end) for h in pool)
    nearest = sorted(h for h in pool if _distance(h, start, end) == best)
    if len(nearest) == 1 or (not near and len(pool) == 1):
        head = nearest[0]
        return CORRECTED, f"{said}; `{subject}` is defined at line {head}", (head, head + length)
    lines = ", ".join(str(h) for h in nearest)
    return DROPPED, f"{said}; `{subject}` is defined at lines {lines}: ambiguous", None


def _supported(sf: SourceFile, facts: Facts | None, claim: Claim, start: int, end: int) -> bool:
    """One of the behaviour words (if any) is in the covered lines' words."""
    if not claim.behaviour:
        return True
    lo, hi = facts.extent(start, end) if facts is not None else (start, end)
    shown = text_words(" ".join(sf.lines[max(lo, 1) - 1 : hi]))
    if facts is not None:
        shown |= facts.words_in(start, end)
    return any(alike(word, other) for word in claim.behaviour for other in shown)


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def alike(a: str, b: str) -> bool:
    """The same word lightly stemmed (``sums``/``sum``, ``validated``/``validate``)."""
    return _stem(a) == _stem(b) or same_word(a, b)


def _words(
    sf: SourceFile,
    facts: Facts | None,
    claim: Claim,
    subject: str,
    loc: Located,
    start: int,
    end: int,
) -> Located:
    """``unsupported`` when none of the description's behaviour words is on the lines."""
    if _supported(sf, facts, claim, start, end):
        return loc
    lo, hi = facts.extent(start, end) if facts is not None else (start, end)
    said = ", ".join(repr(w) for w in claim.behaviour[:6])
    where = _where(lo, hi)
    prefix = f"{loc.reason}; " if loc.status is CORRECTED else ""
    return replace(
        loc,
        status=UNSUPPORTED,
        reason=f"{prefix}`{subject}` is there, but none of the "
        f"description's words ({said}) appears in {where} (identifiers, strings and comments)",
        start=None,
        end=None,
    )
