"""End to end: xdist workers in other checkouts (``--tx socket=…//chdir=``, ``popen//chdir=``).

Each test builds the bug/fix repository with a gates file that has a base, a pinned tool
and citations, clones it once per worker, and compares junit properties of a plain run
with those of a run whose workers sit in the clones: behind real execnet socket servers on
127.0.0.1 (started and killed here) or popen gateways with ``chdir``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers.git_repo import BugFixRepo, git, make_bugfix_repo
from helpers.junit import junit_cases
from helpers.remote_workers import LOOPBACK, socket_servers

PY_DIR = str(Path(sys.executable).parent)
SESSION_BOUND = 600  # seconds: a hang bound only
CHECKER = "#!/bin/sh\necho checked\nexit 0\n"
GATES = """\
    gates:
      - id: fix-add
        claim: add adds
        check: python -m pytest -q -p no:cacheprovider tests/test_fix.py::test_add
        env: {set: {PYTEST_DISABLE_PLUGIN_AUTOLOAD: "1"}}
        tools: [python]
        overlay: [tests/test_fix.py]
      - id: neg-never-red
        check: python -c "from pkg.mathx import neg; assert neg(2) == -2"
        tools: [python]
      - id: pinned-checker
        check: checker
        tools: [checker]
        red: not-required
    citations: [answer.md]
"""
ANSWER = (
    "The sum is in pkg/mathx.py:1 and the tests in tests/test_basic.py:4.\nSee pkg/mathx.py:90.\n"
)


@pytest.fixture
def remote_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> BugFixRepo:
    """The bug/fix repository with gates, a pinned tool and citations, committed."""
    repo = make_bugfix_repo(tmp_path)
    (repo.root / "gates.yaml").write_text(textwrap.dedent(GATES))
    (repo.root / "answer.md").write_text(ANSWER)
    # Pinned tools are installed per machine, not committed: each clone gets its own.
    with (repo.repo / ".gitignore").open("a") as fh:
        fh.write(".toolchain/\n")
    install_checker(repo.root, CHECKER)
    git(repo.repo, "add", "-A")
    git(repo.repo, "commit", "-q", "-m", "gates, a pinned tool and citations")
    # The checks' `python` is this interpreter, on every side.
    monkeypatch.setenv("PATH", PY_DIR + os.pathsep + os.environ.get("PATH", ""))
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    return repo


def install_checker(root: Path, text: str) -> None:
    tool = root / ".toolchain" / "bin" / "checker"
    tool.parent.mkdir(parents=True, exist_ok=True)
    tool.write_text(text)
    tool.chmod(0o755)


def clone(repo: BugFixRepo, dest: Path, checker: str = CHECKER) -> Path:
    """Another checkout of the same commit, with its own copy of the pinned tool."""
    git(repo.repo.parent, "clone", "-q", "--no-hardlinks", str(repo.repo), str(dest))
    install_checker(dest, checker)
    return dest


def run_session(repo: BugFixRepo, name: str, *args: str) -> tuple[int, str, dict[str, dict]]:
    """A real pytest session in the repository; junit and ledger live outside the tree."""
    out = repo.repo.parent
    junit = out / f"{name}.xml"
    argv = [
        sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly",
        "--vgate=gates.yaml", f"--vgate-base={repo.bug_sha}",
        f"--vgate-ledger={out / (name + '-ledger')}", f"--junitxml={junit}", "-rA", *args,
    ]  # fmt: skip
    proc = subprocess.run(
        argv,
        cwd=repo.root,
        capture_output=True,
        text=True,
        timeout=SESSION_BOUND,
        stdin=subprocess.DEVNULL,
    )
    text = proc.stdout + proc.stderr
    assert "INTERNALERROR" not in text, text
    return proc.returncode, text, junit_cases(junit) if junit.exists() else {}


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


def test_popen_chdir_workers_give_the_plain_verdicts(
    remote_repo: BugFixRepo, tmp_path: Path
) -> None:
    status, _, plain = run_session(remote_repo, "plain")
    w1 = clone(remote_repo, tmp_path / "w1")
    r_status, r_text, remote = run_session(
        remote_repo, "remote", "--dist=load", f"--tx=2*popen//chdir={w1}"
    )
    assert vgate_properties(remote) == vgate_properties(plain), r_text
    assert r_status == status
    assert worktrees(w1) == [str(w1)]


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
