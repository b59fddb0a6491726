"""The JSON report (``--vgate-report``): every gate and citation of the session.

Field names are public (DESIGN.md). Writing is atomic (temp file + rename), and a
report that cannot be written is a warning, never a failed session.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

REPORT_VERSION = 1

GATE_FIELDS = (
    "id",
    "claim",
    "type",
    "mode",
    "cause",
    "rbg",
    "rbg_reason",
    "exit_code",
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
    "source",
    "nodeid",
    "ok",
)


def build_report(payloads: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    gates = []
    citations = []
    for payload in payloads:
        if payload.get("kind") == "citation":
            citations.append({k: v for k, v in payload.items() if k not in ("kind", "report")})
        else:
            entry = {k: payload.get(k) for k in GATE_FIELDS}
            entry["kind"] = payload.get("kind", "gate")
            gates.append(entry)
    citations.sort(key=_document_order)  # xdist delivers reports in any order
    return {"version": REPORT_VERSION, "gates": gates, "citations": citations}


def _document_order(entry: Mapping[str, Any]) -> tuple[str, int]:
    cited = (entry.get("result") or {}).get("citation") or {}
    return str(cited.get("document", "")), int(cited.get("offset", 0))


def write_json_report(path: Path, payloads: Sequence[Mapping[str, Any]]) -> str | None:
    """Write the report atomically; return a warning text instead of raising."""
    try:
        data = json.dumps(build_report(payloads), indent=2, sort_keys=False, default=str)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".vgate-report-", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except (OSError, TypeError, ValueError) as exc:
        return f"could not write the JSON report {path}: {exc}"
    return None
