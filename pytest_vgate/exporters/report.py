"""The JSON report (``--vgate-report``): every gate and citation of the session.

Field names are public; ``report.schema.json`` describes them and ``version`` names the
schema. Exporters get the same document (``pytest_vgate_report``). Writing is atomic, and a
report that cannot be written is a warning, never a failed session.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TypedDict

from pytest_vgate.gatesfile import Gate
from pytest_vgate.jsonable import JsonDict, JsonValue, as_array, as_object
from pytest_vgate.payload import (
    CitationDocumentPayload,
    CitationPayload,
    Payload,
    document_order,
)
from pytest_vgate.verdict import CitationStatus, Mode, Rbg

REPORT_VERSION = 2
COMPLETE = "complete"  # the seal: written last, when the session has reached its end
MAX_REPORT_BYTES = 512 * 1024 * 1024
MAX_DEPTH = 64  # a report nests a few levels; anything deeper is not one of ours

GATE_FIELDS = (
    "id",
    "claim",
    "type",
    "mode",
    "cause",
    "rbg",
    "rbg_reason",
    "exit_code",
    "isolation",
    "duration",
    "command",
    "detail",
    "stdout",
    "stderr",
    "stdout_bytes",
    "stderr_bytes",
    "errors",
    "checks",
    "tools",
    "red",
    "green",
    "base",
    "coverage",
    "discrimination",
    "repeat",
    "source",
    "nodeid",
    "ok",
    "strict_failure",
    "tree_label",
    "targets",
    "adjustments",
    "records",  # this run's evidence records: `python -m pytest_vgate merge --ledger`
)
MAX_TARGETS = 5


class DescribedGate(TypedDict):
    id: str
    line: int
    claim: str


class GatesFileDescription(TypedDict):
    """A gates file as the session read it: its content hash, its gates, what it cites."""

    path: str
    sha256: str | None
    gates: list[DescribedGate]
    citations: list[str]


class TreeDescription(TypedDict):
    commit: str | None
    dirty: str
    repo: str | None


class GuardFinding(TypedDict):
    nodeid: str
    what: str


class SessionDescription(TypedDict, total=False):
    """What a report says of the session that wrote it, so that a shard report describes
    itself to ``merge`` and ``verify`` (``plugin.describe.describe_session``)."""

    gates_files: list[GatesFileDescription]
    tree: dict[str, TreeDescription]  # by gates root
    options: dict[str, JsonValue]  # the options that change a verdict
    selection: dict[str, list[str]]
    findings: list[GuardFinding]


class GateCounts(TypedDict):
    total: int
    passed: int
    failed: int
    skipped: int
    by_mode: dict[str, int]
    by_rbg: dict[str, int]


class CitationCounts(TypedDict):
    total: int
    by_status: dict[str, int]
    fabrications: int


class ReportSummary(TypedDict):
    """Counts for dashboards (:func:`summarize`)."""

    gates: GateCounts
    citations: CitationCounts
    adjustments: dict[str, int]


class JsonReport(SessionDescription):
    """The report's top level, what ``--vgate-report`` writes and ``pytest_vgate_report``
    receives: fixed keys; each entry is its payload's JSON object (``report.schema.json``)."""

    version: int
    rootdir: str | None
    summary: ReportSummary
    gates: list[JsonDict]
    citations: list[JsonDict]
    citation_documents: list[JsonDict]


def build_report(payloads: Sequence[Payload], *, rootdir: Path | None = None) -> JsonReport:
    """The report of a session from its items' payloads (in any order)."""
    gates: list[JsonDict] = []
    citations: list[JsonDict] = []
    documents: list[JsonDict] = []
    for payload in payloads:
        data = payload.to_dict()
        if isinstance(payload, (CitationPayload, CitationDocumentPayload)):
            del data["kind"]  # the list it is in says what it is
            (citations if isinstance(payload, CitationPayload) else documents).append(data)
        else:
            entry = {k: data.get(k) for k in GATE_FIELDS}
            entry["kind"] = data["kind"]
            gates.append(entry)
    # xdist delivers reports in any order
    citations.sort(key=lambda entry: document_order(as_object(entry.get("result"))))
    documents.sort(key=lambda d: str(d.get("document", "")))
    return {
        "version": REPORT_VERSION,
        "rootdir": str(rootdir) if rootdir is not None else None,
        "summary": summarize(gates, citations),
        "gates": gates,
        "citations": citations,
        "citation_documents": documents,
    }


def gate_state(entry: Mapping[str, object]) -> str:
    """``passed``, ``skipped`` (judgment, not strict) or ``failed``."""
    if entry.get("ok"):
        return "passed"
    if entry.get("mode") == Mode.JUDGMENT.value and not entry.get("strict_failure"):
        return "skipped"
    return "failed"


def summarize(
    gates: Sequence[Mapping[str, object]], citations: Sequence[Mapping[str, object]]
) -> ReportSummary:
    """Counts for dashboards: gates by outcome, mode and rbg status, citations by status.

    Every known mode, rbg status and citation status has a key (0 when absent), so a
    consumer can read any of them without a default.
    """
    by_mode = dict.fromkeys((m.value for m in Mode), 0)
    by_rbg = dict.fromkeys((r.value for r in Rbg), 0)
    states = dict.fromkeys(("passed", "failed", "skipped"), 0)
    adjustments = {"applied": 0, "ignored": 0}
    for entry in gates:
        mode = str(entry.get("mode"))
        by_mode[mode] = by_mode.get(mode, 0) + 1
        if entry.get("rbg"):
            rbg = str(entry["rbg"])
            by_rbg[rbg] = by_rbg.get(rbg, 0) + 1
        states[gate_state(entry)] += 1
        for note in as_array(entry.get("adjustments")):
            action = str(as_object(note).get("action"))
            adjustments[action] = adjustments.get(action, 0) + 1
    by_status = dict.fromkeys((c.value for c in CitationStatus), 0)
    fabrications = 0
    for entry in citations:
        status = str(entry.get("status"))
        by_status[status] = by_status.get(status, 0) + 1
        # after --vgate-fix a rewritten citation counts as what was found
        fixed = entry.get("original") if entry.get("ok") else None
        result = as_object(fixed or entry.get("result"))
        if status == CitationStatus.FABRICATED.value or result.get("beyond_end"):
            fabrications += 1
    return {
        "gates": {
            "total": len(gates),
            "passed": states["passed"],
            "failed": states["failed"],
            "skipped": states["skipped"],
            "by_mode": by_mode,
            "by_rbg": by_rbg,
        },
        "citations": {
            "total": len(citations),
            "by_status": by_status,
            "fabrications": fabrications,
        },
        "adjustments": adjustments,
    }


def write_json_report(path: Path, report: Mapping[str, object]) -> str | None:
    """Write the report atomically; return a warning text instead of raising."""
    try:
        write_atomically(path, json.dumps(report, indent=2, default=str), prefix=".vgate-report-")
    except (OSError, TypeError, ValueError) as exc:
        return f"could not write the JSON report {path}: {exc}"
    return None


def write_atomically(path: Path, text: str, *, prefix: str) -> None:
    """Write ``text`` to ``path`` through a temp file beside it and a rename, so a reader
    never sees half a file; raises OSError, which the exporter's caller reports."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=prefix, dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def file_sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def report_digest(body: Mapping[str, object]) -> str:
    """The sha256 of a report's content (every key but the seal), canonically encoded."""
    content = {k: v for k, v in body.items() if k != COMPLETE}
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def sealed(report: Mapping[str, object]) -> dict[str, object]:
    """The report with its seal as the last key: the digest of everything before it.

    Written only once the session has reached its end, so a process that ends early (a
    hook or conftest calling ``os._exit``) leaves a report without one, and ``verify``
    rejects it. The seal is not a signature: it tells an ended session from one cut short.
    """
    body = {k: v for k, v in report.items() if k != COMPLETE}
    return {**body, COMPLETE: {"sha256": report_digest(body)}}


def seal_problems(report: Mapping[str, object]) -> list[str]:
    """Why the report cannot be trusted as a whole session's: no seal, or a broken one."""
    seal = report.get(COMPLETE)
    if not isinstance(seal, Mapping) or list(report)[-1] != COMPLETE:
        return [
            "incomplete: the session did not reach its end (the process was ended early, "
            "by a hook, a conftest or a signal); no verdict in it can be trusted"
        ]
    if seal.get("sha256") != report_digest(report):
        return ["incomplete: the report was changed after the session sealed it"]
    return []


class ReportFileError(ValueError):
    """A report file that cannot be read as one; the message names the path and why."""


def read_report_file(path: Path) -> dict[str, JsonValue]:
    """A JSON report read without blocking or recursing: a regular file only (a FIFO, a
    device or a folder is refused without being opened for long), at most
    ``MAX_REPORT_BYTES``, at most ``MAX_DEPTH`` levels deep."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except (OSError, ValueError) as exc:
        raise ReportFileError(f"{path}: cannot open the report: {exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ReportFileError(f"{path}: not a regular file; give the report file itself")
        if info.st_size > MAX_REPORT_BYTES:
            raise ReportFileError(
                f"{path}: {info.st_size} bytes, more than a report can be "
                f"({MAX_REPORT_BYTES} bytes)"
            )
        with os.fdopen(fd, "rb", closefd=False) as fh:
            raw = fh.read(MAX_REPORT_BYTES + 1)
    except OSError as exc:
        raise ReportFileError(f"{path}: cannot read the report: {exc}") from None
    finally:
        os.close(fd)
    try:
        data = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise ReportFileError(f"{path}: nested too deeply to be a report") from None
    except (ValueError, MemoryError) as exc:
        raise ReportFileError(f"{path}: cannot read the JSON report: {exc}") from None
    if _too_deep(data):
        raise ReportFileError(f"{path}: nested more than {MAX_DEPTH} levels: not a report")
    if not isinstance(data, dict):
        raise ReportFileError(f"{path}: not a pytest-vgate JSON report (not an object)")
    return data


def _too_deep(data: object) -> bool:
    stack: list[tuple[object, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)
    return False


def check_targets(gate: Gate, root: Path) -> list[JsonDict]:
    """The files a gate's check names, with the line of the named test or function.

    ``tests/test_x.py::TestY::test_z`` -> that file at ``def test_z``; a verifier
    ``mod:func`` -> ``mod.py`` at ``def func``; for semantic gates, the file the check
    text names (a rubric). Only existing files inside ``root``; at most ``MAX_TARGETS``.
    Used for report locations (SARIF, annotations); never raises.
    """
    found: dict[str, JsonDict] = {}
    with contextlib.suppress(OSError, ValueError):
        real_root = os.path.realpath(root)
        cwd = Path(real_root) / gate.cwd
        words: list[tuple[str, str]] = []
        for ref in gate.verifiers:
            module, _, func = ref.partition(":")
            base = module.replace(".", "/")
            words += [(f"{base}.py", func), (f"{base}/__init__.py", func)]
        tokens = gate.argv if gate.argv else tuple(gate.check.split())
        for token in tokens:
            path, _, rest = token.partition("::")
            words.append((path, rest.rsplit("::", 1)[-1] if rest else ""))
        for word, name in words:
            if len(found) >= MAX_TARGETS or not word or word.startswith("-"):
                continue
            candidate = os.path.realpath(cwd / word)
            if os.path.commonpath([real_root, candidate]) != real_root:
                continue
            if candidate in found or not os.path.isfile(candidate):
                continue
            found[candidate] = {"path": candidate, "line": _def_line(candidate, name)}
    return list(found.values())


def _def_line(path: str, name: str) -> int | None:
    if not name.isidentifier():
        return None
    pattern = re.compile(rf"^\s*(?:async\s+)?(?:def|class)\s+{re.escape(name)}\b")
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for number, line in enumerate(fh, start=1):
                if pattern.match(line):
                    return number
    except OSError:
        return None
    return None
