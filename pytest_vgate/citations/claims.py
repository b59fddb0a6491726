"""What a description claims the cited lines do, as far as their syntax can show it.

Read: a verb of the table in ``docs/citations.md`` (``returns``, ``raises``, ``checks that
... raises``, ...), a claim about where an entity starts ("defined here", "the signature
of"), and values ("bumped to 8.0.2", "returns `None`", "maps "fr_FR" to a comma", "raises
`KeyError`"). Every other word ("is now keyed by gender") is left to a judge, if any:
the syntax cannot decide it, so it never fails a citation.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from pytest_vgate.jsonable import StrEnum


class Verb(StrEnum):
    """A thing a line does that its AST shows (``docs/citations.md`` has the table)."""

    RETURNS = "returns"
    RAISES = "raises"
    YIELDS = "yields"
    IMPORTS = "imports"
    CALLS = "calls"
    ASSIGNS = "assigns"
    DELETES = "deletes"
    DEFINES = "defines"
    AWAITS = "awaits"
    ASSERTS = "asserts"
    ASSERTS_EQUAL = "asserts equality"
    ASSERTS_RAISES = "asserts a raise"
    ASSERTS_NO_RAISE = "asserts no raise"


# A verb as descriptions write it; (?<!...) keeps "the return value" and "raise" nouns out.
_VERB_RES: tuple[tuple[Verb, re.Pattern[str]], ...] = tuple(
    (verb, re.compile(pattern))
    for verb, pattern in (
        (Verb.RETURNS, r"\b(?:returns|returned|is returned)\b"),
        (Verb.RAISES, r"\b(?:raises|is raised|throws)\b"),
        (Verb.YIELDS, r"\b(?:yields|is yielded|yielded)\b"),
        (Verb.IMPORTS, r"\b(?:imports|is imported)\b"),
        (Verb.CALLS, r"\b(?:calls|is called)\b"),
        (Verb.ASSIGNS, r"\b(?:assigns|is assigned|are assigned)\b"),
        (Verb.DELETES, r"\b(?:deletes|is deleted|dels)\b"),
        (Verb.DEFINES, r"\b(?:defines|declares)\b"),
        (Verb.AWAITS, r"\b(?:awaits|is awaited)\b"),
    )
)
_TESTS = r"\b(?:asserts?|checks?|tests?|verif(?:y|ies)|ensures?|expects?)\b"
_NO_RAISE_RE = re.compile(
    _TESTS + r"[^.;]*?(?:\b(?:does not|doesn't|do not|don't|never|no longer|cannot)\s+"
    r"(?:raise|throw)|\bwithout (?:raising|throwing|an? (?:error|exception))"
    r"|\bno (?:exception|error)\b|\bnothing (?:raises|is raised|throws))"
)
_ASSERT_RAISE_RE = re.compile(_TESTS + r"[^.;]*?\b(?:raises|raise|raising|throws|is raised)\b")
_ASSERT_EQUAL_RE = re.compile(
    _TESTS + r"[^.;]*?(?:\bequals?\b|\bequality\b|\bequal to\b|==|\bis the same as\b)"
)
_ASSERT_RE = re.compile(r"\basserts?\b")
_NEGATED_RE = re.compile(r"\b(?:not|never|no longer|doesn't|don't|cannot|without)\s+(?:\w+\s+)?$")
_STARTS_RE = re.compile(
    r"\b(?:(?:is|are|gets|get|was|were)\s+defined(?!\s+(?:twice|again|more|elsewhere))"
    r"(?:\s+here)?|defined here|starts here|"
    r"begins here|starts at|the signature of|the definition of|"
    r"definition (?:starts|begins)|declared here|is declared)\b"
)
_BACKTICKS_RE = re.compile(r"(`+)(.+?)\1")
_HERE_RE = re.compile(r"\b(?:here|this line|on line \d+|at line \d+)\b")
# A value as descriptions write it: `literal`, "string", 'string', a number or version,
# True/False/None, or a character by its name ("a comma").
_VALUE = (
    r"(?:`(?P<{0}t>[^`]+)`|\"(?P<{0}d>[^\"\n]*)\"|(?<!\w)'(?P<{0}s>[^'\n]*)'(?!\w)"
    r"|(?<![\w.])(?P<{0}n>-?\d+(?:\.\d+){{2,}}(?:[\w.+-]*\w)?|-?\d+(?:\.\d+)?)(?![\d.]\d)"
    r"|\b(?P<{0}w>True|False|None)\b"
    r"|(?:\b(?:an?|the)\s+)?\b(?P<{0}c>comma|space|dot|period|colon|semicolon|empty string"
    r"|underscore|hyphen|dash|slash))"
)
_CHARS = {
    "comma": ",", "space": " ", "dot": ".", "period": ".", "colon": ":", "semicolon": ";",
    "empty string": "", "underscore": "_", "hyphen": "-", "dash": "-", "slash": "/",
}  # fmt: skip
_V, _K = _VALUE.format("v"), _VALUE.format("k")
_VALUE_RES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern, re.IGNORECASE))
    for kind, pattern in (
        ("is", r"\b(?:bumped|set|changed|updated|pinned|lowered|increased|decreased|defaults?"
         rf"|reset)\s+(?:from\s+{_K}\s+)?to\s+{_V}"),
        ("is", rf"=\s*{_V}"),
        ("is", rf"\bsets?\s+`?(?P<name>\w+)`?\s+to\s+{_V}"),
        ("returns", rf"\breturns?\s+(?:now\s+)?{_V}"),
        ("maps", rf"\bmaps?\s+{_K}\s+(?:on)?to\s+{_V}"),
        ("raises", rf"\b(?:raises|throws|is raised|raising)\s+(?:an?\s+)?{_V}"),
        ("raises", rf"{_V}\s+is\s+(?:now\s+)?raised"),
        ("compares", rf"\bcompar\w*\s+(?:\S+\s+){{0,3}}?(?:with|to|against)\s+{_V}"),
    )
)  # fmt: skip


@dataclass(frozen=True)
class ValueClaim:
    """A value the description states: the subject ``is`` set to it, a function ``returns``
    it, a mapping ``maps`` ``key`` to it, it ``raises`` it, or ``compares`` with it.
    ``literal``: a literal, not a name (only a literal can be contradicted by another)."""

    kind: str
    value: str
    literal: bool
    key: str | None = None


@dataclass(frozen=True)
class Claim:
    """What a description says the cited lines do; empty when it says nothing checkable."""

    verbs: tuple[Verb, ...] = ()
    starts: bool = False  # the entity starts (is defined) at the cited line
    values: tuple[ValueClaim, ...] = ()
    here: bool = False  # "returns here": the cited lines themselves, not their function

    @property
    def said(self) -> str:
        return " or ".join(v.value for v in self.verbs)

    @property
    def checkable(self) -> bool:
        return bool(self.verbs or self.values)


def _value(m: re.Match[str], g: str) -> tuple[str, bool] | None:
    """(the value as ``syntax.shown`` writes it, is it a literal) of one matched value."""
    if m.group(g + "t") is not None:
        tick = m.group(g + "t").strip()
        if tick.isidentifier() and tick not in ("True", "False", "None"):
            return tick, False
        try:
            value = ast.literal_eval(tick)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None
        return (value if isinstance(value, str) else repr(value)), True
    for kind in "ds":
        if m.group(g + kind) is not None:
            return m.group(g + kind), True
    if m.group(g + "n") is not None:
        text = m.group(g + "n")
        return (text if text.count(".") > 1 else repr(ast.literal_eval(text))), True  # 8.0.2rc1
    if m.group(g + "w") is not None:
        return m.group(g + "w"), True
    if m.group(g + "c") is not None:
        return _CHARS[m.group(g + "c").lower()], True
    return None


def _value_claims(description: str) -> tuple[ValueClaim, ...]:
    out: list[ValueClaim] = []
    for kind, pattern in _VALUE_RES:
        for m in pattern.finditer(description):
            if _NEGATED_RE.search(description[: m.start()].lower()):
                continue
            value = _value(m, "v")
            key = _value(m, "k") if kind == "maps" else None
            if value is None or (kind == "maps" and key is None):
                continue
            if kind == "raises" and (value[1] or not value[0][:1].isupper()):
                continue  # an exception is a class name
            if kind == "raises":  # "raises `KeyError` or `IndexError`": any of them
                clause = re.split(r"[.;]", description[m.end() :], maxsplit=1)[0]
                more = [n for n in re.findall(r"`([A-Z]\w*)`", clause) if n != value[0]]
                value = ("|".join([value[0], *more]), False)
            name = m.groupdict().get("name")  # "sets `x` to 3": the key is x
            out.append(ValueClaim(kind, value[0], value[1], key[0] if key else name))
    return tuple(dict.fromkeys(out))


def read_claim(description: str) -> Claim:
    """The claim of one description: its verbs, a start, values, and whether it says
    "here" (the cited lines themselves)."""
    plain = _BACKTICKS_RE.sub(" ", description)
    low = " ".join(plain.lower().split())
    verbs: list[Verb] = []
    if _NO_RAISE_RE.search(low):
        verbs.append(Verb.ASSERTS_NO_RAISE)
    elif _ASSERT_RAISE_RE.search(low):
        verbs.append(Verb.ASSERTS_RAISES)
    elif _ASSERT_EQUAL_RE.search(low):
        verbs.append(Verb.ASSERTS_EQUAL)
    elif _ASSERT_RE.search(low):
        verbs.append(Verb.ASSERTS)
    else:
        for verb, pattern in _VERB_RES:
            for m in pattern.finditer(low):
                if not _NEGATED_RE.search(low[: m.start()]):
                    verbs.append(verb)
                    break
    return Claim(
        tuple(dict.fromkeys(verbs)),
        _STARTS_RE.search(low) is not None,
        _value_claims(description),
        _HERE_RE.search(low) is not None,
    )
