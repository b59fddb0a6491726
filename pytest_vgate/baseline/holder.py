"""Which base-worktree holders are ours, and removing those whose session died.

A holder is ours when it is a real folder directly in the temp dir that we own and that
carries our marker file naming exactly that worktree of exactly this repository. Folder
names prove nothing; the main worktree and worktrees a user made are never touched,
whatever they are called. A holder's session is dead when nobody holds its lock.

git's registration of a worktree we made (``.git/worktrees/<name>/``) carries a marker
too, so that we can forget it when its folder is gone. We never run ``git worktree
prune``: it also forgets a user's worktree whose folder is only away for now (a drive
not mounted), and with it that worktree's index and its place in the repository.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import stat
import tempfile
from pathlib import Path

from pytest_vgate.baseline.git import BaselineError, common_dir, git, toplevel, worktree_paths
from pytest_vgate.process import bytecode

PREFIX = "vgate-base-"
LOCK_NAME = "owner.lock"
OWNER_NAME = "owner.json"  # the marker: written by ``create`` before the worktree exists
MARKER = "pytest-vgate base worktree holder v1"
_MARKER_MAX = 64 << 10  # a marker is a few hundred bytes; a bigger file is not ours
REGISTRATION_MARKER = "vgate-owner.json"  # in git's registration folder of our worktree


def lock_is_free(lock_path: Path) -> bool:
    """True when no live session holds this holder's lock (its owner died or never was)."""
    try:
        fd = os.open(lock_path, os.O_RDWR)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    finally:
        os.close(fd)
    return True


def holder_is_ours(holder: Path, worktree: Path, git_dir: str) -> bool:
    """Whether ``holder`` is a temp folder this plugin made for ``worktree`` of the
    repository whose common git dir is ``git_dir``.

    All of: a real folder (not a symlink) directly inside the temp dir, named ``PREFIX*``,
    owned by us, holding a small regular marker file that names this worktree and this
    repository. Anything else -- a user's folder that happens to share the name included --
    is not ours and is never deleted.
    """
    if not git_dir or not holder.name.startswith(PREFIX) or worktree.parent != holder:
        return False
    try:
        if os.path.realpath(holder.parent) != os.path.realpath(tempfile.gettempdir()):
            return False
        st = os.lstat(holder)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
            return False
    except OSError:
        return False
    owner = _read_marker(holder / OWNER_NAME)
    return (
        owner is not None
        and owner.get("worktree") == os.path.realpath(worktree)
        and owner.get("git_dir") == git_dir
    )


def _read_marker(path: Path) -> dict[str, object] | None:
    """Our marker file's JSON, or None: a symlink, a big or odd file, another marker."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_size > _MARKER_MAX:
                return None
            owner = json.loads(os.read(fd, _MARKER_MAX + 1))
        finally:
            os.close(fd)
    except (OSError, ValueError):
        return None
    return owner if isinstance(owner, dict) and owner.get("marker") == MARKER else None


def mark_registration(worktree: Path) -> None:
    """Mark git's registration of a worktree we just made as ours (best effort: without
    the mark, a registration whose folder vanished is left for git's own expiry)."""
    ok, out, _ = git(["rev-parse", "--absolute-git-dir"], worktree)
    if not ok or not out.strip():
        return
    owner = {"marker": MARKER, "worktree": os.path.realpath(worktree)}
    with contextlib.suppress(OSError):
        (Path(out.strip()) / REGISTRATION_MARKER).write_text(json.dumps(owner))


def forget_registrations(git_dir: str, only: Path | None = None) -> None:
    """What ``git worktree prune`` does, for our own registrations only: forget those
    whose worktree folder is gone (``only``: just that worktree's). Never raises.

    Ours: the registration holds our marker naming the very worktree its ``gitdir``
    file points to. A user's registration is never touched, its folder there or not.
    """
    if not git_dir:
        return
    wanted = os.path.realpath(only) if only is not None else None
    try:
        admins = list((Path(git_dir) / "worktrees").iterdir())
    except OSError:
        return
    for admin in admins:
        owner = _read_marker(admin / REGISTRATION_MARKER)
        worktree = owner.get("worktree") if owner is not None else None
        if not isinstance(worktree, str) or (wanted is not None and worktree != wanted):
            continue
        try:
            gitdir = (admin / "gitdir").read_text(encoding="utf-8").strip()
        except (OSError, ValueError):
            continue
        points_to = os.path.realpath(os.path.join(admin, gitdir))
        if points_to != os.path.join(worktree, ".git") or os.path.lexists(worktree):
            continue
        shutil.rmtree(admin, ignore_errors=True)


def cleanup_stale_worktrees(repo: Path, *, git_dir: str | None = None) -> list[Path]:
    """Remove our worktrees whose session died; returns the paths removed. Never raises.

    Ours: ``holder_is_ours`` (our marker in a temp holder we own), never the main
    worktree nor the tree we were called from. Dead: nobody holds the holder's lock (the
    kernel drops a flock when its process dies, however it died). Then our registrations
    whose folder is gone are forgotten (``forget_registrations``), no one else's.
    ``git_dir``: the repository's common git dir, when the caller knows it (``repo`` is
    then its top folder).
    """
    removed: list[Path] = []
    top = repo
    if git_dir is None:
        try:
            top = toplevel(repo)
        except BaselineError:
            return removed
        git_dir = common_dir(top)
    listed = worktree_paths(top)
    if listed and git_dir:
        top_real = os.path.realpath(top)
        main_real = os.path.realpath(listed[0])  # the main worktree: never a candidate
        for path in listed[1:]:
            real = os.path.realpath(path)
            if _contains(real, top_real) or _contains(real, main_real):
                continue
            holder = path.parent
            if not holder_is_ours(holder, path, git_dir):
                continue
            if not lock_is_free(holder / LOCK_NAME):
                continue
            if path.exists():
                git(["worktree", "remove", "--force", "--force", str(path)], top)
            shutil.rmtree(holder, ignore_errors=True)
            bytecode.forget(holder)
            removed.append(path)
    forget_registrations(git_dir)
    return removed


def _contains(outer: str, inner: str) -> bool:
    """Whether ``inner`` is ``outer`` or lies below it (both real paths)."""
    try:
        return os.path.commonpath([outer, inner]) == outer
    except ValueError:
        return False
