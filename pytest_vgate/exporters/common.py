"""What exporters report, taken from the JSON report: findings, worst first.

A finding is a failed gate (or verifier, or marked test) in ``verdict.SEVERITY`` order, or
a fabricated, dropped, unsupported or corrected citation, after the gates; ties in file and
line order.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pytest_vgate.clip import clip
from pytest_vgate.exporters.report import gate_state
from pytest_vgate.jsonable import as_array, as_object
from pytest_vgate.paths import relative
from pytest_vgate.payload import PayloadKind
from pytest_vgate.verdict import SEVERITY, CitationStatus, Mode

CITATION_ORDER = (
    CitationStatus.FABRICATED,
    CitationStatus.DROPPED,
    CitationStatus.UNSUPPORTED,
    CitationStatus.CORRECTED,
)
MESSAGE_LIMIT = 2000  # characters of a finding's message (the mark included)
DETAIL_LIMIT = 300  # characters of its one-line detail (the mark included)


@dataclass(frozen=True)
class Place:
    """A file (absolute, or relative to the rootdir) and a 1-based line, when known."""

    path: str
    line: int | None = None
    label: str = ""


@dataclass(frozen=True)
class Finding:
    kind: str  # "gate" or "citation"
    rule: str  # "gate-<mode>" or "citation-<status>"
    level: str  # "error" or "warning"
    title: str
    message: str
    where: Place | None
    targets: tuple[Place, ...] = ()
    related: tuple[Place, ...] = ()
    key: str = ""  # stable identity across runs (for fingerprints)
    detail: str = ""  # one line: what went wrong
    rank: tuple[int, int] = (0, 0)
    properties: dict[str, object] = field(default_factory=dict)  # JSON values of the report


def _line(value: object) -> int:
    """A cited line number (as ``int()`` reads it: a TypeError for what is none)."""
    if isinstance(value, (int, float, str)):
        return int(value)
    raise TypeError(f"a line number is a number, not {value!r:.40}")


def _line_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _split_location(text: str) -> tuple[str, int | None]:
    """``path:line`` or ``path:start-end`` -> (path, first line)."""
    path, sep, tail = text.rpartition(":")
    if not sep:
        return text, None
    first = tail.split("-", 1)[0]
    return (path, int(first)) if first.isdigit() else (text, None)


def _gate_finding(entry: Mapping[str, object], rootdir: str) -> Finding:
    mode = str(entry.get("mode"))
    cause = entry.get("cause")
    where: Place | None = None
    source = entry.get("source")
    if isinstance(source, str) and source:
        path, line = _split_location(source)
        where = Place(path, line)
    elif entry.get("nodeid"):
        where = Place(os.path.join(rootdir, str(entry["nodeid"]).split("::", 1)[0]))
    targets = tuple(
        Place(str(t["path"]), _line_or_none(t.get("line")), "the check's target")
        for t in as_array(entry.get("targets"))
        if isinstance(t, Mapping) and t.get("path")
    )
    name = str(entry.get("id") or entry.get("nodeid"))
    kind = str(entry.get("kind") or PayloadKind.GATE.value)
    title = f"{kind} {name}: {mode}" + (f" ({cause})" if cause else "")
    lines = [str(entry.get("detail") or "").strip() or f"mode {mode}"]
    if entry.get("claim"):
        lines.append(f"claim: {entry['claim']}")
    if entry.get("rbg"):
        reason = f" ({entry['rbg_reason']})" if entry.get("rbg_reason") else ""
        lines.append(f"red-before-green: {entry['rbg']}{reason}")
    if entry.get("command"):
        lines.append("command: " + " ".join(str(a) for a in as_array(entry["command"])))
    rank = SEVERITY.index(Mode(mode)) if mode in {m.value for m in Mode} else len(SEVERITY)
    return Finding(
        kind="gate",
        rule=f"gate-{mode}",
        level="error",
        title=title,
        message=clip("\n".join(lines), MESSAGE_LIMIT - 1),
        where=where,
        targets=targets,
        key=f"{kind}:{name}",
        detail=clip(" ".join(lines[0].split()), DETAIL_LIMIT - 1),
        rank=(0, rank),
        properties={
            "id": name,
            "kind": kind,
            "mode": mode,
            "cause": cause,
            "rbg": entry.get("rbg"),
            "nodeid": entry.get("nodeid"),
        },
    )


def _citation_finding(entry: Mapping[str, object]) -> Finding | None:
    status = str(entry.get("status"))
    if status not in {s.value for s in CITATION_ORDER} or entry.get("ok"):
        return None  # verified, or rewritten by --vgate-fix in this run (now right)
    result = as_object(entry.get("result"))
    cited = as_object(result.get("citation"))
    root = str(entry.get("root") or "")
    where = Place(str(cited["document"]), _line(cited["line"])) if cited.get("document") else None
    related: list[Place] = []
    if entry.get("corrected_to"):
        path, line = _split_location(str(entry["corrected_to"]))
        related.append(Place(os.path.join(root, path), line, "where the code really is"))
    for candidate in as_array(result.get("candidates")):
        path, line = _split_location(str(candidate))
        related.append(Place(os.path.join(root, path), line, "a candidate"))
    location = str(entry.get("location") or entry.get("citation"))
    lines = [f"citation {location} is {status}"]
    if entry.get("reason"):
        lines.append(str(entry["reason"]))
    if entry.get("corrected_to"):
        lines.append(f"the code is at {entry['corrected_to']}; --vgate-fix rewrites it")
    if result.get("beyond_end"):
        lines.append("fabrication sign: the cited line is beyond the end of the file")
    order = CITATION_ORDER.index(CitationStatus(status))
    return Finding(
        kind="citation",
        rule=f"citation-{status}",
        level="warning" if status == CitationStatus.CORRECTED.value else "error",
        title=f"citation {location}: {status}",
        message=clip("\n".join(lines), MESSAGE_LIMIT - 1),
        where=where,
        related=tuple(related[:100]),
        key=f"citation:{entry.get('source')}:{entry.get('citation')}",
        detail=clip(" ".join(" ".join(lines[1:2]).split()), DETAIL_LIMIT - 1),
        rank=(1, order),
        properties={"status": status, "source": entry.get("source"), "citation": location},
    )


def findings(report: Mapping[str, object]) -> list[Finding]:
    """Every failed gate and every citation that is not verified, worst first."""
    rootdir = str(report.get("rootdir") or os.getcwd())
    found: list[Finding] = []
    for entry in map(as_object, as_array(report.get("gates"))):
        if gate_state(entry) == "failed":
            found.append(_gate_finding(entry, rootdir))
    for entry in map(as_object, as_array(report.get("citations"))):
        finding = _citation_finding(entry)
        if finding is not None:
            found.append(finding)

    def order(f: Finding) -> tuple[tuple[int, int], str, int]:
        return (f.rank, f.where.path if f.where else "", (f.where.line or 0) if f.where else 0)

    return sorted(found, key=order)


def relative_uri(path: str, base: str | Path) -> str | None:
    """``path`` as a POSIX path relative to ``base``, or None when it lies outside."""
    try:
        return relative(path, base, resolve=True)
    except ValueError:  # a NUL in the path
        return None
