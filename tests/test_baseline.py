"""The base worktree of --vgate-base, on real repositories with a real bug and its fix."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from helpers.git_repo import FIX_TEST_ID, TEST_FIX, BugFixRepo, git, make_bugfix_repo

from pytest_vgate.baseline import (
    OWNER_NAME,
    PREFIX,
    BaselineError,
    BaseTrees,
    BaseWorktree,
    cleanup_stale_worktrees,
)
from pytest_vgate.gate.decide import is_genuine_red
from pytest_vgate.gatesfile import Gate
from pytest_vgate.process import ProcessResult, run_process
from pytest_vgate.verdict import Mode, Verdict

PYTEST = (sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:vgate")
GATE = Gate(id="add-works", argv=("python", "-m", "pytest", "-q", FIX_TEST_ID))
ENV = {k: os.environ[k] for k in ("PATH", "HOME") if k in os.environ}


def run_fix_test(root: Path) -> ProcessResult:
    return run_process([*PYTEST, FIX_TEST_ID], cwd=root, env=ENV, timeout=120)


def holders_for(repo: Path) -> list[Path]:
    """Temp holder dirs of our worktrees that name this repository (leftovers)."""
    found = []
    for holder in Path(tempfile.gettempdir()).glob(f"{PREFIX}*"):
        try:
            owner = json.loads((holder / OWNER_NAME).read_text())
        except (OSError, ValueError):
            continue
        if Path(owner["repo"]) == repo:
            found.append(holder)
    return found


def test_base_with_overlay_has_the_new_test_and_the_old_bug(bugfix: BugFixRepo) -> None:
    base = BaseWorktree.create(bugfix.repo, "HEAD~1", ["tests/"], root_rel=".")
    try:
        assert base.sha == bugfix.bug_sha
        assert len(bugfix.worktrees()) == 2
        assert (base.path / "tests" / "test_fix.py").read_text() == TEST_FIX
        assert "return a - b" in (base.path / "pkg" / "mathx.py").read_text()
        red = run_fix_test(base.root_in_base(bugfix.root))
        assert red.exit_code == 1, red.stdout
        verdict = Verdict.failed(Mode.FAIL, "exit 1", exit_code=red.exit_code)
        assert is_genuine_red(verdict, GATE) == (True, "exit 1: the check ran and answered no")
        assert run_fix_test(bugfix.root).exit_code == 0  # green on the current tree
    finally:
        assert base.remove() == []
    assert bugfix.worktrees() == [str(bugfix.repo)]
    assert not base.path.exists()
    assert holders_for(bugfix.repo) == []


def test_base_without_overlay_lacks_the_test_so_pytest_exits_4(bugfix: BugFixRepo) -> None:
    with BaseWorktree.create(bugfix.repo, bugfix.bug_sha, [], root_rel=".") as base:
        assert not (base.path / "tests" / "test_fix.py").exists()
        result = run_fix_test(base.path)
        assert result.exit_code == 4
        verdict = Verdict.failed(Mode.FAIL, "exit 4", exit_code=result.exit_code)
        genuine, why = is_genuine_red(verdict, GATE)
        assert not genuine
        assert "usage error" in why
    assert bugfix.worktrees() == [str(bugfix.repo)]


def test_the_gates_root_may_be_a_subfolder(tmp_path: Path) -> None:
    repo = make_bugfix_repo(tmp_path, subdir="proj")
    with BaseWorktree.create(repo.root, "HEAD~1", ["tests"], root_rel="proj") as base:
        assert base.repo == repo.repo
        root = base.root_in_base(repo.root)
        assert root == base.path / "proj"
        assert (root / "tests" / "test_fix.py").is_file()
        assert run_fix_test(root).exit_code == 1
        with pytest.raises(BaselineError, match="not inside the repository"):
            base.root_in_base(tmp_path)
    assert repo.worktrees() == [str(repo.repo)]


def test_overlay_mirrors_the_working_tree(bugfix: BugFixRepo) -> None:
    tests = bugfix.root / "tests"
    (tests / "test_basic.py").unlink()  # deleted, not committed
    (tests / "test_new.py").write_text("def test_new():\n    pass\n")  # new, not committed
    (tests / "__pycache__").mkdir()
    (tests / "__pycache__" / "junk.pyc").write_bytes(b"\0")
    with BaseWorktree.create(bugfix.repo, "HEAD~1", ["tests/", "pytest.ini"], root_rel=".") as b:
        names = sorted(p.name for p in (b.path / "tests").iterdir())
        assert names == ["test_fix.py", "test_new.py"]


@pytest.mark.parametrize(
    ("ref", "overlay", "message"),
    [
        ("no-such-branch", [], "'no-such-branch' is not a commit"),
        ("HEAD~5", [], "'HEAD~5' is not a commit"),
        ("--output=/tmp/x", [], "is not a git revision"),
        ("HEAD~1", ["tests/nope.py"], "does not exist in the current tree"),
        ("HEAD~1", ["../outside"], "outside the repository"),
        ("HEAD~1", ["link-out"], "outside the repository"),
        ("HEAD~1", ["/etc"], "relative to the gates root"),
        ("HEAD~1", ["."], "holds the whole gates root"),
        ("HEAD~1", [".git/config"], "points into .git"),
    ],
)
def test_clear_errors_leave_nothing_behind(
    bugfix: BugFixRepo, ref: str, overlay: list[str], message: str
) -> None:
    (bugfix.repo.parent / "outside").mkdir()
    (bugfix.repo / "link-out").symlink_to(bugfix.repo.parent / "outside")
    with pytest.raises(BaselineError, match=message.replace(".", r"\.")):
        BaseWorktree.create(bugfix.repo, ref, overlay, root_rel=".")
    assert bugfix.worktrees() == [str(bugfix.repo)]
    assert holders_for(bugfix.repo) == []


@pytest.mark.parametrize("link", ["tests", "tests/sub"], ids=["parent", "grandparent"])
def test_an_overlay_never_follows_a_base_symlink_out_of_the_worktree(
    bugfix: BugFixRepo, link: str
) -> None:
    """On the base revision the overlay's folder is a symlink to elsewhere (a user's
    folder, their own checkout): the copy refuses; nothing there is deleted or written."""
    from helpers.git_repo import git

    victim = bugfix.repo.parent / "victim"
    (victim / "sub").mkdir(parents=True)
    (victim / "sub" / "precious.txt").write_text("uncommitted work")
    (victim / "sub" / "test_fix.py").write_text("# the user's own, edited\n")
    base = git(bugfix.repo, "rev-parse", "HEAD~1").strip()
    git(bugfix.repo, "checkout", "-q", "-b", "linked", base)
    shutil.rmtree(bugfix.repo / "tests")
    target = victim if link == "tests" else victim / "sub"
    (bugfix.repo / link).parent.mkdir(parents=True, exist_ok=True)
    (bugfix.repo / link).symlink_to(target)
    git(bugfix.repo, "add", "-A")
    git(bugfix.repo, "commit", "-qm", "the base links its tests elsewhere")
    git(bugfix.repo, "checkout", "-q", "-")
    git(bugfix.repo, "merge", "-q", "--no-ff", "-s", "ours", "linked", "-m", "keep ours")
    overlay = "tests/sub/test_fix.py"
    (bugfix.repo / "tests" / "sub").mkdir()
    (bugfix.repo / overlay).write_text("def test_new():\n    pass\n")
    before = {p: p.read_text() for p in victim.rglob("*") if p.is_file()}
    with pytest.raises(BaselineError, match="outside the base worktree"):
        BaseWorktree.create(bugfix.repo, "linked", [overlay], root_rel=".")
    assert {p: p.read_text() for p in victim.rglob("*") if p.is_file()} == before
    assert bugfix.worktrees() == [str(bugfix.repo)]
    assert holders_for(bugfix.repo) == []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_copy_of_the_session_leaves_the_base_worktree_alone(
    bugfix: BugFixRepo,
) -> None:
    """A user's test that forks and lets the child go on (``sys.exit`` caught by pytest)
    runs the session's end in the child too: only the creating process removes the tree."""
    with BaseWorktree.create(bugfix.repo, "HEAD~1", ["tests/"], root_rel=".") as base:
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            code = 0 if base.remove() == [] else 1
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert (base.path / "tests" / "test_fix.py").exists(), "the child removed the tree"
        assert len(bugfix.worktrees()) == 2
    assert bugfix.worktrees() == [str(bugfix.repo)]


def test_not_a_git_repository(tmp_path: Path) -> None:
    with pytest.raises(BaselineError, match="not inside a git repository"):
        BaseWorktree.create(tmp_path, "HEAD", [], root_rel=".")
    with pytest.raises(BaselineError, match="not inside a git repository"):
        BaseWorktree.create(tmp_path / "missing", "HEAD", [], root_rel=".")


def test_no_hook_of_the_user_runs(bugfix: BugFixRepo) -> None:
    marker = bugfix.repo.parent / "hook-ran"
    hook = bugfix.repo / ".git" / "hooks" / "post-checkout"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    with BaseWorktree.create(bugfix.repo, "HEAD~1", [], root_rel="."):
        pass
    assert not marker.exists()


def test_remove_is_idempotent_and_the_handle_travels(bugfix: BugFixRepo) -> None:
    base = BaseWorktree.create(bugfix.repo, "HEAD~1", ["tests"], root_rel=".")
    handle = BaseWorktree.from_dict(json.loads(json.dumps(base.to_dict())))
    assert (handle.path, handle.sha, handle.overlay) == (base.path, base.sha, ("tests",))
    assert handle.root_in_base(bugfix.root / "tests") == base.path / "tests"
    assert base.remove() == []
    assert base.remove() == []
    assert bugfix.worktrees() == [str(bugfix.repo)]


def _create_and_crash(repo: str, out: str) -> None:
    base = BaseWorktree.create(Path(repo), "HEAD~1", ["tests"], root_rel=".")
    Path(out).write_text(str(base.path))
    os._exit(0)  # no atexit, no finally: a killed session


def crash_a_session(bugfix: BugFixRepo) -> Path:
    out = bugfix.repo.parent / "crashed-path"
    child = multiprocessing.get_context("fork").Process(
        target=_create_and_crash, args=(str(bugfix.repo), str(out))
    )
    child.start()
    child.join(60)
    assert child.exitcode == 0
    return Path(out.read_text())


def test_cleanup_after_a_crashed_session(bugfix: BugFixRepo) -> None:
    leaked = crash_a_session(bugfix)
    assert str(leaked) in bugfix.worktrees()
    assert cleanup_stale_worktrees(bugfix.repo) == [leaked]
    assert bugfix.worktrees() == [str(bugfix.repo)]
    assert not leaked.parent.exists()


def test_cleanup_after_the_temp_dir_vanished(bugfix: BugFixRepo) -> None:
    leaked = crash_a_session(bugfix)
    shutil.rmtree(leaked.parent)  # e.g. /tmp cleaned at reboot
    cleanup_stale_worktrees(bugfix.repo)
    assert bugfix.worktrees() == [str(bugfix.repo)]


def test_cleanup_spares_a_live_session_and_create_sweeps_dead_ones(bugfix: BugFixRepo) -> None:
    leaked = crash_a_session(bugfix)
    with BaseWorktree.create(bugfix.repo, "HEAD~1", [], root_rel=".") as live:
        assert sorted(bugfix.worktrees()) == sorted([str(bugfix.repo), str(live.path)])
        assert str(leaked) not in bugfix.worktrees()
        assert cleanup_stale_worktrees(bugfix.repo) == []  # another session may be alive
        assert live.path.is_dir()
    assert bugfix.worktrees() == [str(bugfix.repo)]


@pytest.mark.parametrize("ending", ["pass", "raise KeyboardInterrupt", "raise SystemExit(3)"])
def test_atexit_removes_the_worktree(bugfix: BugFixRepo, ending: str) -> None:
    script = (
        "from pathlib import Path\n"
        "from pytest_vgate.baseline import BaseWorktree\n"
        f"BaseWorktree.create(Path({str(bugfix.repo)!r}), 'HEAD~1', [], root_rel='.')\n"
        f"{ending}\n"
    )
    result = run_process([sys.executable, "-c", script], cwd=bugfix.repo, env=ENV, timeout=120)
    assert result.exit_code in (0, 1, 3, -2, 130), result.stderr
    assert bugfix.worktrees() == [str(bugfix.repo)]
    assert holders_for(bugfix.repo) == []


def test_one_worktree_per_overlay_set(bugfix: BugFixRepo) -> None:
    trees = BaseTrees.create(bugfix.repo, "HEAD~1", [["tests/"], [], ["tests"]], root_rel=".")
    try:
        assert len(trees.trees) == 2
        assert len(bugfix.worktrees()) == 3
        assert (trees.for_overlay(["tests"]).path / "tests" / "test_fix.py").exists()
        assert not (trees.for_overlay([]).path / "tests" / "test_fix.py").exists()
        again = BaseTrees.from_dict(json.loads(json.dumps(trees.to_dict())))
        assert again.for_overlay(["tests/"]).path == trees.for_overlay(["tests"]).path
    finally:
        assert trees.remove() == []
    assert bugfix.worktrees() == [str(bugfix.repo)]


def test_a_failing_overlay_set_removes_the_ones_already_made(bugfix: BugFixRepo) -> None:
    with pytest.raises(BaselineError, match="does not exist"):
        BaseTrees.create(bugfix.repo, "HEAD~1", [["tests"], ["nope"]], root_rel=".")
    assert bugfix.worktrees() == [str(bugfix.repo)]


def test_removal_and_the_sweep_forget_only_their_own_registration(
    bugfix: BugFixRepo, tmp_path: Path
) -> None:
    """A user's worktree whose folder is missing (an unmounted drive) stays registered;
    ours whose folder vanished are forgotten."""
    users = tmp_path / "users-tree"
    git(bugfix.repo, "worktree", "add", "-q", "--detach", str(users), "HEAD")
    parked = tmp_path / "parked"
    users.rename(parked)
    leaked = crash_a_session(bugfix)
    shutil.rmtree(leaked.parent)  # the crashed session's temp dir was cleaned, too
    base = BaseWorktree.create(bugfix.repo, "HEAD~1", [], root_rel=".")
    shutil.rmtree(base.path)  # its folder went before the session's end
    assert base.remove() == []
    cleanup_stale_worktrees(bugfix.repo)
    assert bugfix.worktrees() == [str(bugfix.repo), str(users)]
    parked.rename(users)
    assert git(users, "rev-parse", "HEAD") == bugfix.fix_sha
