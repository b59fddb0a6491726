"""Build a real git repository with a real bug and its fix, in two commits.

Commit 1 (``bug_sha``): ``pkg/mathx.py`` whose ``add`` subtracts, and a passing
``tests/test_basic.py``. Commit 2 (``fix_sha``, HEAD): ``add`` fixed and
``tests/test_fix.py::test_add`` added, which fails on the bug. The project may sit in a
subfolder of the repository (``subdir``) to exercise roots that are not the repo top.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pytest_vgate.process import run_git

IDENTITY = (
    "-c", "user.name=vgate tests", "-c", "user.email=vgate@example.invalid",
    "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main",
    "-c", "core.hooksPath=/dev/null",
)  # fmt: skip

BUGGY_MATHX = "def add(a, b):\n    return a - b\n\n\ndef neg(a):\n    return -a\n"
FIXED_MATHX = "def add(a, b):\n    return a + b\n\n\ndef neg(a):\n    return -a\n"
TEST_BASIC = "from pkg.mathx import neg\n\n\ndef test_neg():\n    assert neg(2) == -2\n"
TEST_FIX = "from pkg.mathx import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
FIX_TEST_ID = "tests/test_fix.py::test_add"


def git(cwd: Path, *args: str) -> str:
    """Run git with a fixed identity and no hooks; raise with git's stderr on failure."""
    result = run_git([*IDENTITY, *args], cwd=cwd)
    if result.exit_code != 0:
        raise RuntimeError(f"git {' '.join(args)} failed in {cwd}: {result.stderr}")
    return result.stdout.strip()


@dataclass(frozen=True)
class BugFixRepo:
    """The repository (``repo``), the project inside it (``root``) and the two commits."""

    repo: Path
    root: Path
    bug_sha: str
    fix_sha: str
    fix_test_id: str = FIX_TEST_ID

    @property
    def mathx(self) -> Path:
        return self.root / "pkg" / "mathx.py"

    @property
    def fix_test(self) -> Path:
        return self.root / "tests" / "test_fix.py"

    def worktrees(self) -> list[str]:
        """``git worktree list --porcelain`` paths: just the main tree when nothing leaked."""
        out = git(self.repo, "worktree", "list", "--porcelain")
        return [
            line[len("worktree ") :] for line in out.splitlines() if line.startswith("worktree ")
        ]

    def reintroduce_bug(self) -> None:
        """Put the bug back in the working tree, keeping the fix's test (a dirty tree)."""
        write_source(self.mathx, BUGGY_MATHX)

    def fix_bug(self) -> None:
        write_source(self.mathx, FIXED_MATHX)


def write_source(path: Path, text: str) -> None:
    """Write a Python file and drop its bytecode in the tree's ``__pycache__``.

    ``-`` -> ``+`` keeps the size, and two writes within one second keep the mtime Python
    records: a process that imports it directly (not through a gate) would run the old
    bytecode. The tree is the test's own, so its cache entries may go.
    """
    path.write_text(text)
    for pyc in (path.parent / "__pycache__").glob(f"{path.stem}.*.pyc"):
        pyc.unlink(missing_ok=True)


def make_bugfix_repo(base: Path, *, subdir: str = "") -> BugFixRepo:
    """Create the two-commit repository under ``base`` (a fresh directory) and return it."""
    repo = Path(base) / "repo"
    root = repo / subdir if subdir else repo
    (root / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    git(repo, "init", "-q")
    (repo / ".gitignore").write_text("__pycache__/\n.pytest_cache/\n")
    (root / "pytest.ini").write_text("[pytest]\n")
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "mathx.py").write_text(BUGGY_MATHX)
    (root / "tests" / "test_basic.py").write_text(TEST_BASIC)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "add mathx (add has a bug)")
    bug_sha = git(repo, "rev-parse", "HEAD")
    (root / "pkg" / "mathx.py").write_text(FIXED_MATHX)
    (root / "tests" / "test_fix.py").write_text(TEST_FIX)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "fix add and test it")
    fix_sha = git(repo, "rev-parse", "HEAD")
    return BugFixRepo(repo=repo, root=root, bug_sha=bug_sha, fix_sha=fix_sha)
