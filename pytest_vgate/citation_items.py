"""Citation items: one per ``FILE:LINE`` claim in a document, checked against the root.

The root's file index and each file's lines and AST are built once per process and
shared by every citation (``CitationChecker`` cached in the session resources).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_vgate.citations import (
    Citation,
    CitationChecker,
    CitationResult,
    fix_documents,
    parse_citations,
)
from pytest_vgate.citations.files import SNIFF_BYTES
from pytest_vgate.citations.parse import decode_document
from pytest_vgate.items import MARKER, VgateFailure, failure_text
from pytest_vgate.session import Resources, resources
from pytest_vgate.spec import GatesFile
from pytest_vgate.verdict import CitationStatus


def checker_for(res: Resources, root: Path) -> CitationChecker:
    key = f"citation-checker:{root}"
    checker = res.cache.get(key)
    if checker is None:
        checker = res.cache[key] = CitationChecker(root)
    assert isinstance(checker, CitationChecker)
    return checker


class CitationItem(pytest.Item):
    def __init__(self, *, citation: Citation, root: Path, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.citation = citation
        self.root = root
        self.vgate_payload: dict[str, Any] | None = None

    def runtest(self) -> None:
        res = resources(self.config)
        result = checker_for(res, self.root).check(self.citation)
        source = self.citation.source(self.config.rootpath)
        fixed_from = (
            res.fixed_citations.get(_fix_key(self.citation)) if res.fixed_citations else None
        )
        payload: dict[str, Any] = {
            "kind": "citation",
            "source": source,
            "citation": self.citation.raw,
            "location": self.citation.location,
            "status": result.status.value,
            "corrected_to": result.corrected_to,
            "reason": result.reason,
            "fixed_from": fixed_from,
            "root": str(self.root),
            "result": result.to_dict(),
        }
        self.vgate_payload = payload
        for name, value in (
            ("vgate_citation", result.status.value),
            ("vgate_corrected_to", result.corrected_to),
            ("vgate_source", source),
            ("vgate_fixed_from", fixed_from),
        ):
            if value:
                self.user_properties.append((name, value))
        if not result.ok:
            raise VgateFailure(format_citation_report(result, source))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        return failure_text(excinfo) or super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[os.PathLike[str] | str, int | None, str]:
        return self.citation.document, self.citation.line - 1, f"citation {self.name}"


def format_citation_report(result: CitationResult, source: str) -> str:
    c = result.citation
    lines = [f"citation {c.location} ({source}) is {result.status.value}"]
    if c.description:
        lines.append(f"claim:     {c.description}")
    if result.reason:
        lines.append(f"why:       {result.reason}")
    if result.cited_text is not None:
        lines.append(f"cited line: {result.cited_text!r}")
    if result.corrected_to:
        lines.append(f"really at:  {result.corrected_to}: {result.corrected_text!r}")
        lines.append("fix:       run with --vgate-fix to rewrite the document")
    if result.candidates:
        lines.append("candidates: " + ", ".join(result.candidates))
    if result.beyond_end:
        lines.append("fabrication sign: the cited line is beyond the end of the file")
    return "\n".join(lines)


def collect_document_citations(
    parent: pytest.Collector, document: Path, root: Path
) -> Iterator[CitationItem]:
    for citation in read_document_citations(document):
        item = CitationItem.from_parent(
            parent, name=_item_name(parent, citation), citation=citation, root=root
        )
        item.add_marker(MARKER)
        yield item


def read_document_citations(document: Path) -> list[Citation]:
    """The document's citations; an unreadable or binary document is a collection error
    that names it (pytest shows a ``CollectError`` as its message, without a traceback)."""
    try:
        data = document.read_bytes()
    except OSError as exc:
        raise pytest.Collector.CollectError(
            f"pytest-vgate: cannot read the citation document {document}: "
            f"{exc.strerror or exc}; make it a readable file or stop citing it"
        ) from None
    if b"\0" in data[:SNIFF_BYTES]:
        raise pytest.Collector.CollectError(
            f"pytest-vgate: the citation document {document} is binary (a NUL byte in its "
            "first 8 KiB; UTF-16 text looks like this too); cite a UTF-8 text document"
        )
    return parse_citations(document, decode_document(data))


def _item_name(parent: pytest.Collector, citation: Citation) -> str:
    """``L12:src/app.py:120`` under a document node; under a gates file the document is
    named relative to the gates file's folder, so documents that share a basename
    (``docs/a/answer.md``, ``docs/b/answer.md``) never give two items one node id."""
    if isinstance(parent, CitationDocumentNode):
        name = f"L{citation.line}:{citation.location}"
    else:
        document = Path(os.path.relpath(citation.document, parent.path.parent)).as_posix()
        name = f"{document}:{citation.line}:{citation.location}"
    return name if citation.occurrence == 1 else f"{name}~{citation.occurrence}"


class CitationDocumentNode(pytest.File):
    """A document given with ``--vgate-cite``: its citations resolve inside the rootdir."""

    def collect(self) -> Iterator[pytest.Item]:
        yield from collect_document_citations(self, self.path, self.config.rootpath)


def _fix_key(citation: Citation) -> str:
    """Names a citation after fixing; the document is resolved, so the controller's path
    (from the settings) and an item's path (from collection) agree."""
    where = f"{citation.line}:{citation.location}~{citation.occurrence}"
    return f"{citation.document.resolve()}:{where}"


def documents_to_check(
    config: pytest.Config, res: Resources, loaded: Iterable[GatesFile]
) -> list[tuple[Path, Path]]:
    """Every (document, root) pair of the session."""
    pairs: dict[tuple[Path, Path], None] = {}
    for gates_file in loaded:
        for document in gates_file.citations:
            pairs[(document, gates_file.root)] = None
    for document in res.settings.cite_files:
        pairs[(document, config.rootpath)] = None
    return list(pairs)


def fix_all_documents(config: pytest.Config, res: Resources, loaded: Iterable[GatesFile]) -> None:
    """``--vgate-fix``: rewrite drifted citations before any item checks them (controller)."""
    for document, root in documents_to_check(config, res, loaded):
        try:
            citations = parse_citations(document)
        except OSError as exc:
            res.warnings.append(f"--vgate-fix could not read {document}: {exc}")
            continue
        checker = CitationChecker(root)
        results = [checker.check(c) for c in citations]
        corrected = [r for r in results if r.status is CitationStatus.CORRECTED]
        if not corrected:
            continue
        try:
            fix_documents(corrected)
        except OSError as exc:
            res.warnings.append(f"--vgate-fix could not rewrite {document}: {exc}")
            continue
        after = parse_citations(document)
        for old, new in zip(citations, after, strict=False):
            if old.raw != new.raw:
                # A link whose text alone was wrong keeps its location: name the old text.
                was = old.location if old.location != new.location else old.raw
                res.fixed_citations[_fix_key(new)] = was
