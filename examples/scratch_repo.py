"""tinyshop's history in a scratch git repository: the root of change.yaml.

``tinyshop/before/`` is committed as release 1.0 (the repository's HEAD) and
``tinyshop/after/`` is staged on top of it: the change, as its author has it before
committing. So ``--vgate-base HEAD`` is the shop before its change, and for the other
gates files of this folder it is the last commit of this checkout.

The repository lives in the temp dir, never in this tree, which only gains
``.vgate-demo/`` (a ``.gitignore`` of ``*``, a lock, and the link ``tinyshop`` that
change.yaml names as its root). A scratch folder is reused only when it is ours (a real
folder of our uid directly in the temp dir, holding our marker for this examples folder)
and was built from this very content; otherwise a new one is built and the one it
replaces is removed, if it is ours. Nothing else is ever deleted.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

MARKER = "pytest-vgate demo scratch repository v1"
PREFIX = "vgate-demo-"
SKIP = ("__pycache__", ".pytest_cache", ".vgate")
GIT = (
    "git", "-c", "user.name=tinyshop maintainer", "-c", "user.email=maintainer@example.invalid",
    "-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null", "-c", "init.defaultBranch=main",
)  # fmt: skip
# Fixed dates: the same content makes the same commit, so the ledger keeps knowing it.
DATES = {"GIT_AUTHOR_DATE": "2026-01-01T12:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T12:00:00Z"}


class DemoError(Exception):
    """The scratch repository cannot be made; the message says why."""


def link_scratch_repository(examples: Path) -> Path:
    """Make (or reuse) the scratch repository and point ``.vgate-demo/tinyshop`` at it."""
    examples = examples.resolve()
    links = examples / ".vgate-demo"
    links.mkdir(exist_ok=True)
    if not (links / ".gitignore").exists():
        (links / ".gitignore").write_text("# made by the demo (scratch_repo.py)\n*\n")
    with (links / "lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one builder at a time (xdist workers, sessions)
        marker = {"marker": MARKER, "source": str(examples), "content": _digest(examples)}
        old = _linked_holder(links / "tinyshop", examples)
        if old is not None and _read_marker(old) == marker:
            return old / "tinyshop"
        holder = Path(tempfile.mkdtemp(prefix=PREFIX))
        try:
            _build(examples / "tinyshop", holder / "tinyshop")
        except BaseException:
            shutil.rmtree(holder, ignore_errors=True)  # ours, unfinished: never left behind
            raise
        (holder / "owner.json").write_text(json.dumps(marker))  # last: marks it finished
        staged = links / f".tinyshop-{os.getpid()}"
        staged.unlink(missing_ok=True)
        staged.symlink_to(holder / "tinyshop")
        os.replace(staged, links / "tinyshop")
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        return holder / "tinyshop"


def _linked_holder(link: Path, examples: Path) -> Path | None:
    """The scratch folder the link points at, when it is ours; refuses a link we did not make."""
    if not link.is_symlink():
        if link.exists():
            raise DemoError(f"{link} is not the demo's link; move it away and run again")
        return None
    holder = Path(os.readlink(link)).parent
    try:
        info = os.lstat(holder)
        ours = (
            holder.name.startswith(PREFIX)
            and os.path.realpath(holder.parent) == os.path.realpath(tempfile.gettempdir())
            and not os.path.islink(holder)
            and info.st_uid == os.geteuid()
        )
    except OSError:
        return None  # gone (the temp dir was cleaned): build a new one
    marker = _read_marker(holder) if ours else None
    if marker is None or marker.get("source") != str(examples):
        return None
    return holder


def _read_marker(holder: Path) -> dict[str, str] | None:
    try:
        marker = json.loads((holder / "owner.json").read_text())
    except (OSError, ValueError):
        return None
    return marker if isinstance(marker, dict) and marker.get("marker") == MARKER else None


def _digest(examples: Path) -> str:
    """What the repository is built from: every file of tinyshop/, name and bytes."""
    sha = hashlib.sha256()
    for path in sorted((examples / "tinyshop").rglob("*")):
        if path.is_file() and not set(path.parts) & set(SKIP):
            sha.update(f"{path.relative_to(examples)}\0".encode())
            sha.update(path.read_bytes() + b"\0")
    return sha.hexdigest()


def _build(source: Path, repo: Path) -> None:
    """Release 1.0 committed, then the change staged: every file of after/, none of before/'s."""
    repo.mkdir()
    _git(repo, "init", "-q")
    _fill(repo, source / "before")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "tinyshop 1.0")
    _fill(repo, source / "after")
    _git(repo, "add", "-A")


def _fill(repo: Path, tree: Path) -> None:
    """The work tree becomes a copy of ``tree`` (``.git`` aside)."""
    for entry in repo.iterdir():
        if entry.name != ".git":
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    shutil.copytree(tree, repo, dirs_exist_ok=True, ignore=shutil.ignore_patterns(*SKIP))


def _git(repo: Path, *args: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | DATES
    try:
        subprocess.run([*GIT, *args], cwd=repo, env=env, check=True, capture_output=True, text=True)
    except FileNotFoundError:
        raise DemoError("git is not installed: the demo needs it, as --vgate-base does") from None
    except subprocess.CalledProcessError as exc:
        raise DemoError(f"git {' '.join(args)} failed in {repo}: {exc.stderr.strip()}") from None
