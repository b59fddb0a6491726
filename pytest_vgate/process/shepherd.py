"""The shepherd: a small server that starts a session's checks and kills all they leave.

Run as a script (``python -I -S shepherd.py FD WANT``), never imported by the plugin for
anything but its protocol: it uses the standard library only. One shepherd serves one
caller process, one check at a time, over the connected UNIX stream socket ``FD``, in a
private PID namespace (``WANT`` ``namespace``, where allowed) or as a child subreaper;
either way every process a check starts is killed when its main process exits, at the
caller's request, or when the caller goes away (docs/environment.md, "Isolation levels").

Protocol (each message: a 4-byte big-endian length, then a ``marshal``-ed dict; fds ride
on the first byte):
  shepherd -> caller  {"ready": LEVEL, "detail": TEXT}           LEVEL: namespace | contained
  caller -> shepherd  {"op": "run", "argv", "cwd", "env", "quiet"} + fds [stdout, stderr]
                      ("env" left out: the environment of the previous run, unchanged;
                      "quiet": true: no "started" answer, the caller needs no pid)
  shepherd -> caller  {"started": PID} | {"oserror": [ERRNO, STRERROR, FILENAME]}
                      | {"valueerror": TEXT}             ("started" not sent when quiet)
  caller -> shepherd  {"op": "signal", "sig": N}   (SIGKILL: kill every process of the check)
  shepherd -> caller  {"exit": RETURNCODE, "abandoned": BOOL}    after everything is reaped
"""

from __future__ import annotations

import array
import contextlib
import errno
import marshal
import os
import select
import signal
import socket
import struct
import sys
import time
from typing import TYPE_CHECKING, Any, TypedDict

if TYPE_CHECKING:
    import ctypes

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 1 << 14, 1 << 18
PR_SET_PDEATHSIG, PR_GET_DUMPABLE, PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER = 1, 3, 4, 36
REAP_LIMIT = 5.0  # seconds to wait for killed processes (stuck in the kernel: give up)
MAX_MESSAGE = 64 << 20
_CLOEXEC = getattr(socket, "MSG_CMSG_CLOEXEC", 0)


# The messages of the protocol above, one declared type each (the wire format is fixed).


class ReadyMessage(TypedDict):
    ready: str  # the containment level: "namespace" or "contained"
    detail: str


class FatalMessage(TypedDict):
    fatal: str  # the shepherd could not start: why


class _Run(TypedDict):
    op: str  # "run"
    argv: list[str]
    cwd: str


class RunRequest(_Run, total=False):
    env: dict[str, str]  # left out: the environment of the previous run
    quiet: bool  # no "started" answer: the caller needs no pid


class SignalRequest(TypedDict):
    op: str  # "signal"
    sig: int


class StartedAnswer(TypedDict):
    started: int


class OsErrorAnswer(TypedDict):
    oserror: list[Any]  # [errno, strerror, filename]


class ValueErrorAnswer(TypedDict):
    valueerror: str


class ExitAnswer(TypedDict):
    exit: int | None  # the return code (None only if the caller left: then never sent)
    abandoned: bool


Message = (
    ReadyMessage
    | FatalMessage
    | RunRequest
    | SignalRequest
    | StartedAnswer
    | OsErrorAnswer
    | ValueErrorAnswer
    | ExitAnswer
)


def send(sock: socket.socket, data: Message, fds: list[int] | None = None) -> None:
    body = marshal.dumps(dict(data))
    frame = struct.pack(">I", len(body)) + body
    sent = 0
    if fds:
        sent = sock.sendmsg([frame], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, bytes(
            struct.pack(f"{len(fds)}i", *fds)))])  # fmt: skip
    sock.sendall(frame[sent:])


def receive(sock: socket.socket, max_fds: int = 0) -> tuple[dict[str, Any] | None, list[int]]:
    """One message and the fds that came with it; (None, []) at end of stream."""
    fds: list[int] = []
    head = b""
    while len(head) < 4:
        if max_fds and not head:
            # A check must get only what spawn() puts on 0, 1 and 2: the fds arrive
            # close-on-exec (set by the kernel where it can, else by us).
            chunk, fds = _recv_fds(sock, 4, max_fds)
        else:
            chunk = sock.recv(4 - len(head))
        if not chunk:
            for fd in fds:
                os.close(fd)
            return None, []
        head += chunk
    (size,) = struct.unpack(">I", head)
    if size > MAX_MESSAGE:
        raise ValueError(f"message of {size} bytes")
    body = bytearray()
    while len(body) < size:
        chunk = sock.recv(min(size - len(body), 1 << 20))
        if not chunk:
            return None, fds
        body += chunk
    return marshal.loads(bytes(body)), fds


def _recv_fds(sock: socket.socket, size: int, max_fds: int) -> tuple[bytes, list[int]]:
    """``socket.recv_fds``, with the fds close-on-exec (that function drops its flags)."""
    fds = array.array("i")
    chunk, ancdata, _flags, _addr = sock.recvmsg(
        size, socket.CMSG_LEN(max_fds * fds.itemsize), _CLOEXEC
    )
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - (len(data) % fds.itemsize)])
    if not _CLOEXEC:  # pragma: no cover - Linux has MSG_CMSG_CLOEXEC
        for fd in fds:
            os.set_inheritable(fd, False)
    return chunk, list(fds)


class Shepherd:
    def __init__(self, sock: socket.socket, level: str) -> None:
        self.sock = sock
        self.level = level  # "namespace": PID 1 of our own namespace; "contained": subreaper
        # The environment of the last request that carried one (a caller sends it again
        # only when it changed) and what checking it found: None, or the error to raise.
        self.env: dict[str, str] | None = None
        self.env_error: Exception | None = None

    def has_children(self) -> bool:
        """Whether any process is left below us (a zombie counts). Every process a check
        starts stays a descendant (orphans come to us), so none means nothing to kill."""
        try:
            os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return False
        return True

    def kill_all(self) -> None:
        """SIGKILL every process below us (in a namespace: every other process in it)."""
        if self.level == "namespace":
            with contextlib.suppress(OSError):
                os.kill(-1, signal.SIGKILL)
            return
        for pid in children():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)

    def reap_all(self) -> bool:
        """Kill and reap until no child is left (orphans come to us); False if stuck."""
        end = time.monotonic() + REAP_LIMIT
        pause = 0.0005
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return True
            if pid:
                continue
            if time.monotonic() > end:
                return False
            self.kill_all()  # a process forked while we were killing: again
            time.sleep(pause)
            pause = min(pause * 2, 0.02)

    def run(self, req: dict[str, Any], fds: list[int]) -> bool:
        """Start one check, supervise it, report its exit; False when the caller left.

        Our copies of the output pipes (close-on-exec: no check gets them) stay open
        until the exit is reported and are closed just before it, so the caller mostly
        sees the end of the output and the exit together (one wake-up), and the output
        has ended when the exit arrives.
        """
        try:
            if len(fds) != 2:
                send(self.sock, ValueErrorAnswer(valueerror="the caller sent no output pipes"))
                return True
            try:
                pid = spawn(req["argv"], req["cwd"], self.environment(req), fds[0], fds[1])
            except OSError as exc:
                failed = [exc.errno, exc.strerror, _name(exc.filename)]
                send(self.sock, OsErrorAnswer(oserror=failed))
                return True
            except (ValueError, TypeError) as exc:
                send(self.sock, ValueErrorAnswer(valueerror=str(exc)))
                return True
            if req.get("quiet") is not True:  # quiet: one answer per check, the exit
                send(self.sock, StartedAnswer(started=pid))
            code, caller_left = self.watch(pid)
            clean = True  # usually: the check left nothing behind, nothing to kill or reap
            if self.has_children():
                self.kill_all()
                clean = self.reap_all()
            if caller_left:
                return False
            for fd in fds:  # the output's end, then at once the exit (see above)
                os.close(fd)
            fds = []
            send(self.sock, ExitAnswer(exit=code, abandoned=not clean))
            return True
        finally:
            for fd in fds:
                os.close(fd)

    def environment(self, req: dict[str, Any]) -> dict[str, str]:
        """The request's environment (or the previous one), checked once per environment."""
        if "env" in req:
            self.env, self.env_error = req["env"], None
            try:
                check_env(self.env)
            except (ValueError, TypeError) as exc:
                self.env_error = exc
        if self.env is None:
            raise ValueError("the caller sent no environment")
        if self.env_error is not None:
            raise self.env_error
        return self.env

    def watch(self, pid: int) -> tuple[int | None, bool]:
        """Wait for the main process's exit, obeying signal requests.

        Returns (its exit code as ``subprocess`` reports it, whether the caller left).
        """
        pidfd = None
        if hasattr(os, "pidfd_open"):
            try:
                pidfd = os.pidfd_open(pid)
            except OSError:
                pidfd = None
        try:
            while True:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    return os.waitstatus_to_exitcode(status), False
                watched = [self.sock] + ([pidfd] if pidfd is not None else [])
                readable, _, _ = select.select(watched, [], [], None if pidfd else 0.02)
                if self.sock not in readable:
                    continue
                req, extra = receive(self.sock)
                for fd in extra:
                    os.close(fd)
                if req is None:
                    return None, True
                if req.get("op") == "signal":
                    sig = int(req.get("sig", signal.SIGKILL))
                    if sig == signal.SIGKILL:
                        self.kill_all()
                    else:
                        with contextlib.suppress(OSError):
                            os.killpg(pid, sig)
        finally:
            if pidfd is not None:
                os.close(pidfd)

    def serve(self) -> None:
        while True:
            req, fds = receive(self.sock, max_fds=2)
            if req is None:
                return
            if req.get("op") != "run":
                for fd in fds:
                    os.close(fd)
                continue
            if not self.run(req, fds):
                return


def check_env(env: dict[str, str]) -> None:
    """Raise what ``subprocess.Popen`` would for an environment it cannot pass on."""
    if not isinstance(env, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in env.items()
    ):
        raise TypeError("the environment must map text to text")
    if any("\0" in text for text in (*env, *env.values())):
        raise ValueError("embedded null byte")
    if any("=" in name or not name for name in env):
        raise ValueError("illegal environment variable name")


def spawn(argv: list[str], cwd: str, env: dict[str, str], out: int, err: int) -> int:
    """Start a check as the plugin's direct path would without a terminal: a new process
    group (we have no controlling terminal, so a new session would add nothing but, on
    Linux, a scheduler autogroup per check), stdin /dev/null, only stdout/stderr open,
    default signal handlers, ``argv[0]`` looked up on ``env``'s PATH.
    Raises what ``subprocess.Popen`` would (OSError with the cwd or the program). ``env``
    was checked with ``check_env`` when it arrived.

    ``os.posix_spawn`` (vfork and exec in C) keeps both our start-up and each spawn cheap;
    it has no ``cwd``, so we change into it around the call (we are single-threaded).
    """
    if not argv or not all(isinstance(a, str) for a in argv):
        raise TypeError("argv must be a non-empty list of strings")
    if any("\0" in text for text in (*argv, cwd)):
        raise ValueError("embedded null byte")
    program = argv[0]
    candidates = (
        [program]
        if os.sep in program
        else [os.path.join(d, program) for d in os.get_exec_path(env)]
    )
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_DUP2, out, 1),
        (os.POSIX_SPAWN_DUP2, err, 2),
    ]
    defaults = (signal.SIGINT, signal.SIGPIPE, signal.SIGXFSZ)
    os.chdir(cwd)  # OSError names the cwd, as Popen's does
    try:
        first_error: OSError | None = None
        for path in candidates:
            if not os.path.exists(path):  # a stat, not a whole failed spawn per PATH entry
                continue
            try:
                return os.posix_spawn(
                    path, argv, env, file_actions=actions, setpgroup=0, setsigdef=defaults
                )
            except OSError as exc:
                if exc.errno not in (errno.ENOENT, errno.ENOTDIR) and first_error is None:
                    first_error = exc
        if first_error is not None:
            raise OSError(first_error.errno, first_error.strerror, program)
        raise OSError(errno.ENOENT, os.strerror(errno.ENOENT), program)
    finally:
        os.chdir("/")


def _name(filename: object) -> str | None:
    return None if filename is None else os.fsdecode(filename)  # type: ignore[arg-type]


def children(pid: int | str = "self") -> list[int]:
    """The pids of ``pid``'s children (as this process sees them); [] when unknown."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                found.extend(int(p) for p in f.read().split())
        except (OSError, ValueError):
            pass
    return found


def kill_strays(keep: set[int]) -> None:
    """Kill and collect every child of ours not in ``keep`` until none is left: in a
    subreaper, what a dead child left behind comes to us (and what those leave, as they die)."""
    while strays := [pid for pid in children() if pid not in keep]:
        for pid in strays:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        for pid in strays:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)


def prctl(option: int, value: int = 0) -> int:
    """``prctl(option, value)`` for this process; -1 where refused or not Linux."""
    import ctypes

    try:
        return int(ctypes.CDLL(None).prctl(option, value, 0, 0, 0))
    except (OSError, AttributeError):
        return -1


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def enter_namespace(libc: ctypes.CDLL, sock: socket.socket) -> None:
    """Become PID 1 of a new PID namespace with a private /proc; OSError if not allowed.

    The process that called us stays outside, waits for the namespace's init and exits
    with its status; the init dies with it (parent-death signal) and, being init, takes
    every process of the namespace with it.
    """
    import ctypes

    uid, gid = os.geteuid(), os.getegid()
    flags = CLONE_NEWPID | CLONE_NEWNS | (CLONE_NEWUSER if uid != 0 else 0)
    if libc.unshare(flags) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"unshare: {os.strerror(err)}")
    if uid != 0:
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1\n")
        _write("/proc/self/gid_map", f"{gid} {gid} 1\n")
    child = os.fork()
    if child:
        sock.close()
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        _, status = os.waitpid(child, 0)
        os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # (getppid() is 0 in here)
    if libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"making / private: {os.strerror(err)}")
    if libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mounting a private /proc: {os.strerror(err)}")


def main(argv: list[str]) -> None:
    sock = socket.socket(fileno=int(argv[1]))
    os.set_inheritable(sock.fileno(), False)  # never into a check
    os.chdir("/")
    want = argv[2] if len(argv) > 2 else "namespace"
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the caller decides; Ctrl-C is its
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    import ctypes  # here, not at the top: the plugin imports this module for its protocol

    libc = ctypes.CDLL(None, use_errno=True)
    level, detail = "contained", "namespaces not requested"
    try:
        if want == "namespace":
            try:
                enter_namespace(libc, sock)
                level, detail = "namespace", "private PID namespace and /proc"
            except OSError as exc:
                if os.getpid() == 1:  # in the namespace, but without a private /proc
                    level = "contained"
                detail = f"no private PID namespace: {exc.strerror or exc}"
        subreaper = level != "namespace" and os.getpid() != 1
        if subreaper and libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            err = ctypes.get_errno()
            send(sock, FatalMessage(fatal=f"prctl(PR_SET_CHILD_SUBREAPER): {os.strerror(err)}"))
            return
        libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # our memory holds other checks' requests
        send(sock, ReadyMessage(ready=level, detail=detail))
        shepherd = Shepherd(sock, level)
        try:
            shepherd.serve()
        finally:
            shepherd.kill_all()
            shepherd.reap_all()
    except BrokenPipeError:
        pass
    # The shepherd's fail-closed boundary (boundary.py): report our own bug, then exit.
    except Exception:  # noqa: BLE001
        import traceback

        with contextlib.suppress(OSError):
            send(sock, FatalMessage(fatal=traceback.format_exc(limit=5)))
        if os.getpid() == 1:  # init of our namespace: take every process with us
            os.kill(-1, signal.SIGKILL)


if __name__ == "__main__":
    main(sys.argv)
