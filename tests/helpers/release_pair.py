"""A real release pair as a git repository: two sdists of a library, one commit each.

Commit 1 holds the older sdist's files, commit 2 (HEAD) the newer one's (files the newer
release dropped are deleted), exactly as a maintainer's tree moved between the releases.
The sdists ship in tests/data/sdists/ (their sha256 is checked), so no network is needed.
"""

from __future__ import annotations

import hashlib
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path

from helpers.git_repo import git

SDISTS = Path(__file__).resolve().parents[1] / "data" / "sdists"

# more-itertools 9.0.0 -> 9.1.0 (MIT licensed, as published on PyPI): 9.1.0 fixes
# split_after's maxsplit and adds iter_index, transpose, matmul, factor and gray_product,
# each with new tests.


@dataclass(frozen=True)
class ReleaseRepo:
    root: Path
    old_sha: str
    new_sha: str


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _unpack(tar: Path, into: Path) -> None:
    """Put the sdist's files (without its top folder) into ``into``."""
    scratch = into.parent / f".unpack-{tar.name}"
    with tarfile.open(tar) as archive:
        archive.extractall(scratch, filter="data")
    (top,) = list(scratch.iterdir())
    for entry in top.iterdir():
        shutil.move(str(entry), str(into / entry.name))
    shutil.rmtree(scratch)


def make_release_repo(base: Path, old: Path, new: Path) -> ReleaseRepo:
    root = Path(base) / "release"
    root.mkdir(parents=True)
    git(root, "init", "-q")
    _unpack(old, root)
    (root / ".gitignore").write_text("__pycache__/\n.pytest_cache/\n*.egg-info/\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", f"release {old.name}")
    old_sha = git(root, "rev-parse", "HEAD")
    for entry in root.iterdir():
        if entry.name not in (".git", ".gitignore"):
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    _unpack(new, root)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", f"release {new.name}")
    return ReleaseRepo(root=root, old_sha=old_sha, new_sha=git(root, "rev-parse", "HEAD"))
