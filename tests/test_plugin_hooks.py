"""The vgate hooks end to end: hostile plugins loaded with ``-p`` in real sessions, plain
and under ``-n 2`` (judges and adjusters run on the workers, the report hook on the
controller only)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.hostile_plugins import GATES, HOSTILE_JUDGE, STRICT_POLICY, UPGRADING_ADJUSTER
from helpers.report import read_report, read_sarif

PLUGINS = ["-p", "hostile_judge", "-p", "upgrading_adjuster", "-p", "strict_policy"]

# gate id -> (junit outcome, vgate_mode, vgate_cause)
EXPECTED = {
    "fails": ("failure", "fail", "product"),
    "passes": ("passed", "pass", None),
    "no-claim": ("failure", "fail", "broken_test"),
    "judge-raises": ("failure", "error", "broken_test"),
    "judge-exits": ("failure", "panic", "broken_test"),
    "judge-hangs": ("failure", "timeout", "environment"),
    "judge-junk": ("failure", "fail", "broken_test"),
    "judge-true": ("failure", "fail", "broken_test"),
    "judge-impostor": ("failure", "fail", "broken_test"),
    "judge-none": ("skipped", "judgment", None),
    "judge-says-no": ("failure", "fail", "product"),
    "judge-passes": ("passed", "pass", None),
}


@pytest.fixture
def hostile(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    pytester.makepyfile(
        hostile_judge=HOSTILE_JUDGE,
        upgrading_adjuster=UPGRADING_ADJUSTER,
        strict_policy=STRICT_POLICY,
    )
    pytester.makefile(".yaml", gates=GATES)
    monkeypatch.setenv("PYTHONPATH", str(pytester.path))  # -p finds them, on workers too
    return pytester.path


@pytest.mark.slow
def test_hostile_plugins_never_turn_a_failure_into_a_pass(hostile: Path, run_vgate) -> None:  # type: ignore[no-untyped-def]
    result, cases = run_vgate(
        *PLUGINS, "--vgate", "gates.yaml", "--vgate-report", "report.json", "-rs"
    )
    out = result.stdout.str()
    assert result.ret == 1, out
    for gate_id, expected in EXPECTED.items():
        case = cases[gate_id]
        assert (case["outcome"], case.get("vgate_mode"), case.get("vgate_cause")) == expected, (
            gate_id,
            case,
        )
    report = read_report(hostile / "report.json")
    gates = {g["id"]: g for g in report["gates"]}
    assert {i for i, g in gates.items() if g["ok"]} == {"passes", "judge-passes"}
    assert gates["judge-passes"]["green"]["extra"]["judge"] == "hostile_judge"
    # The upgrade attempts: ignored, in the report and in the terminal summary.
    notes = {i: g["adjustments"] for i, g in gates.items() if g.get("adjustments")}
    upgraded = {i for i, e in EXPECTED.items() if e[0] != "passed" and i != "no-claim"}
    assert {i: [n["action"] for n in v] for i, v in notes.items()} == {
        **{gate_id: ["ignored"] for gate_id in upgraded},
        "no-claim": ["applied"],
    }
    assert report["summary"]["adjustments"] == {"applied": 1, "ignored": len(upgraded)}
    assert (
        "vgate warning: gates.yaml::fails: the adjuster 'upgrading_adjuster' "
        "(pytest_vgate_adjust_verdict) tried to turn mode fail into pass" in out
    )
    assert "gates.yaml::judge-none: the adjuster 'upgrading_adjuster'" in out
    assert "INTERNALERROR" not in out


REPORT_SPY = """
import json

SESSION = {}


def pytest_configure(config):
    SESSION["config"] = config


def pytest_vgate_report(report):
    worker = getattr(SESSION["config"], "workerinput", {}).get("workerid")
    with open("calls.jsonl", "a") as fh:
        fh.write(json.dumps({
            "worker": worker,
            "version": report["version"],
            "gates": sorted(g["id"] for g in report["gates"]),
        }) + "\\n")
"""

VANDAL = """
import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_vgate_report(report):
    report["gates"].clear()  # its own copy: nobody else sees this
    raise RuntimeError("the exporter is broken")
"""


def test_the_report_hook_runs_once_on_the_controller_and_a_broken_exporter_is_a_warning(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    run_vgate,  # type: ignore[no-untyped-def]
) -> None:
    pytester.makepyfile(report_spy=REPORT_SPY, vandal=VANDAL)
    pytester.makefile(
        ".yaml",
        gates="""
        gates:
          - id: a
            check: python -c "raise SystemExit(1)"
          - id: b
            check: python -c "pass"
          - id: c
            check: python -c "pass"
        """,
    )
    monkeypatch.setenv("PYTHONPATH", str(pytester.path))
    result, _ = run_vgate(
        "-p", "report_spy", "-p", "vandal", "--vgate", "gates.yaml",
        "--vgate-report", "report.json", "--vgate-sarif", "out.sarif",
    )  # fmt: skip
    assert result.ret == 1
    calls = (pytester.path / "calls.jsonl").read_text().splitlines()
    assert len(calls) == 1, calls
    assert calls[0] == '{"worker": null, "version": 2, "gates": ["a", "b", "c"]}'
    out = result.stdout.str()
    assert "vgate warning: the pytest_vgate_report hook of 'vandal' raised RuntimeError" in out
    # Our own exporter ran after the vandal and saw the whole report.
    sarif = read_sarif(pytester.path / "out.sarif")
    assert [r["properties"]["id"] for r in sarif["runs"][0]["results"]] == ["a"]
    assert len(read_report(pytester.path / "report.json")["gates"]) == 3


PLUGGY_ORDER = """
import pytest

from pytest_vgate import Cause, Mode, Outcome, Verdict


def log(gate, what):
    with open(f"calls-{gate}.log", "a") as fh:
        fh.write(what + "\\n")


class Wrapper:
    @pytest.hookimpl(wrapper=True)
    def pytest_vgate_judge(self, gate, context):
        log(gate.id, "wrapper before")
        result = yield
        log(gate.id, f"wrapper after {type(result).__name__}")
        return result

    @pytest.hookimpl(wrapper=True)
    def pytest_vgate_adjust_verdict(self, gate, verdict):
        answers = yield
        log(gate.id, f"adjust wrapper saw {len(answers)}")
        # Drops the stricter answers and offers a pass: neither may loosen the verdict.
        return [Verdict(mode=Mode.PASS, detail="the wrapper says pass")]

    @pytest.hookimpl(wrapper=True)
    def pytest_vgate_report(self, report):
        log("report", f"report wrapper {len(report['gates'])}")
        return (yield)


class First:
    @pytest.hookimpl(tryfirst=True)
    def pytest_vgate_judge(self, gate, context):
        log(gate.id, "first")


class Middle:
    def pytest_vgate_judge(self, gate, context):
        log(gate.id, "middle")

    def pytest_vgate_adjust_verdict(self, gate, verdict):
        if gate.id == "strict":
            return Verdict.failed(Mode.FAIL, "policy says no", cause=Cause.BROKEN_TEST)
        return None


class Last:
    @pytest.hookimpl(trylast=True)
    def pytest_vgate_judge(self, gate, context):
        log(gate.id, "last")
        return Outcome.passed("the last judge passes")


def pytest_configure(config):
    # Registered in the order pluggy would call them last-first without the marks.
    for plugin in (First(), Middle(), Last(), Wrapper()):
        config.pluginmanager.register(plugin, type(plugin).__name__)
"""


def test_hook_wrappers_tryfirst_and_trylast_apply_to_the_vgate_hooks(
    pytester: pytest.Pytester,
    run_vgate,  # type: ignore[no-untyped-def]
) -> None:
    """The vgate hooks are called through pluggy: a user's wrapper runs around them and the
    ``tryfirst``/``trylast`` order holds, while no wrapper can loosen a verdict."""
    pytester.makeconftest(PLUGGY_ORDER)
    pytester.makefile(
        ".yaml",
        gates="""
        gates:
          - id: judged
            type: semantic
            claim: the rubric is met
            check: the rubric
          - id: strict
            claim: it runs
            check: python -c "pass"
        """,
    )
    result, cases = run_vgate("--vgate", "gates.yaml", "--vgate-report", "report.json")
    out = result.stdout.str()
    assert result.ret == 1, out
    assert (pytester.path / "calls-judged.log").read_text().splitlines() == [
        "wrapper before",
        "first",
        "middle",
        "last",
        "wrapper after Outcome",
        "adjust wrapper saw 0",
    ]
    assert (pytester.path / "calls-report.log").read_text() == "report wrapper 2\n"
    assert (cases["judged"]["outcome"], cases["judged"].get("vgate_mode")) == ("passed", "pass")
    strict = cases["strict"]
    assert (strict["outcome"], strict.get("vgate_mode"), strict.get("vgate_cause")) == (
        "failure",
        "fail",
        "broken_test",
    )
    gates = {g["id"]: g for g in read_report(pytester.path / "report.json")["gates"]}
    assert gates["judged"]["green"]["extra"]["judge"] == "Last"
    assert [(n["plugin"], n["action"]) for n in gates["strict"]["adjustments"]] == [
        ("Middle", "applied"),
        ("a hook wrapper of pytest_vgate_adjust_verdict", "ignored"),
    ]
    assert "INTERNALERROR" not in out
