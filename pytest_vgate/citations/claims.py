"""What a description claims the cited lines do: verbs, a start, behaviour words.

Only what a line can show by its syntax is read: a verb of the table below (``returns``,
``raises``, ``checks that ... raises``, ...), a claim about where an entity starts
("defined here", "the signature of"), and the remaining content words (what the line
is said to do, "validated against the allow-list"), which the cited lines must show in
their identifiers, strings or comments. Interpretation stays unchecked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pytest_vgate.citations.anchor import prose_words
from pytest_vgate.citations.entities import words
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
    )
)
_TESTS = r"\b(?:asserts?|checks?|tests?|verif(?:y|ies)|ensures?|expects?)\b"
_NO_RAISE_RE = re.compile(
    _TESTS + r"[^.;]*?(?:\b(?:does not|doesn't|do not|don't|never|no longer|cannot)\s+"
    r"(?:raise|throw)|\bwithout (?:raising|throwing|an? (?:error|exception))"
    r"|\bno (?:exception|error)\b)"
)
_ASSERT_RAISE_RE = re.compile(_TESTS + r"[^.;]*?\b(?:raises|raise|raising|throws|is raised)\b")
_ASSERT_EQUAL_RE = re.compile(
    _TESTS + r"[^.;]*?(?:\bequals?\b|\bequality\b|\bequal to\b|==|\bis the same as\b)"
)
_ASSERT_RE = re.compile(r"\basserts?\b")
_NEGATED_RE = re.compile(r"\b(?:not|never|no longer|doesn't|don't|cannot|without)\s+(?:\w+\s+)?$")
_STARTS_RE = re.compile(
    r"\b(?:(?:is|are|gets|get|was|were)\s+defined(?:\s+here)?|defined here|starts here|"
    r"begins here|starts at|the signature of|signature|the definition of|"
    r"definition (?:starts|begins)|declared here|is declared)\b"
)
_BACKTICKS_RE = re.compile(r"(`+)(.+?)\1")
_ASIDE_RE = re.compile(r"\([^()]*\)")
_PASSIVE_RE = re.compile(
    r"\b(?:is|are|was|were|gets|get|got|been|being)\s+(?:\w+ly\s+)?(\w+(?:ed|en))\b"
)
MIN_BEHAVIOUR_WORDS = 2  # or one past participle after "is"/"gets": "`url` is validated"

# Words a description uses about a location or a verb: never behaviour to look for.
STRUCTURE_WORDS = words(
    """returns returned raises raised raise raising throws yields yielded imports imported
    calls called assigns assigned deletes deleted asserts assert asserted checks check
    checked tests test tested verify verifies verified ensures ensure expects expect equal
    equals equality exception exceptions error errors defined define defines definition
    declared declares starts begins begin signature full whole does doing done here entry
    point line lines span spans block happens happen where cited shown show shows given
    holds hold lives live sits located location implemented implements implementation
    handled handles handle case cases branch branches statement statements loop loops
    against between within without when whenever unless until while whether instead
    document documents file files link links text column hash backticks backtick relative
    wrong right moved drifted drift beyond elsewhere inside outside near nearby far again
    entry point encoding bom crlf utf target targets"""
)


@dataclass(frozen=True)
class Claim:
    """What a description says the cited lines do; empty when it says nothing checkable."""

    verbs: tuple[Verb, ...] = ()
    starts: bool = False  # the entity starts (is defined) at the cited line
    behaviour: tuple[str, ...] = ()  # content words the cited lines must show

    @property
    def said(self) -> str:
        return " or ".join(v.value for v in self.verbs)


def read_claim(description: str, entities: tuple[str, ...] = ()) -> Claim:
    """The claim of one description (``entities`` are left out of the behaviour words)."""
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
    entity_words = {w.lower() for e in entities for w in re.findall(r"[A-Za-z]+", e)}
    said = _ASIDE_RE.sub(" ", plain)  # "(drifted: it is further down)" is about the citation
    behaviour = tuple(
        w for w in prose_words(said) if w not in STRUCTURE_WORDS and w not in entity_words
    )
    passive = {m.group(1) for m in _PASSIVE_RE.finditer(low)} & set(behaviour)
    if len(behaviour) < MIN_BEHAVIOUR_WORDS and not passive:
        behaviour = ()  # a one-word gloss ("`time.sleep` waits") is not a behaviour claim
    return Claim(tuple(dict.fromkeys(verbs)), _STARTS_RE.search(low) is not None, behaviour)
