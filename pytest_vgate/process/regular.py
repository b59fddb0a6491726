"""Open only regular files: a named pipe, socket or device must never hang a session.

``open()`` of a FIFO blocks until a writer appears, a read of ``/dev/zero`` never ends,
and a write to a FIFO blocks once its buffer is full. Every file the core reads or
appends to on the user's behalf (the ledger, tree digests, the gates file) goes through
``open_regular``: the path is checked before it is opened, opened without blocking, and
checked again on the open descriptor (the path may have been swapped in between).
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from pathlib import Path

_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_KINDS = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISLNK, "a symbolic link"),
)


class NotRegularFile(OSError):
    """The path exists but is not a regular file; it was not read from or written to."""

    def __init__(self, path: Path | str, kind: str) -> None:
        super().__init__(errno.EINVAL, f"{path} is {kind}, not a regular file; not opened")
        self.path = Path(path)
        self.kind = kind

    def __str__(self) -> str:
        return str(self.strerror)

    def __reduce__(self) -> tuple[type[NotRegularFile], tuple[str, str]]:
        return NotRegularFile, (str(self.path), self.kind)


def kind_of(mode: int) -> str:
    """What a file of this ``st_mode`` is, in words ("a regular file" when it is one)."""
    if stat.S_ISREG(mode):
        return "a regular file"
    for test, name in _KINDS:
        if test(mode):
            return name
    return "a special file"


def open_regular(path: Path | str, flags: int = os.O_RDONLY, mode: int = 0o644) -> int:
    """``os.open`` that refuses anything but a regular file (``NotRegularFile``).

    Symlinks are followed, as ``open`` does; with ``os.O_CREAT`` a missing file is made.
    The returned descriptor is blocking again and close-on-exec.
    """
    try:
        before = os.stat(path)
    except FileNotFoundError:
        if not flags & os.O_CREAT:
            raise
    else:
        if not stat.S_ISREG(before.st_mode):
            raise NotRegularFile(path, kind_of(before.st_mode))
    fd = os.open(path, flags | _NONBLOCK | _CLOEXEC, mode)
    try:
        after = os.fstat(fd)
        if not stat.S_ISREG(after.st_mode):  # swapped after the check: still never read
            raise NotRegularFile(path, kind_of(after.st_mode))
        if _NONBLOCK:
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_all(fd: int) -> bytes:
    """Every byte left in an open file descriptor, read in 1 MiB steps."""
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def read_regular(path: Path | str) -> bytes:
    """All bytes of a regular file; ``NotRegularFile`` (an ``OSError``) for anything else."""
    fd = open_regular(path)
    try:
        return read_all(fd)
    finally:
        os.close(fd)
