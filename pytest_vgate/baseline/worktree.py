"""Making and removing base worktrees (``BaseWorktree``, one per overlay: ``BaseTrees``)."""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from pytest_vgate.baseline.git import BaselineError, common_dir, git, toplevel
from pytest_vgate.baseline.holder import (
    LOCK_NAME,
    MARKER,
    OWNER_NAME,
    PREFIX,
    cleanup_stale_worktrees,
    forget_registrations,
    mark_registration,
)
from pytest_vgate.process import bytecode

ADD_TIMEOUT = 600.0

_COPY_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")
# The files that say how the project's tests import and run: an uncommitted edit of one
# is the session's configuration, so the base run gets it as an overlay file would.
CONFIG_NAMES = frozenset({"pyproject.toml", "pytest.ini", "setup.cfg", "tox.ini", "conftest.py"})


def config_edits(
    top: Path,
    overlay: Sequence[str] = (),
    root_rel: str = ".",
    uncommitted: Sequence[str] | None = None,
) -> list[str]:
    """Configuration files (``CONFIG_NAMES``) with uncommitted edits, new or deleted ones
    included, relative to the repository; those an overlay path already carries are left
    to it. [] when git cannot say (no HEAD yet, git failing): nothing is carried.
    ``uncommitted``: the paths that differ from HEAD and the untracked ones, when the
    session listed them already (``identity.list_tree``)."""
    if uncommitted is None:
        ok, changed, _ = git(["diff", "--name-only", "--no-renames", "-z", "HEAD", "--"], top)
        ok2, untracked, _ = git(["ls-files", "--others", "--exclude-standard", "-z"], top)
        if not (ok and ok2):
            return []
        uncommitted = (changed + untracked).split("\0")
    root = Path(os.path.normpath(root_rel))
    covered = [Path(os.path.normpath(root / p)) for p in overlay]
    found = []
    for rel in dict.fromkeys(filter(None, uncommitted)):
        path = Path(rel)
        if path.name not in CONFIG_NAMES:
            continue
        if any(c == path or c in path.parents for c in covered):
            continue
        found.append(path.as_posix())
    return sorted(found)


def overlay_key(overlay: Iterable[str]) -> str:
    """One string per distinct overlay set: gates that share it share a worktree."""
    return "\n".join(sorted({p.rstrip("/") or p for p in overlay}))


def _check_overlay(top: Path, root_rel: str, overlay: Sequence[str]) -> list[tuple[Path, str]]:
    """(source in the current tree, destination relative to the repository) per path."""
    top_real = Path(os.path.realpath(top))
    root_abs = Path(os.path.normpath(top_real / root_rel))
    pairs: list[tuple[Path, str]] = []
    for raw in overlay:
        where = f"overlay path {raw!r}"
        if not raw.strip() or Path(raw).is_absolute():
            raise BaselineError(f"{where}: give a path relative to the gates root ({root_abs})")
        lexical = Path(os.path.normpath(root_abs / raw))
        real = Path(os.path.realpath(lexical))
        inside = all(p == top_real or top_real in p.parents for p in (lexical, real))
        if not inside:
            raise BaselineError(
                f"{where} resolves to {real}, outside the repository {top_real}; "
                "an overlay can only carry files of this repository"
            )
        if lexical == root_abs or lexical in root_abs.parents:
            raise BaselineError(
                f"{where} holds the whole gates root: the base would become the current "
                "tree; name only the files that encode the new requirement (e.g. tests/)"
            )
        rel = lexical.relative_to(top_real)
        if rel.parts[0] == ".git":
            raise BaselineError(f"{where} points into .git; name files of the work tree")
        if not os.path.lexists(lexical):
            raise BaselineError(
                f"{where} does not exist in the current tree ({lexical}); fix the gate's "
                "overlay list"
            )
        pairs.append((lexical, rel.as_posix()))
    return pairs


def _copy_onto(src: Path, dst: Path, tree: Path) -> None:
    """Make ``dst`` mirror ``src`` (as a test patch would: deletions included).

    ``dst`` lies in the worktree ``tree`` as the overlay path lies in the current tree,
    but the base revision may hold a symlink on the way (``tests -> /elsewhere``):
    following it, the copy would delete and write files outside the worktree, a user's
    included. Whatever the base holds there must stay inside the worktree, or nothing is
    copied (``dst`` itself, a symlink, is removed, never followed)."""
    top = os.path.realpath(tree)
    parent = os.path.realpath(dst.parent)
    if parent != top and not parent.startswith(top + os.sep):
        raise BaselineError(
            f"overlay path {dst.relative_to(tree).as_posix()!r}: on the base revision a "
            f"symlink on its way leads to {parent}, outside the base worktree; nothing is "
            "copied there (give an overlay path that is a real folder on the base too)"
        )
    if dst.is_symlink() or dst.is_file():
        dst.unlink()
    elif dst.is_dir():
        shutil.rmtree(dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.is_symlink():
        os.symlink(os.readlink(src), dst)
    elif src.is_dir():
        shutil.copytree(src, dst, symlinks=True, ignore=_COPY_IGNORE)
    else:
        shutil.copy2(src, dst)


def _carry_config(src: Path, dst: Path, tree: Path) -> None:
    """A configuration file as the current tree has it: copied, or removed when deleted
    here. Only a regular file is copied, and only into the worktree."""
    parent = os.path.realpath(dst.parent)
    top = os.path.realpath(tree)
    if parent != top and not parent.startswith(top + os.sep):
        return
    if src.is_symlink() or not (src.is_file() or not os.path.lexists(src)):
        return
    if os.path.lexists(src):
        if dst.is_symlink() or dst.is_dir():
            return
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)
    elif dst.is_file() and not dst.is_symlink():
        dst.unlink()


class BaseWorktree:
    """A checked-out base revision. Only the creating process owns (and removes) it."""

    def __init__(
        self,
        *,
        repo: Path,
        ref: str,
        sha: str,
        path: Path,
        overlay: Sequence[str] = (),
        root_rel: str = ".",
        config: Sequence[str] = (),
    ) -> None:
        self.repo = Path(repo)
        self.ref = ref
        self.sha = sha
        self.path = Path(path)
        self.overlay = tuple(overlay)
        self.root_rel = root_rel
        self.config = tuple(config)  # uncommitted configuration edits carried on
        self._lock_fd: int | None = None
        self._removed = False
        self._owned = False  # only the process that created the tree may delete it
        self._creator = os.getpid()  # ... not a fork of it (a test that forks and goes on)
        self._git_dir = ""  # the repository's common git dir, once known

    def __repr__(self) -> str:
        return f"BaseWorktree(ref={self.ref!r}, sha={self.sha[:7]}, path={str(self.path)!r})"

    @property
    def holder(self) -> Path:
        return self.path.parent

    @classmethod
    def create(
        cls,
        repo: Path,
        ref: str,
        overlay: Sequence[str] = (),
        *,
        root_rel: str = ".",
        uncommitted: Sequence[str] | None = None,
    ) -> BaseWorktree:
        """``git worktree add --detach`` of ``ref`` in a fresh temp dir, overlay copied on,
        and the uncommitted edits of configuration files (``config_edits``)."""
        top = toplevel(repo)
        git_dir = common_dir(top)
        cleanup_stale_worktrees(top, git_dir=git_dir)
        if not ref or ref.startswith("-"):
            raise BaselineError(f"--vgate-base {ref!r} is not a git revision")
        ok, out, err = git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], top)
        if not ok or not out.strip():
            raise BaselineError(
                f"--vgate-base {ref!r} is not a commit in {top} ({err or 'unknown revision'}); "
                f"check `git rev-parse {ref}` (a shallow clone may need `git fetch --deepen`)"
            )
        sha = out.strip()
        pairs = _check_overlay(top, root_rel, overlay)
        config = config_edits(top, overlay, root_rel, uncommitted)
        holder = Path(tempfile.mkdtemp(prefix=PREFIX))
        tree = cls(
            repo=top, ref=ref, sha=sha, path=holder / (top.name or "base"), overlay=overlay,
            root_rel=root_rel, config=config,
        )  # fmt: skip
        tree._owned = True
        tree._git_dir = git_dir
        try:
            tree._lock_fd = os.open(holder / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(tree._lock_fd, fcntl.LOCK_EX)  # held for our life: "we are alive"
            owner = {
                "marker": MARKER,
                "pid": os.getpid(),
                "repo": str(top),
                "git_dir": git_dir,
                "worktree": os.path.realpath(tree.path),
                "ref": ref,
                "sha": sha,
            }
            (holder / OWNER_NAME).write_text(json.dumps(owner))
        except OSError as exc:
            tree.remove()
            raise BaselineError(f"cannot prepare a temp dir for the base worktree: {exc}") from exc
        atexit.register(tree.remove)
        ok, _, err = git(
            ["worktree", "add", "--detach", str(tree.path), sha], top, timeout=ADD_TIMEOUT
        )
        if not ok:
            tree.remove()
            raise BaselineError(f"`git worktree add` of {ref!r} failed in {top}: {err}")
        mark_registration(tree.path)
        try:
            for src, rel in pairs:
                _copy_onto(src, tree.path / rel, tree.path)
            for rel in config:
                _carry_config(top / rel, tree.path / rel, tree.path)
        except BaselineError:
            tree.remove()
            raise
        except OSError as exc:
            tree.remove()
            raise BaselineError(f"cannot copy the overlay onto the base worktree: {exc}") from exc
        return tree

    def root_in_base(self, root: Path) -> Path:
        """Where the gates root (maybe a subfolder of the repository) lies in the worktree."""
        real = Path(os.path.realpath(root))
        top_real = Path(os.path.realpath(self.repo))
        if real != top_real and top_real not in real.parents:
            raise BaselineError(f"{root} is not inside the repository {self.repo}")
        return self.path / real.relative_to(top_real)

    def remove(self) -> list[str]:
        """Unregister and delete the worktree; idempotent, never raises. Returns warnings."""
        warnings: list[str] = []
        if self._removed or not self._owned:  # a worker's handle never deletes anything
            return warnings
        if os.getpid() != self._creator:  # a forked copy of the session: the tree is not its
            return warnings
        self._removed = True
        with contextlib.suppress(Exception):  # unregister must not fail a removal
            atexit.unregister(self.remove)
        if self.path.exists():
            ok, _, err = git(
                ["worktree", "remove", "--force", "--force", str(self.path)], self.repo
            )
            if not ok:
                warnings.append(f"vgate base worktree {self.path}: git worktree remove: {err}")
        # Its folder gone (a temp cleaner), git still lists it: forget this one, not
        # every registration whose folder is missing (a user's may be on a drive).
        forget_registrations(self._git_dir or common_dir(self.repo), only=self.path)
        # The holder is the folder ``create`` made with mkdtemp in this very process
        # (``_owned``); rmtree does not follow a symlink put in its place.
        shutil.rmtree(self.holder, ignore_errors=True)
        bytecode.forget(self.holder)  # its checks' bytecode: the path never comes back
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None
        return warnings

    def __enter__(self) -> BaseWorktree:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.remove()

    def to_dict(self) -> dict[str, Any]:
        return {
            "repo": str(self.repo),
            "ref": self.ref,
            "sha": self.sha,
            "path": str(self.path),
            "overlay": list(self.overlay),
            "root_rel": self.root_rel,
            "config": list(self.config),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BaseWorktree:
        """A handle for an xdist worker: it can map paths; the controller removes the tree."""
        return cls(
            repo=Path(data["repo"]),
            ref=str(data["ref"]),
            sha=str(data["sha"]),
            path=Path(data["path"]),
            overlay=tuple(data.get("overlay", ())),
            root_rel=str(data.get("root_rel", ".")),
            config=tuple(data.get("config", ())),
        )


class BaseTrees:
    """One base worktree per distinct overlay set of a session (all of the same ref).

    A gate must see exactly its own overlay on the base: a test carried over for one gate
    would otherwise turn another gate's weak red into a false ``proven``.
    """

    def __init__(self, trees: Mapping[str, BaseWorktree]) -> None:
        self.trees = dict(trees)

    @classmethod
    def create(
        cls,
        repo: Path,
        ref: str,
        overlays: Iterable[Sequence[str]],
        *,
        root_rel: str = ".",
        uncommitted: Sequence[str] | None = None,
    ) -> BaseTrees:
        made: dict[str, BaseWorktree] = {}
        try:
            for overlay in overlays:
                key = overlay_key(overlay)
                if key not in made:
                    made[key] = BaseWorktree.create(
                        repo, ref, sorted(set(overlay)), root_rel=root_rel, uncommitted=uncommitted
                    )
        except BaseException:
            for tree in made.values():
                tree.remove()
            raise
        return cls(made)

    def for_overlay(self, overlay: Iterable[str]) -> BaseWorktree:
        return self.trees[overlay_key(overlay)]

    def remove(self) -> list[str]:
        return [w for tree in self.trees.values() for w in tree.remove()]

    def to_dict(self) -> dict[str, Any]:
        return {"trees": {key: tree.to_dict() for key, tree in self.trees.items()}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BaseTrees:
        return cls({k: BaseWorktree.from_dict(v) for k, v in data["trees"].items()})
