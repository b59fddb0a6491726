"""The status of one citation of a file that exists, in the order ``docs/citations.md``
writes the rules: location first (the lines exist, a line past the end, the entity at
the cited lines, drift: within ±``WINDOW`` lines the nearest definition, else the
nearest occurrence; then a unique one in the file), then the description (where it
starts, its verbs, its values).

``decide`` is that order, read top to bottom. A description fails a citation only where
the covered lines' syntax contradicts it (``unsupported``); words the syntax cannot decide
leave it ``not-judged``, verified for its location and entity.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, replace
from typing import TypeVar

from pytest_vgate.citations.anchor import (
    PLAIN_MAX_LINES,
    PROSE_MAX_LINES,
    is_blank,
    prose_words,
    slack,
    strong,
    whole_file,
)
from pytest_vgate.citations.claims import Claim, ValueClaim, Verb, read_claim
from pytest_vgate.citations.parse import Citation
from pytest_vgate.citations.source import EntityHits, SourceFile
from pytest_vgate.citations.syntax import Act, Facts, Value, holds, what_it_does
from pytest_vgate.verdict import CitationDescription, CitationStatus

VERIFIED = CitationStatus.VERIFIED
CORRECTED = CitationStatus.CORRECTED
DROPPED = CitationStatus.DROPPED
FABRICATED = CitationStatus.FABRICATED
UNSUPPORTED = CitationStatus.UNSUPPORTED
SHOWN = CitationDescription.SHOWN
CONTRADICTED = CitationDescription.CONTRADICTED
NOT_JUDGED = CitationDescription.NOT_JUDGED
T = TypeVar("T", Act, Value)
_Move = tuple[CitationStatus, str, tuple[int, int] | None]


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
    if whole_file(start, end, sf.line_count):
        return " (the range covers the whole file, too wide for what it names)"
    if all(not sf.code_line(k) for k in range(start, end + 1)):
        return " (blank or comment lines only)"
    return ""


def prose_problem(sf: SourceFile, start: int, end: int, where: str, prose: list[str]) -> str:
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


def where(start: int, end: int) -> str:
    return f"line {start}" if start == end else f"lines {start}-{end}"


def decide(sf: SourceFile, c: Citation) -> Located:
    """The verdict on ``c`` in ``sf`` (the file the citation names, read)."""
    start, end = c.start_line, c.end_line
    named = tuple(e for e in c.entities if strong(e))
    spot = where(start, end)
    # 1. The lines exist. A line past the end is a fabrication sign whatever follows:
    #    the entity is searched in the whole file.
    beyond = start > sf.line_count or end > sf.line_count
    if beyond or not 1 <= start <= end:
        problem = (
            f"{spot} is beyond the end of the {sf.line_count}-line file"
            if beyond
            else f"{spot} is not a valid location"
        )
        if not named:
            status = FABRICATED if beyond else DROPPED
            why = f"{problem} and the description names nothing to search for"
            return Located(status, why, beyond_end=beyond)
        loc = search(sf, named, start, end, problem, near=False, beyond=beyond)
    # 2. A description that names no code is placed by its words.
    elif not named:
        return _by_words(sf, c, start, end, spot)
    # 3. The entity stands as its own code on the cited lines.
    elif (how := _anchored(sf, named, start, end)) is not None:
        loc = Located(VERIFIED, how)
    # 4. Drift: the entity within WINDOW lines, else the only one of it in the file; where
    #    that place does not do the verb said, the line near the citation that does.
    else:
        names = ", ".join(f"`{e}`" for e in named)
        problem = f"{names} not on {spot}{width_note(sf, start, end)}"
        loc = search(sf, named, start, end, problem, near=True, beyond=False)
        facts, claim, (s, e) = sf.facts, read_claim(c.description), (loc.start, loc.end)
        if facts and claim.verbs and loc.status is CORRECTED and s and e:
            acts = _scope(sf, facts, _here(claim, facts, s, e), named[0], s, e, facts.acts)
            act = (
                None
                if any(holds(v, acts) for v in claim.verbs)
                else _verb_elsewhere(sf, facts, claim, named[0], start, end, problem)
            )
            loc = Located(CORRECTED, act[0], *act[1]) if act else loc
    if loc.status not in (VERIFIED, CORRECTED):
        return loc
    # 5. Then the description, where the location ended: where it starts, what it does.
    return _describe(sf, c, read_claim(c.description), named[0], loc)


def _anchored(sf: SourceFile, named: tuple[str, ...], start: int, end: int) -> str | None:
    """How the subject (or another entity, inside the subject) stands on the lines."""
    subject = named[0]
    hits = sf.hits(subject)
    if hits.text_only:
        on = [n for n in hits.matches if start <= n <= end]
        if on:
            return f"`{subject}` is named on line {on[0]} (the file holds it only as text)"
    for entity in named:
        how = sf.anchor(entity, start, end)
        if how is None:
            continue
        if entity == subject:
            return f"`{entity}`: {how}"
        inside = sf.inside_definition(subject, start, end)
        if inside is not None:  # a detail of the subject, inside the subject
            return f"`{entity}`: {how}, inside `{subject}` ({inside})"
    return None


def _by_words(sf: SourceFile, c: Citation, start: int, end: int, spot: str) -> Located:
    prose = prose_words(c.description)
    if c.entities and not prose:
        weak = ", ".join(f"`{e}`" for e in c.entities)
        return Located(
            DROPPED,
            f"the description names only {weak}: punctuation, keywords and builtin names "
            "match any code, so they verify nothing",
        )
    how = sf.prose_anchor(prose, start, end)
    if how is None:
        return Located(DROPPED, prose_problem(sf, start, end, spot, prose))
    return Located(VERIFIED, how, description=NOT_JUDGED, description_reason="it names no code")


def _describe(sf: SourceFile, c: Citation, claim: Claim, subject: str, loc: Located) -> Located:
    """Steps 5-7: the start, the verbs (a drifted act is a correction), the values."""
    # 5. "defined here", "the signature of": the entity's definition line.
    if claim.starts:
        start, end = _at(c, loc)
        moved = _starts(sf, subject, start, end)
        if moved is not None:
            loc = _moved(c, loc, *moved)
            if loc.status is not CORRECTED:
                return loc
    facts = sf.facts
    if facts is None or not claim.checkable:
        reason = "its words name nothing the syntax can decide"
        if claim.starts:
            return replace(loc, description=SHOWN, description_reason="the definition line")
        return replace(loc, description=NOT_JUDGED, description_reason=reason)
    # 6. The verbs: a line within WINDOW lines that does it is a correction; none, a
    #    contradiction.
    start, end = _at(c, loc)
    here = _here(claim, facts, start, end)
    acts = _scope(sf, facts, here, subject, start, end, facts.acts)
    said = _elsewhere(sf, facts, claim, subject)
    if not said and claim.verbs and not any(holds(v, acts) for v in claim.verbs):
        said = f"the description says {claim.said}; {what_it_does(acts, start, end)}"
        wrong = not claim.here and _conflict(claim, facts, start, end)  # not drifted: wrong
        near = None if wrong else _verb_elsewhere(sf, facts, claim, subject, start, end, said)
        if near is not None and not (claim.starts and loc.status is CORRECTED):
            loc = _moved(c, loc, CORRECTED, *near)
            start, end = _at(c, loc)
            here = _here(claim, facts, start, end)
            acts = _scope(sf, facts, here, subject, start, end, facts.acts)
            said = ""
        elif near is not None:
            return Located(DROPPED, f"{loc.reason}; {said}; and that line does not hold all of it")
    # 7. The values: a literal the lines show otherwise.
    values = (
        facts.values_in(start, end),
        _scope(sf, facts, here, subject, start, end, facts.values),
    )
    contradiction = said or _values_contradicted(claim, subject, values, facts)
    if contradiction:
        if loc.status is VERIFIED:
            return Located(
                UNSUPPORTED,
                f"{loc.reason}; {contradiction}",
                description=CONTRADICTED,
                description_reason=contradiction,
            )
        return replace(loc, description=CONTRADICTED, description_reason=contradiction)
    shown = _shown(claim, subject, acts, values)
    if not shown:
        reason = "the lines show none of its checkable parts either way"
        return replace(loc, description=NOT_JUDGED, description_reason=reason)
    return replace(loc, description=SHOWN, description_reason=f"the lines show {shown}")


def _at(c: Citation, loc: Located) -> tuple[int, int]:
    if loc.status is CORRECTED and loc.start is not None and loc.end is not None:
        return loc.start, loc.end
    return c.start_line, c.end_line


def _moved(
    c: Citation, loc: Located, status: CitationStatus, reason: str, new: tuple[int, int] | None
) -> Located:
    prefix = f"{loc.reason}; " if loc.status is CORRECTED else ""
    if status is CORRECTED and new is not None:
        if new == (c.start_line, c.end_line):
            return Located(VERIFIED, prefix + reason)  # never "corrected" to itself
        return Located(CORRECTED, prefix + reason, new[0], new[1], beyond_end=loc.beyond_end)
    return Located(DROPPED, prefix + reason, candidates=loc.candidates, beyond_end=loc.beyond_end)


_EXITS = frozenset({Verb.RETURNS, Verb.RAISES, Verb.YIELDS})
_USES = frozenset({Verb.CALLS, Verb.IMPORTS, Verb.ASSERTS, Verb.ASSERTS_EQUAL, Verb.ASSERTS_RAISES})


def _elsewhere(sf: SourceFile, facts: Facts, claim: Claim, subject: str) -> str:
    """The subject is only imported here: what its definition does (returns, raises,
    ...) lies in another file, which never verifies this one. "" when that is not so."""
    if subject not in facts.imported or sf.hits(subject).defs:
        return ""
    said = [v.value for v in claim.verbs if v not in _USES and v is not Verb.ASSERTS_NO_RAISE]
    said += [f"{w.kind} {w.value!r}" for w in claim.values if w.kind in ("returns", "raises")]
    if not said:
        return ""
    return (
        f"the description says `{subject}` {' and '.join(said)}; `{subject}` is imported "
        f"into {sf.rel}, its definition is in another file, which never verifies this one"
    )


def _conflict(claim: Claim, facts: Facts, start: int, end: int) -> bool:
    """The claim names a way out (returns) where the lines take another (a ``raise``):
    it describes these lines wrongly, it has not drifted."""
    taken = {a.verb for a in facts.acts_in(start, end)} & _EXITS
    said = set(claim.verbs) & _EXITS
    return bool(said and taken and not said & taken)


def _here(claim: Claim, facts: Facts, start: int, end: int) -> bool:
    """Whether the claim is about the covered lines themselves, not the definition they
    lie in: it says "here", or it conflicts with them."""
    return claim.here or _conflict(claim, facts, start, end)


def _scope(
    sf: SourceFile, facts: Facts, here: bool, subject: str, start: int, end: int, what: list[T]
) -> list[T]:
    """What the covered lines hold; a claim about the subject ("`f` returns None"), not
    about the lines ("returns here"), is about the whole definition of it they lie in."""
    lo, hi = facts.extent(start, end)
    if not here:
        around = [(s, e) for s, e in sf.hits(subject).spans if s <= start and end <= e]
        if around:
            s, e = max(around)
            lo, hi = min(lo, s), max(hi, e)
    return [x for x in what if lo <= x.line <= hi]


def _verb_elsewhere(
    sf: SourceFile, facts: Facts, claim: Claim, subject: str, start: int, end: int, said: str
) -> tuple[str, tuple[int, int]] | None:
    """The nearest line within WINDOW lines that does a claimed verb itself and holds the
    subject (a correction); None when there is none, or two at one distance."""
    if set(claim.verbs) == {Verb.ASSERTS_NO_RAISE}:
        return None  # the test asserts the opposite: no other line will do
    found: dict[int, None] = {}
    for act in facts.acts:
        if not start - WINDOW <= act.line <= end + WINDOW or start <= act.line <= end:
            continue
        if act.line in found or not any(holds(v, [act]) for v in claim.verbs):
            continue
        if sf.anchor(subject, act.line, act.line) is None:
            continue
        if any(holds(v, facts.acts_in(act.line, act.line)) for v in claim.verbs):
            found[act.line] = None
    best = min((distance(n, start, end) for n in found), default=None)
    nearest = [n for n in found if distance(n, start, end) == best]
    if len(nearest) != 1:
        return None
    n = nearest[0]
    detail = next(
        (a.detail for a in facts.acts_in(n, n) for v in claim.verbs if holds(v, [a])), claim.said
    )
    return f"{said}; line {n} does ({detail})", (n, n)


def _starts(sf: SourceFile, subject: str, start: int, end: int) -> _Move | None:
    """None when the lines begin at a definition of ``subject``; else where it does."""
    hits = sf.hits(subject)
    heads = sorted(hits.defs)
    if start in heads or start in {s for s, _e in hits.spans}:
        return None
    said = f"the description says where `{subject}` starts; {where(start, end)} is not its "
    said += "definition line"
    enclosing = [s for s, e in hits.spans if s <= start and end <= e]
    if enclosing:  # the definition that holds the lines
        pool = [min(h for h in heads if h >= max(enclosing))]
    else:
        pool = [h for h in heads if start - WINDOW <= h <= end + WINDOW] or heads
    if not pool:
        return DROPPED, f"{said}, and no definition of `{subject}` is in the file", None
    best = min(distance(h, start, end) for h in pool)
    nearest = [h for h in pool if distance(h, start, end) == best]
    if len(nearest) > 1:
        lines = ", ".join(map(str, nearest))
        return DROPPED, f"{said}; `{subject}` is defined at lines {lines}: ambiguous", None
    head = nearest[0]
    return CORRECTED, f"{said}; `{subject}` is defined at line {head}", (head, head + end - start)


def _values_contradicted(
    claim: Claim, subject: str, values: tuple[list[Value], list[Value]], facts: Facts
) -> str:
    """Why the lines show a stated value to be otherwise ("" when they do not): the
    covered lines' own values first, else those of the definition they lie in."""
    last = subject.rsplit(".", 1)[-1]
    for want in claim.values:
        seen = _relevant(want, last, values[0]) or _relevant(want, last, values[1])
        if not seen or any(_same(v, want, facts) for v in seen):
            continue
        if want.kind == "raises":
            if all(_same(v, want, facts) is False for v in seen):
                raised = ", ".join(sorted({str(v.value) for v in seen}))
                said = want.value.replace("|", " or ")
                return f"the description says it raises {said}; the lines raise {raised}"
            continue
        if want.kind == "compares":  # each comparison needs a literal side, none the one said
            lines = {v.line for v in seen}
            if not want.literal or not all(
                any(v.literal for v in seen if v.line == n) for n in lines
            ):
                continue
            seen = [v for v in seen if v.literal]
        elif not want.literal or any(v.value is None or not v.literal for v in seen):
            continue  # an expression, or a name, may well be the value said
        shown = ", ".join(sorted({repr(v.value) for v in seen}))
        what = {
            "is": f"`{last}` is set to",
            "returns": "it returns",
            "maps": f"{want.key!r} maps to",
            "compares": "it compares with",
        }[want.kind]
        return f"the description says {what} {want.value!r}; the lines show {shown}"
    return ""


def _relevant(want: ValueClaim, subject: str, values: list[Value]) -> list[Value]:
    if want.kind == "is":
        key = want.key or subject
        return [v for v in values if v.kind in ("assign", "map") and v.key == key]
    if want.kind == "maps":
        return [v for v in values if v.kind == "map" and v.key == want.key]
    kind = {"returns": "return", "raises": "raise", "compares": "compare"}[want.kind]
    return [v for v in values if v.kind == kind]


def _same(v: Value, want: ValueClaim, facts: Facts) -> bool | None:
    """Whether ``v`` is the value said (None: cannot tell)."""
    if want.kind != "raises":
        return _equal(v.value, want.value)
    if v.value is None:
        return None
    raised = v.value.rsplit(".", 1)[-1]
    answers = {_is_a(raised, w.rsplit(".", 1)[-1], facts.bases, ()) for w in want.value.split("|")}
    return True if True in answers else None if None in answers else False


def _equal(a: str | None, b: str) -> bool:
    """The same value; numbers by their value (``30`` is ``30.0``)."""
    try:
        return a == b or (a is not None and float(a) == float(b))
    except ValueError:
        return False


def _is_a(
    name: str, wanted: str, bases: dict[str, tuple[str, ...]], seen: tuple[str, ...]
) -> bool | None:
    """Is the class ``name`` a ``wanted``: builtins by ``issubclass``, the file's own
    classes by their bases; None when a base is not known."""
    if name == wanted:
        return True
    given, target = getattr(builtins, name, None), getattr(builtins, wanted, None)
    if isinstance(given, type) and issubclass(given, BaseException):
        return isinstance(target, type) and issubclass(given, target)
    if name not in bases or name in seen:
        return None
    answers = [_is_a(b.rsplit(".", 1)[-1], wanted, bases, (*seen, name)) for b in bases[name]]
    if any(answers):
        return True
    return False if answers and all(a is False for a in answers) else None


def _shown(
    claim: Claim, subject: str, acts: list[Act], values: tuple[list[Value], list[Value]]
) -> str:
    """What of the claim the lines show ("" when nothing)."""
    parts = [f"it {v.value}" for v in claim.verbs if holds(v, acts)]
    last = subject.rsplit(".", 1)[-1]
    for want in claim.values:
        seen = _relevant(want, last, values[0]) or _relevant(want, last, values[1])
        if any(_equal(x.value, want.value) for x in seen):
            parts.append(
                f"{want.value!r}" if want.kind != "maps" else f"{want.key!r}: {want.value!r}"
            )
    return ", ".join(parts)
