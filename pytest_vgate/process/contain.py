"""The caller's side of the shepherd (``shepherd.py``): start it, hand it checks, pool it.

What ``--vgate-isolation`` gives is one of :data:`LEVELS` (``namespace``, ``contained``,
``group``): docs/environment.md, "Isolation levels".
"""

from __future__ import annotations

import atexit
import contextlib
import marshal
import os
import signal
import socket
import subprocess
import sys
import threading
import weakref
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pytest_vgate.errors import VgateError
from pytest_vgate.process import shepherd as _proto
from pytest_vgate.process.shepherd import children as children

LEVELS = ("namespace", "contained", "group")
SCRIPT = str(Path(__file__).with_name("shepherd.py"))
START_TIMEOUT = 20.0  # seconds for a shepherd to say it is ready (a loaded machine)
ANSWER_TIMEOUT = 10.0  # seconds for "started" after a run request
_READ_SIZE = 4096  # the shepherd's answers are a few dozen bytes

DESCRIPTIONS = {
    "namespace": "private PID namespace (checks see only their own processes; "
    "every descendant is killed when the check ends)",
    "contained": "subreaper (every descendant is killed when the check ends; "
    "the session's processes stay visible to checks)",
    "group": "process group only (descendants that leave the group can survive)",
}


def weakest(levels: Iterable[str | None]) -> str | None:
    """The weakest of ``levels`` (names of :data:`LEVELS`; None and others are skipped):
    what contained a run made of several processes. None when there is none."""
    known = [LEVELS.index(level) for level in levels if level in LEVELS]
    return LEVELS[max(known)] if known else None


class ShepherdError(VgateError):
    """The shepherd could not be started or stopped answering."""


class Shepherd:
    """One running shepherd, used by one caller thread at a time."""

    quiet = False  # the last request asked for no "started" answer
    early_exit: dict[str, Any] | None = None  # a quiet check's exit, read by started()

    def __init__(self, want: str) -> None:
        self.want = want
        if not sys.executable or not os.path.isdir("/proc"):
            raise ShepherdError("needs a Python executable and /proc")
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-S", SCRIPT, str(theirs.fileno()), want],
                pass_fds=(theirs.fileno(),),
                env={},
                cwd="/",
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                close_fds=True,
                start_new_session=True,
            )
        except OSError as exc:
            ours.close()
            raise ShepherdError(f"could not start the shepherd: {exc}") from exc
        finally:
            theirs.close()
        self.sock = ours
        self.owner = os.getpid()
        self.inner: int | None = None  # the namespace's init, as we see it
        self.broken = False
        self.sent_env: dict[str, str] | None = None  # the shepherd keeps the last one
        self.buffer = bytearray()  # what was read of the shepherd's next messages
        try:
            msg = self._answer(START_TIMEOUT)
        except BaseException:
            self.discard()
            raise
        if msg is None or "ready" not in msg:
            self.discard()
            raise ShepherdError(f"the shepherd did not start: {msg and msg.get('fatal')}")
        self.level = str(msg["ready"])
        self.detail = str(msg.get("detail", ""))
        if self.level == "namespace":
            kids = children(self.proc.pid)
            self.inner = kids[0] if len(kids) == 1 else None

    # -- messages ------------------------------------------------------------------------

    def _answer(self, timeout: float | None) -> dict[str, Any] | None:
        """The shepherd's next message; None when it closed the socket.

        Its answers are small and carry no fds: what has arrived is read at once (no
        timeout to set, no poll), and only a message not all there yet is waited for, up
        to ``timeout`` per read.
        """
        try:
            msg = self._buffered()
            while msg is None:
                try:
                    chunk = self.sock.recv(_READ_SIZE, socket.MSG_DONTWAIT)
                except BlockingIOError:
                    self.sock.settimeout(timeout)
                    try:
                        chunk = self.sock.recv(_READ_SIZE)
                    finally:
                        self.sock.settimeout(None)
                if not chunk:
                    self.broken = True
                    return None
                self.buffer += chunk
                msg = self._buffered()
        except (OSError, ValueError) as exc:  # timeout, reset, garbage: unusable
            self.broken = True
            raise ShepherdError(f"the shepherd stopped answering: {exc}") from exc
        return msg

    def has_answer(self) -> bool:
        """Whether a whole message was already read into the buffer (the selector will
        not report it again)."""
        if self.early_exit is not None:
            return True
        buffer = self.buffer
        return len(buffer) >= 4 and len(buffer) >= 4 + int.from_bytes(buffer[:4], "big")

    def _buffered(self) -> dict[str, Any] | None:
        """Take one whole message off the buffer (None: not all of one there yet)."""
        buffer = self.buffer
        if len(buffer) < 4:
            return None
        size = int.from_bytes(buffer[:4], "big")
        if size > _proto.MAX_MESSAGE:
            raise ValueError(f"the shepherd sent a message of {size} bytes")
        if len(buffer) < 4 + size:
            return None
        body = bytes(buffer[4 : 4 + size])
        del buffer[: 4 + size]
        try:
            msg = marshal.loads(body)
        except (EOFError, TypeError) as exc:
            raise ValueError(f"garbage from the shepherd: {exc}") from exc
        if not isinstance(msg, dict):
            raise ValueError(f"garbage from the shepherd: {msg!r:.80}")
        return msg

    def request(
        self,
        argv: list[str],
        cwd: str,
        env: dict[str, str],
        out: int,
        err: int,
        *,
        quiet: bool = False,
    ) -> None:
        """Ask for a check to be started; ``started`` reads the answer.

        The environment goes only when it differs from the one sent before (the shepherd
        keeps it): checks of a session mostly share one, and it is most of a request.
        ``env`` must not be changed by the caller afterwards. ``quiet``: the caller needs
        no pid, so the shepherd answers once, with the exit (or why it did not start):
        one message and one wake-up per check less.
        """
        req = _proto.RunRequest(op="run", argv=argv, cwd=cwd)
        if quiet:
            req["quiet"] = True
        self.quiet = quiet
        if env != self.sent_env:
            req["env"] = env
        try:
            _proto.send(self.sock, req, [out, err])
        except OSError as exc:
            self.broken = True
            raise ShepherdError(f"the shepherd is gone: {exc}") from exc
        self.sent_env = env

    def started(self) -> int:
        """The started check's pid as we see it; raises what Popen would (OSError, ...).

        After a quiet request the first answer is the exit: it is kept for ``read_exit``
        and the pid is unknown (-1).
        """
        msg = self._answer(ANSWER_TIMEOUT)
        if msg is None:
            raise ShepherdError("the shepherd is gone")
        if "oserror" in msg:
            err, text, name = msg["oserror"]
            raise OSError(err, text, name) if name is not None else OSError(err, text)
        if "valueerror" in msg:
            raise ValueError(msg["valueerror"])
        if "exit" in msg and self.quiet:
            self.early_exit = msg
            return -1
        if "started" not in msg:
            self.broken = True
            raise ShepherdError(f"unexpected answer from the shepherd: {msg!r}")
        return self._host_pid(int(msg["started"]))

    def _host_pid(self, pid: int) -> int:
        if self.level != "namespace":
            return pid
        if self.inner is not None:
            for kid in children(self.inner):
                if ns_pid(kid) == pid:
                    return kid
        return -1  # unknown: never used as a target

    def signal(self, sig: int) -> None:
        try:
            _proto.send(self.sock, _proto.SignalRequest(op="signal", sig=int(sig)))
        except OSError:
            self.broken = True

    def read_exit(self) -> tuple[int | None, bool]:
        """(returncode, abandoned) once the sock is readable; (None, True) if it died."""
        msg, self.early_exit = self.early_exit, None
        if msg is None:
            try:
                msg = self._answer(ANSWER_TIMEOUT)
            except ShepherdError:
                msg = None
        if msg is None or "exit" not in msg:
            self.broken = True
            return None, True
        code = msg["exit"]
        return (int(code) if code is not None else None), bool(msg.get("abandoned"))

    def fileno(self) -> int:
        return self.sock.fileno()

    # -- ending --------------------------------------------------------------------------

    def discard(self) -> None:
        """Stop it now: closing the socket makes it kill what it runs and exit."""
        if self.owner != os.getpid():
            return
        self.broken = True
        with contextlib.suppress(OSError):
            self.sock.close()
        try:
            self.proc.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            for pid in (self.inner, self.proc.pid):  # the init's death empties the namespace
                if pid is not None and pid > 1:
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5.0)


def ns_pid(pid: int) -> int | None:
    """``pid``'s pid in its innermost PID namespace (``NSpid``); None when unknown."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            status = f.read()
    except OSError:
        return None
    start = status.find(b"\nNSpid:")
    if start < 0:
        return None
    end = status.find(b"\n", start + 7)
    line = status[start + 7 : end if end >= 0 else len(status)]
    try:
        return int(line.split()[-1])
    except (IndexError, ValueError):
        return None


def under_a_shepherd() -> bool:
    """Whether this process descends from a shepherd, i.e. runs inside a check.

    Holds when the check cleared its environment too (``env -i pytest``). Reads the
    parent chain in ``/proc``; False where there is none.
    """
    pid = os.getpid()
    for _ in range(64):
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read()
            ppid = int(stat[stat.rfind(b")") + 2 :].split()[1])
        except (OSError, ValueError, IndexError):
            return False
        if ppid <= 0:
            return False
        try:
            with open(f"/proc/{ppid}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
        except OSError:
            return False
        if any(arg.endswith(b"pytest_vgate/process/shepherd.py") for arg in args[:5]):
            return True
        pid = ppid
    return False


def shepherd_for(isolation: str) -> str:
    """What a shepherd is asked for under ``isolation`` (``auto`` or ``strict``).

    A PID namespace needs a user namespace when pytest is not root, and inside one the
    check's world changes: setuid helpers gain nothing and root's files show uid 65534.
    ``auto`` must not change what a legitimate check sees, so without root it asks for the
    subreaper (every descendant is still killed); ``strict`` asks for the namespace
    whatever it costs.
    """
    return "namespace" if isolation == "strict" or os.geteuid() == 0 else "contained"


def keep_out_of_reach() -> Callable[[], None]:
    """Make this process (pytest, an xdist worker) not dumpable, for the session: a check
    of the same user without a namespace to hide it cannot read its environment or memory
    in ``/proc`` (``ptrace`` rules). Returns what undoes it. Root's checks keep that right."""
    made = _proto.prctl(_proto.PR_GET_DUMPABLE) == 1 and not _proto.prctl(_proto.PR_SET_DUMPABLE, 0)

    def undo() -> None:
        if made:
            _proto.prctl(_proto.PR_SET_DUMPABLE, 1)

    return undo


class Pool:
    """Idle shepherds of this process, by what was asked of them (``namespace``/``contained``).

    A forked child starts with an empty pool (its parent's shepherds serve the parent).
    At exit the idle shepherds are told to stop (they kill what they run, then exit).
    Both are the module's handlers, registered once (as ``cell.CellPool``'s).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: dict[str, list[Shepherd]] = {}
        self._failed: dict[str, str] = {}  # want -> why no shepherd could be started
        self._probe: dict[str, tuple[str, str]] = {}
        _POOLS.add(self)

    def take(self, want: str = "namespace") -> Shepherd | None:
        """An idle or new shepherd; None when none can run here (reason: ``failure``).

        Before a new one is started, an idle shepherd of the process's default pool is
        taken over (ours from then on, stopped with this pool): a session's own probes
        (the report header's) go through that pool, its checks through the session's.
        """
        shepherd = self._take_idle(want)
        if shepherd is None and self is not POOL:
            shepherd = POOL._take_idle(want)
        if shepherd is not None:
            return shepherd
        with self._lock:
            if want in self._failed:
                return None
        try:
            return Shepherd(want)
        except ShepherdError as exc:
            with self._lock:
                self._failed[want] = str(exc)
            return None

    def _take_idle(self, want: str) -> Shepherd | None:
        with self._lock:
            idle = self._idle.get(want, [])
            while idle:
                shepherd = idle.pop()
                if shepherd.proc.poll() is None:  # alive (an idle one may have been killed)
                    return shepherd
                shepherd.discard()
        return None

    def give_back(self, shepherd: Shepherd) -> None:
        if shepherd.broken or shepherd.owner != os.getpid():
            shepherd.discard()
            return
        with self._lock:
            self._idle.setdefault(shepherd.want, []).append(shepherd)
            _HOLDING.add(self)  # its idle shepherds are stopped at exit, if not before

    def failure(self, want: str) -> str:
        return self._failed.get(want, "")

    def probe(self, isolation: str) -> tuple[str, str]:
        """(level, detail) that checks started with ``isolation`` get in this process."""
        if isolation == "off":
            return "group", "--vgate-isolation off"
        cached = self._probe.get(isolation)
        if cached is not None:
            return cached
        want = shepherd_for(isolation)
        shepherd = self.take(want)
        if shepherd is None:
            result = ("group", self.failure(want) or "no shepherd")
        else:
            result = (shepherd.level, shepherd.detail)
            self.give_back(shepherd)
        self._probe[isolation] = result
        return result

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, {}
            _HOLDING.discard(self)
        for shepherds in idle.values():
            for shepherd in shepherds:
                shepherd.discard()

    def _forget(self) -> None:
        """In a forked child: drop (and close our copy of) the parent's shepherds' sockets,
        so that the parent's death still closes them and stops its checks."""
        for shepherds in self._idle.values():
            for shepherd in shepherds:
                with contextlib.suppress(OSError):
                    shepherd.sock.close()
        self._lock = threading.Lock()
        self._idle = {}


# Every pool (weakly: a dropped one has no shepherd left to let go of after a fork) and,
# strongly, those holding idle shepherds until they are stopped: at exit, if not before.
_POOLS: weakref.WeakSet[Pool] = weakref.WeakSet()
_HOLDING: set[Pool] = set()


def _at_exit() -> None:
    for pool in list(_HOLDING):
        pool.close()


def _after_fork_in_child() -> None:
    for pool in list(_POOLS):
        pool._forget()
    _HOLDING.clear()


atexit.register(_at_exit)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)

POOL = Pool()
