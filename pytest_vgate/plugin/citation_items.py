"""Citation items: one per ``FILE:LINE`` claim in a document, checked against the root.

The root's file index and each file's lines and AST are built once per process and
shared by every citation (``CitationChecker`` cached in the session resources).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_vgate.defaults import MARKER
from pytest_vgate.errors import VgateError
from pytest_vgate.gatesfile import GatesFile, GatesFileError
from pytest_vgate.paths import relative
from pytest_vgate.payload import CitationDocumentPayload, CitationPayload, JsonObject
from pytest_vgate.plugin.failures import PluginItem, VgateFailure
from pytest_vgate.plugin.session import Resources, resources
from pytest_vgate.verdict import Cause, CitationDescription, CitationStatus, Mode, Verdict

JUDGED = CitationDescription.JUDGED

# The citation checker is imported where a document is read or a citation checked: the
# pytest layer imports this module in every session, most of which cite nothing.
if TYPE_CHECKING:
    from pytest_vgate.citations import Citation, CitationChecker, CitationResult


def checker_for(res: Resources, root: Path) -> CitationChecker:
    from pytest_vgate.citations import CitationChecker

    key = f"citation-checker:{root}"
    checker = res.cache.get(key)
    if checker is None:
        checker = res.cache[key] = CitationChecker(root)
    assert isinstance(checker, CitationChecker)
    return checker


def _properties(item: pytest.Item, pairs: Iterable[tuple[str, Any]]) -> None:
    for name, value in pairs:
        if value is not None and value != "":
            item.user_properties.append((name, str(value)))


class CitationItem(PluginItem):
    def __init__(self, *, citation: Citation, root: Path, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.citation = citation
        self.root = root
        self.vgate_payload: CitationPayload | None = None

    def runtest(self) -> None:
        from pytest_vgate.gate.runner import run_citation

        res = resources(self.config)
        verdict, result = run_citation(checker_for(res, self.root), self.citation)
        if verdict.ok and result.description is CitationDescription.NOT_JUDGED:
            verdict, result = self._judge(verdict, result, res.default_timeout(self))
        source = self.citation.source(self.config.rootpath)
        fixed = res.fixed_citations.get(_fix_key(self.citation)) if res.fixed_citations else None
        fixed_from, original = _fixed_record(fixed)
        # After --vgate-fix the record keeps what was found: the block counts the
        # original outcome (corrected, a line past the end), the item passes when the
        # rewritten citation is now right.
        ok = result.ok and verdict.ok  # fail closed: both must say so
        shown = original if original is not None and ok else result
        self.vgate_payload = CitationPayload(
            source=source,
            citation=self.citation.raw,
            location=self.citation.location,
            status=shown.status,
            corrected_to=shown.corrected_to,
            reason=result.reason,
            fixed_from=fixed_from,
            root=str(self.root),
            ok=ok,
            mode=verdict.mode,
            cause=verdict.cause,
            result=JsonObject(result.to_dict()),
            original=JsonObject(original.to_dict()) if original is not None else None,
            nodeid=self.nodeid,
            description=result.description,
            description_reason=result.description_reason,
        )
        _properties(
            self,
            (
                ("vgate_citation", shown.status.value),
                ("vgate_description", result.description and result.description.value),
                ("vgate_corrected_to", shown.corrected_to),
                ("vgate_source", source),
                ("vgate_fixed_from", fixed_from),
                ("vgate_mode", verdict.mode.value),
                ("vgate_cause", verdict.cause.value if verdict.cause else None),
            ),
        )
        if not ok:
            report = format_citation_report(result, source)
            if verdict.mode is Mode.ERROR:
                report += f"\nmode:      error ({verdict.detail})"
            raise VgateFailure(report)

    def _judge(
        self, verdict: Verdict, result: CitationResult, timeout: float
    ) -> tuple[Verdict, CitationResult]:
        """A description no syntax decides goes to the judges as a ``semantic`` gate (claim:
        the description, check: the location); fail-closed, as for gates."""
        hook = self.ihook.pytest_vgate_judge
        if not hook.get_hookimpls():
            return verdict, result
        from pytest_vgate.evidence.record import Where
        from pytest_vgate.gatesfile import Gate, GateType
        from pytest_vgate.plugin.extending import ask_judges
        from pytest_vgate.plugin.judging import JudgeContext, verdict_from_judgment

        c = self.citation
        gate = Gate(
            id=f"citation {c.source(self.config.rootpath)} {c.location}",
            type=GateType.SEMANTIC,
            claim=c.description,
            check=c.location,
            root=self.root,
            source=c.document,
            line=c.line,
        )
        context = JudgeContext(self.root, Where.CURRENT, timeout, time.monotonic() + timeout)
        answer = ask_judges(hook, gate, context)
        judged = verdict_from_judgment(answer[1], answer[0], timeout) if answer else None
        if judged is None or answer is None:
            return verdict, result  # every judge declined
        said = f"judged by {answer[0]}: {judged.detail or judged.mode.value}"
        if judged.ok:
            return verdict, replace(result, description=JUDGED, description_reason=said)
        return judged, replace(
            result,
            status=CitationStatus.UNSUPPORTED,
            reason=f"{result.reason}; {said}",
            description=JUDGED,
            description_reason=said,
        )

    def reportinfo(self) -> tuple[os.PathLike[str] | str, int | None, str]:
        return self.citation.document, self.citation.line - 1, f"citation {self.name}"


def _fixed_record(fixed: Any) -> tuple[str | None, CitationResult | None]:
    """(the location before --vgate-fix, the result checking it gave) of a fixed citation."""
    from pytest_vgate.citations import CitationResult

    if isinstance(fixed, dict):
        original = fixed.get("result")
        return (
            str(fixed.get("was")) if fixed.get("was") else None,
            CitationResult.from_dict(original) if isinstance(original, dict) else None,
        )
    return None, None


class CitationDocumentItem(PluginItem):
    """The audit of one document as a whole: it passes when the document was read (and
    holds no citation: otherwise its citations are the items), fails when it cannot or
    must not be read. Either way the document shows up in the run and in the summary."""

    def __init__(self, *, document: Path, problem: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.document = document
        self.problem = problem
        self.vgate_payload: CitationDocumentPayload | None = None

    def runtest(self) -> None:
        source = _shown(self.document, self.config.rootpath)
        mode = Mode.ERROR if self.problem else Mode.PASS
        self.vgate_payload = CitationDocumentPayload(
            document=source,
            citations=0,
            ok=not self.problem,
            mode=mode,
            cause=Cause.BROKEN_TEST if self.problem else None,
            detail=self.problem or "read; it holds no citation",
            nodeid=self.nodeid,
        )
        _properties(
            self,
            (
                ("vgate_mode", mode.value),
                ("vgate_cause", "broken_test" if self.problem else None),
                ("vgate_source", source),
            ),
        )
        if self.problem:
            raise VgateFailure(f"citation document {source} was not audited: {self.problem}")

    def reportinfo(self) -> tuple[os.PathLike[str] | str, int | None, str]:
        return self.document, 0, f"audit of {_shown(self.document, self.config.rootpath)}"


def _shown(path: Path, root: Path) -> str:
    return relative(path, root, resolve=True) or str(path)


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
) -> Iterator[pytest.Item]:
    """One item per citation; a document with none, or one that cannot be read, is one
    document item instead (so it is visibly audited and never breaks its neighbours)."""
    if not _owns(parent, document):
        return  # the same document is also given elsewhere: it is checked there, once
    try:
        citations = read_document_citations(document)
        problem = ""
    except DocumentError as exc:
        citations, problem = [], str(exc)
    if not citations:
        name = _document_name(parent, document)
        doc_item = CitationDocumentItem.from_parent(
            parent, name=name, document=document, problem=problem
        )
        doc_item.add_marker(MARKER)
        yield doc_item
        return
    for citation in citations:
        item = CitationItem.from_parent(
            parent, name=_item_name(parent, citation), citation=citation, root=root
        )
        item.add_marker(MARKER)
        yield item


class DocumentError(VgateError):
    """A cited document that cannot or must not be read; the text says which and why."""


def read_document_citations(document: Path) -> list[Citation]:
    """The document's citations; a document that is not a readable regular UTF-8 text file
    raises ``DocumentError`` (a named pipe or device is never opened in blocking mode)."""
    from pytest_vgate.citations import parse_citations
    from pytest_vgate.citations.documents import read_document
    from pytest_vgate.citations.files import SNIFF_BYTES, TooLarge, file_kind
    from pytest_vgate.citations.parse import decode_document
    from pytest_vgate.process.regular import NotRegularFile

    kind = file_kind(str(document))
    if kind not in ("file", ""):
        what = "a folder" if kind == "dir" else kind
        raise DocumentError(f"it is {what}, not a regular file; it was not read")
    try:
        data = read_document(document)
    except NotRegularFile as exc:
        raise DocumentError(f"{exc}; it was not read") from None
    except TooLarge as exc:
        raise DocumentError(f"it is {exc.size} bytes, over the bound; it was not read") from None
    except OSError as exc:
        raise DocumentError(
            f"cannot read it: {exc.strerror or exc}; make it a readable file or stop citing it"
        ) from None
    if b"\0" in data[:SNIFF_BYTES]:
        raise DocumentError(
            "it is binary (a NUL byte in its first 8 KiB; UTF-16 text looks like this too); "
            "cite a UTF-8 text document"
        )
    return parse_citations(document, decode_document(data))


def _owns(parent: pytest.Collector, document: Path) -> bool:
    """Whether ``parent`` checks ``document``: the first gates file (in the order given)
    that lists it, else the ``--vgate-cite`` node. The same in every xdist worker."""
    res = resources(parent.config)
    key = document.resolve()
    for path in res.settings.gates_files:
        try:
            loaded = res.gates_file(path)
        except GatesFileError:
            continue
        if key in {d.resolve() for d in loaded.citations}:
            return isinstance(parent, pytest.File) and parent.path.resolve() == path.resolve()
    return True


def _document_name(parent: pytest.Collector, document: Path) -> str:
    if isinstance(parent, CitationDocumentNode):
        return "document"
    return Path(os.path.relpath(document, parent.path.parent)).as_posix()


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

    collected = False  # collect() ran (another plugin may answer for it: --lf)

    def collect(self) -> Iterator[pytest.Item]:
        self.collected = True
        yield from collect_document_citations(self, self.path, self.config.rootpath)


def _fix_key(citation: Citation) -> str:
    """Names a citation after fixing; the document is resolved, so the controller's path
    (from the settings) and an item's path (from collection) agree."""
    where = f"{citation.line}:{citation.location}~{citation.occurrence}"
    return f"{citation.document.resolve()}:{where}"


def documents_to_check(
    config: pytest.Config, res: Resources, loaded: Iterable[GatesFile]
) -> list[tuple[Path, Path]]:
    """Every (document, root) pair of the session, each document once (the first gates
    file that lists it wins, as in collection)."""
    pairs: dict[Path, tuple[Path, Path]] = {}
    for gates_file in loaded:
        for document in gates_file.citations:
            pairs.setdefault(document.resolve(), (document, gates_file.root))
    for document in res.settings.cite_files:
        pairs.setdefault(document.resolve(), (document, config.rootpath))
    return list(pairs.values())


def fix_all_documents(config: pytest.Config, res: Resources, loaded: Iterable[GatesFile]) -> None:
    """``--vgate-fix``: rewrite drifted citations before any item checks them (controller).

    Each rewritten citation keeps its record: the location it had and the result that
    checking it gave (so the summary still counts it as corrected, and a line past the
    end stays under FABRICATIONS CAUGHT).
    """
    from pytest_vgate.citations import CitationChecker, fix_documents

    for document, root in documents_to_check(config, res, loaded):
        try:
            citations = read_document_citations(document)
        except DocumentError as exc:
            res.warnings.append(f"--vgate-fix did not read {document}: {exc}")
            continue
        checker = CitationChecker(root)
        results = [checker.check(c) for c in citations]
        corrected = [r for r in results if r.status is CitationStatus.CORRECTED]
        if not corrected:
            continue
        refused: list[str] = []
        try:
            fix_documents(corrected, refused)
        except OSError as exc:
            res.warnings.append(f"--vgate-fix could not rewrite {document}: {exc}")
            continue
        res.warnings.extend(f"--vgate-fix refused: {why}" for why in refused)
        try:
            after = read_document_citations(document)
        except DocumentError as exc:
            res.warnings.append(f"--vgate-fix could not read {document} back: {exc}")
            continue
        for old, result, new in zip(citations, results, after, strict=False):
            if old.raw != new.raw:
                # A link whose text alone was wrong keeps its location: name the old text.
                was = old.location if old.location != new.location else old.raw
                res.fixed_citations[_fix_key(new)] = {"was": was, "result": result.to_dict()}
