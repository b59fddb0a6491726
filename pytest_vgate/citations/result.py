"""A citation's verdict and the ``VERIFICATION GATE RESULT`` block built from many."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pytest_vgate.citations.parse import Citation
from pytest_vgate.jsonable import Jsonable
from pytest_vgate.verdict import CitationDescription, CitationStatus

MAX_TEXT = 300  # characters of a cited line kept in a result


@dataclass(frozen=True)
class CitationResult(Jsonable):
    """What checking one citation observed. Only ``verified`` passes.

    ``corrected_to`` is ``path:line`` or ``path:start-end`` relative to the root.
    ``cited_text``/``corrected_text`` are the actual lines (inside the root only).
    ``beyond_end``: the cited line lies past the end of the file, a fabrication sign
    listed under FABRICATIONS CAUGHT whatever the status.
    """

    citation: Citation
    status: CitationStatus
    reason: str = ""
    corrected_to: str | None = None
    cited_text: str | None = None
    corrected_text: str | None = None
    candidates: tuple[str, ...] = ()
    beyond_end: bool = False
    outside_root: bool = False
    resolved: str | None = None  # root-relative file the path as written led to
    file_lines: int | None = None  # line count of the file that was judged
    entity: str | None = None  # the description's subject, when it names code
    defined_at: str | None = None  # ``path:line`` of the subject's definition the lines hold
    description: CitationDescription | None = None  # None: the location failed first
    description_reason: str = ""

    @property
    def ok(self) -> bool:
        """Verified, or a link to another repository (listed as not audited)."""
        return self.status in (CitationStatus.VERIFIED, CitationStatus.NOT_AUDITED)

    @property
    def fabrication(self) -> bool:
        """Listed under FABRICATIONS CAUGHT."""
        return self.status is CitationStatus.FABRICATED or self.beyond_end


def _fabrication_entry(result: CitationResult, root: Path | None) -> str:
    c = result.citation
    if result.beyond_end:
        size = f"{result.file_lines}-line file" if result.file_lines is not None else "file"
        why = f"line beyond end of {size}"
        if result.status is CitationStatus.CORRECTED and result.corrected_to:
            why += f", found at {result.corrected_to}"
        elif result.status is CitationStatus.DROPPED:
            why += ", ambiguous"
        else:
            why += ", not found"
    else:
        why = "file not found in the root"
    return f"{c.source(root)} {c.location} ({why})"


def not_audited(result: CitationResult) -> bool:
    return result.status is CitationStatus.NOT_AUDITED


def inconsistencies(results: Iterable[CitationResult], root: Path | None = None) -> list[str]:
    """One entry per entity that the citations place in different definitions of it: the
    same name cannot be both ("`fetch` at src/app.py:4 (docs/a.md:3) and src/app.py:40
    (docs/b.md:7)"). Only citations that verify or correct are compared."""
    places: dict[tuple[str, str], dict[str, list[str]]] = {}
    for r in results:
        if r.entity is None or r.defined_at is None:
            continue
        if r.status not in (CitationStatus.VERIFIED, CitationStatus.CORRECTED):
            continue
        path = r.defined_at.rpartition(":")[0]
        where = places.setdefault((path, r.entity), {})
        where.setdefault(r.defined_at, []).append(r.citation.source(root))
    out = []
    for (_path, entity), where in places.items():
        if len(where) > 1:
            said = " and ".join(f"{spot} ({', '.join(src)})" for spot, src in where.items())
            out.append(f"`{entity}` at {said}")
    return out


def summary_block(results: Iterable[CitationResult], root: Path | None = None) -> str:
    """The VERIFICATION GATE RESULT block; fabricated citations count as dropped.

    Its first six lines are the five counts consumers parse, contiguous and in this order,
    ending with FABRICATIONS CAUGHT (``N``, or ``Y — `` and ``document:line path:line
    (why)`` entries joined by ``; ``). The further counts come after it: unsupported and
    not judged always; not audited (links to other repositories) and inconsistent (one
    entity cited in different definitions of it) only when there is one. ``root``
    shortens document paths.
    """
    items = list(results)
    count = dict.fromkeys(CitationStatus, 0)
    for r in items:
        count[r.status] += 1
    caught = [_fabrication_entry(r, root) for r in items if r.fabrication]
    dropped = count[CitationStatus.DROPPED] + count[CitationStatus.FABRICATED]
    clash = inconsistencies(items, root)
    foreign = [f"{r.citation.source(root)} {r.citation.raw}" for r in items if not_audited(r)]
    not_judged = sum(r.description is CitationDescription.NOT_JUDGED for r in items)
    extra: list[str] = []
    if foreign:
        extra.append(
            f"- Not audited (links to other repositories): {len(foreign)} — " + "; ".join(foreign)
        )
    if clash:
        extra.append(
            f"- Inconsistent (one entity, lines that cannot both hold): {len(clash)} — "
            + "; ".join(clash)
        )
    return "\n".join(
        [
            "VERIFICATION GATE RESULT:",
            f"- Total citations: {len(items)}",
            f"- Verified at original location: {count[CitationStatus.VERIFIED]}",
            f"- Corrected (line drift): {count[CitationStatus.CORRECTED]}",
            f"- Dropped (file/line/content not found): {dropped}",
            "- FABRICATIONS CAUGHT: " + ("Y — " + "; ".join(caught) if caught else "N"),
            "- Unsupported (description contradicted by the cited lines): "
            f"{count[CitationStatus.UNSUPPORTED]}",
            f"- Descriptions not judged: {not_judged}",
            *extra,
        ]
    )
