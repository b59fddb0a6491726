"""The example judge plugin (examples/rubric_judge.py) in real sessions: it judges the
rubric gates of examples/judged.yaml, and under ``--vgate-base`` it judges the base tree
too, so a rubric met only after the change is ``proven``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from helpers.git_repo import git
from helpers.junit import junit_cases
from helpers.report import read_report, read_sarif


def run_in(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict]:  # type: ignore[type-arg]
    junit = Path.cwd() / "junit.xml"
    result = pytester.run(
        sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--junitxml={junit}", *args,
        timeout=300,
    )  # fmt: skip
    return result, junit_cases(junit)


def test_the_rubric_judge_passes_a_met_rubric_and_fails_an_unmet_one(
    examples: Path, pytester: pytest.Pytester, dist_args: list[str]
) -> None:
    result, cases = run_in(
        pytester, "--vgate", "judged.yaml", "--vgate-report", "r.json",
        "--vgate-sarif", "judged.sarif", *dist_args,
    )  # fmt: skip
    assert result.ret == 1
    words, unicode = cases["docstrings-explain-words"], cases["docstrings-explain-unicode"]
    assert (words["outcome"], words["vgate_mode"]) == ("passed", "pass")
    assert (unicode["outcome"], unicode["vgate_mode"], unicode["vgate_cause"]) == (
        "failure", "fail", "product",
    )  # fmt: skip
    gates = {g["id"]: g for g in read_report(examples / "r.json")["gates"]}
    assert gates["docstrings-explain-words"]["green"]["extra"]["judge"] == "rubric_judge"
    assert (
        "lacks 1 required phrase(s): ['Unicode whitespace']"
        in (gates["docstrings-explain-unicode"]["detail"])
    )
    # The SARIF result points at the gate and at the rubric its check names.
    (only,) = read_sarif(examples / "judged.sarif")["runs"][0]["results"]
    uris = [loc["physicalLocation"]["artifactLocation"]["uri"] for loc in only["locations"]]
    assert uris == ["judged.yaml", "unicode.rubric.yaml"]
    # The demo's other semantic gate has no rubric: the judge declines, it stays judgment.
    result, cases = run_in(pytester, "--vgate", "gates.yaml", *dist_args)
    assert result.ret == 0
    assert cases["docs-are-friendly"]["vgate_mode"] == "judgment"


GATES = """
gates:
  - id: ties-documented
    type: semantic
    claim: the docstring says how ties are broken
    check: ties.rubric.yaml
"""


@pytest.mark.slow
def test_the_judge_judges_the_base_tree_for_red_evidence(
    examples: Path, pytester: pytest.Pytester
) -> None:
    (examples / "ties.rubric.yaml").write_text(
        "file: src/textstats.py\nrequire: [the first one wins a tie]\n", encoding="utf-8"
    )
    (examples / "ties.yaml").write_text(GATES, encoding="utf-8")
    source = examples / "src" / "textstats.py"
    fixed = source.read_text(encoding="utf-8")
    source.write_text(fixed.replace("; the first one wins a tie", ""), encoding="utf-8")
    git(examples, "init", "-q")
    git(examples, "add", "-A")
    git(examples, "commit", "-qm", "base: ties undocumented")
    source.write_text(fixed, encoding="utf-8")
    git(examples, "commit", "-qam", "document ties")
    result, cases = run_in(
        pytester, "--vgate", "ties.yaml", "--vgate-base", "HEAD~1", "--vgate-report", "r.json"
    )
    assert result.ret == 0, result.stdout.str()
    assert (cases["ties-documented"]["outcome"], cases["ties-documented"]["vgate_rbg"]) == (
        "passed", "proven",
    )  # fmt: skip
    (gate,) = [g for g in read_report(examples / "r.json")["gates"] if g["id"] == "ties-documented"]
    assert gate["base"]["mode"] == "fail"
    assert "lacks 1 required phrase" in gate["base"]["detail"]
