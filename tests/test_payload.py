"""The payload kinds: one closed vocabulary, plain strings on the wire, sorted by the report."""

from __future__ import annotations

import json

from pytest_vgate.payload import CITATION_KINDS, PayloadKind
from pytest_vgate.report import build_report


def test_the_kinds_are_their_public_names() -> None:
    assert [k.value for k in PayloadKind] == [
        "gate",
        "verifier",
        "test",
        "citation",
        "citation-document",
        "crashed",
        "missing",
    ]
    assert json.dumps({"kind": PayloadKind.CITATION_DOCUMENT.value}) == (
        '{"kind": "citation-document"}'
    )
    assert str(PayloadKind.GATE) == "gate"


def test_the_report_sorts_payloads_by_kind() -> None:
    payloads = [
        {"kind": PayloadKind.GATE.value, "id": "g", "mode": "pass", "ok": True},
        {"kind": PayloadKind.VERIFIER.value, "id": "v", "mode": "fail", "ok": False},
        {"id": "legacy", "mode": "pass", "ok": True},  # no kind: a gate
        {"kind": PayloadKind.CITATION.value, "document": "d.md", "line": 1, "report": "x"},
        {"kind": PayloadKind.CITATION_DOCUMENT.value, "document": "d.md"},
    ]
    report = build_report(payloads)
    assert [(g["id"], g["kind"]) for g in report["gates"]] == [
        ("g", "gate"),
        ("v", "verifier"),
        ("legacy", "gate"),
    ]
    assert len(report["citations"]) == 1
    assert "kind" not in report["citations"][0]
    assert "report" not in report["citations"][0]
    assert {k.value for k in CITATION_KINDS} == {"citation", "citation-document"}
