"""End to end: a proven gate must kill mutants of the change it executed.

Real pytest sessions (plain and under ``-n 2``) on the fix-plus-feature repository of
``helpers.mutants_repo``: checks that run the changed code and assert nothing about it
fail as undiscriminating, real tests pass, and no mutant is ever left on disk or in the
user's tree.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from helpers.git_repo import git
from helpers.mutants_repo import EXPECTED, FIXED, ShopRepo, gates_text, make_shop_repo

LEAN = ("-p", "no:hypothesispytest", "-p", "no:cacheprovider")


@pytest.fixture
def temp(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The sessions' own temp dir, where their base worktrees and mutant copies go (the
    machine's is shared with other sessions)."""
    folder = pytester.path / "tmp"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    return folder


@pytest.fixture
def repo(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, temp: Path) -> ShopRepo:
    made = make_shop_repo(pytester.path)
    monkeypatch.chdir(made.root)
    return made


def write_gates(root: Path, body: str) -> None:
    (root / "gates.yaml").write_text(textwrap.dedent(body), encoding="utf-8")


def our_holders(temp: Path) -> list[str]:
    """This plugin's private trees in the temp dir (base worktrees and mutant copies)."""
    return sorted(p.name for p in temp.glob("vgate-*"))


def assert_untouched(repo: ShopRepo) -> None:
    assert repo.shop.read_text() == FIXED
    assert git(repo.root, "status", "--porcelain", "--untracked-files=no") == ""
    assert git(repo.root, "worktree", "list", "--porcelain").count("worktree ") == 1


def test_checks_that_assert_nothing_are_not_proven_and_real_tests_are(
    run_vgate, repo: ShopRepo, pytester: pytest.Pytester, temp: Path
) -> None:
    write_gates(repo.root, gates_text())
    report = pytester.path / "report.json"
    result, cases = run_vgate(
        "--vgate", "gates.yaml", "--vgate-only", "--vgate-base", "HEAD~1",
        "--vgate-report", str(report), *LEAN,
    )  # fmt: skip
    out = result.stdout.str()
    assert "INTERNALERROR" not in out + result.stderr.str()
    seen = {
        gate_id: (case["outcome"], case.get("vgate_rbg"), case.get("vgate_discrimination"))
        for gate_id, case in cases.items()
    }
    assert seen == EXPECTED, out
    assert result.ret == 1
    for gate_id, (outcome, _, _) in EXPECTED.items():
        if outcome == "failure":
            assert cases[gate_id]["vgate_cause"] == "broken_test", gate_id
    killed, planted = map(int, str(cases["values"]["vgate_mutants"]).split("/"))
    assert 1 <= killed <= planted <= 8
    killed, planted = map(int, str(cases["runs-only"]["vgate_mutants"]).split("/"))
    assert killed == 0 and 1 <= planted <= 8

    gates = {g["id"]: g for g in json.loads(report.read_text())["gates"]}
    runs_only = gates["runs-only"]["discrimination"]
    assert runs_only["status"] == "undiscriminating"
    assert set(runs_only["pseudo_tested"]) == {"total", "discount"}
    assert "the check passes when `total`, `discount` does nothing" in runs_only["reason"]
    first = runs_only["mutants"][0]
    assert set(first) >= {"path", "line", "kind", "operator", "before", "after", "killed", "mode"}
    kinds = [m["kind"] for m in runs_only["mutants"]]
    assert kinds[:2] == ["extreme", "extreme"] and "value" in kinds
    assert kinds == sorted(kinds, key=lambda kind: kind != "extreme")  # extreme first
    assert len(runs_only["mutants"]) <= 8
    values = gates["values"]["discrimination"]
    assert values["status"] == "discriminating" and values["killed"] >= 1
    assert values["pseudo_tested"] == []
    # The failure report and the summary show the surviving mutants.
    assert "survived pkg/shop.py:2  body of total → return None" in out
    summary = out.split(" vgate ===")[-1]
    assert "mutants of runs-only: 0/" in summary
    assert "  survived pkg/shop.py:2  body of total → return None" in summary
    # The feature test that imports the new name at its top is red for the right reason.
    assert "cannot import name 'discount'" in gates["top-import"]["rbg_reason"]
    # Importing the new name runs its `def` line, not its body: not the change executed.
    assert gates["import-only"]["coverage"]["head_executed"] == {}

    assert_untouched(repo)
    assert our_holders(temp) == []


def test_mutate_off_keeps_the_old_verdicts(repo: ShopRepo, pytester: pytest.Pytester) -> None:
    """Without mutants the checks that assert nothing pass as proven: what fails them
    above is the mutants, nothing else."""
    write_gates(repo.root, gates_text())
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest_subprocess(
        "--vgate", "gates.yaml", "--vgate-only", "--vgate-base", "HEAD~1",
        "--vgate-mutate", "off", f"--junitxml={junit}", *LEAN,
    )  # fmt: skip
    from helpers.junit import junit_cases

    cases = junit_cases(junit)
    for gate_id in ("runs-only", "print-true", "tautology", "python-c", "values", "top-import"):
        assert cases[gate_id]["outcome"] == "passed", (gate_id, result.stdout.str())
        assert "vgate_discrimination" not in cases[gate_id]
    assert cases["import-only"]["outcome"] == "failure"
