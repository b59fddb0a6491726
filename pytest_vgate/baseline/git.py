"""git for the base worktree: one way to run it, and the repository facts it answers.

No hook runs (``core.hooksPath=/dev/null``); every failure is a value or a
``BaselineError`` whose message says what to change.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from pytest_vgate.errors import VgateError
from pytest_vgate.process import run_git

GIT = ("-c", "core.hooksPath=/dev/null")  # no post-checkout hook runs in a session


class BaselineError(VgateError):
    """``--vgate-base`` cannot be set up; the message says what to change."""


def git(args: Sequence[str], cwd: Path, timeout: float = 60.0) -> tuple[bool, str, str]:
    result = run_git([*GIT, *args], cwd=cwd, timeout=timeout)
    problem = result.spawn_error or ("timed out" if result.timed_out else "")
    return result.exit_code == 0, result.stdout, problem or result.stderr.strip()


def toplevel(path: Path) -> Path:
    """The work tree holding ``path``; BaselineError when it is not inside one."""
    path = Path(path)
    ok, out, err = git(["rev-parse", "--show-toplevel"], path) if path.is_dir() else (False, "", "")
    if not ok or not out.strip():
        raise BaselineError(
            f"{path} is not inside a git repository, so --vgate-base has no base to check out "
            f"({err or 'no such directory'}); run from a git work tree or drop --vgate-base"
        )
    return Path(out.strip())


def common_dir(top: Path) -> str:
    """The real path of the repository's common git dir: one name for all its worktrees."""
    ok, out, _ = git(["rev-parse", "--git-common-dir"], top)
    if not ok or not out.strip():
        return ""
    return os.path.realpath(os.path.join(top, out.strip()))


def worktree_paths(top: Path) -> list[Path] | None:
    """The repository's worktrees as git lists them, the main one first (None on failure)."""
    ok, out, _ = git(["worktree", "list", "--porcelain"], top)
    if not ok:
        return None
    return [
        Path(line[len("worktree ") :]) for line in out.splitlines() if line.startswith("worktree ")
    ]
