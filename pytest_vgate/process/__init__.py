"""The one place that starts and kills processes.

No shell, stdin closed, the caller's environment used exactly as given, bounded capture
that keeps draining both pipes, and a deadline that kills everything the check started:
through a shepherd (``contain.py``) where the platform allows it, else the check's
process group (docs/environment.md, "Isolation levels").

Exit codes: ``exit_code`` is the process's own status when it ran to exit, negative
(``-N``) when a signal ``N`` ended it that we did not send. After a deadline
(``timed_out``) it is ``None``: the status then reflects our kill, not the check's answer.
"""

from __future__ import annotations

import functools
import math
import os
import selectors
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_vgate.defaults import DEFAULT_ISOLATION, ISOLATION_CHOICES
from pytest_vgate.process.result import (
    ABANDON_AFTER,
    DRAIN_GRACE,
    classify_spawn_error,
    spawn_failure,
)
from pytest_vgate.process.result import DEFAULT_CAPTURE_LIMIT as DEFAULT_CAPTURE_LIMIT
from pytest_vgate.process.result import KILL_GRACE as KILL_GRACE
from pytest_vgate.process.result import Capture as Capture
from pytest_vgate.process.result import ProcessResult as ProcessResult
from pytest_vgate.process.result import SpawnTarget as SpawnTarget
from pytest_vgate.process.result import drain as drain

if TYPE_CHECKING:
    from pytest_vgate.process.contain import Pool

POLL_INTERVAL = 0.05  # longest exit polling period where pidfd_open is unavailable
_USE_PIDFD = hasattr(os, "pidfd_open")  # tests switch it off to exercise the polling path
_HAS_PROCESS_GROUP = sys.version_info >= (3, 11)  # Popen(process_group=...)


def kill_process_group(pgid: int, sig: int) -> None:
    """Send ``sig`` to a process group; a group that is already gone is not an error.

    Refuses group 0 and our own group: ``killpg`` would hit the caller (pytest) itself.
    """
    if pgid <= 1 or pgid == os.getpgrp():
        raise ValueError(f"refusing to signal process group {pgid}: not a check's own group")
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass
    except PermissionError:  # macOS: a group holding only zombies answers EPERM
        pass


def pid_alive(pid: int) -> bool:
    """True while ``pid`` is a running process; a zombie (exited, unreaped) counts as dead.

    Zombies are told apart through ``/proc``; without it (macOS) a zombie still counts.
    """
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:  # no procfs (macOS) or it just vanished: trust kill(0)
        return True
    state = stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3]
    return state not in (b"Z", b"X")


@functools.lru_cache(maxsize=1)
def caller_has_terminal() -> bool:
    """Whether this process has a controlling terminal (asked once per process)."""
    try:
        fd = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    except OSError:  # ENXIO: no controlling terminal (CI, daemons, most harnesses)
        return False
    os.close(fd)
    return True


def _new_group() -> dict[str, Any]:
    """How a check is split off: always its own process group, its own session if needed.

    A new session also detaches the check from our controlling terminal, so it cannot
    prompt on it or be stopped reading it. Without a terminal a new process group is
    all a session would give, and it is cheaper: on Linux ``setsid`` also puts the
    child in a new scheduler autogroup, a cost on every spawn (docs/performance.md).
    """
    if _HAS_PROCESS_GROUP and not caller_has_terminal():
        return {"process_group": 0}
    return {"start_new_session": True}


def _main_exited(proc: subprocess.Popen[bytes]) -> bool:
    """Whether the main process exited, without reaping it (its pid keeps the group id)."""
    if hasattr(os, "waitid"):
        try:
            flags = os.WEXITED | os.WNOHANG | os.WNOWAIT
            return os.waitid(os.P_PID, proc.pid, flags) is not None
        except ChildProcessError:  # already reaped
            return True
    return proc.poll() is not None


def run_process(
    argv: Sequence[str],
    *,
    cwd: Path | str,
    env: Mapping[str, str],
    timeout: float,
    capture_limit: int = DEFAULT_CAPTURE_LIMIT,
    on_start: Callable[[int], None] | None = None,
    isolation: str | None = None,
    shepherds: Pool | None = None,
    need_pid: bool = True,
) -> ProcessResult:
    """Run argv without a shell and never raise for anything the process does.

    ``isolation`` (default ``DEFAULT_ISOLATION``): ``auto`` contains the run as well as
    the platform allows (see ``contain.py``), ``strict`` requires a private PID
    namespace and otherwise returns a spawn failure with ``spawn_target="isolation"``,
    ``off`` uses a process group only. ``shepherds``: the session's pool of shepherds
    (``SessionState.shepherds``); without one, the process's default pool.

    ``on_start(pid)`` is told the new process group before we wait on it, so a caller
    that may itself be killed (a verifier process) can have the group killed for it.
    ``need_pid=False``: the caller does not read the result's ``pid``; under a shepherd
    it is then None, and the shepherd answers once per check instead of twice.

    ``env`` is the complete environment (nothing is inherited; argv[0] without a slash is
    looked up on ``env``'s PATH). Raises ``ValueError`` only for a NaN timeout or a
    negative capture limit, which are the caller's bugs.
    """
    start = time.monotonic()
    if math.isnan(timeout) or capture_limit < 0:
        raise ValueError(f"invalid timeout {timeout!r} or capture_limit {capture_limit!r}")
    if isinstance(argv, (str, bytes)):
        msg = "argv must be a list of arguments, not a string (no shell is used)"
        return spawn_failure((str(argv),), start, msg, None, "argv")
    args = tuple(argv)
    if not args:
        return spawn_failure(args, start, "empty command: nothing to run", None, "argv")
    cwd_s = os.fspath(cwd)
    level = isolation or DEFAULT_ISOLATION
    if level not in ISOLATION_CHOICES:
        raise ValueError(f"isolation must be one of {ISOLATION_CHOICES}, not {level!r}")
    if level != "off":
        from pytest_vgate.process import contain

        pool = shepherds if shepherds is not None else contain.POOL
        shepherd = pool.take(contain.shepherd_for(level))
        if level == "strict" and (shepherd is None or shepherd.level != "namespace"):
            why = shepherd.detail if shepherd is not None else pool.failure("namespace")
            if shepherd is not None:
                pool.give_back(shepherd)
            msg = f"required isolation missing: no private PID namespace here ({why})"
            return spawn_failure(args, start, msg, None, "isolation")
        if shepherd is not None:
            from pytest_vgate.process.shepherded import run_shepherded

            return run_shepherded(
                pool,
                shepherd,
                args,
                cwd_s,
                env,
                start,
                timeout,
                capture_limit,
                on_start,
                need_pid,
            )
    try:
        proc = subprocess.Popen(
            list(args),
            cwd=cwd_s,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            bufsize=0,
            shell=False,
            close_fds=True,
            **_new_group(),
        )
    except OSError as exc:
        target = classify_spawn_error(exc, args, cwd_s, env)
        text = f"{exc.strerror or exc}: {exc.filename!r}" if exc.filename else str(exc)
        return spawn_failure(args, start, text, exc.errno, target)
    except (ValueError, TypeError) as exc:  # NUL bytes, bad env names, non-str arguments
        return spawn_failure(args, start, str(exc), None, "argv")
    if on_start is not None:
        try:
            on_start(proc.pid)
        except BaseException:
            kill_process_group(proc.pid, signal.SIGKILL)  # never leave an orphan behind
            _reap(proc)
            raise
    return _supervise(proc, args, start, timeout, capture_limit)


def _supervise(
    proc: subprocess.Popen[bytes],
    args: tuple[str, ...],
    start: float,
    timeout: float,
    capture_limit: int,
) -> ProcessResult:
    assert proc.stdout is not None
    assert proc.stderr is not None
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    captures = {out_fd: Capture(capture_limit), err_fd: Capture(capture_limit)}
    sel = selectors.DefaultSelector()
    pidfd: int | None = None
    finished = False
    try:
        for fd in (out_fd, err_fd):
            os.set_blocking(fd, False)
            sel.register(fd, selectors.EVENT_READ)
        if _USE_PIDFD:
            try:
                pidfd = os.pidfd_open(proc.pid)
                sel.register(pidfd, selectors.EVENT_READ)
            except OSError:  # ENOSYS / EPERM in some sandboxes: fall back to polling
                pidfd = None
        timed_out = _watch(proc, sel, pidfd, captures, start + max(timeout, 0.0))
        finished = True
    finally:
        if not finished:  # KeyboardInterrupt or a bug of ours: leave nothing behind
            kill_process_group(proc.pid, signal.SIGKILL)
        sel.close()
        if pidfd is not None:
            os.close(pidfd)
        proc.stdout.close()
        proc.stderr.close()
        if not finished:
            _reap(proc)
    returncode = _reap(proc)
    return ProcessResult.captured(
        args,
        captures[out_fd],
        captures[err_fd],
        start=start,
        exit_code=returncode,
        timed_out=timed_out,
        pid=proc.pid,
    )


def _watch(
    proc: subprocess.Popen[bytes],
    sel: selectors.BaseSelector,
    pidfd: int | None,
    captures: dict[int, Capture],
    deadline: float,
) -> bool:
    """Drain the pipes and wait for the main process's exit under the deadline.

    Ends when the main process exited and the pipes closed (or ``DRAIN_GRACE`` passed
    since the exit: a grandchild holding them is killed with the group and not waited
    for), or when a group that ignores SIGKILL was abandoned. Exit is seen through the
    pidfd when there is one -- also after both pipes closed, which is the usual order at
    exit -- and otherwise by polling: every ``POLL_INTERVAL`` while a pipe is open, then
    backing off from 0.5 ms like ``subprocess.wait``. Returns whether the deadline passed.
    """
    next_signal_at = deadline  # SIGTERM, then SIGKILL, then give up
    stage = 0  # 0: running, 1: SIGTERM sent, 2: SIGKILL sent
    exited = False
    timed_out = False
    drain_until = math.inf
    open_fds = set(captures)
    backoff = 0.0005
    while True:
        if exited and (not open_fds or time.monotonic() >= drain_until):
            return timed_out
        now = time.monotonic()
        wake = drain_until if exited else next_signal_at
        wait = max(0.0, wake - now)
        if pidfd is None and not exited:
            if open_fds:
                wait = min(wait, POLL_INTERVAL)
            else:
                wait, backoff = min(wait, backoff), min(backoff * 2, POLL_INTERVAL)
        if sel.get_map():
            events = sel.select(None if math.isinf(wait) else wait)
        else:  # no pipe and no pidfd left to watch: poll the exit
            time.sleep(wait)
            events = []
        for key, _ in events:
            fd = int(key.fd)
            if fd == pidfd:
                continue  # handled by _main_exited below
            if not drain(fd, captures[fd]):
                sel.unregister(fd)
                open_fds.discard(fd)
        if not exited and _main_exited(proc):
            exited = True
            # The main process is a zombie until reaped, so its pid still names the
            # group: kill what it left behind before reaping, then drain briefly.
            kill_process_group(proc.pid, signal.SIGKILL)
            drain_until = time.monotonic() + DRAIN_GRACE
            if pidfd is not None:
                sel.unregister(pidfd)
            continue
        now = time.monotonic()
        if not exited and now >= next_signal_at:
            if stage == 0:
                timed_out = True
                kill_process_group(proc.pid, signal.SIGTERM)
                stage, next_signal_at = 1, now + KILL_GRACE
            elif stage == 1:
                kill_process_group(proc.pid, signal.SIGKILL)
                stage, next_signal_at = 2, now + ABANDON_AFTER
            else:
                return timed_out  # unkillable (stuck in the kernel): stop waiting


def _reap(proc: subprocess.Popen[bytes]) -> int | None:
    try:
        return proc.wait(timeout=ABANDON_AFTER)
    except subprocess.TimeoutExpired:  # unkillable; Popen's finalizer reaps it later
        return None


def run_git(args: Sequence[str], *, cwd: Path | str, timeout: float = 60.0) -> ProcessResult:
    """Run the ``git`` on the caller's PATH with a minimal environment.

    Only PATH and HOME come from the caller (HOME for the user's identity and config);
    LANG=C keeps messages parseable; GIT_TERMINAL_PROMPT=0 makes auth failures fail
    instead of waiting for a password on a closed stdin. Our own fixed commands, so in
    a process group of their own (killed whole at the deadline), not through a shepherd:
    a session would otherwise start one for its git calls and another for its checks.
    """
    env = {"LANG": "C", "GIT_TERMINAL_PROMPT": "0"}
    for name in ("PATH", "HOME"):
        if name in os.environ:
            env[name] = os.environ[name]
    git = shutil.which("git", path=env.get("PATH", os.defpath)) or "git"
    return run_process([git, *args], cwd=cwd, env=env, timeout=timeout, isolation="off")


def start_helper(
    argv: Sequence[str], *, env: Mapping[str, str], cwd: Path | str, pass_fds: Sequence[int]
) -> subprocess.Popen[bytes]:
    """Start a long-lived helper process of ours (the verifier zygote) and return at once.

    No shell, exactly ``env``, stdin/stdout/stderr on ``/dev/null``, only ``pass_fds``
    inherited, its own process group (so Ctrl-C at the terminal reaches pytest, which
    then stops the helper). Raises ``OSError`` if it cannot be started.
    """
    return subprocess.Popen(
        list(argv),
        cwd=os.fspath(cwd),
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        close_fds=True,
        pass_fds=tuple(pass_fds),
        **_new_group(),
    )


def fork_template() -> int:
    """``os.fork()`` for a single-threaded template process (the verifier zygote).

    Never called in the pytest process: forking a process with threads copies their
    locks in whatever state they are in. Returns 0 in the child, its pid in the parent.
    """
    return os.fork()
