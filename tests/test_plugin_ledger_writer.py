"""End to end: the controller writes the ledger from the records it made, not from their
JSON (``Evidence.encode``/``record_of``); what lands in the ledger is the same."""

from __future__ import annotations

import json
import textwrap

import pytest

from pytest_vgate.evidence import Record


def test_the_controller_writes_its_own_records_without_decoding_them(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    decoded: list[object] = []
    decode = Record.from_dict.__func__  # type: ignore[attr-defined]

    def counting(cls: type[Record], data: object) -> Record:
        decoded.append(data)
        return decode(cls, data)  # type: ignore[no-any-return]

    monkeypatch.setattr(Record, "from_dict", classmethod(counting))
    (pytester.path / "gates.yaml").write_text(
        textwrap.dedent(
            """\
            gates:
              - id: passes
                check: "true"
              - id: fails
                check: "false"
            """
        )
    )
    report = pytester.path / "report.json"
    result = pytester.inline_run(
        "--vgate", "gates.yaml", f"--vgate-report={report}", "-p", "no:cacheprovider"
    )
    result.assertoutcome(passed=1, failed=1)
    lines = (pytester.path / ".vgate" / "ledger.jsonl").read_text().splitlines()
    lines_json = [json.loads(line) for line in lines]
    assert all(len(obj.pop("mac")) == 64 for obj in lines_json)  # each line authenticated
    written = lines_json
    made = [r for g in json.loads(report.read_text())["gates"] for r in g["records"]]
    by_gate = sorted(written, key=lambda r: r["gate_id"])  # fails, passes
    assert by_gate == sorted(made, key=lambda r: r["gate_id"])
    assert [r["exit_code"] for r in by_gate] == [1, 0]
    assert decoded == []  # taken back as made, not decoded from the payloads


SPOILING_CONFTEST = """
import dataclasses
import pytest
from pytest_vgate.payload import JsonObject

@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    payload = getattr(report, "vgate", None)
    if call.when == "call" and payload is not None and payload.id == "spoiled":
        bogus = JsonObject({"bogus": 1})
        report.vgate = dataclasses.replace(payload, records=(bogus, *payload.records))
    return report
"""


@pytest.mark.parametrize("dist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_record_that_is_not_one_costs_no_other_record(
    pytester: pytest.Pytester, dist: list[str]
) -> None:
    """A payload record changed on its way to the controller (a hook, a bug) is dropped
    with a warning naming its item; every other record of the session is still written."""
    (pytester.path / "gates.yaml").write_text(
        "gates:\n  - id: spoiled\n    check: 'true'\n  - id: kept\n    check: 'true'\n"
    )
    pytester.makeconftest(SPOILING_CONFTEST)
    result = pytester.runpytest_subprocess("--vgate", "gates.yaml", "-p", "no:cacheprovider", *dist)
    result.assert_outcomes(passed=2)
    written = (pytester.path / ".vgate" / "ledger.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["gate_id"] for line in written) == ["kept", "spoiled"]
    result.stdout.fnmatch_lines(["*a record of gates.yaml::spoiled is not one*"])
