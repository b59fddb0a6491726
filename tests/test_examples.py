"""The shipped examples are the README's demo: run them for real and check every verdict."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest
import yaml
from helpers.junit import junit_cases

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.fixture
def examples(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of examples/, as the working directory (the README runs the demo there)."""
    copy = pytester.path / "examples"
    shutil.copytree(EXAMPLES, copy, ignore=shutil.ignore_patterns(".vgate", "__pycache__"))
    monkeypatch.chdir(copy)
    return copy


def run_demo(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict]:  # type: ignore[type-arg]
    junit = Path.cwd() / "junit.xml"
    result = pytester.run(
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        f"--junitxml={junit}",
        *args,
        timeout=300,
    )
    return result, junit_cases(junit)


def test_demo_gates_pass(examples: Path, pytester: pytest.Pytester, dist_args: list[str]) -> None:
    result, cases = run_demo(pytester, "--vgate", "gates.yaml", *dist_args)
    assert result.ret == 0, result.stdout.str()
    gates = yaml.safe_load((examples / "gates.yaml").read_text())["gates"]
    for gate in gates:
        expected = "skipped" if gate.get("type") == "semantic" else "passed"
        assert cases[gate["id"]]["outcome"] == expected, gate["id"]
    assert cases["longest-word-is-a-word"]["vgate_mode"] == "pass"
    assert cases["test_word_count_of_nothing"]["outcome"] == "passed"
    assert "- FABRICATIONS CAUGHT: N" in result.stdout.str()


def test_failure_modes_fail_as_their_claims_say(
    examples: Path, pytester: pytest.Pytester, dist_args: list[str]
) -> None:
    result, cases = run_demo(pytester, "--vgate", "failure-modes.yaml", *dist_args)
    assert result.ret == 1
    gates = yaml.safe_load((examples / "failure-modes.yaml").read_text())["gates"]
    for gate in gates:
        found = re.match(r"mode (\w+), cause (\w+)", gate["claim"])
        assert found, gate["claim"]
        case = cases[gate["id"]]
        got = (case["outcome"], case["vgate_mode"], case["vgate_cause"])
        assert got == ("failure", *found.groups()), gate["id"]
    out = result.stdout.str()
    assert "- Total citations: 3" in out
    assert "- FABRICATIONS CAUGHT: Y — " in out
    assert "INTERNALERROR" not in out
