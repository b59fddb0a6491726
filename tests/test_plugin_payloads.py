"""The payload on a report is read once, strictly, on the controller: a hook (on an xdist
worker or in the one process) that replaces it with something that does not decode (an
unknown key, an unknown kind, a value of the wrong type, not an object) makes its item a
failure of mode ``error`` in the summary, the JSON report and the exit status, never a
pass and never an INTERNALERROR. Plain and under ``-n 2``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.report import read_report

from pytest_vgate.payload import GatePayload, decode_payload

GATES = """\
gates:
  - id: forged-key
    check: python -c "raise SystemExit(1)"
  - id: forged-kind
    check: python -c "raise SystemExit(1)"
  - id: forged-type
    check: python -c "raise SystemExit(1)"
  - id: forged-shape
    check: python -c "raise SystemExit(1)"
  - id: forged-pass
    check: python -c "pass"
  - id: forged-flip
    check: python -c "raise SystemExit(1)"
  - id: honest
    check: python -c "raise SystemExit(1)"
"""

# A plugin that rewrites the payload a gate's report carries, and the report's outcome,
# before the report leaves the process that ran it (xdist sends it in its own logreport).
TAMPER = """
import pytest

FORGED = {"ok": True, "mode": "pass", "cause": None}


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report):
    data = getattr(report, "vgate", None)
    if report.when != "call" or data is None:
        return
    if hasattr(data, "to_dict"):  # in its process the payload is typed: forge its JSON
        data = data.to_dict()
    elif not isinstance(data, dict):  # the xdist controller: a worker forged it already
        return
    name = report.nodeid.rsplit("::", 1)[-1]
    if name == "forged-key":
        report.vgate = {**data, **FORGED, "approved_by": "tamper"}
    elif name == "forged-kind":
        report.vgate = {**data, **FORGED, "kind": "approved"}
    elif name == "forged-type":
        report.vgate = {**data, "ok": "yes", "mode": "pass", "cause": None}
    elif name == "forged-shape":
        report.vgate = "pass"
    elif name == "forged-flip":  # well typed: only `ok` flipped, the failed mode kept
        report.vgate = {**data, "ok": True}
    elif name == "forged-pass":
        report.vgate = {**data, "rbg": "proven!"}
    else:
        return
    report.outcome = "passed"
    report.longrepr = None
"""

FORGED = ("forged-key", "forged-kind", "forged-type", "forged-shape", "forged-pass", "forged-flip")


@pytest.fixture
def tampered(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    pytester.makepyfile(tamper=TAMPER)
    pytester.makefile(".yaml", gates=GATES)
    monkeypatch.setenv("PYTHONPATH", str(pytester.path))  # -p finds it, on workers too
    return pytester.path


def test_a_payload_that_does_not_decode_fails_its_item(tampered: Path, run_vgate) -> None:  # type: ignore[no-untyped-def]
    result, _ = run_vgate(
        "-p", "tamper", "--vgate", "gates.yaml", "--vgate-report", "report.json"
    )  # fmt: skip
    out = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in out, out
    assert result.ret == 1, out
    report = read_report(tampered / "report.json")
    gates = {g["nodeid"].rsplit("::", 1)[-1]: g for g in report["gates"]}
    for name in FORGED:
        gate = gates[name]
        assert (gate["kind"], gate["mode"], gate["ok"], gate["cause"]) == (
            "crashed", "error", False, "broken_test"
        ), gate  # fmt: skip
        assert "its payload on the report cannot be read" in gate["detail"], gate
    assert (gates["honest"]["kind"], gates["honest"]["mode"]) == ("gate", "fail")
    assert report["summary"]["gates"]["passed"] == 0
    assert "failed gates:" in out
    assert "gates.yaml::forged-key: error (broken_test) - its payload on the" in out
    for name, why in (
        ("forged-key", "unknown key 'approved_by'"),
        ("forged-kind", "unknown payload kind 'approved'"),
        ("forged-type", "GatePayload.ok: expected true or false, got the string 'yes'"),
        ("forged-shape", "a payload is a JSON object, not str"),
        ("forged-pass", "GatePayload.rbg: expected one of"),
        ("forged-flip", "a GatePayload with ok true and mode fail"),
    ):
        assert why in gates[name]["detail"], (name, gates[name]["detail"])
    # The exit-status guard read the same verdict: it names what overrode the report.
    assert "gates.yaml::forged-key: verdict error, but pytest reported it passed" in out, out


def test_a_forged_pass_that_does_not_decode_fails_the_session(tampered: Path, run_vgate) -> None:  # type: ignore[no-untyped-def]
    """Only forged gates selected: every one of them failed and its report says passed."""
    result, _ = run_vgate(
        "-p", "tamper", "--vgate", "gates.yaml", "-k", "forged-key or forged-kind or forged-type"
    )  # fmt: skip
    out = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in out, out
    assert result.ret == 1, out
    assert "3 passed" in out  # what the tampered reports say; the verdicts say otherwise
    assert "verdict error, but pytest reported it passed" in out


SERIALISE = """
import json

import pytest

CONFIG = []


def pytest_configure(config):
    CONFIG.append(config)


@pytest.hookimpl(trylast=True)
def pytest_runtest_logreport(report):
    if report.when == "call":  # what --report-log (and an xdist worker) does with a report
        data = CONFIG[0].hook.pytest_report_to_serializable(config=CONFIG[0], report=report)
        with open("reports.jsonl", "a") as fh:
            fh.write(json.dumps(data) + "\\n")
"""


def test_a_serialised_report_carries_the_payload_as_its_json(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", gates=GATES)
    pytester.makeconftest(SERIALISE)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--vgate", "gates.yaml", "-k", "honest or forged-pass"
    )  # fmt: skip
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    lines = (pytester.path / "reports.jsonl").read_text().splitlines()
    payloads = {p["id"]: p for p in (json.loads(line)["vgate"] for line in lines)}
    assert set(payloads) == {"honest", "forged-pass"}
    assert (payloads["honest"]["kind"], payloads["honest"]["ok"]) == ("gate", False)
    assert payloads["forged-pass"]["mode"] == "pass"
    assert isinstance(decode_payload(payloads["honest"]), GatePayload)
