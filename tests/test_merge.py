"""``python -m pytest_vgate merge``: sharded runs give the verdict of one run.

Real sessions on the gated bug/fix repository (``helpers.gated_repo``): an unsplit run
and the same run split with ``-k`` into two shards; the merge of the shards' JSON reports
must print the same vgate summary, exit the same way, and write one SARIF log and one
ledger; a gate that no shard ran is reported and fails the merge.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.gated_repo import ANSWER, GATES, PY_DIR, SESSION_BOUND, make_gated_repo, run_session
from helpers.git_repo import BugFixRepo
from helpers.report import read_report, read_sarif

# Gates without a failure: fix-add (proven) and pinned-checker (regression), and only
# good citations, so the unsplit run passes.
PASSING_GATES = GATES.replace(
    """      - id: neg-never-red
        check: python -c "from pkg.mathx import neg; assert neg(2) == -2"
        tools: [python]
""",
    "",
)
GOOD_ANSWER = "".join(ANSWER.splitlines(keepends=True)[:2])  # no fabricated citation
SHARDS = ("fix", "not fix")  # -k: fix-add and its test / everything else
WHEN = re.compile(r" at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")  # when each red ran


@pytest.fixture(autouse=True)
def _python_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", PY_DIR + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.setenv("COLUMNS", "120")


def vgate_section(text: str) -> list[str]:
    """The lines of the ``vgate`` section of a terminal summary, run times blanked."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if re.fullmatch(r"=+ vgate =+", line))
    end = next(
        (i for i in range(start + 1, len(lines)) if re.fullmatch(r"=+ .* =+", lines[i])),
        len(lines),
    )
    return [WHEN.sub(" at T", line) for line in lines[start:end]]


def merge(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_vgate", "merge", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=SESSION_BOUND,
        stdin=subprocess.DEVNULL,
    )


def shard_runs(repo: BugFixRepo, *expressions: str) -> list[Path]:
    reports = []
    for index, expression in enumerate(expressions):
        report = repo.repo.parent / f"shard{index}.json"
        run_session(repo, f"shard{index}", "-k", expression, f"--vgate-report={report}")
        reports.append(report)
    return reports


def ledger_lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize(
    ("gates", "answer"), [(GATES, ANSWER), (PASSING_GATES, GOOD_ANSWER)], ids=["failing", "passing"]
)
def test_two_shards_merged_equal_the_unsplit_run(tmp_path: Path, gates: str, answer: str) -> None:
    repo = make_gated_repo(tmp_path, gates, answer)
    out = repo.repo.parent
    status, text, _ = run_session(
        repo,
        "whole",
        f"--vgate-report={out / 'whole.json'}",
        f"--vgate-sarif={out / 'whole.sarif'}",
    )
    reports = shard_runs(repo, *SHARDS)
    merged = merge(
        *reports,
        "--vgate-report", out / "merged.json",
        "--vgate-sarif", out / "merged.sarif",
        "--ledger", out / "merged-ledger",
        cwd=repo.root,
    )  # fmt: skip
    assert merged.stderr == ""
    assert vgate_section(merged.stdout) == vgate_section(text), merged.stdout
    assert merged.returncode == status == (1 if gates == GATES else 0)
    whole, one = read_report(out / "whole.json"), read_report(out / "merged.json")
    assert one["summary"] == whole["summary"]
    assert one["missing"] == []
    assert [g["id"] for g in one["gates"]] == [g["id"] for g in whole["gates"]]
    sarif, whole_sarif = read_sarif(out / "merged.sarif"), read_sarif(out / "whole.sarif")
    assert len(sarif["runs"][0]["results"]) == len(whole_sarif["runs"][0]["results"])
    # One ledger: every shard's records, once each.
    shard_ledgers = [out / f"shard{i}-ledger" / "ledger.jsonl" for i in range(2)]
    shard_records = [record for path in shard_ledgers for record in ledger_lines(path)]
    merged_records = ledger_lines(out / "merged-ledger" / "ledger.jsonl")
    assert sorted(map(json.dumps, merged_records)) == sorted(map(json.dumps, shard_records))
    assert {r["gate_id"] for r in merged_records} >= {"fix-add", "pinned-checker"}


def test_a_gate_missing_from_every_shard_is_reported_and_fails(tmp_path: Path) -> None:
    repo = make_gated_repo(tmp_path, PASSING_GATES, GOOD_ANSWER)
    reports = shard_runs(repo, "fix-add", "pinned or answer")
    merged = merge(*reports, "--vgate-report", repo.repo.parent / "merged.json", cwd=repo.root)
    assert merged.returncode == 0, merged.stdout  # every gate of PASSING_GATES ran
    repo_all = make_gated_repo(tmp_path / "all", GATES, GOOD_ANSWER)  # neg-never-red: no shard
    reports = shard_runs(repo_all, "fix-add", "pinned or answer")
    merged_json = repo_all.repo.parent / "merged.json"
    merged = merge(*reports, "--vgate-report", merged_json, cwd=repo_all.root)
    assert merged.returncode == 1, merged.stdout
    assert "gates missing from every shard: 1" in merged.stdout
    assert "gates.yaml::neg-never-red" in merged.stdout
    report = read_report(merged_json)
    assert report["missing"] == ["gates.yaml::neg-never-red"]
    assert report["summary"]["gates"]["failed"] == 1


def test_the_gate_set_can_be_named_with_gates(tmp_path: Path) -> None:
    """Shards that ran no gate at all name no gates file: --gates gives the set."""
    repo = make_gated_repo(tmp_path, PASSING_GATES, GOOD_ANSWER)
    reports = shard_runs(repo, "answer")
    alone = merge(*reports, cwd=repo.root)
    named = merge(*reports, "--gates", repo.root / "gates.yaml", cwd=repo.root)
    assert alone.returncode == 0, alone.stdout
    assert named.returncode == 1, named.stdout
    assert "gates missing from every shard: 2" in named.stdout


def test_a_report_that_is_not_one_is_a_usage_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    result = merge(bad, cwd=tmp_path)
    assert result.returncode == 4
    assert f"{bad}: cannot read the JSON report" in result.stderr


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        ({"kind": "gate", "id": "g", "ok": "yes", "mode": "pass"}, "GatePayload.ok: expected"),
        ({"kind": "approved", "id": "g", "ok": True, "mode": "pass"}, "unknown payload kind"),
        ({"kind": "gate", "id": "g", "ok": True, "mode": "passed"}, "GatePayload.mode"),
        ("a gate", "gates[0] is not a JSON object"),
    ],
    ids=["ok-str", "unknown-kind", "unknown-mode", "not-an-object"],
)
def test_a_shard_whose_entries_are_not_payloads_is_a_usage_error(
    tmp_path: Path, entry: object, why: str
) -> None:
    """A shard that would pass a gate on a value the plugin never writes is not merged."""
    shard = tmp_path / "shard.forged"  # not *.json: the suite's schema net would refuse it
    shard.write_text(json.dumps({"version": 2, "gates": [entry], "citations": []}))
    result = merge(shard, cwd=tmp_path)
    assert result.returncode == 4, result.stdout + result.stderr
    assert f"{shard}: " in result.stderr and why in result.stderr, result.stderr


def test_shards_with_verifiers_and_marked_tests_merge(tmp_path: Path) -> None:
    """A verifier's source is its test module: merge must not read it as a gates file."""
    repo = make_gated_repo(tmp_path, PASSING_GATES, GOOD_ANSWER)
    (repo.root / "test_checks.py").write_text(
        "import pytest\n"
        "from pytest_vgate import verifier\n\n\n"
        "@verifier\n"
        "def test_holds():\n"
        "    return True\n\n\n"
        "@pytest.mark.vgate\n"
        "def test_marked():\n"
        "    pass\n"
    )
    reports = []
    for index, expression in enumerate(("fix or holds", "not fix and not holds")):
        report = repo.repo.parent / f"shard{index}.json"
        status, text, _ = run_session(
            repo, f"shard{index}", "test_checks.py", "-k", expression, f"--vgate-report={report}"
        )
        assert status == 0, text
        reports.append(report)
    kinds = {e["kind"] for r in reports for e in read_report(r)["gates"]}
    assert {"verifier", "gate", "test"} <= kinds, kinds
    merged = merge(*reports, cwd=repo.root)
    assert (merged.returncode, merged.stderr) == (0, ""), merged.stdout + merged.stderr
    assert "missing" not in merged.stdout


@pytest.mark.parametrize(
    ("expressions", "unchecked"),
    [
        (("fix-add", "pinned"), 3),  # no shard checked answer.md
        (("fix-add", "pinned or mathx.py:1"), 2),  # one of its citations only
    ],
    ids=["all-citations", "some-citations"],
)
def test_citations_missing_from_every_shard_are_reported_and_fail(
    tmp_path: Path, expressions: tuple[str, ...], unchecked: int
) -> None:
    """A gates file's cited documents are part of its set: a fabricated citation no
    shard checked must not leave the merge green (the unsplit run fails on it)."""
    repo = make_gated_repo(tmp_path, PASSING_GATES, ANSWER)
    status, _, _ = run_session(repo, "whole")
    assert status == 1  # pkg/mathx.py:90 is fabricated
    reports = shard_runs(repo, *expressions)
    merged_json = repo.repo.parent / "merged.json"
    merged = merge(*reports, "--vgate-report", merged_json, cwd=repo.root)
    assert merged.returncode == 1, merged.stdout
    report = read_report(merged_json)
    assert report["missing"] == ["gates.yaml::answer.md"], report["missing"]
    (entry,) = [g for g in report["gates"] if g["kind"] == "missing"]
    assert f"no shard checked {unchecked} of the 3 citations" in entry["detail"], entry
