"""The JSON report: version, summary counts, check targets, and its shipped schema."""

from __future__ import annotations

import json
from dataclasses import fields
from importlib import resources
from pathlib import Path

import pytest
from helpers.report import report_errors

from pytest_vgate.evidence.reach import CoverageStatus
from pytest_vgate.exporters.report import (
    GATE_FIELDS,
    REPORT_VERSION,
    build_report,
    check_targets,
)
from pytest_vgate.gatesfile import Gate, GateType
from pytest_vgate.payload import (
    CitationDocumentPayload,
    CitationPayload,
    Payload,
    decode_payload,
)
from pytest_vgate.verdict import Cause, CitationStatus, Mode, Rbg

# Added to a gate entry by the controller under --vgate-base (the page reads them).
BASE_FIELDS = ("diff", "advice")


def _gate(gate_id: str, mode: str, *, ok: bool, rbg: str | None = None, **extra: object) -> Payload:
    return decode_payload(
        {"kind": "gate", "id": gate_id, "mode": mode, "ok": ok, "rbg": rbg, **extra}
    )


IGNORED = {"plugin": "p", "action": "ignored", "from": "timeout", "to": "pass"}


def _citation(status: str, beyond_end: bool = False) -> Payload:
    return decode_payload(
        {
            "kind": "citation",
            "source": "doc.md:1",
            "citation": "a.py:1",
            "status": status,
            "ok": status == "verified",
            "result": {"citation": {"document": "doc.md", "offset": 0}, "beyond_end": beyond_end},
        }
    )


def test_the_summary_counts_gates_by_outcome_mode_and_rbg_and_citations_by_status() -> None:
    report = build_report(
        [
            _gate("a", "pass", ok=True, rbg="proven"),
            _gate("b", "fail", ok=False, rbg="never-red"),
            _gate("c", "judgment", ok=False),
            _gate("d", "judgment", ok=False, strict_failure=True),
            _gate(
                "e",
                "timeout",
                ok=False,
                rbg="unproven",
                adjustments=[{"plugin": "p", "action": "ignored", "from": "timeout", "to": "pass"}],
            ),
            _citation("verified"),
            _citation("corrected", beyond_end=True),
            _citation("fabricated"),
        ],
        rootdir=Path("/w"),
    )
    assert report["version"] == REPORT_VERSION == 2
    assert report["rootdir"] == "/w"
    gates = report["summary"]["gates"]
    assert (gates["total"], gates["passed"], gates["failed"], gates["skipped"]) == (5, 1, 3, 1)
    assert set(gates["by_mode"]) == {m.value for m in Mode}
    by_mode = gates["by_mode"]
    assert (by_mode["judgment"], by_mode["fail"], by_mode["sandbox"]) == (2, 1, 0)
    assert set(gates["by_rbg"]) == {r.value for r in Rbg}
    assert gates["by_rbg"]["never-red"] == 1
    citations = report["summary"]["citations"]
    assert set(citations["by_status"]) == {s.value for s in CitationStatus}
    assert citations["by_status"]["corrected"] == 1
    assert citations["fabrications"] == 2  # fabricated + a line beyond the end
    assert report["summary"]["adjustments"] == {"applied": 0, "ignored": 1}
    assert not report_errors(json.loads(json.dumps(report)))


def test_the_schema_ships_in_the_package_and_rejects_a_wrong_report() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(resources.files("pytest_vgate").joinpath("report.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    good = build_report([_gate("a", "pass", ok=True)])
    assert not report_errors(good)
    assert report_errors({**good, "version": 1})
    assert report_errors({**good, "gates": [{**good["gates"][0], "mode": "passed"}]})
    assert report_errors({k: v for k, v in good.items() if k != "summary"})


def test_the_schema_describes_every_field_the_report_writes() -> None:
    """Drift check on the real lists: a field ``report.py`` writes that the schema does not
    name is one no consumer can rely on, and each closed vocabulary is its enum's values."""
    schema = json.loads(resources.files("pytest_vgate").joinpath("report.schema.json").read_text())
    defs = schema["$defs"]
    gate = defs["gate"]["properties"]
    assert set(gate) == {*GATE_FIELDS, *BASE_FIELDS, "kind"}
    written = {f.name for f in fields(CitationPayload)} - {"kind"}
    assert set(defs["citation"]["properties"]) == written
    documents = schema["properties"]["citation_documents"]["items"]["properties"]
    assert set(documents) == {f.name for f in fields(CitationDocumentPayload)} - {"kind"}
    assert defs["mode"]["enum"] == [m.value for m in Mode]
    causes = [*(c.value for c in Cause), None]
    assert gate["cause"]["enum"] == defs["citation"]["properties"]["cause"]["enum"] == causes
    assert documents["cause"]["enum"] == causes
    assert gate["rbg"]["enum"] == [*(r.value for r in Rbg), None]
    assert gate["coverage"]["properties"]["status"]["enum"] == [s.value for s in CoverageStatus]
    assert defs["citation"]["properties"]["status"]["enum"] == [s.value for s in CitationStatus]


def test_check_targets_name_the_files_a_check_names(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("import os\n\n\ndef test_y():\n    pass\n")
    (tmp_path / "checks.py").write_text("def first(ctx):\n    return True\n")
    (tmp_path / "rubric.rubric.yaml").write_text("file: a\n")
    outside = tmp_path.parent / "outside.py"
    outside.write_text("x = 1\n")
    command = Gate(
        id="c", root=tmp_path,
        argv=("python", "-m", "pytest", "tests/test_x.py::test_y", "missing.py", "../outside.py"),
    )  # fmt: skip
    assert check_targets(command, tmp_path) == [
        {"path": str(tmp_path / "tests" / "test_x.py"), "line": 4}
    ]
    verifier = Gate(id="v", type=GateType.PYTHON, root=tmp_path, verifiers=("checks:first",))
    assert check_targets(verifier, tmp_path) == [{"path": str(tmp_path / "checks.py"), "line": 1}]
    semantic = Gate(id="s", type=GateType.SEMANTIC, root=tmp_path, check="rubric.rubric.yaml")
    assert check_targets(semantic, tmp_path) == [
        {"path": str(tmp_path / "rubric.rubric.yaml"), "line": None}
    ]


def test_docs_name_every_field_of_the_schema() -> None:
    """docs/extending.md's JSON report section names every field the schema describes."""
    schema = json.loads(resources.files("pytest_vgate").joinpath("report.schema.json").read_text())
    page = (Path(__file__).resolve().parents[1] / "docs" / "extending.md").read_text("utf-8")
    section = page.split("## The JSON report", 1)[1].split("\n## ", 1)[0]
    citations = (Path(__file__).resolve().parents[1] / "docs" / "citations.md").read_text("utf-8")
    defs = schema["$defs"]
    for name in [*schema["properties"], *defs["gate"]["properties"]]:
        assert f"`{name}`" in section, name
    for name in defs["citation"]["properties"]:
        assert f"`{name}`" in citations, name
    for name in schema["properties"]["citation_documents"]["items"]["properties"]:
        assert f"`{name}`" in section, name
