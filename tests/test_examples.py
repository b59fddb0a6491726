"""The shipped examples are the README's demo: run them for real and check every verdict."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import yaml
from helpers.junit import junit_cases

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


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


ROOT = EXAMPLES.parent


def readme_quickstart() -> list[str]:
    """The README's quickstart commands (its first bash block after ``## Quickstart``)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8").split("## Quickstart", 1)[1]
    block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip() and not line.startswith("#")]


def test_the_readme_demo_says_what_it_shows(examples: Path, pytester: pytest.Pytester) -> None:
    """The README's first command, run as written from its ``cd examples``: it exits 1 and
    the summary names the modes and causes the README says it names."""
    from pytest_vgate.verdict import Cause, Mode

    demo, tests = readme_quickstart()
    setup = tests.removesuffix("pytest -n 2")
    assert demo.startswith(setup) and tests != setup
    # .ci/run runs the same commands, one per line.
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    for command in [*setup.split(" && ")[:-1], "pytest -n 2"]:
        assert command in ci, command
    found = re.fullmatch(r"\(cd examples && pytest (.*)\)", demo.removeprefix(setup))
    assert found, demo
    assert found[0] in " ".join(ci), found[0]
    result, _ = run_demo(pytester, *found[1].split())
    assert result.ret == 1
    page = re.search(r"--vgate-html (\S+)", found[1])
    assert page, "the README's demo writes the page"
    assert '<table id="verdicts">' in (examples / page[1]).read_text(encoding="utf-8")
    out = result.stdout.str()
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    (mode_but,) = re.findall(r"every mode but `(\w+)`", readme)
    (cause_but,) = re.findall(r"every cause but `(\w+)`", readme)
    shown = re.search(r"^gates: \d+ \((.*)\)$", out, re.M)
    assert shown, out
    assert {part.split()[1] for part in shown[1].split(", ")} == {m.value for m in Mode} - {
        mode_but
    }
    causes = {c.value for c in Cause if re.search(rf"\b{c.value}\b", out.split("= vgate =")[1])}
    assert causes == {c.value for c in Cause} - {cause_but}
    assert "VERIFICATION GATE RESULT:" in out
