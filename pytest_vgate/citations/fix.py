"""``--vgate-fix``: rewrite corrected citations in place, every other byte kept.

A citation is rewritten in the form it was written in (``path:line`` stays
``path:line``, ``#L10-L20`` stays a hash range of the same length, a ``:col`` is kept);
a markdown link gets a new target, and new text when its text was the citation. The
path changes only when the file was found elsewhere. Documents are decoded with
``surrogateescape`` and re-encoded the same way, so a BOM, CRLF line ends and even
undecodable bytes survive. A citation whose text no longer stands on its line (already
fixed, or the document was edited) is left alone, which makes fixing idempotent.
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path

from pytest_vgate.citations.documents import read_document
from pytest_vgate.citations.parse import LinkToken, Token, decode_document, scan_line
from pytest_vgate.citations.result import CitationResult
from pytest_vgate.verdict import CitationStatus

Edit = tuple[int, int, str]
_PATH_RE = re.compile(r"[\w.\-+@~%/]*\w")  # what the parser reads as a path (parse._LOC_BODY)


def split_spot(spot: str) -> tuple[str, int, int]:
    """``path:line`` or ``path:start-end`` -> (path, start, end)."""
    path, _, numbers = spot.rpartition(":")
    first, _, last = numbers.partition("-")
    return path, int(first), int(last or first)


def _token_edits(tok: Token, path: str | None, start: int, end: int) -> list[Edit]:
    edits: list[Edit] = []
    if path is not None and path != tok.path:
        edits.append((*tok.path_span, path))
    if tok.end_span is not None and start == end:  # one line: written as one (`9`, not `9-9`)
        edits.append((tok.start_span[0], tok.end_span[1], str(start)))
        return edits
    edits.append((*tok.start_span, str(start)))
    if tok.end_span is not None:
        edits.append((*tok.end_span, str(end)))
    return edits


def _find(line: str, c_raw: str, column: int) -> Token | LinkToken | None:
    """The citation's token on its line: at its column, else the only one with its text."""
    same = [t for t in scan_line(line) if line[t.span[0] : t.span[1]] == c_raw]
    at_column = [t for t in same if t.span[0] == column - 1]
    if at_column:
        return at_column[0]
    return same[0] if len(same) == 1 else None


def citation_edits(result: CitationResult, line: str) -> list[Edit]:
    """Edits (offsets in ``line``) that move one corrected citation to its true place."""
    c = result.citation
    if result.corrected_to is None:
        return []
    tok = _find(line, c.raw, c.doc_column)
    if tok is None:
        return []  # already fixed, or the document changed since it was checked
    spot_path, start, end = split_spot(result.corrected_to)
    new_path = None if spot_path == result.resolved else spot_path
    if isinstance(tok, LinkToken):
        edits = _token_edits(tok.target, new_path, start, end)
        if tok.text is not None:
            text_path = new_path if tok.text.path == tok.target.path else None
            edits += _token_edits(tok.text, text_path, start, end)
        return edits
    return _token_edits(tok, new_path, start, end)


def _apply(line: str, changes: dict[tuple[int, int], str]) -> str:
    for (a, b), new in sorted(changes.items(), reverse=True):
        line = line[:a] + new + line[b:]
    return line


def _reads_back(result: CitationResult, line: str, changes: dict[tuple[int, int], str]) -> str:
    """Why the rewritten line would not parse back to exactly the corrected citation
    (``""`` when it does): what cannot be written exactly is not written at all."""
    c = result.citation
    assert result.corrected_to is not None
    spot_path, start, end = split_spot(result.corrected_to)
    want_path = c.path if spot_path == result.resolved else spot_path
    if _PATH_RE.fullmatch(want_path) is None:
        return (
            f"the path {want_path!r} cannot be written as a citation (a space, or another "
            "character outside a path's usual set, would end it early)"
        )
    new_line = _apply(line, changes)
    found = _find(line, c.raw, c.doc_column)
    if found is None:
        return "the citation no longer stands on its line"
    begin = found.span[0]
    at = begin + sum(len(new) - (b - a) for (a, b), new in changes.items() if b <= begin)
    tokens = [t for t in scan_line(new_line) if t.span[0] == at]
    if not tokens:
        return "the rewritten text would no longer read as one citation"
    tok = tokens[0]
    target = tok.target if isinstance(tok, LinkToken) else tok
    if target.path != want_path:
        return (
            f"the path {want_path!r} would read back as {target.path!r} (citations cannot "
            "carry spaces or other characters outside a path's usual set)"
        )
    if (target.start, target.end) != (start, end) and target.start != start:
        return f"the location would read back as {target.start}-{target.end}"
    if isinstance(tok, LinkToken) and tok.mismatch:
        return f"the link would still disagree: {tok.mismatch}"
    return ""


def _fix_text(
    text: str, results: list[CitationResult], refused: list[str] | None = None
) -> tuple[str, int]:
    """Citations are found by line (fixing never adds or removes a line), so results
    checked before earlier fixes on the same document still land."""
    lines = text.split("\n")
    edits: dict[int, dict[tuple[int, int], str]] = {}
    fixed = 0
    seen: set[tuple[int, int]] = set()
    for r in results:
        c = r.citation
        if (c.line, c.doc_column) in seen or not 1 <= c.line <= len(lines):
            continue
        seen.add((c.line, c.doc_column))
        line = lines[c.line - 1]
        changes = {(a, b): new for a, b, new in citation_edits(r, line) if line[a:b] != new}
        if not changes:
            continue
        why = _reads_back(r, line, changes)
        if why:
            if refused is not None:
                refused.append(
                    f"{c.source()} {c.raw}: not rewritten to {r.corrected_to}: {why}; "
                    "fix it by hand"
                )
            continue
        fixed += 1
        edits.setdefault(c.line - 1, {}).update(changes)
    for index, changes in edits.items():
        lines[index] = _apply(lines[index], changes)
    return "\n".join(lines), fixed


def _write_atomically(path: Path, data: bytes) -> None:
    real = os.path.realpath(path)
    folder = os.path.dirname(real)
    mode = os.stat(real).st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(prefix=".vgate-fix-", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, real)
    except BaseException:  # leave no temporary file behind, whatever stopped us
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def fix_documents(
    results: Iterable[CitationResult], refused: list[str] | None = None
) -> dict[Path, int]:
    """Rewrite every ``corrected`` citation in its document; returns rewritten counts.

    Only documents that changed appear in the answer; calling it again is a no-op. A
    rewrite whose result would not read back as exactly the corrected citation is not
    made; ``refused`` (when given) receives one message per such citation.
    """
    by_document: dict[Path, list[CitationResult]] = {}
    for r in results:
        if r.status is CitationStatus.CORRECTED and r.corrected_to:
            by_document.setdefault(r.citation.document, []).append(r)
    counts: dict[Path, int] = {}
    for document, items in by_document.items():
        data = read_document(document)
        text, fixed = _fix_text(decode_document(data), items, refused)
        new = text.encode("utf-8", errors="surrogateescape")
        if fixed and new != data:
            why = _not_rewritable(document)
            if why:
                if refused is not None:
                    refused.append(f"{document}: not rewritten: {why}; fix its citations by hand")
                continue
            _write_atomically(document, new)
            counts[document] = fixed
    return counts


def _not_rewritable(path: Path) -> str:
    """Why a rewrite (a new file put in the document's place) would go against what its
    owner set up: a read-only document stays as it is, and one with hard links would be
    cut off from them."""
    try:
        st = os.stat(path)
    except OSError as exc:
        return f"cannot read its state ({exc.strerror or exc})"
    if not st.st_mode & stat.S_IWUSR or not os.access(path, os.W_OK):
        return "it is read-only"
    if st.st_nlink > 1:
        return f"it has {st.st_nlink} hard links, which a rewrite would cut off"
    return ""
