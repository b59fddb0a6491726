"""Tool grounding: resolve each declared tool once, hash its bytes, recheck before each run.

Naming a tool is not grounding: the inventory decides which file a tool id means and what
its bytes hash to, and :meth:`ToolInventory.verify` confirms them right before each run
(docs/tools.md). Core module: never imports pytest.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shlex
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

from pytest_vgate.errors import VgateError
from pytest_vgate.jsonable import Jsonable, StrEnum
from pytest_vgate.process.cell import new_cell, remove_tree
from pytest_vgate.verdict import Mode, ToolRecord

TOOLCHAIN_DIRNAME = ".toolchain"
# Names that mean "the session's Python" unless .toolchain/bin pins another: a check's
# `python` must import what the session imports, not whatever `python` PATH finds first.
SESSION_PYTHON_NAMES = ("python", "python3")
# Words a shell runs itself: no program of that name exists, so a check starting with one
# (`cd tests && pytest`) is an authoring mistake, not a missing install.
SHELL_BUILTINS = frozenset(
    ("cd", "source", "export", "set", "unset", "alias", "eval", "exec", "pushd", "popd")
)
_BUILTIN_HINT = (
    " ({0!r} is a shell builtin, not a program: a check runs without a shell; set the "
    "gate's `cwd` key, or write `sh -c '...'` and declare `sh`)"
)
HASH_CHUNK = 1 << 20  # bytes read per step while hashing
# A stat identity is trusted only when its ctime is older than this window before it was
# observed: a write within the same filesystem timestamp tick (coarse kernel clock, 1-2 s
# on ext3/HFS+/FAT/some NFS) could leave every stat field unchanged ("racy git").
RACY_WINDOW_NS = 3_000_000_000
_HASH_ATTEMPTS = 3


def toolchain_bin(root: Path) -> Path:
    """Where a project pins its tools: ``<root>/.toolchain/bin`` (first on a check's PATH)."""
    return Path(root).absolute() / TOOLCHAIN_DIRNAME / "bin"


def pinned_tools(entries: Iterable[ToolEntry]) -> Path | None:
    """A private folder for the front of a check's ``PATH`` that maps each found tool id
    to its selected path (a two-line ``sh`` script that execs it).

    A check that starts a declared tool through another program (``sh -c``, ``env``, a
    script, a Makefile) then runs the identity the inventory holds and rechecks, never
    a file that appeared in ``.toolchain/bin`` or earlier on ``PATH`` during the session.
    None when there is nothing to map. Raises OSError if the folder cannot be made.

    One folder per set of tools serves this process's checks (making and removing one per
    check was most of a trivial gate's cost). It lives in a cell (``cell.py``: a session
    killed meanwhile leaves nothing for good), is read back before every use, and one that
    does not hold exactly its scripts (an earlier check wrote there: its user can) is
    replaced by a new one.
    """
    shims = {e.id: _shim(e.path) for e in entries if e.found and e.path and "/" not in e.id}
    if not shims:
        return None
    key = tuple(sorted(shims.items()))
    with _SHIMS_LOCK[0]:
        cell = _SHIMS.pop(key, None)
        if cell is not None and _intact(cell / "bin", shims):
            _SHIMS[key] = cell
            return cell / "bin"
        if cell is not None:
            remove_tree(cell)
        cell = new_cell("vgate-tools-", None)
        try:
            folder = cell / "bin"
            folder.mkdir(0o700)
            for name, text in shims.items():
                (folder / name).write_bytes(text)
                (folder / name).chmod(0o500)
            folder.chmod(0o500)
        except BaseException:
            remove_tree(cell)
            raise
        _SHIMS[key] = cell
        return folder


def _shim(path: str | None) -> bytes:
    return f'#!/bin/sh\nexec {shlex.quote(path or "")} "$@"\n'.encode()


def _intact(folder: Path, shims: Mapping[str, bytes]) -> bool:
    """Whether ``folder`` is our real directory holding exactly ``shims``, each a regular
    file of ours, mode 0500, with its text (read through descriptors, no symlink followed)."""
    fds: list[int] = []
    try:
        fds.append(os.open(folder, _OPEN_DIR))
        if not _ours(os.fstat(fds[0]), stat.S_ISDIR) or sorted(os.listdir(fds[0])) != sorted(shims):
            return False
        for name, text in shims.items():
            fds.append(os.open(name, os.O_RDONLY | _NOFOLLOW, dir_fd=fds[0]))
            if not _ours(os.fstat(fds[-1]), stat.S_ISREG) or os.read(fds[-1], 65536) != text:
                return False
        return True
    except OSError:
        return False
    finally:
        for fd in fds:
            os.close(fd)


def _ours(st: os.stat_result, kind: Callable[[int], bool]) -> bool:
    return kind(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o500 and st.st_uid == os.getuid()


_NOFOLLOW = os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW
_SHIMS: dict[tuple[tuple[str, bytes], ...], Path] = {}  # this process's, by their scripts
_SHIMS_LOCK = [threading.Lock()]


def remove_shims() -> None:
    """Remove this process's shim folders (at a session's end, and at exit)."""
    for cell in _SHIMS.values():
        remove_tree(cell)
    _SHIMS.clear()


def _forget_shims() -> None:
    """In a forked child: the parent's folders stay the parent's."""
    _SHIMS.clear()
    _SHIMS_LOCK[0] = threading.Lock()


atexit.register(remove_shims)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_shims)


class ToolSource(StrEnum):
    """Where a tool id was found."""

    TOOLCHAIN = "toolchain"  # <root>/.toolchain/bin/<id>
    PATH = "path"  # the caller's PATH
    EXPLICIT = "explicit"  # the id is itself a path (contains "/")
    SESSION = "session"  # python/python3: the interpreter running the pytest session


class ToolStatus(StrEnum):
    """Outcome of the recheck before an execution."""

    OK = "ok"
    UNAVAILABLE = "unavailable"  # never found (or unreadable) when the inventory was taken
    MOVED = "moved"  # bytes changed, file replaced or removed since the inventory


class FileIdentity(NamedTuple):
    """What ``stat`` says about the file behind a path (symlinks followed)."""

    dev: int
    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int

    @classmethod
    def of(cls, st: os.stat_result) -> FileIdentity:
        return cls(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class UnknownToolError(VgateError, LookupError):
    """A tool id that is not in the inventory: an authoring defect, not a missing tool."""


class ToolUseError(VgateError):
    """A tool that may not, or could not, be run; ``mode`` is the verdict it leads to."""

    mode = Mode.ERROR


class UndeclaredToolError(ToolUseError, ValueError):
    """A program that is not among the tools declared for it: a gate's check (a collection
    error) or a verifier's ``ctx.run`` (the verifier fails with ``error`` even if it
    catches this)."""

    mode = Mode.ERROR

    def __init__(self, program: str, declared: Sequence[str], message: str = "") -> None:
        self.program = program
        self.declared = tuple(declared)
        listed = ", ".join(repr(t) for t in self.declared)
        super().__init__(
            message
            or f"the check runs {program!r}, which is not among its declared tools [{listed}]; "
            f"add {program!r} to the gate's `tools`, or start the check with one of them"
        )

    def __reduce__(self) -> tuple[Any, ...]:  # picklable despite the 3-argument __init__
        return (type(self), (self.program, self.declared, str(self)))


class ToolUnavailableError(ToolUseError):
    """The tool was found nowhere (``unavailable`` when a verifier lets it escape)."""

    mode = Mode.UNAVAILABLE


class ToolMovedError(ToolUseError):
    """The tool's bytes changed since the inventory; it was not run. A verifier fails with
    ``sandbox`` even if it catches this."""

    mode = Mode.SANDBOX


@dataclass(frozen=True)
class ToolEntry(Jsonable):
    """One resolved tool id. ``path`` is the selected path (not resolved through symlinks);
    ``sha256`` and ``identity`` describe the file behind it. ``path`` is None when the id
    was found nowhere; ``sha256`` is None also when the file could not be read."""

    id: str
    path: str | None = None
    sha256: str | None = None
    identity: FileIdentity | None = None
    source: ToolSource | None = None
    observed_ns: int = 0  # wall clock (time.time_ns) just before identity was taken
    detail: str = ""  # why it was not found, when it was not

    @property
    def found(self) -> bool:
        return self.path is not None and self.sha256 is not None

    def record(self) -> ToolRecord:
        """The evidence record of this tool; only for a found entry."""
        if self.path is None or self.sha256 is None:
            raise ValueError(f"tool {self.id!r} was not found; it has no record")
        return ToolRecord(id=self.id, path=self.path, sha256=self.sha256)


@dataclass(frozen=True)
class ToolCheck:
    """The recheck of one tool right before it runs; only ``ok`` may run it."""

    status: ToolStatus
    entry: ToolEntry
    expected_sha256: str | None
    found_sha256: str | None
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status is ToolStatus.OK

    @property
    def mode(self) -> Mode | None:
        """The verdict mode a failed recheck becomes (None when ok)."""
        if self.status is ToolStatus.UNAVAILABLE:
            return Mode.UNAVAILABLE
        if self.status is ToolStatus.MOVED:
            return Mode.SANDBOX
        return None


def _is_runnable(path: str) -> bool:
    """A regular file (symlinks followed) that we may execute."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and os.access(path, os.X_OK)


def _hash(path: str) -> tuple[str, FileIdentity, int]:
    """Stream the file into sha256; return it with the identity of exactly those bytes.

    The identity is read from the open descriptor before and after reading; a file that
    changes while it is hashed is read again, and refused after a few attempts."""
    for _ in range(_HASH_ATTEMPTS):
        observed = time.time_ns()
        with open(path, "rb") as fh:
            before = FileIdentity.of(os.fstat(fh.fileno()))
            digest = hashlib.sha256()
            for chunk in iter(lambda: fh.read(HASH_CHUNK), b""):
                digest.update(chunk)
            after = FileIdentity.of(os.fstat(fh.fileno()))
        if before == after:
            return digest.hexdigest(), after, observed
    raise OSError(f"{path} kept changing while it was hashed")


def _entry_for(tool_id: str, path: str, source: ToolSource) -> ToolEntry:
    try:
        sha, ident, observed = _hash(path)
    except OSError as exc:
        return ToolEntry(
            tool_id, path, source=source, detail=f"cannot read {path} to hash it: {exc}"
        )
    return ToolEntry(tool_id, path, sha, ident, source, observed)


def _search_path(name: str, path_env: str) -> str | None:
    """The first regular executable ``name`` on ``path_env``, as an absolute path.

    Like execvp: an empty entry means the current directory. Relative entries are made
    absolute against the caller's cwd now, because the check runs in another directory."""
    for entry in path_env.split(os.pathsep):
        folder = entry or os.curdir
        candidate = os.path.join(folder, name)
        if _is_runnable(candidate):
            return candidate if os.path.isabs(candidate) else os.path.join(os.getcwd(), candidate)
    return None


def resolve_tool(
    tool_id: str, *, root: Path, path_env: str | None, cwd: Path | None = None
) -> ToolEntry:
    """Resolve and hash one tool id; never raises (problems land in ``entry.detail``).

    An id with "/" is a path (relative to ``cwd``, else ``root``). A name is looked up in
    ``<root>/.toolchain/bin``, then ``python``/``python3`` mean the session's interpreter
    (``sys.executable``), then ``path_env`` (None or "": no PATH search). A name
    present in ``.toolchain/bin`` but not runnable there is not looked up on PATH: that
    would silently run a different tool than the one pinned."""
    try:
        if not tool_id or "\0" in tool_id or tool_id in (".", ".."):
            return ToolEntry(tool_id, detail=f"{tool_id!r} is not a valid tool id")
        if "/" in tool_id:
            base = Path(cwd if cwd is not None else root).absolute()
            path = str(base / tool_id)
            if not _is_runnable(path):
                return ToolEntry(
                    tool_id,
                    source=ToolSource.EXPLICIT,
                    detail=f"{path} is not an executable regular file",
                )
            return _entry_for(tool_id, path, ToolSource.EXPLICIT)
        pinned = str(toolchain_bin(root) / tool_id)
        if os.path.lexists(pinned):
            if _is_runnable(pinned):
                return _entry_for(tool_id, pinned, ToolSource.TOOLCHAIN)
            return ToolEntry(
                tool_id,
                detail=(
                    f"{pinned} exists but is not an executable regular file (missing x bit, "
                    "broken symlink or a directory); fix or remove it. PATH is not searched "
                    "for a name pinned in .toolchain/bin"
                ),
            )
        if tool_id in SESSION_PYTHON_NAMES and sys.executable and _is_runnable(sys.executable):
            return _entry_for(tool_id, sys.executable, ToolSource.SESSION)
        found = _search_path(tool_id, path_env) if path_env else None
        if found is None:
            where = f"{toolchain_bin(root)} or PATH={path_env!r}" if path_env else pinned
            hint = _BUILTIN_HINT.format(tool_id) if tool_id in SHELL_BUILTINS else ""
            return ToolEntry(tool_id, detail=f"tool {tool_id!r} was not found in {where}{hint}")
        return _entry_for(tool_id, found, ToolSource.PATH)
    except (OSError, ValueError) as exc:  # odd ids or filesystems: a non-result, not a crash
        return ToolEntry(tool_id, detail=f"cannot resolve tool {tool_id!r}: {exc}")


def argv0_tool(argv0: str, declared: Sequence[str]) -> str:
    """The tool id a check's argv[0] runs. With declared tools it must be one of them
    (exact id, e.g. ``python`` in ``[python]``), else :class:`UndeclaredToolError`; with
    none declared argv[0] itself is the id."""
    if not argv0:
        raise ValueError("an empty argv[0] runs no tool")
    if not declared or argv0 in declared:
        return argv0
    raise UndeclaredToolError(argv0, declared)


def declared_tool_error(argv: Sequence[str], declared: Sequence[str]) -> str | None:
    """The collection-error message for a check whose argv[0] is not a declared tool,
    or None when it is fine (no tools declared, or an empty check, which is ``blank``)."""
    if not argv or not argv[0]:
        return None
    try:
        argv0_tool(argv[0], declared)
    except UndeclaredToolError as exc:
        return str(exc)
    return None


class ToolInventory:
    """The session's resolved tools: built once (by the xdist controller), shipped to
    workers with :meth:`to_dict`, and rechecked with :meth:`verify` before every run."""

    def __init__(self, entries: Iterable[ToolEntry] = ()) -> None:
        self._entries: dict[str, ToolEntry] = {}
        for entry in entries:
            self._entries.setdefault(entry.id, entry)
        self._hash_count = 0

    @classmethod
    def build(
        cls, ids: Iterable[str], *, root: Path, path_env: str | None, cwd: Path | None = None
    ) -> ToolInventory:
        """Resolve and hash each distinct id once (relative path ids against ``cwd``/root)."""
        inventory = cls()
        for tool_id in ids:
            if tool_id not in inventory._entries:
                entry = resolve_tool(tool_id, root=root, path_env=path_env, cwd=cwd)
                inventory._entries[tool_id] = entry
                inventory._hash_count += entry.path is not None
        return inventory

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(self._entries)

    @property
    def hash_count(self) -> int:
        """How many times this inventory read a tool's bytes to hash them (in this process)."""
        return self._hash_count

    def get(self, tool_id: str) -> ToolEntry | None:
        return self._entries.get(tool_id)

    def __contains__(self, tool_id: object) -> bool:
        return tool_id in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def records(self) -> tuple[ToolRecord, ...]:
        """Evidence records of the found tools, in inventory order."""
        return tuple(e.record() for e in self._entries.values() if e.found)

    def summary_lines(self) -> list[str]:
        """One line per tool, e.g. for ``pytest_report_header`` in ``-v`` mode."""
        lines = []
        for e in self._entries.values():
            if e.found:
                lines.append(f"{e.id}: {e.path} sha256:{e.sha256} ({e.source})")
            else:
                lines.append(f"{e.id}: unavailable ({e.detail})")
        return lines

    def to_dict(self) -> dict[str, Any]:
        return {"tools": [e.to_dict() for e in self._entries.values()]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolInventory:
        """Rebuild without touching the filesystem: workers never re-resolve."""
        return cls(ToolEntry.from_dict(d) for d in data.get("tools", ()))

    def verify(self, tool_id: str) -> ToolCheck:
        """Recheck a tool immediately before running it.

        An unchanged (and not racily recent) stat identity is ok without reading the file;
        otherwise the bytes are re-hashed: the same sha256 is ok (and the identity is
        updated), anything else is ``moved``. Raises :class:`UnknownToolError` for an id
        the inventory never saw."""
        entry = self._entries.get(tool_id)
        if entry is None:
            known = ", ".join(repr(i) for i in self._entries) or "none"
            raise UnknownToolError(
                f"tool {tool_id!r} is not in the tool inventory (known: {known}); "
                "declare it in the gate's or verifier's `tools`"
            )
        if entry.path is None or entry.sha256 is None:
            detail = entry.detail or f"tool {tool_id!r} was not found"
            return ToolCheck(ToolStatus.UNAVAILABLE, entry, entry.sha256, None, detail)
        path, expected = entry.path, entry.sha256
        try:
            now = FileIdentity.of(os.stat(path))
        except FileNotFoundError:
            return self._moved(entry, None, f"{path} was removed after the inventory was taken")
        except OSError as exc:
            return self._moved(entry, None, f"cannot stat {path}: {exc}")
        trusted = now.ctime_ns + RACY_WINDOW_NS < entry.observed_ns
        if now == entry.identity and trusted:
            return ToolCheck(ToolStatus.OK, entry, expected, expected)
        if not _is_runnable(path):
            return self._moved(entry, None, f"{path} is no longer an executable regular file")
        self._hash_count += 1
        try:
            found, ident, observed = _hash(path)
        except OSError as exc:
            return self._moved(entry, None, f"cannot read {path} to recheck it: {exc}")
        if found != expected:
            return self._moved(entry, found, f"bytes of {path} changed")
        fresh = replace(entry, identity=ident, observed_ns=observed)
        self._entries[tool_id] = fresh
        return ToolCheck(ToolStatus.OK, fresh, expected, found)

    @staticmethod
    def _moved(entry: ToolEntry, found: str | None, what: str) -> ToolCheck:
        seen = found if found is not None else "nothing"
        message = f"{what}: inventory sha256 {entry.sha256}, found {seen}"
        return ToolCheck(ToolStatus.MOVED, entry, entry.sha256, found, message)
