"""Checking citations against the files of one root, with per-session caches."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from pytest_vgate.citations.anchor import strong
from pytest_vgate.citations.decide import CORRECTED, DROPPED, FABRICATED, VERIFIED, decide
from pytest_vgate.citations.files import MAX_BYTES, RootFiles
from pytest_vgate.citations.parse import Citation, CitationForm
from pytest_vgate.citations.result import MAX_TEXT, CitationResult
from pytest_vgate.citations.source import FileState, SourceFile
from pytest_vgate.clip import clip
from pytest_vgate.verdict import CitationStatus

NOT_AUDITED = CitationStatus.NOT_AUDITED


def _spot(rel: str, start: int, end: int) -> str:
    return f"{rel}:{start}" if start == end else f"{rel}:{start}-{end}"


class CitationChecker:
    """Judges citations against ``root``: the index, files, lines and ASTs are built once
    and shared by every citation checked through this instance."""

    def __init__(self, root: Path | str, *, max_bytes: int = MAX_BYTES) -> None:
        self.root = Path(os.path.realpath(root))
        self.files = RootFiles(self.root, max_bytes=max_bytes)

    def check(self, citation: Citation) -> CitationResult:
        """Never raises: an internal failure is a ``dropped`` result saying so."""
        try:
            return self.check_raising(citation)
        except Exception as exc:  # noqa: BLE001 - every citation gets a (failing) verdict
            return CitationResult(
                citation, DROPPED, reason=f"internal error: {type(exc).__name__}: {exc}"
            )

    def check_raising(self, citation: Citation) -> CitationResult:
        """``check`` for the fail-closed runner, which turns an exception into ``error``."""
        result = self._check(citation)
        if citation.link_mismatch:
            result = self._mismatch(result)
        return result

    def _forge(self, c: Citation) -> CitationResult:
        """A forge link names ``REF/path``: the longest path after the ref that is a file
        of this root is checked like any citation; otherwise it is not audited."""
        parts = c.path.split("/")
        for skip in range(1, len(parts)):
            rel = "/".join(parts[skip:])
            found = self.files.resolve(rel, None)
            if found.rel is not None and not found.outside and not found.vcs:
                return self._judge(c, found.rel, moved=False)
        return CitationResult(
            c,
            NOT_AUDITED,
            reason=f"{c.raw} names no file of this repository (after its ref, no path of "
            "the root matches); another repository's code is not audited",
        )

    def _check(self, c: Citation) -> CitationResult:
        if c.form is CitationForm.FORGE_LINK:
            return self._forge(c)
        found = self.files.resolve(c.path, c.document.parent)
        if found.outside:
            return CitationResult(
                c,
                DROPPED,
                reason=f"{c.path} is {found.why_outside}; citations resolve inside the root "
                "only, so it was refused and nothing of it was read",
                outside_root=True,
            )
        if found.vcs:
            return CitationResult(
                c,
                DROPPED,
                reason=f"{c.path} lies inside {found.vcs}/, version-control metadata, which "
                "citations never read (it can hold credentials); refused, nothing of it was read",
                outside_root=True,
            )
        if found.rel is not None:
            return self._judge(c, found.rel, moved=False)
        if found.is_dir:
            return CitationResult(c, DROPPED, reason=f"{c.path} is a directory, not a file")
        if found.special:
            return CitationResult(
                c,
                DROPPED,
                reason=f"{c.path} is {found.special}, not a regular file; only regular files "
                "are read, so it was not opened",
            )
        return self._elsewhere(c)

    def _unreadable(self, c: Citation, sf: SourceFile, moved: bool) -> CitationResult:
        if sf.state is FileState.BINARY:
            why = "is a binary file (a NUL byte in its first 8 KiB)"
        elif sf.state is FileState.TOO_LARGE:
            why = f"is {sf.size} bytes, over the {self.files.max_bytes}-byte bound"
        else:
            why = "could not be read"
        return CitationResult(
            c, DROPPED, reason=f"{sf.rel} {why}; not checked", resolved=None if moved else sf.rel
        )

    def _judge(self, c: Citation, rel: str, *, moved: bool) -> CitationResult:
        sf = self.files.load(rel)
        if sf.state is not FileState.OK:
            return self._unreadable(c, sf, moved)
        loc = decide(sf, c)
        status, reason = loc.status, loc.reason
        start, end = loc.start, loc.end
        if moved:
            reason = f"{c.path} does not exist; the file is {rel}; {reason}"
            if status is VERIFIED:
                status, start, end = CORRECTED, c.start_line, c.end_line
        corrected = start is not None and end is not None and status is CORRECTED
        subject = next((e for e in c.entities if strong(e)), None)
        at = start if corrected else c.start_line
        home = _definition(sf, subject, at) if subject and status in (VERIFIED, CORRECTED) else None
        return CitationResult(
            c,
            status,
            reason=reason,
            corrected_to=_spot(rel, start, end) if corrected and start and end else None,
            cited_text=None if moved else _clipped(sf.line(c.start_line)),
            corrected_text=_clipped(sf.line(start)) if corrected and start else None,
            candidates=tuple(f"{rel}:{n}" for n in loc.candidates),
            beyond_end=loc.beyond_end,
            resolved=None if moved else rel,
            file_lines=sf.line_count,
            entity=subject,
            defined_at=f"{rel}:{home}" if home is not None else None,
            description=loc.description,
            description_reason=loc.description_reason,
        )

    def _holds(self, rel: str, entities: tuple[str, ...]) -> int | None:
        """The first line where one of ``entities`` occurs in ``rel`` (definitions first)."""
        sf = self.files.load(rel)
        if sf.state is not FileState.OK:
            return None
        for entity in entities:
            hits = sf.hits(entity)
            if hits.found:
                return (hits.defs or hits.matches)[0]
        return None

    def _elsewhere(self, c: Citation) -> CitationResult:
        """A path that does not exist: the protocol's basename search among the root's files."""
        name = c.path.rstrip("/").rsplit("/", 1)[-1]
        files = [r for r in self.files.by_basename(name) if self.files.inside_file(r)]
        if not files:
            return CitationResult(
                c, FABRICATED, reason=f"{c.path} does not exist and no file named {name} "
                "exists anywhere in the root"
            )  # fmt: skip
        if not c.entities:
            if len(files) == 1:
                return self._judge(c, files[0], moved=True)
            return CitationResult(
                c,
                DROPPED,
                reason=f"{c.path} does not exist; {len(files)} files are named {name} and the "
                "description names nothing to choose between them",
                candidates=tuple(files),
            )
        holders = {r: line for r in files if (line := self._holds(r, c.entities)) is not None}
        if len(holders) == 1:
            return self._judge(c, next(iter(holders)), moved=True)
        names = ", ".join(f"`{e}`" for e in c.entities)
        if holders:
            why = f"{len(holders)} of the {len(files)} files named {name} contain {names}"
            candidates = tuple(f"{r}:{n}" for r, n in holders.items())
        else:
            how_many = "the one file" if len(files) == 1 else f"none of the {len(files)} files"
            why = f"{how_many} named {name} contains {names}"
            candidates = tuple(files)
        return CitationResult(
            c, DROPPED, reason=f"{c.path} does not exist; {why}", candidates=candidates
        )

    def _mismatch(self, result: CitationResult) -> CitationResult:
        """A markdown link whose text and target disagree is never simply verified."""
        c = result.citation
        note = c.link_mismatch or ""
        if result.status is not VERIFIED:
            return replace(result, reason=f"{note}; {result.reason}")
        if not c.entities or result.resolved is None:
            return replace(
                result,
                status=DROPPED,
                reason=f"{note}, and the description names nothing to decide which is right",
            )
        return replace(
            result,
            status=CORRECTED,
            reason=f"{note}; the target is right ({result.reason})",
            corrected_to=_spot(result.resolved, c.start_line, c.end_line),
            corrected_text=result.cited_text,
        )


def _definition(sf: SourceFile, entity: str, line: int | None) -> int | None:
    """The ``def``/``class`` line of the innermost definition of ``entity`` holding ``line``."""
    if line is None:
        return None
    hits = sf.hits(entity)
    around = [(s, e) for s, e in hits.spans if s <= line <= e]
    if not around:
        return None
    first = max(around)[0]
    return min((h for h in hits.defs if h >= first), default=None)


def _clipped(line: str | None) -> str | None:
    return clip(line, MAX_TEXT) if line is not None else None
