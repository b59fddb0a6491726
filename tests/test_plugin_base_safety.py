"""End to end: ``--vgate-base`` removes only what it created, whatever folders are called.

A real repository living in a folder named ``vgate-base-review/`` (uncommitted work, a
neighbour file), worktrees the user made under ``vgate-base-x/``, named ``vgate-base-y``,
and in the session's own temp dir under a ``vgate-base-*`` name (each with a file called
``owner.json`` next to it) all survive a ``--vgate-base`` session, plain and under ``-n 2``,
while the worktree a crashed session leaked is swept.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shlex
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.git_repo import FIX_TEST_ID, BugFixRepo, git, make_bugfix_repo

from pytest_vgate.baseline import PREFIX, BaseWorktree, cleanup_stale_worktrees
from pytest_vgate.process import bytecode

PY = shlex.quote(sys.executable)
GATES = f"""gates:
  - id: add-proven
    check: {PY} -m pytest -q -p no:cacheprovider {FIX_TEST_ID}
    env: {{set: {{PYTEST_DISABLE_PLUGIN_AUTOLOAD: "1"}}}}
    overlay: [tests/]
"""
UNCOMMITTED = "work in progress, never committed\n"


@dataclass(frozen=True)
class UserLayout:
    """What the user owns; every path here must survive with its bytes."""

    repo: BugFixRepo
    neighbour: Path
    uncommitted: Path
    user_trees: tuple[Path, ...]

    def assert_intact(self) -> None:
        assert (self.repo.repo / ".git").is_dir()
        assert self.neighbour.read_text() == "my notes\n"
        assert self.uncommitted.read_text() == UNCOMMITTED
        listed = self.repo.worktrees()
        assert listed[0] == str(self.repo.repo)
        for tree in self.user_trees:
            assert (tree / "mine.txt").read_text() == "mine\n", tree
            assert str(tree) in listed, (tree, listed)


def _create_and_crash(repo: str, tmp: str) -> None:
    tempfile.tempdir = tmp
    BaseWorktree.create(Path(repo), "HEAD~1", ["tests"], root_rel=".")
    os._exit(0)  # no atexit, no finally: a killed session leaks its worktree


@pytest.fixture
def layout(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> tuple[UserLayout, Path]:
    """The user's hostile-looking layout plus a private TMPDIR; sessions start in the repo."""
    private_tmp = pytester.path / "tmp"
    private_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(private_tmp))
    review = pytester.path / "vgate-base-review"
    review.mkdir()
    repo = make_bugfix_repo(review)  # review/repo: its parent folder has our prefix
    neighbour = review / "notes.txt"
    neighbour.write_text("my notes\n")
    uncommitted = repo.root / "wip.txt"
    uncommitted.write_text(UNCOMMITTED)
    trees = (
        pytester.path / "vgate-base-x" / "wt",  # under a folder with our prefix
        pytester.path / "worktrees" / f"{PREFIX}y",  # itself named with our prefix
        private_tmp / f"{PREFIX}mine" / "wt",  # in the session's own temp dir, too
    )
    for tree in trees:
        tree.parent.mkdir()
        git(repo.repo, "worktree", "add", "-q", "--detach", str(tree), "HEAD")
        (tree / "mine.txt").write_text("mine\n")
        (tree.parent / "owner.json").write_text(json.dumps({"repo": str(repo.repo)}))
    (repo.root / "gates.yaml").write_text(GATES)
    monkeypatch.chdir(repo.root)
    return UserLayout(repo, neighbour, uncommitted, trees), private_tmp


def leak_a_worktree(repo: BugFixRepo, tmp: Path) -> Path:
    """A crashed session's worktree: registered, in a holder with our marker, lock free."""
    child = multiprocessing.get_context("fork").Process(
        target=_create_and_crash, args=(str(repo.repo), str(tmp))
    )
    child.start()
    child.join(120)
    assert child.exitcode == 0
    (leaked,) = [
        Path(p) for p in repo.worktrees() if Path(p).parent.parent == tmp and "mine" not in p
    ]
    return leaked


@pytest.mark.parametrize("crashed_before", [False, True], ids=["clean", "crashed-before"])
def test_a_session_removes_only_what_it_created(
    run_vgate, layout: tuple[UserLayout, Path], crashed_before: bool
) -> None:
    user, tmp = layout
    leaked = leak_a_worktree(user.repo, tmp) if crashed_before else None
    result, cases = run_vgate("gates.yaml", "--vgate", "gates.yaml", "--vgate-base", "HEAD~1")
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    assert cases["add-proven"]["vgate_rbg"] == "proven"
    user.assert_intact()
    if leaked is not None:  # the crashed session's tree was swept
        assert str(leaked) not in user.repo.worktrees()
        assert not leaked.parent.exists()
    assert sorted(p.name for p in tmp.iterdir() if p.name.startswith(PREFIX)) == [f"{PREFIX}mine"]
    prefix = bytecode.cache_prefix()  # the base trees' bytecode went with them
    assert prefix is not None
    assert not [p for m in bytecode.mirror_of(prefix, tmp) for p in m.glob(f"{PREFIX}*")]
    assert len(user.repo.worktrees()) == 1 + len(user.user_trees)


def test_stale_cleanup_spares_the_main_tree_and_the_users_trees(
    layout: tuple[UserLayout, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    user, tmp = layout
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    leaked = leak_a_worktree(user.repo, tmp)
    for start in (user.repo.repo, *user.user_trees):  # called from any of the worktrees
        removed = cleanup_stale_worktrees(start)
        assert removed in ([leaked], [])
        user.assert_intact()
    assert str(leaked) not in user.repo.worktrees()


def test_a_copied_marker_does_not_make_a_user_tree_ours(
    layout: tuple[UserLayout, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Our marker names its own worktree: copied next to another tree it proves nothing."""
    user, tmp = layout
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    leaked = leak_a_worktree(user.repo, tmp)
    marker = (leaked.parent / "owner.json").read_bytes()
    for tree in user.user_trees:
        (tree.parent / "owner.json").write_bytes(marker)
    assert cleanup_stale_worktrees(user.repo.repo) == [leaked]
    user.assert_intact()


def test_a_users_worktree_whose_folder_is_away_keeps_its_registration(
    run_vgate, layout: tuple[UserLayout, Path], tmp_path: Path
) -> None:
    """A worktree of the user's on a drive that is not mounted right now (its folder is
    missing) is the user's: a session, and the sweep of a crashed one, leave its
    registration (and the index with its staged work) alone."""
    user, tmp = layout
    leak_a_worktree(user.repo, tmp)
    away = user.repo.repo.parent / "on-a-usb-stick"
    git(user.repo.repo, "worktree", "add", "-q", "-b", "feature", str(away), "HEAD")
    (away / "staged.txt").write_text("staged, not committed\n")
    git(away, "add", "staged.txt")
    parked = tmp_path / "unmounted"
    away.rename(parked)  # the drive is unplugged
    result, cases = run_vgate("gates.yaml", "--vgate", "gates.yaml", "--vgate-base", "HEAD~1")
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    assert cases["add-proven"]["vgate_rbg"] == "proven"
    parked.rename(away)  # plugged in again
    assert str(away) in user.repo.worktrees()
    assert git(away, "diff", "--cached", "--name-only") == "staged.txt"
    assert git(away, "rev-parse", "--abbrev-ref", "HEAD") == "feature"
    user.assert_intact()
