"""What a process run observed, and the bounded capture of its output.

Shared by both ways a check runs (a process group, or through a shepherd): one result type,
one capture, one reader, one spawn-failure classification.
"""

from __future__ import annotations

import errno
import os
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

from pytest_vgate.jsonable import Jsonable, StrEnum

DEFAULT_CAPTURE_LIMIT = 1 << 20  # bytes kept per stream (head + tail)
KILL_GRACE = 1.0  # seconds between SIGTERM and SIGKILL
DRAIN_GRACE = 1.0  # seconds to read the pipes after the group was killed
ABANDON_AFTER = 5.0  # seconds after SIGKILL before we stop waiting (stuck in the kernel)
CHUNK = 64 * 1024


class SpawnTarget(StrEnum):
    """What a spawn failed on."""

    PROGRAM = "program"  # the exec of argv[0]
    INTERPRETER = "interpreter"  # argv[0] exists but its #! interpreter does not
    CWD = "cwd"
    ARGV = "argv"  # rejected before spawning: empty, a string, NUL bytes, a bad env
    SYSTEM = "system"  # fork/pipe limits
    ISOLATION = "isolation"  # --vgate-isolation strict and no namespace here


@dataclass(frozen=True)
class ProcessResult(Jsonable):
    """What a process run observed. Exactly one of: exited, timed out, or failed to spawn."""

    argv: tuple[str, ...]
    exit_code: int | None  # returncode when it exited (negative: killed by signal N)
    stdout: str  # decoded with replacement; head + marker + tail when over the limit
    stderr: str
    stdout_bytes: int  # total bytes the process wrote, kept or not
    stderr_bytes: int
    duration: float
    timed_out: bool = False
    spawn_error: str | None = None  # e.g. "No such file or directory: 'frob'"
    spawn_errno: int | None = None  # errno of the spawn failure (ENOENT, EACCES, ...)
    spawn_target: SpawnTarget | None = None  # what the spawn failed on
    pid: int | None = None  # the main process (also its process group id)
    # What contained the run: "namespace" (private PID namespace and /proc), "contained"
    # (a subreaper shepherd: every descendant killed) or "group" (process group only).
    isolation: str = "group"

    @classmethod
    def captured(
        cls,
        argv: tuple[str, ...],
        out: Capture,
        err: Capture,
        *,
        start: float,
        exit_code: int | None,
        timed_out: bool,
        pid: int | None,
        isolation: str = "group",
    ) -> ProcessResult:
        """The result of a run that started: its two captured streams, timed from ``start``
        (monotonic) to now. Both ways a check runs (a process group, a shepherd) end here."""
        return cls(
            argv=argv,
            exit_code=None if timed_out else exit_code,
            stdout=out.text(),
            stderr=err.text(),
            stdout_bytes=out.total,
            stderr_bytes=err.total,
            duration=time.monotonic() - start,
            timed_out=timed_out,
            pid=pid,
            isolation=isolation,
        )

    @property
    def signal(self) -> int | None:
        return -self.exit_code if self.exit_code is not None and self.exit_code < 0 else None

    @property
    def program_not_found(self) -> bool:
        """argv[0] or its #! interpreter is not installed (mode ``unavailable``).

        False for every other spawn failure: a missing cwd is also ENOENT but is not this.
        """
        missing = self.spawn_errno in (errno.ENOENT, errno.ENOTDIR)
        return missing and self.spawn_target in (SpawnTarget.PROGRAM, SpawnTarget.INTERPRETER)


class Capture:
    """Keeps the first and the last ``limit // 2`` bytes of a stream and counts all of it."""

    def __init__(self, limit: int) -> None:
        self.half = max(limit, 0) // 2
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_len = 0
        self.total = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        room = self.half - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if not data or self.half == 0:
            return
        self.tail.append(data)
        self.tail_len += len(data)
        while self.tail and self.tail_len - len(self.tail[0]) >= self.half:
            self.tail_len -= len(self.tail.popleft())

    def text(self) -> str:
        tail = b"".join(self.tail)[-self.half :] if self.half else b""
        omitted = self.total - len(self.head) - len(tail)
        head_s = self.head.decode("utf-8", errors="replace")
        tail_s = tail.decode("utf-8", errors="replace")
        if omitted <= 0:
            return head_s + tail_s
        sep = "" if not head_s or head_s.endswith("\n") else "\n"
        return f"{head_s}{sep}[... pytest-vgate: {omitted} bytes omitted ...]\n{tail_s}"


def spawn_failure(
    argv: tuple[str, ...],
    start: float,
    message: str,
    err: int | None,
    target: SpawnTarget | str,
) -> ProcessResult:
    return ProcessResult(
        argv=argv,
        exit_code=None,
        stdout="",
        stderr="",
        stdout_bytes=0,
        stderr_bytes=0,
        duration=time.monotonic() - start,
        spawn_error=message,
        spawn_errno=err,
        spawn_target=SpawnTarget(target),
    )


def _program_exists(program: str, cwd: str, env: Mapping[str, str]) -> bool:
    """Whether argv[0] names an existing file, resolved as exec would (PATH from ``env``)."""
    if os.sep in program:
        return os.path.isfile(os.path.join(cwd, program))
    dirs = os.get_exec_path(dict(env))
    return any(os.path.isfile(os.path.join(cwd, d, program)) for d in dirs)


def classify_spawn_error(
    exc: OSError, argv: tuple[str, ...], cwd: str, env: Mapping[str, str]
) -> SpawnTarget:
    if exc.filename is not None and os.fspath(exc.filename) == cwd:
        return SpawnTarget.CWD
    if exc.errno in (errno.EAGAIN, errno.EMFILE, errno.ENFILE, errno.ENOMEM):
        return SpawnTarget.SYSTEM
    if exc.errno == errno.ENOENT and _program_exists(argv[0], cwd, env):
        return SpawnTarget.INTERPRETER
    return SpawnTarget.PROGRAM


def drain(fd: int, capture: Capture, *, rounds: int = 16) -> bool:
    """Read what a non-blocking fd has now into ``capture``, at most ``rounds`` chunks (to
    stay responsive); False at end of stream. Every reader of a check's output uses it."""
    for _ in range(rounds):
        try:
            data = os.read(fd, CHUNK)
        except BlockingIOError:
            return True
        except OSError:  # EIO and friends: treat the stream as ended
            return False
        if not data:
            return False
        capture.feed(data)
    return True
