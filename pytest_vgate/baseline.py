"""The base revision of ``--vgate-base``: a detached git worktree with the overlay applied.

The controller creates one per distinct overlay per session and removes it at the end.
Nothing may stay registered in the user's repository: ``remove`` is idempotent, an
``atexit`` hook covers Ctrl-C, and ``cleanup_stale_worktrees`` (run by every ``create``)
removes worktrees of sessions that died (their holder's lock is no longer held).

Only what the plugin made is ever removed: a holder is ours when it is a real folder
directly in the temp dir that we own and that carries our marker file naming exactly
that worktree of exactly this repository. Folder names prove nothing; the main worktree
and worktrees a user made are never touched, whatever they are called.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from pytest_vgate import bytecode
from pytest_vgate.errors import VgateError
from pytest_vgate.process import run_git

PREFIX = "vgate-base-"
LOCK_NAME = "owner.lock"
OWNER_NAME = "owner.json"  # the marker: written by ``create`` before the worktree exists
MARKER = "pytest-vgate base worktree holder v1"
_MARKER_MAX = 64 << 10  # a marker is a few hundred bytes; a bigger file is not ours
GIT = ("-c", "core.hooksPath=/dev/null")  # no post-checkout hook runs in a session
ADD_TIMEOUT = 600.0
_COPY_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache")


class BaselineError(VgateError):
    """``--vgate-base`` cannot be set up; the message says what to change."""


def _git(args: Sequence[str], cwd: Path, timeout: float = 60.0) -> tuple[bool, str, str]:
    result = run_git([*GIT, *args], cwd=cwd, timeout=timeout)
    problem = result.spawn_error or ("timed out" if result.timed_out else "")
    return result.exit_code == 0, result.stdout, problem or result.stderr.strip()


def toplevel(path: Path) -> Path:
    """The work tree holding ``path``; BaselineError when it is not inside one."""
    path = Path(path)
    ok, out, err = (
        _git(["rev-parse", "--show-toplevel"], path) if path.is_dir() else (False, "", "")
    )
    if not ok or not out.strip():
        raise BaselineError(
            f"{path} is not inside a git repository, so --vgate-base has no base to check out "
            f"({err or 'no such directory'}); run from a git work tree or drop --vgate-base"
        )
    return Path(out.strip())


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


def _copy_onto(src: Path, dst: Path) -> None:
    """Make ``dst`` mirror ``src`` (as a test patch would: deletions included)."""
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


def _lock_is_free(lock_path: Path) -> bool:
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
    ) -> None:
        self.repo = Path(repo)
        self.ref = ref
        self.sha = sha
        self.path = Path(path)
        self.overlay = tuple(overlay)
        self.root_rel = root_rel
        self._lock_fd: int | None = None
        self._removed = False
        self._owned = False  # only the process that created the tree may delete it

    def __repr__(self) -> str:
        return f"BaseWorktree(ref={self.ref!r}, sha={self.sha[:7]}, path={str(self.path)!r})"

    @property
    def holder(self) -> Path:
        return self.path.parent

    @classmethod
    def create(
        cls, repo: Path, ref: str, overlay: Sequence[str] = (), *, root_rel: str = "."
    ) -> BaseWorktree:
        """``git worktree add --detach`` of ``ref`` in a fresh temp dir, overlay copied on."""
        top = toplevel(repo)
        cleanup_stale_worktrees(top)
        if not ref or ref.startswith("-"):
            raise BaselineError(f"--vgate-base {ref!r} is not a git revision")
        ok, out, err = _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], top)
        if not ok or not out.strip():
            raise BaselineError(
                f"--vgate-base {ref!r} is not a commit in {top} ({err or 'unknown revision'}); "
                f"check `git rev-parse {ref}` (a shallow clone may need `git fetch --deepen`)"
            )
        sha = out.strip()
        pairs = _check_overlay(top, root_rel, overlay)
        holder = Path(tempfile.mkdtemp(prefix=PREFIX))
        tree = cls(
            repo=top, ref=ref, sha=sha, path=holder / (top.name or "base"), overlay=overlay,
            root_rel=root_rel,
        )  # fmt: skip
        tree._owned = True
        try:
            tree._lock_fd = os.open(holder / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(tree._lock_fd, fcntl.LOCK_EX)  # held for our life: "we are alive"
            owner = {
                "marker": MARKER,
                "pid": os.getpid(),
                "repo": str(top),
                "git_dir": _common_dir(top),
                "worktree": os.path.realpath(tree.path),
                "ref": ref,
                "sha": sha,
            }
            (holder / OWNER_NAME).write_text(json.dumps(owner))
        except OSError as exc:
            tree.remove()
            raise BaselineError(f"cannot prepare a temp dir for the base worktree: {exc}") from exc
        atexit.register(tree.remove)
        ok, _, err = _git(
            ["worktree", "add", "--detach", str(tree.path), sha], top, timeout=ADD_TIMEOUT
        )
        if not ok:
            tree.remove()
            raise BaselineError(f"`git worktree add` of {ref!r} failed in {top}: {err}")
        try:
            for src, rel in pairs:
                _copy_onto(src, tree.path / rel)
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
        self._removed = True
        with contextlib.suppress(Exception):  # unregister must not fail a removal
            atexit.unregister(self.remove)
        if self.path.exists():
            ok, _, err = _git(
                ["worktree", "remove", "--force", "--force", str(self.path)], self.repo
            )
            if not ok:
                warnings.append(f"vgate base worktree {self.path}: git worktree remove: {err}")
        ok, _, err = _git(["worktree", "prune"], self.repo)
        if not ok:
            warnings.append(f"vgate base worktree {self.path}: git worktree prune: {err}")
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
        cls, repo: Path, ref: str, overlays: Iterable[Sequence[str]], *, root_rel: str = "."
    ) -> BaseTrees:
        made: dict[str, BaseWorktree] = {}
        try:
            for overlay in overlays:
                key = overlay_key(overlay)
                if key not in made:
                    made[key] = BaseWorktree.create(
                        repo, ref, sorted(set(overlay)), root_rel=root_rel
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


def _common_dir(top: Path) -> str:
    """The real path of the repository's common git dir: one name for all its worktrees."""
    ok, out, _ = _git(["rev-parse", "--git-common-dir"], top)
    if not ok or not out.strip():
        return ""
    return os.path.realpath(os.path.join(top, out.strip()))


def _holder_is_ours(holder: Path, worktree: Path, git_dir: str) -> bool:
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
        fd = os.open(holder / OWNER_NAME, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_size > _MARKER_MAX:
                return False
            owner = json.loads(os.read(fd, _MARKER_MAX + 1))
        finally:
            os.close(fd)
    except (OSError, ValueError):
        return False
    return (
        isinstance(owner, dict)
        and owner.get("marker") == MARKER
        and owner.get("worktree") == os.path.realpath(worktree)
        and owner.get("git_dir") == git_dir
    )


def _worktree_paths(top: Path) -> list[Path] | None:
    """The repository's worktrees as git lists them, the main one first (None on failure)."""
    ok, out, _ = _git(["worktree", "list", "--porcelain"], top)
    if not ok:
        return None
    return [
        Path(line[len("worktree ") :]) for line in out.splitlines() if line.startswith("worktree ")
    ]


def cleanup_stale_worktrees(repo: Path) -> list[Path]:
    """Remove our worktrees whose session died; returns the paths removed. Never raises.

    Ours: ``_holder_is_ours`` (our marker in a temp holder we own), never the main
    worktree nor the tree we were called from. Dead: nobody holds the holder's lock (the
    kernel drops a flock when its process dies, however it died). ``git worktree prune``
    then forgets registrations whose folder is gone (it deletes nothing on disk).
    """
    removed: list[Path] = []
    try:
        top = toplevel(repo)
    except BaselineError:
        return removed
    listed = _worktree_paths(top)
    git_dir = _common_dir(top)
    if listed and git_dir:
        top_real = os.path.realpath(top)
        main_real = os.path.realpath(listed[0])  # the main worktree: never a candidate
        for path in listed[1:]:
            real = os.path.realpath(path)
            if _contains(real, top_real) or _contains(real, main_real):
                continue
            holder = path.parent
            if not _holder_is_ours(holder, path, git_dir):
                continue
            if not _lock_is_free(holder / LOCK_NAME):
                continue
            if path.exists():
                _git(["worktree", "remove", "--force", "--force", str(path)], top)
            shutil.rmtree(holder, ignore_errors=True)
            bytecode.forget(holder)
            removed.append(path)
    _git(["worktree", "prune"], top)
    return removed


def _contains(outer: str, inner: str) -> bool:
    """Whether ``inner`` is ``outer`` or lies below it (both real paths)."""
    try:
        return os.path.commonpath([outer, inner]) == outer
    except ValueError:
        return False
