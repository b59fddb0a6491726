"""End to end: the base worktrees are removed when the session's runs are over, while its
summary is written, and what removing them could not do is shown after it."""

from __future__ import annotations

import pytest
from helpers.git_repo import git

# The check unregisters every worktree of the repository (hostile, but it shows the
# warning path): removing the session's base worktree then fails in git.
GATES = """gates:
  - id: unregisters-the-worktrees
    check: sh -c 'rm -rf "$(git rev-parse --git-common-dir)/worktrees"'
    red: not-required
"""


def test_what_the_base_worktree_removal_could_not_do_is_shown(
    pytester: pytest.Pytester,
) -> None:
    git(pytester.path, "init", "-q")
    for text in ("one", "two"):
        (pytester.path / "f.txt").write_text(text)
        git(pytester.path, "add", "-A")
        git(pytester.path, "commit", "-qm", text)
    (pytester.path / "gates.yaml").write_text(GATES)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--vgate", "gates.yaml", "--vgate-base", "HEAD~1"
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["vgate warning: vgate base worktree *: git worktree remove: *not a working tree*"]
    )
    assert "vgate-base-" not in git(pytester.path, "worktree", "list")
