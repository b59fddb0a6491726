"""SARIF, GitHub Actions annotations and the step summary, from real runs of examples/.

SARIF files are validated against the published SARIF 2.1.0 schema (tests/data); the
annotations and the summary are checked line by line from a session run with
``GITHUB_ACTIONS=true``, and the escaping round-trips through a port of the parser of
actions/runner (``ActionCommand.TryParseV2``).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.junit import junit_cases
from helpers.report import read_report, read_sarif, sarif_errors
from hypothesis import given
from hypothesis import strategies as st

from pytest_vgate.exporters.common import Finding, Place
from pytest_vgate.exporters.github import (
    escape_data,
    escape_property,
    step_summary,
    workflow_command,
)
from pytest_vgate.exporters.sarif import build_sarif


def run_in(
    pytester: pytest.Pytester, *args: str
) -> tuple[pytest.RunResult, dict[str, dict[str, object]]]:
    junit = Path.cwd() / "junit.xml"
    result = pytester.run(
        sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--junitxml={junit}", *args,
        timeout=300,
    )  # fmt: skip
    return result, junit_cases(junit)


# -- SARIF ------------------------------------------------------------------------------


def _where(location: dict[str, Any]) -> str:
    physical = location["physicalLocation"]
    line = physical.get("region", {}).get("startLine")
    return f"{physical['artifactLocation']['uri']}:{line}"


def test_sarif_of_the_failure_modes_example(
    examples: Path, pytester: pytest.Pytester, dist_args: list[str]
) -> None:
    result, _ = run_in(
        pytester, "--vgate", "failure-modes.yaml", "--vgate-sarif", "out/vgate.sarif",
        "--vgate-report", "report.json", *dist_args,
    )  # fmt: skip
    assert result.ret == 1
    log = read_sarif(examples / "out" / "vgate.sarif")
    report = read_report(examples / "report.json")
    run = log["runs"][0]
    assert run["tool"]["driver"]["name"] == "pytest-vgate"
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == examples.as_uri() + "/"
    results = run["results"]
    # One result per failed gate, one per citation that is not verified; worst first.
    failed = [g for g in report["gates"] if not g["ok"]]
    assert len(results) == len(failed) + 3
    assert [r["ruleId"] for r in results] == [
        "gate-unavailable", "gate-crash", "gate-timeout", "gate-panic", "gate-error",
        "gate-ungrounded", "gate-blank", "gate-fail", "gate-fail", "gate-fail",
        "citation-fabricated", "citation-corrected", "citation-corrected",
    ]  # fmt: skip
    rules = run["tool"]["driver"]["rules"]
    for r in results:
        assert rules[r["ruleIndex"]]["id"] == r["ruleId"]
        assert r["level"] == ("warning" if r["ruleId"] == "citation-corrected" else "error")
        assert r["locations"][0]["physicalLocation"]["artifactLocation"]["uriBaseId"] == (
            "%SRCROOT%"
        )
    by_id = {r["properties"].get("id"): r for r in results if r["ruleId"].startswith("gate")}
    gates_lines = {g["id"]: g["source"].rsplit(":", 1)[1] for g in report["gates"]}
    for gate_id, r in by_id.items():
        assert _where(r["locations"][0]) == f"failure-modes.yaml:{gates_lines[gate_id]}"
    # A verifier gate also points at the verifier function (the check's target).
    raises = (examples / "failing_checks.py").read_text().splitlines()
    line = next(i for i, t in enumerate(raises, 1) if t.startswith("def raises("))
    assert [_where(loc) for loc in by_id["verifier-raises"]["locations"]] == [
        f"failure-modes.yaml:{gates_lines['verifier-raises']}",
        f"failing_checks.py:{line}",
    ]
    # A corrected citation: at the document line, related to where the code really is.
    drifted = next(r for r in results if r["ruleId"] == "citation-corrected")
    assert _where(drifted["locations"][0]) == "answer-with-errors.md:3"
    assert [_where(rel) for rel in drifted["relatedLocations"]] == ["src/textstats.py:11"]
    assert run["properties"]["vgate"]["results_left_out"] == 0


def test_sarif_of_passing_examples_is_valid_and_empty(
    examples: Path, pytester: pytest.Pytester
) -> None:
    result, _ = run_in(pytester, "--vgate", "gates.yaml", "--vgate-sarif", "ok.sarif")
    assert result.ret == 0
    assert read_sarif(examples / "ok.sarif")["runs"][0]["results"] == []


def test_sarif_keeps_the_worst_results_within_the_limit_and_says_what_was_cut(
    examples: Path, pytester: pytest.Pytester
) -> None:
    run_in(pytester, "--vgate", "failure-modes.yaml", "--vgate-report", "report.json")
    report = read_report(examples / "report.json")
    log = build_sarif(report, max_results=4)
    assert not sarif_errors(log)
    run = log["runs"][0]
    assert [r["ruleId"] for r in run["results"]] == [
        "gate-unavailable", "gate-crash", "gate-timeout", "gate-panic",
    ]  # fmt: skip
    cut = run["properties"]["vgate"]
    assert (cut["results_total"], cut["results_written"], cut["results_left_out"]) == (13, 4, 9)
    assert cut["left_out_by_rule"]["citation-corrected"] == 2
    note = run["invocations"][0]["toolExecutionNotifications"][0]
    assert note["message"]["text"].startswith("9 of 13 results left out (at most 4 per run)")


# -- GitHub Actions ---------------------------------------------------------------------


def unescape_data(text: str) -> str:
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def unescape_property(text: str) -> str:
    for escaped, plain in (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%")):
        text = text.replace(escaped, plain)
    return text


def parse_command(line: str) -> tuple[str, dict[str, str], str]:
    """actions/runner's ActionCommand.TryParseV2, ported: the runner's view of a line."""
    assert line.startswith("::")
    end = line.index("::", 2)
    info = line[2:end]
    name, _, props_text = info.partition(" ")
    props = {}
    for item in props_text.strip().split(","):
        key, sep, value = item.partition("=")
        if sep and key and value:
            props[key] = unescape_property(value)
    return name, props, unescape_data(line[end + 2 :])


nasty = st.text(alphabet=st.sampled_from(list("ab:,%\r\n=: :: %25 %0A")), max_size=30)


@given(title=nasty, message=nasty)
def test_escaping_round_trips_through_the_runners_parser(title: str, message: str) -> None:
    finding = Finding(
        kind="gate", rule="gate-fail", level="error", title=title, message=message,
        where=Place("/w/src/a,b:c.py", 7),
    )  # fmt: skip
    line = workflow_command("error", finding, "/w")
    assert "\n" not in line and "\r" not in line
    name, props, data = parse_command(line)
    assert (name, data) == ("error", message)
    assert props["file"] == "src/a,b:c.py"
    assert props["line"] == "7"
    assert props.get("title", "") == " ".join(title.split())


def test_escape_rules_match_the_toolkit() -> None:
    assert escape_data("50%\r\nnext :: done") == "50%25%0D%0Anext :: done"
    assert escape_property("a: b, 50%\n") == "a%3A b%2C 50%25%0A"


SUMMARY_HEAD = """\
## pytest-vgate

**Gates: 11** — 1 passed, 10 failed, 0 skipped; by mode: 1 pass, 3 fail, 1 error, 1 panic, \
1 timeout, 1 crash, 1 unavailable, 1 ungrounded, 1 blank

**Citations: 3** — 2 corrected, 1 fabricated

### Failed gates

| gate | mode | cause | detail |
|---|---|---|---|
"""

SUMMARY_TAIL = """
### Red before green

| gate | red evidence | green | status | cause |
|---|---|---|---|---|
| wrong-exit-code | - | not a git tree exit 3 | unproven | product |
| hangs | - | not a git tree timeout | unproven | environment |
| tool-missing | - | not a git tree unavailable | unproven | environment |
| killed-by-signal | - | not a git tree exit -9 | unproven | environment |
| empty-check | - | not a git tree blank | unproven | broken_test |
| verifier-raises | - | not a git tree error | unproven | broken_test |
| verifier-exits | - | not a git tree panic | unproven | broken_test |
| verifier-returns-none | - | not a git tree fail | unproven | broken_test |
| verifier-says-no | - | not a git tree fail | unproven | product |
| ungrounded | - | not a git tree ungrounded | unproven | broken_test |

### Citations

```text
VERIFICATION GATE RESULT:
- Total citations: 3
- Verified at original location: 0
- Corrected (line drift): 2
- Dropped (file/line/content not found): 1
- FABRICATIONS CAUGHT: Y — answer-with-errors.md:4 src/textstats.py:400 (line beyond end of \
16-line file, found at src/textstats.py:6); answer-with-errors.md:5 src/wordfreq.py:12 (file \
not found in the root)
- Unsupported (description contradicted by the cited lines): 0
- Descriptions not judged: 2
```
"""


@pytest.mark.parametrize("how", ["env", "option"])
def test_annotations_and_step_summary_line_by_line(
    examples: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    summary = examples / "step-summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")  # appended to, never replaced
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    extra = []
    if how == "env":
        monkeypatch.setenv("GITHUB_ACTIONS", "true")
    else:
        extra = ["--vgate-github"]
    result, _ = run_in(pytester, "--vgate", "failure-modes.yaml", "-n", "2", *extra)
    assert result.ret == 1
    lines = result.stdout.lines
    # Workflow commands are stopped around everything but the annotations (test_ci_channels).
    stops = [
        line for line in lines if re.fullmatch(r"::(stop-commands::)?vgate-[0-9a-f]{32}(::)?", line)
    ]
    assert len(stops) == 4, stops  # stopped, resumed for the annotations, stopped, resumed
    lines = [line for line in lines if line not in stops]
    commands = [line for line in lines if line.startswith("::") or "annotation(s) left" in line]
    expected = [
        ("error", "failure-modes.yaml", "14", "gate tool-missing: unavailable (environment)",
         "tool 'no-such-tool-vgate' was not found"),
        ("error", "failure-modes.yaml", "18", "gate killed-by-signal: crash (environment)",
         "killed by signal 9 before it could answer\nclaim: mode crash"),
        ("error", "failure-modes.yaml", "9", "gate hangs: timeout (environment)",
         "no answer within the deadline of 1s"),
        ("error", "failure-modes.yaml", "31", "verifier-exits: panic (broken_test)",
         "1 of 1 verifiers failed:\n- failing_checks:exits: panic: raised SystemExit: 0"),
        ("error", "failure-modes.yaml", "26", "verifier-raises: error (broken_test)",
         "1 of 1 verifiers failed:\n- failing_checks:raises: error"),
        ("error", "failure-modes.yaml", "46", "gate ungrounded: ungrounded (broken_test)",
         "1 of 1 verifiers failed:\n- failing_checks:never_runs_its_tool: ungrounded"),
        ("error", "failure-modes.yaml", "22", "gate empty-check: blank (broken_test)",
         "gate 'empty-check' has an empty check"),
        ("error", "failure-modes.yaml", "5", "gate wrong-exit-code: fail (product)",
         "exit code 3, expected 0\nclaim: mode fail, cause product"),
        ("error", "failure-modes.yaml", "36", "gate verifier-returns-none: fail (broken_test)",
         "1 of 1 verifiers failed:"),
        ("error", "failure-modes.yaml", "41", "gate verifier-says-no: fail (product)",
         "1 of 1 verifiers failed:\n- failing_checks:says_no: fail: the product answered no"),
        None,  # the fabricated citation is the 11th error: counted, not annotated
        ("warning", "answer-with-errors.md", "3", "citation src/textstats.py:3: corrected",
         "citation src/textstats.py:3 is corrected\n"),
        ("warning", "answer-with-errors.md", "4", "citation src/textstats.py:400: corrected",
         "citation src/textstats.py:400 is corrected\nline 400 is beyond the end"),
    ]  # fmt: skip
    assert len(commands) == len(expected), commands
    for line, want in zip(commands, expected, strict=True):
        if want is None:
            assert line == (
                "vgate: 1 more error annotation(s) left out (GitHub shows 10 per step); "
                "the job summary lists every failed gate"
            )
            continue
        level, file, number, title, message = want
        name, props, data = parse_command(line)
        assert (name, props["file"], props["line"]) == (level, file, number), line
        assert props["title"].endswith(title), line
        assert data.startswith(message), line
        assert re.match(rf"::{level} file={re.escape(file)},line={number},title=[^:]*::", line)
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("earlier step\n" + SUMMARY_HEAD), text
    assert text.endswith(SUMMARY_TAIL), text
    rows = text[len("earlier step\n" + SUMMARY_HEAD) : -len(SUMMARY_TAIL)].splitlines()
    assert [row.split(" | ")[0] for row in rows] == [
        "| tool-missing", "| killed-by-signal", "| hangs", "| verifier-exits",
        "| verifier-raises", "| ungrounded", "| empty-check", "| wrong-exit-code",
        "| verifier-returns-none", "| verifier-says-no",
    ]  # fmt: skip
    assert rows[7] == "| wrong-exit-code | fail | product | exit code 3, expected 0 |"


def test_no_annotations_outside_github_actions(examples: Path, pytester: pytest.Pytester) -> None:
    result, _ = run_in(pytester, "--vgate", "failure-modes.yaml")
    assert not [line for line in result.stdout.lines if line.startswith("::")]


def test_the_step_summary_stays_under_githubs_limit() -> None:
    gate = {"id": "g" * 200, "ok": False, "mode": "fail", "cause": "product", "rbg": "unproven",
            "detail": "x" * 5000, "source": "/w/gates.yaml:1", "kind": "gate"}  # fmt: skip
    report = {"rootdir": "/w", "summary": {}, "citations": [],
              "gates": [{**gate, "id": f"{n}-{gate['id']}"} for n in range(5000)]}  # fmt: skip
    text = step_summary(report)
    assert len(text.encode("utf-8")) <= 1_000_000
    assert "more rows left out" in text
    json.dumps(text)


# -- the documented workflow ------------------------------------------------------------


def _workflow() -> dict[str, Any]:
    import yaml
    from helpers.docs_examples import fenced_blocks

    page = Path(__file__).resolve().parents[1] / "docs" / "ci.md"
    (block,) = [text for _, _, text in fenced_blocks(page, "yaml") if "jobs:" in text]
    return yaml.safe_load(block)  # type: ignore[no-any-return]


@pytest.mark.slow
def test_the_documented_workflow_fails_the_job_on_a_failed_gate_and_writes_sarif(
    examples: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workflow's gates command, run for real (the base sha and -n filled in) with
    GITHUB_ACTIONS=true: a gate that is not proven on the base fails the step."""
    from helpers.git_repo import git

    steps = _workflow()["jobs"]["gates"]["steps"]
    assert steps[0]["with"]["fetch-depth"] == 0
    upload = next(s for s in steps if "upload-sarif" in s.get("uses", ""))
    assert upload["uses"].startswith("github/codeql-action/upload-sarif@")
    assert upload["if"] == "${{ !cancelled() }}"
    command = next(s["run"] for s in steps if "--vgate-base" in s.get("run", ""))
    assert "--vgate-base ${{ github.event.pull_request.base.sha }}" in command
    assert f"--vgate-sarif {upload['with']['sarif_file']}" in command
    git(examples, "init", "-q")
    git(examples, "add", "-A")
    git(examples, "commit", "-qm", "base")
    base = git(examples, "rev-parse", "HEAD")
    (examples / "NOTES.md").write_text("a change that fixes nothing\n")
    git(examples, "add", "-A")
    git(examples, "commit", "-qm", "head")
    argv = command.replace("${{ github.event.pull_request.base.sha }}", base).split()
    assert argv[0] == "pytest"
    argv = ["2" if a == "auto" else a for a in argv[1:]]  # -n auto: 2 cores here
    summary = examples / "summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result, cases = run_in(pytester, *argv)
    assert result.ret == 1  # the step, and so the job, fails
    assert cases["word-count"]["vgate_rbg"] == "never-red"
    results = read_sarif(examples / upload["with"]["sarif_file"])["runs"][0]["results"]
    assert {r["properties"]["id"] for r in results} >= {"word-count", "grep-finds-definition"}
    assert any(line.startswith("::error file=gates.yaml,") for line in result.stdout.lines)
    assert "| word-count | base " in summary.read_text(encoding="utf-8")
    read_report(examples / "vgate.json")
