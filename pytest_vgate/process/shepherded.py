"""``run_process`` through a shepherd (``contain.py``): the same contract as the process
group path, with every descendant kept and killed by the shepherd."""

from __future__ import annotations

import math
import os
import select
import signal
import time
from collections.abc import Callable, Mapping

from pytest_vgate.process.contain import Pool, Shepherd, ShepherdError
from pytest_vgate.process.result import (
    ABANDON_AFTER,
    DRAIN_GRACE,
    KILL_GRACE,
    Capture,
    ProcessResult,
    classify_spawn_error,
    drain,
    spawn_failure,
)


def run_shepherded(
    pool: Pool,
    shepherd: Shepherd,
    args: tuple[str, ...],
    cwd: str,
    env: Mapping[str, str],
    start: float,
    timeout: float,
    capture_limit: int,
    on_start: Callable[[int], None] | None,
    need_pid: bool = True,
) -> ProcessResult:
    """``run_process`` through a shepherd: the same contract, stronger containment.

    Without ``on_start`` and ``need_pid`` the shepherd is asked for one answer per check
    (the exit), and the result's ``pid`` is None."""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    captures = {out_r: Capture(capture_limit), err_r: Capture(capture_limit)}
    sel = select.poll()  # for three fds per check: no set-up calls, no fd of its own
    failure: ProcessResult | None = None
    finished = False
    pid = -1
    try:
        try:
            argv = [os.fsdecode(a) if isinstance(a, (bytes, os.PathLike)) else a for a in args]
            quiet = on_start is None and not need_pid
            shepherd.request(argv, cwd, dict(env), out_w, err_w, quiet=quiet)
        finally:
            os.close(out_w)
            os.close(err_w)
        # The socket first: poll lists ready fds in the order registered, so the exit is
        # taken before the pipes' last output and the drain that follows it reads that
        # output, on every check (tests/test_process_contain.py: the output is whole).
        sel.register(shepherd.fileno(), select.POLLIN)
        for fd in (out_r, err_r):
            os.set_blocking(fd, False)
            sel.register(fd, select.POLLIN)
        deadline = start + max(timeout, 0.0)
        timed_out, code, pid = _watch_shepherd(shepherd, sel, captures, deadline, on_start)
        finished = True
    except ShepherdError as exc:
        finished = True
        msg = f"the check's shepherd failed: {exc}"
        failure = spawn_failure(args, start, msg, None, "system")
    except OSError as exc:  # the shepherd could not start it: as Popen would have said
        finished = True
        text = f"{exc.strerror or exc}: {exc.filename!r}" if exc.filename else str(exc)
        failure = spawn_failure(
            args, start, text, exc.errno, classify_spawn_error(exc, args, cwd, env)
        )
    except (ValueError, TypeError) as exc:  # NUL bytes, bad env names, non-str arguments
        finished = True
        failure = spawn_failure(args, start, str(exc), None, "argv")
    finally:
        os.close(out_r)
        os.close(err_r)
        if finished:
            pool.give_back(shepherd)
        else:  # KeyboardInterrupt (or SIGTERM made one), a bug of ours: stop everything
            shepherd.signal(signal.SIGKILL)
            shepherd.discard()
    if failure is not None:
        return failure
    return ProcessResult.captured(
        args,
        captures[out_r],
        captures[err_r],
        start=start,
        exit_code=code,
        timed_out=timed_out,
        pid=pid if pid > 0 else None,
        isolation=shepherd.level,
    )


def _watch_shepherd(
    shepherd: Shepherd,
    sel: select.poll,
    captures: dict[int, Capture],
    deadline: float,
    on_start: Callable[[int], None] | None,
) -> tuple[bool, int | None, int]:
    """Drain the pipes until the shepherd reports the exit (after it killed the rest).

    Its first answer says whether the check started (raising as Popen would if not). At
    the deadline: SIGTERM to the check's group, SIGKILL to all of it ``KILL_GRACE``
    later, and a shepherd that still has not answered ``ABANDON_AFTER`` after that is
    discarded (the namespace dies with it). Returns (timed out, returncode, pid).
    """
    pid = 0  # 0: not started yet; -1: started, pid unknown to us
    next_signal_at = deadline
    stage = 0
    exited = False
    timed_out = False
    code: int | None = None
    drain_until = math.inf
    open_fds = set(captures)
    sock = shepherd.fileno()
    while True:
        now = time.monotonic()
        if exited and (not open_fds or now >= drain_until):
            return timed_out, code, pid
        wake = drain_until if exited else next_signal_at
        wait = max(0.0, wake - now)
        events = sel.poll(None if math.isinf(wait) else math.ceil(wait * 1e3))
        for fd, _ in events:  # readable, hung up or in error: read it to learn which
            if fd != sock and fd not in open_fds:
                continue  # ended already (drained when the exit came)
            if fd == sock and pid == 0:
                pid = shepherd.started() or -1
                if on_start is not None and pid > 0:
                    on_start(pid)
                if not shepherd.has_answer():
                    continue
                # The exit came with "started" (or instead of it: a quiet request) and
                # sits in our buffer, not in the socket: the selector would not tell us
                # again.
            if fd == sock:
                sel.unregister(sock)
                code, abandoned = shepherd.read_exit()
                if abandoned:  # it could not reap everything: do not reuse it
                    shepherd.broken = True
                if code is None and not timed_out:  # the shepherd died under the check
                    code = -signal.SIGKILL
                exited = True
                drain_until = time.monotonic() + DRAIN_GRACE
                # The shepherd closes its copies of the pipes as it answers, and nothing
                # of the check is left: the rest of the output is usually all there now.
                for other in [f for f in open_fds if f != fd]:
                    if not drain(other, captures[other]):
                        sel.unregister(other)
                        open_fds.discard(other)
            elif not drain(fd, captures[fd]):
                sel.unregister(fd)
                open_fds.discard(fd)
        now = time.monotonic()
        if not exited and now >= next_signal_at:
            if stage == 0:
                timed_out = True
                shepherd.signal(signal.SIGTERM)
                stage, next_signal_at = 1, now + KILL_GRACE
            elif stage == 1:
                shepherd.signal(signal.SIGKILL)
                stage, next_signal_at = 2, now + ABANDON_AFTER
            else:
                shepherd.discard()
                return timed_out, None, pid
