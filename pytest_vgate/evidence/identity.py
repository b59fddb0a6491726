"""What a piece of evidence is about: the check (fingerprint), the claim, the tree, the inputs.

Two runs are comparable only when they ran the same check; a red counts for a green only
when it ran on a different tree. These digests make both questions exact and cheap.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import stat
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_vgate.gatesfile import Gate
from pytest_vgate.jsonable import Jsonable
from pytest_vgate.process import ProcessResult, run_git
from pytest_vgate.process.regular import kind_of, open_regular
from pytest_vgate.verdict import ToolRecord

FINGERPRINT_VERSION = 2  # 2: the content of the files a check names is part of it
NOT_A_GIT_TREE = "not a git tree"

# Untracked paths that running checks creates on its own (bytecode, tool caches, our
# ledger). Counting them would make every second run look like "a different tree".
DERIVED_PARTS = frozenset(
    {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis", ".vgate"}
)
DERIVED_SUFFIXES = (".pyc", ".pyo")
# Files above this size are identified by size and mtime instead of their bytes.
CONTENT_HASH_LIMIT = 16 << 20
_GIT_TIMEOUT = 60.0
# Hooks never run from our git calls (a post-checkout hook must not fire in a session).
GIT_SAFE = ("-c", "core.hooksPath=/dev/null", "-c", "core.quotePath=off")
UNTRACKED = ("ls-files", "--others", "--exclude-standard", "-z", "--")


def _canonical(data: Any) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def fingerprint(gate: Gate, tools: Sequence[ToolRecord] = (), content: str = "") -> str:
    """sha256 of the check's identity: what runs, where, with what, and what passes.

    ``content`` is ``content_digest`` of the tree the check ran on: the bytes of the files
    its argv names and of its overlay, so a red recorded with other test content does not
    prove today's check. Not the claim (``claim_hash`` tracks it separately, so a changed
    claim is told apart from a changed check), not the timeout, the red policy or the
    staleness keys, and no absolute path: a base worktree and the current tree must agree.
    """
    key = (id(gate), tuple(tools), content)
    cached = _FINGERPRINTS.get(key)
    if cached is not None and cached[0] is gate:
        return cached[1]
    digest = _fingerprint(gate, key[1], content)
    if len(_FINGERPRINTS) >= _FINGERPRINTS_KEPT:
        _FINGERPRINTS.clear()
    _FINGERPRINTS[key] = (gate, digest)
    return digest


# Every run of a gate in a session has the same fingerprint: worked out once per gate
# object (kept alive by the entry, so its id is not reused), tools and content.
_FINGERPRINTS: dict[tuple[int, tuple[ToolRecord, ...], str], tuple[Gate, str]] = {}
_FINGERPRINTS_KEPT = 8192


def _fingerprint(gate: Gate, tools: tuple[ToolRecord, ...], content: str) -> str:
    by_id = {t.id: t.sha256 for t in tools}
    declared = sorted(set(gate.tools) | set(by_id))
    identity = {
        "v": FINGERPRINT_VERSION,
        "type": gate.type.value,
        "argv": list(gate.argv),
        "expect": sorted(set(gate.expect)),
        "cwd": _posix(gate.cwd),
        "env": {
            "pass": sorted(set(gate.env.pass_names)),
            "set": sorted([k, v] for k, v in gate.env.set_values),
        },
        "tools": [[name, by_id.get(name, "")] for name in declared],
        "overlay": sorted(gate.overlay),
        "verifiers": list(gate.verifiers),
        "content": content,
    }
    return hashlib.sha256(_canonical(identity)).hexdigest()


@functools.lru_cache(maxsize=1024)
def _posix(folder: str) -> str:
    """A gate's cwd as the fingerprint spells it (gates of a file share a few)."""
    return Path(folder).as_posix()


@functools.lru_cache(maxsize=4096)
def claim_hash(claim: str) -> str:
    """sha256 of the claim text with surrounding whitespace and line endings normalised."""
    text = "\n".join(line.rstrip() for line in claim.strip().splitlines())
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class TreeState(Jsonable):
    """The tree a check ran on: commit plus a digest of uncommitted changes.

    ``dirty`` is "" for a clean tree. Outside git, ``commit`` is None and ``is_git`` False;
    such trees are all equal, so ledger evidence can never prove a gate there.
    """

    commit: str | None
    dirty: str
    label: str
    is_git: bool = True
    repo: str | None = None  # the repository's identity: its root commit

    @property
    def key(self) -> str:
        if not self.is_git:
            return "nogit"
        return f"git:{self.commit or 'unborn'}:{self.dirty}"


NO_GIT = TreeState(commit=None, dirty="", label=NOT_A_GIT_TREE, is_git=False)


def _git(args: Sequence[str], cwd: Path, timeout: float = _GIT_TIMEOUT) -> ProcessResult:
    return run_git([*GIT_SAFE, *args], cwd=cwd, timeout=timeout)


def git_paths(args: Sequence[str], cwd: Path, timeout: float = _GIT_TIMEOUT) -> list[str] | None:
    """The NUL-separated paths a ``-z`` git listing prints; None when git fails."""
    result = _git(args, cwd, timeout)
    if result.exit_code != 0:
        return None
    return [p for p in result.stdout.split("\0") if p]


def _our_temp_prefix(top_real: Path) -> str | None:
    """With the temp dir inside the repository (``TMPDIR=$PWD/tmp``), the relative prefix
    of what pytest-vgate makes there (``vgate-*``: check cells, base worktrees, coverage
    folders, any session's): scratch, not the tree under test. Counted, a session running
    next to another would see a different tree, and a red there would "prove" a check
    whose code never changed."""
    real = Path(os.path.realpath(tempfile.gettempdir()))
    if real != top_real and top_real not in real.parents:
        return None
    inside = real.relative_to(top_real).as_posix()
    return "vgate-" if inside == "." else f"{inside}/vgate-"


def _is_derived(rel: str, excluded: Iterable[str]) -> bool:
    parts = rel.split("/")
    if DERIVED_PARTS.intersection(parts) or rel.endswith(DERIVED_SUFFIXES):
        return True
    return is_left_out(rel, excluded)


def left_out_below(paths: Iterable[str | os.PathLike[str]], top: str | Path) -> tuple[str, ...]:
    """``paths`` that lie below ``top`` (symlinks followed), as POSIX paths relative to it:
    what a tree's identity and its change leave out (the session's own files, xdist's
    copies of pytest in a worker's checkout)."""
    top_real = Path(os.path.realpath(top))
    found = []
    for path in paths:
        real = Path(os.path.realpath(path))
        if top_real in real.parents:
            found.append(real.relative_to(top_real).as_posix())
    return tuple(found)


def is_left_out(rel: str, excluded: Iterable[str]) -> bool:
    """Whether ``rel`` is one of ``excluded`` (``left_out_below``) or lies below one."""
    return any(rel == ex or rel.startswith(ex + "/") for ex in excluded)


def _file_token(path: Path) -> bytes:
    """What a working-tree path holds: kind, executable bit and content (or its absence).

    Only a regular file is opened; a named pipe, socket or device counts by its kind
    alone (opening one could block forever or read without end).
    """
    try:
        st = path.lstat()
    except FileNotFoundError:
        return b"deleted"
    except OSError as exc:
        return f"unreadable:{exc.errno}".encode()
    if stat.S_ISLNK(st.st_mode):
        return b"link:" + os.fsencode(os.readlink(path))
    if stat.S_ISDIR(st.st_mode):
        return b"dir"  # a submodule or a nested repository: its own state is not ours
    if not stat.S_ISREG(st.st_mode):
        return b"special:" + kind_of(st.st_mode).encode()
    head = b"x" if st.st_mode & 0o111 else b"-"
    if st.st_size > CONTENT_HASH_LIMIT:
        return head + f"big:{st.st_size}:{st.st_mtime_ns}".encode()
    key = (os.fspath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    known = _DIGESTS.get(key)
    if known is not None:
        return head + known
    settled = time.time_ns() - st.st_ctime_ns > _SETTLED_NS  # no write can share its ctime
    digest = hashlib.sha256()
    try:
        with os.fdopen(open_regular(path), "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
    except OSError as exc:
        return f"unreadable:{exc.errno}".encode()
    if settled:
        if len(_DIGESTS) >= _DIGESTS_KEPT:
            _DIGESTS.clear()
        _DIGESTS[key] = digest.hexdigest().encode()
    return head + digest.hexdigest().encode()


# A file's digest by its stat (a gate's check file is digested on both trees for every gate
# and run): any write moves its ctime, which no one can set back. Kept only for a file whose
# last change is older than the file system's clock tick, so that no second write of the
# same size can carry the same times.
_DIGESTS: dict[tuple[str, int, int, int, int, int], bytes] = {}
_DIGESTS_KEPT = 8192
_SETTLED_NS = 50_000_000


@dataclass(frozen=True)
class Listing:
    """What git lists of a work tree, once per session: its top folder, HEAD (None before
    the first commit), the paths that differ from HEAD (before it: the index's) and the
    untracked files it does not ignore. Taken before any check ran."""

    top: Path
    commit: str | None
    changed: tuple[str, ...]
    untracked: tuple[str, ...]


def list_tree(root: Path, *, top: Path | None = None, commit: str | None = None) -> Listing | None:
    """The work tree holding ``root`` as git lists it; None outside git (or git failing).
    ``top`` and ``commit`` are asked of git unless the caller knows them (a worktree it
    checked out)."""
    if top is None:
        if not Path(root).is_dir():
            return None
        found = _git(["rev-parse", "--show-toplevel"], root)
        if found.exit_code != 0 or not found.stdout.strip():
            return None
        top = Path(found.stdout.strip())
        head = _git(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], top)
        commit = head.stdout.strip() if head.exit_code == 0 and head.stdout.strip() else None
    if commit:
        changed = git_paths(["diff", "HEAD", "--name-only", "-z", "--no-renames", "--"], top)
    else:  # no commit yet: everything in the index is new
        changed = git_paths(["ls-files", "-z", "--"], top)
    untracked = git_paths(UNTRACKED, top)
    if changed is None or untracked is None:
        return None
    return Listing(top, commit, tuple(changed), tuple(untracked))


def tree_state(
    root: Path, *, exclude: Sequence[Path] = (), listing: Listing | None = None
) -> TreeState:
    """Identify the git tree holding ``root``; never raises (no git means "not a git tree").

    The dirty digest covers, over the whole repository, every path that differs from HEAD
    (``git diff HEAD --name-only``) and every untracked, non-ignored file, by name, kind,
    executable bit and current bytes: the same information as ``git diff HEAD --binary``
    plus the untracked files, without piping a huge diff. Bytecode, tool caches, ``.vgate``
    and the ``exclude`` paths (e.g. a ledger kept elsewhere) are left out. ``listing``:
    the tree as ``list_tree`` gave it, when the caller has it.
    """
    listing = listing if listing is not None else list_tree(root)
    if listing is None:
        return NO_GIT
    top, commit = listing.top, listing.commit
    top_real = Path(os.path.realpath(top))
    excluded = left_out_below(exclude, top_real)
    ours = _our_temp_prefix(top_real)
    paths = sorted(
        p
        for p in {*listing.changed, *listing.untracked}
        if not _is_derived(p, excluded) and not (ours is not None and p.startswith(ours))
    )
    short = commit[:7] if commit else "unborn"
    repo = repository_id(top) if commit else None
    if not paths:
        return TreeState(commit=commit, dirty="", label=short, repo=repo)
    digest = hashlib.sha256()
    for rel in paths:
        digest.update(rel.encode("utf-8", "surrogateescape") + b"\0")
        digest.update(_file_token(top / rel) + b"\0")
    dirty = digest.hexdigest()
    return TreeState(commit=commit, dirty=dirty, label=f"{short}+dirty:{dirty[:4]}", repo=repo)


def repository_id(top: Path) -> str | None:
    """The repository's identity: its root commit (the smallest, when history has several).

    A shallow clone's boundary commits look parentless but are no roots: they move with
    every checkout. When no real root is reachable the identity is unknown (None), and
    records are bound by the commits they name alone (``proof.bind_records``).
    """
    roots = _git(["rev-list", "--max-parents=0", "HEAD"], top)
    found = sorted(roots.stdout.split()) if roots.exit_code == 0 else []
    boundary = _shallow_boundary(top)
    real = [commit for commit in found if commit not in boundary]
    return real[0] if real else None


def _shallow_boundary(top: Path) -> set[str]:
    """The commits a shallow clone cut history at (``$GIT_DIR/shallow``); empty if none."""
    where = _git(["rev-parse", "--git-path", "shallow"], top)
    if where.exit_code != 0 or not where.stdout.strip():
        return set()
    path = Path(where.stdout.strip())
    try:
        return set((path if path.is_absolute() else top / path).read_text().split())
    except (OSError, UnicodeDecodeError):
        return set()


def commits_here(top: Path, commits: Iterable[str]) -> tuple[set[str], set[str]] | None:
    """Which of ``commits`` the repository at ``top`` has, and which may be a root of it:
    parentless or, in a shallow clone, missing or at its boundary (what lies beyond cannot
    be seen from here); None when git cannot say."""
    wanted = {c for c in commits if c and all(ch in "0123456789abcdef" for ch in c)}
    if not wanted:
        return set(), set()
    listed = _git(["rev-list", "--no-walk", "--parents", "--ignore-missing", *sorted(wanted)], top)
    if listed.exit_code != 0:
        return None
    lines = [line.split() for line in listed.stdout.splitlines()]
    here, boundary = {line[0] for line in lines}, _shallow_boundary(top)
    unseen = ((wanted - here) | boundary) & wanted if boundary else set()
    return here, {line[0] for line in lines if len(line) == 1} | unseen


def named_files(gate: Gate, root: Path) -> list[str]:
    """The files (or folders) below ``root`` that the check's argv names, relative to root.

    A token counts when, resolved against the gate's cwd (``path::node`` as ``path``), it
    names an existing path inside the root other than the root itself. A word of any
    length or content may be a program (``python -c ...``): one that no file system would
    take as a name (too long, a NUL) names no file, it never stops the run.
    """
    tokens = [
        token
        for token in gate.argv[1:]
        if token and not token.startswith("-") and "\n" not in token
    ]
    if not tokens:  # e.g. `true`, `make`: nothing to resolve
        return []
    root_real = Path(os.path.realpath(root))
    cwd = root / gate.cwd
    found: dict[str, None] = {}
    for token in tokens:
        path = token.split("::", 1)[0]
        try:
            real = Path(os.path.realpath(cwd / path))
        except (OSError, ValueError):
            continue
        # os.path.exists, not Path.exists: it answers False for ENAMETOOLONG too.
        if real == root_real or root_real not in real.parents or not os.path.exists(real):
            continue
        found[real.relative_to(root_real).as_posix()] = None
    return list(found)


def content_digest(gate: Gate, root: Path) -> str:
    """sha256 over the files the check names and its overlay, as they are below ``root``.

    Folders are walked (bytecode and caches left out); a named path that is missing on
    this tree is recorded as missing. "" when the check names no file and has no overlay.
    """
    rels = [*named_files(gate, root), *(p.rstrip("/") for p in gate.overlay)]
    if not rels:
        return ""
    root_real = Path(os.path.realpath(root))
    digest = hashlib.sha256(b"content-v1\0")
    for rel in sorted(set(rels)):
        top = root_real / rel
        paths = [top]
        if top.is_dir() and not top.is_symlink():
            paths = sorted(
                p
                for p in top.rglob("*")
                if not p.is_dir() and not _is_derived(p.relative_to(root_real).as_posix(), ())
            )
        for path in paths:
            digest.update(path.relative_to(root_real).as_posix().encode("utf-8", "surrogateescape"))
            digest.update(b"\0" + _file_token(path) + b"\0")
    return digest.hexdigest()


def inputs_digest(root: Path, patterns: Sequence[str]) -> str:
    """sha256 over the files the gate's ``inputs`` globs match, by relative path and bytes.

    "" when the gate declares no inputs. Matches outside ``root`` (``..``, symlinks out)
    are not read. A pattern that matches nothing still yields a digest, so adding a
    matching file later changes it.
    """
    if not patterns:
        return ""
    root = Path(root)
    root_real = Path(os.path.realpath(root))
    found: set[str] = set()
    for pattern in patterns:
        if not pattern or Path(pattern).is_absolute():
            continue
        try:
            matches = list(root.glob(pattern))
        except (OSError, ValueError):
            continue
        for match in matches:
            real = Path(os.path.realpath(match))
            if root_real not in real.parents or not real.is_file():
                continue
            found.add(match.relative_to(root).as_posix())
    digest = hashlib.sha256(b"inputs-v1\0")
    for rel in sorted(found):
        digest.update(rel.encode("utf-8", "surrogateescape") + b"\0")
        digest.update(_file_token(root / rel) + b"\0")
    return digest.hexdigest()
