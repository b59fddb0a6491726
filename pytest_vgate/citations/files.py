"""The root's files: an index built once, resolution that never leaves the root, and a
cache of each file (``source.SourceFile``) read once and shared by every citation.

Resolution refuses absolute paths, ``..`` escapes (checked lexically, before any
``stat``) and symlinks that lead out (``realpath`` + ``commonpath``) before a byte is
read.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pytest_vgate.citations.source import FileState, SourceFile, split_lines
from pytest_vgate.process.regular import NotRegularFile, kind_of, open_regular

MAX_BYTES = 5 * 1024 * 1024  # files over this are reported, not read
VCS_DIRS = frozenset({".git", ".hg", ".svn", ".bzr"})  # never read, whatever is cited
SNIFF_BYTES = 8192  # a NUL in these makes a file binary
SKIP_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", ".bzr", "node_modules", "__pycache__", ".venv", "venv",
        ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".hypothesis",
        ".eggs", ".cache", ".idea", ".vscode", ".vgate", "site-packages", ".direnv",
    }
)  # fmt: skip


@dataclass(frozen=True)
class Resolution:
    """Where a written path leads: a file inside the root, outside, a directory, or nothing."""

    rel: str | None = None  # root-relative posix path of an existing file inside the root
    outside: bool = False
    why_outside: str = ""
    is_dir: bool = False
    special: str = ""  # "a named pipe (FIFO)", ...: exists, is not a regular file
    vcs: str = ""  # the version-control folder the path lies in (".git")


def inside(path: str, root: str) -> bool:
    """Both absolute and normalized; True when ``path`` is ``root`` or below it."""
    try:
        return os.path.commonpath([root, path]) == root
    except ValueError:
        return False


class RootFiles:
    """The root's file index and file cache for one session."""

    def __init__(self, root: Path | str, *, max_bytes: int = MAX_BYTES) -> None:
        self.root = os.path.realpath(root)
        self.max_bytes = max_bytes
        self._files: dict[str, SourceFile] = {}
        self._by_name: dict[str, list[str]] | None = None
        self._resolved: dict[tuple[str, str], Resolution] = {}
        self._doc_dirs: dict[str, str] = {}
        self.index_source = ""  # "git" or "walk", once built
        self.loads = 0  # files read from disk (each once)

    # -- the index -----------------------------------------------------------------------

    def by_basename(self, name: str) -> list[str]:
        if self._by_name is None:
            self._by_name = {}
            for rel in self._list_files():
                self._by_name.setdefault(rel.rsplit("/", 1)[-1], []).append(rel)
        return self._by_name.get(name, [])

    def _list_files(self) -> list[str]:
        listed = _git_files(self.root)
        if listed is not None:
            self.index_source = "git"
            return listed
        self.index_source = "walk"
        return list(_walk_files(self.root))

    # -- resolution ----------------------------------------------------------------------

    def resolve(self, written: str, document_dir: Path | str | None) -> Resolution:
        doc_dir = "" if document_dir is None else str(document_dir)
        key = (doc_dir, written)
        cached = self._resolved.get(key)
        if cached is None:
            cached = self._resolved[key] = self._resolve(written, doc_dir)
        return cached

    def _real_doc_dir(self, doc_dir: str) -> str:
        real = self._doc_dirs.get(doc_dir)
        if real is None:
            real = self._doc_dirs[doc_dir] = os.path.realpath(doc_dir)
        return real

    def _resolve(self, written: str, doc_dir: str) -> Resolution:
        if os.path.isabs(written) or written.startswith(("~", "\\")):
            return Resolution(outside=True, why_outside="an absolute path")
        bases = [self._real_doc_dir(doc_dir)] if doc_dir else []
        bases.append(self.root)
        escapes = links_out = 0
        is_dir = False
        special = ""
        for base in dict.fromkeys(bases):
            candidate = os.path.normpath(os.path.join(base, written))
            if not inside(candidate, self.root):
                escapes += 1  # refused lexically: nothing outside is even stat'ed
                continue
            vcs = vcs_part(os.path.relpath(candidate, self.root))
            if vcs:
                return Resolution(vcs=vcs)  # refused lexically too: nothing in it is touched
            real = os.path.realpath(candidate)
            if not inside(real, self.root):
                links_out += 1
                continue
            vcs = vcs_part(os.path.relpath(real, self.root))
            if vcs:
                return Resolution(vcs=vcs)  # a symlink into the metadata
            kind = file_kind(real)
            if kind == "file":
                return Resolution(rel=os.path.relpath(candidate, self.root).replace(os.sep, "/"))
            is_dir = is_dir or kind == "dir"
            if kind not in ("file", "dir", ""):
                special = special or kind
        if links_out:
            return Resolution(outside=True, why_outside="a symlink that leads outside the root")
        if escapes == len(dict.fromkeys(bases)):
            return Resolution(outside=True, why_outside="a path that leaves the root")
        return Resolution(is_dir=is_dir, special=special)

    def inside_file(self, rel: str) -> bool:
        """A root-relative index entry that is a regular file inside the root after symlinks."""
        real = os.path.realpath(os.path.join(self.root, rel))
        return (
            inside(real, self.root)
            and not vcs_part(rel)
            and not vcs_part(os.path.relpath(real, self.root))
            and file_kind(real) == "file"
        )

    # -- file contents -------------------------------------------------------------------

    def load(self, rel: str) -> SourceFile:
        cached = self._files.get(rel)
        if cached is None:
            cached = self._files[rel] = self._read(rel)
        return cached

    def _read(self, rel: str) -> SourceFile:
        real = os.path.realpath(os.path.join(self.root, rel))
        if not inside(real, self.root):  # defence in depth: resolve() already refused it
            return SourceFile(rel, FileState.UNREADABLE)
        self.loads += 1
        try:
            data = read_regular(real, self.max_bytes)
        except NotRegularFile:
            return SourceFile(rel, FileState.UNREADABLE)
        except TooLarge as exc:
            return SourceFile(rel, FileState.TOO_LARGE, size=exc.size)
        except OSError:
            return SourceFile(rel, FileState.UNREADABLE)
        if b"\0" in data[:SNIFF_BYTES]:
            return SourceFile(rel, FileState.BINARY, size=len(data))
        text = data.decode("utf-8", errors="replace")
        if text.startswith("\ufeff"):
            text = text[1:]
        lines, starts = split_lines(text)
        return SourceFile(rel, FileState.OK, size=len(data), text=text, lines=lines, _starts=starts)


def file_kind(path: str) -> str:
    """``file``, ``dir``, a special file's description, or ``""`` when nothing is there.

    ``stat`` only: a named pipe is never opened to find out what it is.
    """
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return ""
    kind = kind_of(mode)
    return {"a regular file": "file", "a folder": "dir"}.get(kind, kind)


def vcs_part(rel: str) -> str:
    """The version-control folder (``.git``, ...) a root-relative path lies in, or ``""``."""
    parts = rel.replace(os.sep, "/").split("/")
    return next((p for p in parts if p in VCS_DIRS), "")


class TooLarge(OSError):
    def __init__(self, size: int) -> None:
        super().__init__(f"{size} bytes")
        self.size = size


def read_regular(path: str | os.PathLike[str], max_bytes: int) -> bytes:
    """The bytes of a regular file, at most ``max_bytes`` (``TooLarge`` beyond); anything
    else is ``NotRegularFile`` and never read (``pytest_vgate.process.regular``: checked before
    and after a non-blocking open)."""
    fd = open_regular(os.fspath(path))
    try:
        size = os.fstat(fd).st_size
        if size > max_bytes:
            raise TooLarge(size)
        chunks: list[bytes] = []
        total = 0
        while total <= max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > max_bytes:
            raise TooLarge(total)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _git_files(root: str) -> list[str] | None:
    """Tracked plus untracked-but-not-ignored files under ``root``; None when not a git tree."""
    try:
        from pytest_vgate.process import DEFAULT_CAPTURE_LIMIT, run_git

        result = run_git(
            ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root, timeout=60.0
        )
    except (OSError, ValueError):  # git cannot be run here: "use the walk" instead
        return None
    if result.exit_code != 0 or result.stdout_bytes > DEFAULT_CAPTURE_LIMIT:
        return None  # not a work tree, git missing, or output truncated
    return sorted({p for p in result.stdout.split("\0") if p and not vcs_part(p)})


def _walk_files(root: str) -> Iterator[str]:
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(
            d
            for d in dirs
            if d not in SKIP_DIRS
            and not d.endswith(".egg-info")
            and not os.path.exists(os.path.join(folder, d, "pyvenv.cfg"))
        )
        rel_folder = os.path.relpath(folder, root)
        for name in sorted(files):
            rel = name if rel_folder == "." else os.path.join(rel_folder, name)
            yield rel.replace(os.sep, "/")
