"""Who owns a check cell, so that the cells of a process that died are removed later.

A cell (``cell.py``) is removed by the process that made it, when its check ends or at
exit. A process killed with SIGKILL (a CI job's timeout) removes nothing, and its cells
stayed in the temp dir for good. So each cell has a sibling lock file, ``<cell>.lock``,
made with the cell and held (``flock``) by its process for the cell's life; the kernel
drops the lock when that process dies, however it died. The first cell a process makes
in a temp dir sweeps that dir: a cell whose lock is free, and whose lock file carries our
marker naming exactly that cell, is removed with its lock file. Anything else there --
a folder named like a cell without a lock file, a lock file without the marker, a
symlink, another user's files -- is never touched.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
from collections.abc import Callable
from pathlib import Path

LOCK_SUFFIX = ".lock"
MARKER = "pytest-vgate check cell v1"
_MARKER_MAX = 4096  # a marker is a line; a bigger lock file is not ours
_OPEN = os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)

_held: dict[str, tuple[int, int]] = {}  # cell -> (fd of its held lock, pid that made it)
_swept: set[str] = set()  # temp dirs this process swept


def hold(cell: Path) -> None:
    """Make and lock ``cell``'s lock file (``cell`` was just made; OSError if impossible)."""
    path = f"{cell}{LOCK_SUFFIX}"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | _OPEN, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # free: we just made it
        os.write(fd, json.dumps({"marker": MARKER, "cell": str(cell)}).encode())
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
    _held[str(cell)] = (fd, os.getpid())


def release(cell: Path) -> None:
    """Remove ``cell``'s lock file and let go of it (after the cell itself is gone). In a
    forked child: only close the inherited descriptor (the lock is the parent's)."""
    entry = _held.pop(str(cell), None)
    if entry is None:
        return
    fd, pid = entry
    if pid == os.getpid():
        with contextlib.suppress(OSError):
            os.unlink(f"{cell}{LOCK_SUFFIX}")
    os.close(fd)


def sweep_once(folder: str, remove: Callable[[Path], None]) -> list[Path]:
    """``sweep`` ``folder`` the first time this process makes a cell there (as spelled: a
    second spelling of the same folder sweeps it again, which is harmless)."""
    if folder in _swept:
        return []
    _swept.add(folder)
    return sweep(folder, remove)


def sweep(folder: str, remove: Callable[[Path], None]) -> list[Path]:
    """Remove (with ``remove``) the cells in ``folder`` whose process died; never raises.

    Ours: the lock file is a regular file we own, free, with our marker naming that very
    cell, and the cell is a real folder we own. Returns the cells removed."""
    removed: list[Path] = []
    try:
        entries = [e.name for e in os.scandir(folder)]
    except OSError:
        return removed
    for name in entries:
        if not (name.startswith("vgate-") and name.endswith(LOCK_SUFFIX)):
            continue
        lock = os.path.join(folder, name)
        cell = lock[: -len(LOCK_SUFFIX)]
        # This process's own cells need no exception: their locks are held here, and a
        # flock through another open of the file is refused even to the same process.
        with contextlib.suppress(OSError, ValueError):
            if _sweep_one(lock, cell, remove):
                removed.append(Path(cell))
    return removed


def _sweep_one(lock: str, cell: str, remove: Callable[[Path], None]) -> bool:
    fd = os.open(lock, os.O_RDWR | os.O_NONBLOCK | _OPEN)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            return False
        if st.st_size > _MARKER_MAX:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # its process is alive
        owner = json.loads(os.read(fd, _MARKER_MAX + 1) or b"null")
        if not isinstance(owner, dict) or owner.get("marker") != MARKER:
            return False  # not ours, or being made right now (the marker comes after)
        if os.path.realpath(str(owner.get("cell"))) != os.path.realpath(cell):
            return False
        try:
            cell_st = os.lstat(cell)
        except FileNotFoundError:
            cell_st = None  # the process died between removing the cell and its lock
        if cell_st is not None:
            if not stat.S_ISDIR(cell_st.st_mode) or cell_st.st_uid != os.geteuid():
                return False
            remove(Path(cell))
            if os.path.lexists(cell):
                return False  # could not: the lock file stays, a later sweep tries again
        os.unlink(lock)
        return cell_st is not None
    finally:
        os.close(fd)
