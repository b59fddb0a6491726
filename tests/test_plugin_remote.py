"""End to end: xdist workers in other checkouts (``--tx socket=…//chdir=``, ``popen//chdir=``).

Each test builds the bug/fix repository with a gates file that has a base, a pinned tool
and citations, clones it once per worker, and compares junit properties of a plain run
with those of a run whose workers sit in the clones: behind real execnet socket servers on
127.0.0.1 (started and killed here) or popen gateways with ``chdir``.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest
from helpers.gated_repo import CHECKER, GATES, PY_DIR, clone, make_gated_repo, run_session
from helpers.git_repo import BugFixRepo, git
from helpers.remote_workers import LOOPBACK, socket_servers
from helpers.report import read_report


@pytest.fixture
def session_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This interpreter is the checks' ``python``; a private TMPDIR shows leftovers."""
    monkeypatch.setenv("PATH", PY_DIR + os.pathsep + os.environ.get("PATH", ""))
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    return tmp


@pytest.fixture
def remote_repo(tmp_path: Path, session_env: Path) -> BugFixRepo:
    return make_gated_repo(tmp_path)


def vgate_properties(cases: dict[str, dict]) -> dict[str, dict]:
    return {
        name: {k: v for k, v in case.items() if k.startswith("vgate_") or k == "outcome"}
        for name, case in cases.items()
    }


def worktrees(top: Path) -> list[str]:
    out = git(top, "worktree", "list", "--porcelain")
    return [line.split(" ", 1)[1] for line in out.splitlines() if line.startswith("worktree ")]


def assert_expected_verdicts(props: dict[str, dict]) -> None:
    """The plain run's verdicts: what the remote run must reproduce."""
    assert props["fix-add"]["vgate_rbg"] == "proven", props
    assert props["neg-never-red"]["vgate_rbg"] == "never-red", props
    assert props["pinned-checker"]["vgate_rbg"] == "regression", props
    statuses = sorted(str(c.get("vgate_citation")) for c in props.values() if "vgate_citation" in c)
    assert statuses == ["fabricated", "verified", "verified"], props


def test_socket_workers_in_other_checkouts_give_the_plain_verdicts(
    remote_repo: BugFixRepo, tmp_path: Path
) -> None:
    status, _, plain = run_session(remote_repo, "plain")
    plain_props = vgate_properties(plain)
    assert_expected_verdicts(plain_props)
    w1, w2 = clone(remote_repo, tmp_path / "w1"), clone(remote_repo, tmp_path / "w2")
    logs = tmp_path / "logs"
    logs.mkdir()
    with socket_servers(2, os.environ, logs) as ports:
        tx = [
            f"--tx=socket={LOOPBACK}:{p}//chdir={w}" for p, w in zip(ports, (w1, w2), strict=True)
        ]
        r_status, r_text, remote = run_session(remote_repo, "remote", "--dist=load", *tx)
    assert "[gw0]" in r_text and "[gw1]" in r_text, r_text  # both workers ran items
    assert vgate_properties(remote) == plain_props, r_text
    assert r_status == status == 1
    # Each worker made its own base worktree in its own clone and removed it.
    for top in (w1, w2, remote_repo.repo):
        assert worktrees(top) == [str(top)]
    assert not [p for p in (tmp_path / "tmp").iterdir() if p.name.startswith("vgate-base-")]
    # The workers' records went to the controller's ledger.
    ledger = tmp_path / "remote-ledger" / "ledger.jsonl"
    assert "fix-add" in ledger.read_text()


# Which checkout each base worktree that exists while the gate runs belongs to.
LIST_BASES = (
    "import glob, json, os; "
    "print(sorted(json.load(open(p))['repo'] for p in "
    "glob.glob(os.environ['TMPDIR'] + '/vgate-base-*/owner.json')))"
)
COUNT_BASES = f"""\
      - id: list-bases
        check: python -c "{LIST_BASES}"
        env: [TMPDIR]
        tools: [python]
        red: not-required
"""


def test_popen_chdir_workers_share_one_base_per_checkout(tmp_path: Path, session_env: Path) -> None:
    """Two workers in one other checkout: the plain verdicts, and one set of base
    worktrees (one per overlay: two) for both of them, not one set each."""
    repo = make_gated_repo(
        tmp_path / "project", GATES.replace("    citations:", COUNT_BASES + "    citations:")
    )
    status, _, plain = run_session(repo, "plain")
    w1 = clone(repo, tmp_path / "w1")
    report = tmp_path / "remote.json"
    r_status, r_text, remote = run_session(
        repo, "remote", "--dist=load", f"--tx=2*popen//chdir={w1}", f"--vgate-report={report}"
    )
    assert vgate_properties(remote) == vgate_properties(plain), r_text
    assert r_status == status
    listed = next(g for g in read_report(report)["gates"] if g["id"] == "list-bases")
    owners = ast.literal_eval(listed["stdout"].strip())
    assert owners.count(str(w1)) == 2, owners  # not 4: one per overlay, not per worker
    assert worktrees(w1) == [str(w1)]
    assert not [p for p in (tmp_path / "tmp").iterdir() if p.name.startswith("vgate-")]


def test_a_worker_on_another_commit_fails_its_gates_with_cause_environment(
    remote_repo: BugFixRepo, tmp_path: Path
) -> None:
    w1 = clone(remote_repo, tmp_path / "w1")
    git(w1, "checkout", "-q", remote_repo.bug_sha, "--", ".")
    git(w1, "commit", "-q", "-m", "another commit")
    _, text, cases = run_session(remote_repo, "remote", "--dist=load", f"--tx=popen//chdir={w1}")
    for gate in ("fix-add", "neg-never-red", "pinned-checker"):
        assert cases[gate]["vgate_mode"] == "sandbox", text
        assert cases[gate]["vgate_cause"] == "environment", text
        assert cases[gate]["outcome"] == "failure", text
    assert "is at commit" in text and "check out the same commit" in text, text


def test_a_worker_with_other_tool_bytes_fails_its_gates_with_cause_environment(
    remote_repo: BugFixRepo, tmp_path: Path
) -> None:
    w1 = clone(remote_repo, tmp_path / "w1", checker=CHECKER.replace("checked", "other"))
    _, text, cases = run_session(remote_repo, "remote", "--dist=load", f"--tx=popen//chdir={w1}")
    assert cases["pinned-checker"]["vgate_mode"] == "sandbox", text
    assert cases["pinned-checker"]["vgate_cause"] == "environment", text
    assert "tool 'checker' differs" in text, text
