"""SARIF 2.1.0 (``--vgate-sarif PATH``): failed gates and unverified citations, for code
scanning.

One result per failed gate (at its gates-file line, then the files its check names) and
per citation not verified (at its document line; related: where the code really is);
rule ids ``gate-<mode>`` and ``citation-<status>``. Paths inside the rootdir are relative
to ``%SRCROOT%``; GitHub's limits are kept (25,000 results, worst first, the cut is said).
"""

from __future__ import annotations

import hashlib
import json
import os
import urllib.parse
from collections import Counter
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path

from pytest_vgate.exporters.common import (
    Finding,
    Place,
    findings,
    relative_uri,
)
from pytest_vgate.exporters.report import JsonReport, write_atomically
from pytest_vgate.jsonable import JsonDict
from pytest_vgate.verdict import CitationStatus, Mode

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/pytest-vgate/pytest-vgate"
MAX_RESULTS = 25_000  # GitHub: results per run
MAX_LOCATIONS = 100  # GitHub keeps the first 100 locations (and related locations)
ROOT_ID = "%SRCROOT%"

GATE_RULES = {
    mode.value: f"the gate's check ended with mode {mode.value} (docs/modes.md)"
    for mode in Mode
    if mode is not Mode.PASS
}
CITATION_RULES = {
    CitationStatus.FABRICATED.value: "the cited file or line does not exist",
    CitationStatus.DROPPED.value: "the cited code was not found where cited, nor elsewhere",
    CitationStatus.CORRECTED.value: "the cited code moved: the line number drifted",
    CitationStatus.UNSUPPORTED.value: "the cited lines do not show what the description says",
}


def _rules() -> list[JsonDict]:
    table = [("gate", m, f"gate failed: {m}", text, "modes") for m, text in GATE_RULES.items()]
    table += [
        ("citation", s, f"citation {s}", text, "citations") for s, text in CITATION_RULES.items()
    ]
    return [
        {
            "id": f"{kind}-{name}",
            "name": f"{kind.capitalize()}{name.capitalize()}",
            "shortDescription": {"text": short},
            "fullDescription": {"text": text},
            "defaultConfiguration": {
                "level": "warning" if name == CitationStatus.CORRECTED.value else "error"
            },
            "helpUri": f"{INFORMATION_URI}/blob/main/docs/{page}.md",
            "properties": {"tags": ["vgate", kind]},
        }
        for kind, name, short, text, page in table
    ]


def uri_reference(posix_path: str) -> str:
    """A relative POSIX path as an RFC 3986 relative reference: every octet but the
    unreserved characters and ``/`` percent-encoded (``#``, ``%``, ``?``, a space, a ``:``
    that would read as a scheme), so a consumer resolves the file that was meant."""
    return urllib.parse.quote(posix_path, safe="/", errors="surrogateescape")


def file_uri(path: str | Path) -> str:
    """An absolute ``file:`` URI, percent-encoded (a relative path is taken from the cwd)."""
    return Path(os.path.abspath(path)).as_uri()


def _physical(place: Place, rootdir: str) -> JsonDict:
    uri = relative_uri(place.path, rootdir)
    artifact: JsonDict = {"uri": file_uri(place.path)}
    if uri is not None:
        artifact = {"uri": uri_reference(uri), "uriBaseId": ROOT_ID}
    location: JsonDict = {"artifactLocation": artifact}
    if place.line is not None and place.line >= 1:
        location["region"] = {"startLine": place.line}
    return location


def _result(finding: Finding, rule_index: int, rootdir: str) -> dict[str, object]:
    places = ([finding.where] if finding.where else []) + list(finding.targets)
    result: dict[str, object] = {
        "ruleId": finding.rule,
        "ruleIndex": rule_index,
        "level": finding.level,
        "message": {"text": f"{finding.title}\n{finding.message}"},
        "locations": [
            {"physicalLocation": _physical(place, rootdir)} for place in places[:MAX_LOCATIONS]
        ],
        "partialFingerprints": {
            "vgateFinding/v1": hashlib.sha256(finding.key.encode()).hexdigest()[:32]
        },
        "properties": {k: v for k, v in finding.properties.items() if v is not None},
    }
    if finding.related:
        result["relatedLocations"] = [
            {
                "id": number,
                "physicalLocation": _physical(place, rootdir),
                "message": {"text": place.label or "related"},
            }
            for number, place in enumerate(finding.related[:MAX_LOCATIONS], start=1)
        ]
    return result


def _version() -> str:
    try:
        return metadata.version("pytest-vgate")
    except metadata.PackageNotFoundError:
        return "0"


def build_sarif(
    report: Mapping[str, object], *, max_results: int = MAX_RESULTS
) -> dict[str, object]:
    """A SARIF 2.1.0 log of one run from a vgate report; worst first, cut at ``max_results``."""
    rootdir = str(report.get("rootdir") or os.getcwd())
    rules = _rules()
    index = {rule["id"]: number for number, rule in enumerate(rules)}
    every = findings(report)
    kept = every[: max(max_results, 0)]
    left_out: Sequence[Finding] = every[len(kept) :]
    cut_by_rule = dict(Counter(finding.rule for finding in left_out))
    invocation: JsonDict = {"executionSuccessful": True}
    if left_out:
        invocation["toolExecutionNotifications"] = [
            {
                "level": "warning",
                "descriptor": {"id": "vgate-results-cut"},
                "message": {
                    "text": f"{len(left_out)} of {len(every)} results left out (at most "
                    f"{max_results} per run); the least severe went first: "
                    + ", ".join(f"{rule} {n}" for rule, n in sorted(cut_by_rule.items()))
                },
            }
        ]
    run: dict[str, object] = {
        "tool": {
            "driver": {
                "name": "pytest-vgate",
                "version": _version(),
                "informationUri": INFORMATION_URI,
                "rules": rules,
            }
        },
        "originalUriBaseIds": {ROOT_ID: {"uri": file_uri(rootdir).rstrip("/") + "/"}},
        "invocations": [invocation],
        "results": [_result(f, index[f.rule], rootdir) for f in kept],
        "properties": {
            "vgate": {
                "report_version": report.get("version"),
                "results_total": len(every),
                "results_written": len(kept),
                "results_left_out": len(left_out),
                "left_out_by_rule": cut_by_rule,
                "summary": report.get("summary"),
            }
        },
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def write_sarif(path: Path, log: Mapping[str, object]) -> None:
    """Write atomically (temp file + rename); raises OSError, which the caller reports."""
    write_atomically(path, json.dumps(log, indent=2), prefix=".vgate-sarif-")


class SarifExporter:
    """A ``pytest_vgate_report`` plugin: writes the SARIF log to ``path``."""

    def __init__(self, path: Path, *, max_results: int = MAX_RESULTS) -> None:
        self.path = path
        self.max_results = max_results

    def pytest_vgate_report(self, report: JsonReport) -> None:
        write_sarif(self.path, build_sarif(report, max_results=self.max_results))
