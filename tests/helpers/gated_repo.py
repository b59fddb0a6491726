"""A committed project with gates (a base, tools, citations) and real pytest sessions in it.

Built on ``helpers.git_repo``'s bug/fix repository: ``fix-add`` is proven on the bug
commit, ``neg-never-red`` is never red, ``pinned-checker`` runs a tool pinned in
``.toolchain/bin`` (installed per checkout, git-ignored) and ``answer.md`` has two good
citations and one fabricated one. Used by the remote-worker and the merge tests.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from helpers.git_repo import BugFixRepo, git, make_bugfix_repo
from helpers.junit import junit_cases

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
    "The function `add` is defined at pkg/mathx.py:1.\n"
    "The test `test_neg` is at tests/test_basic.py:4.\n"
    "See pkg/mathx.py:90.\n"
)


def make_gated_repo(base: Path, gates: str = GATES, answer: str = ANSWER) -> BugFixRepo:
    """The bug/fix repository with gates, a pinned tool and citations, committed. The
    caller puts ``PY_DIR`` first on PATH: the checks' ``python`` is this interpreter."""
    repo = make_bugfix_repo(base)
    (repo.root / "gates.yaml").write_text(textwrap.dedent(gates))
    (repo.root / "answer.md").write_text(answer)
    # Pinned tools are installed per machine, not committed: each clone gets its own.
    with (repo.repo / ".gitignore").open("a") as fh:
        fh.write(".toolchain/\n")
    install_checker(repo.root, CHECKER)
    git(repo.repo, "add", "-A")
    git(repo.repo, "commit", "-q", "-m", "gates, a pinned tool and citations")
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
