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
from helpers.git_repo import BugFixRepo, git
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


def test_shards_that_ran_no_gate_still_name_the_gate_set(tmp_path: Path) -> None:
    """A shard that ran no gate at all describes its gates files: the merge finds the
    gates no shard ran, with or without --gates, and without the checkout."""
    repo = make_gated_repo(tmp_path, PASSING_GATES, GOOD_ANSWER)
    reports = shard_runs(repo, "answer")
    alone = merge(*reports, cwd=repo.root)
    named = merge(*reports, "--gates", repo.root / "gates.yaml", cwd=repo.root)
    elsewhere = tmp_path / "downloaded"  # a merge job that downloaded only the reports
    elsewhere.mkdir()
    away = merge(*reports, cwd=elsewhere)
    for result in (alone, named, away):
        assert result.returncode == 1, result.stdout + result.stderr
        assert "gates missing from every shard: 2" in result.stdout
        assert "gates.yaml::fix-add" in result.stdout


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


@pytest.fixture(scope="module")
def one_shard(tmp_path_factory: pytest.TempPathFactory) -> tuple[BugFixRepo, Path]:
    """A real shard report (the passing gates, one shard), made once for the input tests."""
    repo = make_gated_repo(tmp_path_factory.mktemp("shard"), PASSING_GATES, GOOD_ANSWER)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PATH", PY_DIR + os.pathsep + os.environ.get("PATH", ""))
        (report,) = shard_runs(repo, "fix")
    return repo, report


def _deep(path: Path) -> None:
    path.write_text("[" * 200_000 + "]" * 200_000)


def _huge(path: Path) -> None:
    with path.open("wb") as fh:  # sparse: no disk used, but larger than any report
        fh.truncate(600 * 1024 * 1024)


def _unsealed(path: Path, shard: Path) -> None:
    data = json.loads(shard.read_text())
    del data["complete"]  # what a session ended by os._exit leaves
    path.write_text(json.dumps(data))


ODD_INPUTS = {
    "fifo": lambda path, shard: os.mkfifo(path),
    "folder": lambda path, shard: path.mkdir(),
    "missing": lambda path, shard: None,
    "deep": lambda path, shard: _deep(path),
    "huge": lambda path, shard: _huge(path),
    "unsealed": _unsealed,
}


@pytest.mark.parametrize("what", list(ODD_INPUTS))
def test_odd_inputs_are_usage_errors_never_a_traceback_or_a_hang(
    one_shard: tuple[BugFixRepo, Path], tmp_path_factory: pytest.TempPathFactory, what: str
) -> None:
    repo, shard = one_shard
    odd = tmp_path_factory.mktemp("odd") / "odd report#1 100%.json"
    ODD_INPUTS[what](odd, shard)
    result = merge(shard, odd, cwd=repo.root)  # a FIFO would block here (the bound: a hang)
    assert result.returncode == 4, result.stdout + result.stderr
    assert result.stderr.startswith(f"pytest-vgate merge: {odd}: "), result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "args",
    [["--rootdir", ".", "--vgate-sarif", "out.sarif"], ["--rootdir", "no/such"], ["--bogus"]],
    ids=["relative-rootdir-sarif", "rootdir-missing", "unknown-option"],
)
def test_odd_options_never_traceback(
    one_shard: tuple[BugFixRepo, Path], tmp_path_factory: pytest.TempPathFactory, args: list[str]
) -> None:
    _, shard = one_shard
    cwd = tmp_path_factory.mktemp("cwd")
    result = merge(shard, *args, cwd=cwd)
    assert "Traceback" not in result.stderr, result.stderr
    if args[0] == "--rootdir" and args[1] == ".":
        assert result.returncode == 1, result.stdout + result.stderr  # one shard of two
        assert "could not write" not in result.stdout
        read_sarif(cwd / "out.sarif")
    else:
        assert result.returncode == 4, result.stdout + result.stderr


@pytest.mark.parametrize("change", ["gates-file", "tree"])
def test_shards_of_different_runs_are_refused(tmp_path: Path, change: str) -> None:
    repo = make_gated_repo(tmp_path, PASSING_GATES, GOOD_ANSWER)
    (first,) = shard_runs(repo, "fix")
    if change == "gates-file":  # another claim, same tree otherwise: uncommitted
        gates = repo.root / "gates.yaml"
        gates.write_text(gates.read_text().replace("claim: add adds", "claim: add adds up"))
    else:
        (repo.root / "pkg" / "other.py").write_text("X = 1\n")
        git(repo.repo, "add", "-A")
        git(repo.repo, "commit", "-q", "-m", "another tree")
    report = repo.repo.parent / "second.json"
    run_session(repo, "second", "-k", "not fix", f"--vgate-report={report}")
    result = merge(first, report, cwd=tmp_path)
    assert result.returncode == 4, result.stdout + result.stderr
    what = "ran other gates files than" if change == "gates-file" else "ran on another tree than"
    assert f"pytest-vgate merge: {report}: {what} {first}" in result.stderr, result.stderr
