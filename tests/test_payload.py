"""The payload types: one frozen type per kind, one JSON codec, a strict decode.

Each kind round-trips through its JSON object (what crosses xdist); the decode refuses an
unknown kind, an unknown key, a missing verdict and a value of the wrong type; the report
sorts the payloads by kind. The end-to-end fail-closed test (a hook that tampers with the
payload on the report) is in test_plugin_hooks.py.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import pytest

from pytest_vgate.citations.parse import Citation
from pytest_vgate.citations.result import CitationResult
from pytest_vgate.exporters.report import GATE_FIELDS, build_report
from pytest_vgate.gate.result import result_of
from pytest_vgate.gatesfile import Gate
from pytest_vgate.payload import (
    PAYLOAD_TYPES,
    CitationDocumentPayload,
    CitationPayload,
    CrashedPayload,
    GatePayload,
    JsonObject,
    MissingPayload,
    Payload,
    PayloadError,
    PayloadKind,
    TestPayload,
    VerifierPayload,
    decode_payload,
    payload_of_entry,
)
from pytest_vgate.verdict import Cause, CheckVerdict, CitationStatus, Mode, ToolRecord, Verdict

ROOT = Path("/repo")


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
    assert set(PAYLOAD_TYPES) == {k.value for k in PayloadKind}  # one type per kind


def _gate_payload(verifier: bool = False) -> Payload:
    gate = Gate(id="g", claim="it works", root=ROOT, argv=("true",), source=ROOT / "g.yaml", line=3)
    verdict = Verdict(
        mode=Mode.FAIL,
        cause=Cause.PRODUCT,
        exit_code=1,
        duration=0.1234567,
        stdout="out\n",
        checks=(CheckVerdict("c", Mode.FAIL, "no"),),
        tools=(ToolRecord("true", "/bin/true", "ab" * 32),),
    )
    return result_of(gate, verdict).to_payload(
        nodeid="g.yaml::g", targets=({"path": "/repo/t.py", "line": 2},), verifier=verifier
    )


def _citation_payload() -> CitationPayload:
    cited = Citation(ROOT / "a.md", 1, 10, "src/a.py:1", "src/a.py", 1, 1)
    result = CitationResult(cited, CitationStatus.CORRECTED, corrected_to="src/a.py:2")
    return CitationPayload(
        source="a.md:1",
        citation="src/a.py:1",
        location="src/a.py:1",
        status=CitationStatus.CORRECTED,
        corrected_to="src/a.py:2",
        ok=False,
        mode=Mode.FAIL,
        cause=Cause.PRODUCT,
        result=JsonObject(result.to_dict()),
        nodeid="a.md::L1",
    )


EXAMPLES: dict[str, Payload] = {
    "gate": _gate_payload(),
    "verifier": _gate_payload(verifier=True),
    "test": TestPayload(
        id="t.py::t", ok=False, mode=Mode.FAIL, cause=Cause.PRODUCT, duration=0.25, nodeid="t.py::t"
    ),
    "crashed": CrashedPayload(id="t", detail="the worker died", nodeid="t"),
    "citation": _citation_payload(),
    "citation-document": CitationDocumentPayload(
        document="d.md",
        ok=False,
        mode=Mode.ERROR,
        cause=Cause.BROKEN_TEST,
        detail="binary",
        nodeid="d.md::document",
    ),
    "missing": MissingPayload(
        id="m", claim="c", detail="no shard ran it", source="g.yaml:1", nodeid="g.yaml::m"
    ),
}


@pytest.mark.parametrize("kind", list(EXAMPLES))
def test_every_kind_round_trips_through_its_json(kind: str) -> None:
    payload = EXAMPLES[kind]
    data = payload.to_dict()
    assert data["kind"] == kind
    wire = json.loads(json.dumps(data))  # plain values only: what execnet and JSON carry
    assert wire == data
    back = decode_payload(wire)
    assert type(back) is type(payload) is PAYLOAD_TYPES[kind]
    assert back == payload
    assert back.to_dict() == data


def test_a_gate_payload_rounds_its_duration_and_keeps_its_nested_records_whole() -> None:
    data = _gate_payload().to_dict()
    assert data["duration"] == 0.123457
    assert (
        data["green"]["checks"]
        == data["checks"]
        == [{"name": "c", "mode": "fail", "detail": "no", "duration": 0.0}]
    )
    assert data["targets"] == [{"path": "/repo/t.py", "line": 2}]
    assert set(GATE_FIELDS) <= set(data)  # a gate entry of the report is read off it


def _gate_json(**changes: Any) -> dict[str, Any]:
    data = _gate_payload().to_dict()
    data.update(changes)
    return data


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("a string", "a payload is a JSON object"),
        ({"id": "g", "ok": True, "mode": "pass"}, "unknown payload kind None"),
        ({"kind": "bogus", "id": "g", "ok": True, "mode": "pass"}, "unknown payload kind 'bogus'"),
        ({"kind": "Gate", "id": "g", "ok": True, "mode": "pass"}, "unknown payload kind 'Gate'"),
        (_gate_json(injected=1), "unknown key 'injected'"),
        (_gate_json(ok="yes"), "GatePayload.ok: expected true or false"),
        (_gate_json(ok=1), "GatePayload.ok: expected true or false"),
        (_gate_json(mode="passed"), "GatePayload.mode: expected one of"),
        (_gate_json(cause="luck"), "GatePayload.cause"),
        (_gate_json(exit_code="0"), "GatePayload.exit_code"),
        (_gate_json(command="true"), "GatePayload.command: expected a JSON array"),
        (_gate_json(green=[1]), "GatePayload.green"),
        (_gate_json(records=[{"where": "base"}, "x"]), "GatePayload.records[1]"),
        ({"kind": "gate", "id": "g", "mode": "pass"}, "GatePayload.ok: missing"),
        ({"kind": "citation", "source": "a.md:1", "ok": True}, "CitationPayload.result: missing"),
        ({"kind": "test", "id": "t", "ok": True, "mode": "pass", "kind2": 1}, "unknown key"),
        (_gate_json(ok=True, mode="fail", cause="product"), "ok true and mode fail"),
        ({"kind": "test", "id": "t", "ok": True, "mode": "error"}, "ok true and mode error"),
        ({"kind": "crashed", "id": "g", "ok": True, "mode": "pass"}, "CrashedPayload with ok"),
        ({"kind": "missing", "id": "g", "ok": True, "mode": "pass"}, "MissingPayload with ok"),
    ],
    ids=[
        "not-an-object", "no-kind", "unknown-kind", "kind-case", "unknown-key", "ok-str",
        "ok-int", "mode", "cause", "exit-code-str", "command-str", "green-list", "record-str",
        "missing-ok", "missing-result", "test-unknown-key", "ok-but-fail", "test-ok-but-error",
        "crashed-ok", "missing-payload-ok",
    ],
)  # fmt: skip
def test_the_decode_is_strict(data: object, message: str) -> None:
    with pytest.raises(PayloadError, match=re.escape(message)):
        decode_payload(data)


def test_the_kind_decides_the_type_and_cannot_be_mixed() -> None:
    """A verifier's JSON is not a gate's: the kind is checked against the type."""
    data = EXAMPLES["verifier"].to_dict()
    assert isinstance(decode_payload(data), VerifierPayload)
    with pytest.raises(PayloadError, match="CitationPayload: unknown key"):
        decode_payload({**data, "kind": "citation"})
    with pytest.raises(PayloadError, match="CrashedPayload: unknown key 'adjustments'"):
        decode_payload({**data, "kind": "crashed"})


def test_a_report_entry_reads_back_as_its_payload() -> None:
    """``python -m pytest_vgate merge`` reads report entries: the nulls the report writes
    for the gate fields a kind lacks, and the fields a report adds, are left out."""
    report = build_report(list(EXAMPLES.values()))
    by_kind = {entry["kind"]: entry for entry in report["gates"]}
    for kind in ("gate", "verifier"):  # all but the failure text and the ledger's path
        back = payload_of_entry(by_kind[kind], PayloadKind.GATE)
        assert back == replace(EXAMPLES[kind], report="", ledger=None)
    for kind in ("test", "crashed"):
        assert payload_of_entry(by_kind[kind], PayloadKind.GATE) == EXAMPLES[kind]
    citation = payload_of_entry(report["citations"][0], PayloadKind.CITATION)
    assert citation == EXAMPLES["citation"]
    with pytest.raises(PayloadError, match="unknown payload kind 'bogus'"):
        payload_of_entry({**by_kind["gate"], "kind": "bogus"}, PayloadKind.GATE)
    with pytest.raises(PayloadError, match=r"GatePayload\.ok"):
        payload_of_entry({**by_kind["gate"], "ok": "yes"}, PayloadKind.GATE)


def test_the_report_sorts_payloads_by_kind() -> None:
    payloads: list[Payload] = [
        GatePayload(id="g", mode=Mode.PASS, ok=True),
        VerifierPayload(id="v", mode=Mode.FAIL, ok=False),
        EXAMPLES["citation"],
        EXAMPLES["citation-document"],
    ]
    report = build_report(payloads)
    assert [(g["id"], g["kind"]) for g in report["gates"]] == [("g", "gate"), ("v", "verifier")]
    assert list(report["gates"][0]) == [*GATE_FIELDS, "kind"]
    assert len(report["citations"]) == 1
    assert "kind" not in report["citations"][0]
    assert list(report["citations"][0]) == [
        f.name for f in fields(CitationPayload) if f.name != "kind"
    ]
    assert report["citation_documents"] == [
        {k: v for k, v in EXAMPLES["citation-document"].to_dict().items() if k != "kind"}
    ]


EXPECTED_REPORT = Path(__file__).parent / "data" / "payload_report.json"


def test_the_report_of_every_kind_reads_as_checked_in() -> None:
    """The JSON report of one payload of each kind, byte for byte (key order, rounding,
    nulls): what the report was before the payloads were typed. After an intended change
    of the report, rewrite the file with ``VGATE_WRITE_EXPECTED=1``."""
    report = build_report(list(EXAMPLES.values()), rootdir=ROOT)
    text = json.dumps(report, indent=2, sort_keys=False, default=str)  # as write_json_report
    if os.environ.get("VGATE_WRITE_EXPECTED"):
        EXPECTED_REPORT.write_text(text, encoding="utf-8")
    assert text == EXPECTED_REPORT.read_text(encoding="utf-8")
