"""The template processes verifier children are forked from ("zygotes"). No verifier runs here.

The base zygote (one per pytest process, started with ``process.start_helper``) forks a
module zygote per verifier module; that one imports its module once and forks a child
per call, one spare ahead (docs/verifiers.md, "Isolation"). Both are single-threaded: a
module whose import leaves a thread running is never forked from (``oneshot``).

Both speak request/response over their control socket; descriptors travel with the
reply. Neither reaps a child before the pytest process asks (``reap``, or a spare
request's ``reap`` list), so the pid the pytest process kills by still names that child.
At end of stream (the pytest process is gone) a zygote kills its children and exits.
Zygotes and verifier processes are child subreapers: what a verifier starts stays below
them and is killed (``shepherd.kill_strays``) before the pytest process gets an answer.
"""

from __future__ import annotations

import faulthandler
import gc
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from pytest_vgate.process import bytecode, fork_template, kill_process_group, shepherd
from pytest_vgate.process.shepherd import PR_SET_CHILD_SUBREAPER, kill_strays
from pytest_vgate.verifiers import wire
from pytest_vgate.verifiers.child import (
    STACK_DUMP_LEAD,
    STACK_DUMP_SIGNAL,
    child_main,
    flush_streams,
    rehearse,
)
from pytest_vgate.verifiers.invoke import classify_exception
from pytest_vgate.verifiers.messages import Op
from pytest_vgate.verifiers.target import VerifierImportError, extend_sys_path, import_module

# Rehearsals of a call (``child.rehearse``) the module zygote runs before it forks: enough
# for CPython's adaptive interpreter to specialise the call's code (3.11: 8 runs to quicken
# a function, 16 more before an instruction specialises).
WARM_UP_ROUNDS = 40

BOOT = (
    "import sys, json; sys.path[:0] = json.loads(sys.argv[1]); "
    "from pytest_vgate.verifiers.zygote import base_main; "
    "base_main(int(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4])"
)


def _reap(pid: int) -> int | None:
    """Kill what is left of ``pid``'s group and collect its status (as Popen's returncode)."""
    with suppress(ValueError):
        kill_process_group(pid, signal.SIGKILL)
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return None
    return os.waitstatus_to_exitcode(status)


def _dismiss(pid: int, children: set[int], dying: set[int]) -> None:
    """Kill what is left of ``pid``'s group now; collect it once it has died (here if it
    has, else at a later request or at the end), never waiting for it: a dying process
    still holds its pid, and a zygote that waited could not fork the next spare."""
    if pid in children:
        with suppress(ValueError):
            kill_process_group(pid, signal.SIGKILL)
        dying.add(pid)
    for gone in list(dying):
        with suppress(ChildProcessError):
            if os.waitpid(gone, os.WNOHANG)[0] == 0:
                continue
        dying.discard(gone)
        children.discard(gone)


def _serve_common(
    ctl: socket.socket, message: Mapping[str, Any], children: set[int], dying: set[int]
) -> bool:
    """The requests every zygote answers; False for an unknown one."""
    if message.get("op") != Op.REAP:
        return False
    pid = int(message["pid"])
    if message.get("status"):  # the status is the answer: wait for it
        status = _reap(pid) if pid in children else None
        children.discard(pid)
        dying.discard(pid)
    else:
        _dismiss(pid, children, dying)
    kill_strays(children)  # what it left (we are a subreaper), before any answer
    if message.get("status"):
        wire.send(ctl, {"status": status})
    return True


def _shutdown(children: set[int]) -> NoReturn:
    """The pytest process is gone: kill and collect every child and what it left, then exit."""
    for pid in children:
        _reap(pid)
    kill_strays(set())
    os._exit(0)


def _contain(ctl: socket.socket, want: str) -> tuple[str, str]:
    """Enter a private PID and mount namespace with its own ``/proc`` when ``want`` is
    ``namespace`` (the shepherd's code: we become its init, the process the pytest
    process started waits outside); (level, detail): level ``namespace`` or ``none``."""
    if want != "namespace":
        return "none", "--vgate-isolation off"
    import ctypes

    from pytest_vgate.process import shepherd

    try:
        shepherd.enter_namespace(ctypes.CDLL(None, use_errno=True), ctl)
    except OSError as exc:
        return "none", f"no private PID namespace: {exc.strerror or exc}"
    return "namespace", "private PID namespace and /proc"


def base_main(fd: int, preload: list[str], want: str = "none") -> None:
    """The base zygote's loop (see the module docstring). Its first message says what
    contains it: ``{"isolation": LEVEL, "detail": TEXT, "pidns": BOOL}`` (``pidns``: the
    pids we report are those of a namespace of our own)."""
    ctl = socket.socket(fileno=fd)
    level, detail = _contain(ctl, want)
    shepherd.prctl(PR_SET_CHILD_SUBREAPER, 1)
    # Not dumpable, nor are the verifier processes forked from us: no check reads their
    # environment or memory through /proc, namespace or not.
    shepherd.prctl(shepherd.PR_SET_DUMPABLE, 0)
    wire.send(ctl, {"isolation": level, "detail": detail, "pidns": os.getpid() == 1})
    for name in preload:
        with suppress(BaseException):  # a preload is an optimisation
            __import__(name)
    children: set[int] = set()
    dying: set[int] = set()
    inbox = wire.Inbox(ctl)
    while True:
        message, fds = inbox.recv()
        if message is None:
            _shutdown(children)
        if message.get("op") == Op.ZYGOTE and len(fds) == 1:
            ours, theirs = socket.socketpair()
            flush_streams()
            pid = fork_template()
            if pid == 0:
                try:
                    ctl.close()
                    ours.close()
                    module_main(theirs, fds[0], message)
                finally:
                    os._exit(70)
            os.close(fds[0])
            theirs.close()
            with suppress(OSError):
                os.setpgid(pid, pid)
            children.add(pid)
            wire.send(ctl, {"pid": pid}, [ours.fileno()])
            ours.close()
            continue
        for extra in fds:
            os.close(extra)
        if not _serve_common(ctl, message, children, dying):
            wire.send(ctl, {"error": f"unknown request {message.get('op')!r}"})


def _thread_count() -> int:
    """Threads of this process, C-level ones included where /proc tells."""
    try:
        with open("/proc/self/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"Threads:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return threading.active_count()


def _import(message: Mapping[str, Any]) -> dict[str, Any]:
    """Import the module the zygote is for; the ready message to send."""
    where = f"importing {message['module']}"
    deadline = message.get("deadline")
    if deadline is not None:
        lead = max(0.01, float(deadline) - time.time() - STACK_DUMP_LEAD)
        faulthandler.dump_traceback_later(lead, exit=False, file=sys.stderr)
    try:
        import_module(str(message["module"]), message.get("file"))
    except VerifierImportError as exc:
        return {"ready": False, "mode": "error", "detail": str(exc)}
    # The zygote's fail-closed boundary (boundary.py): importing runs the user's module
    # code; whatever it raises is its mode.
    except BaseException as exc:  # noqa: BLE001
        mode, detail = classify_exception(exc, where)
        return {"ready": False, "mode": mode.value, "detail": detail}
    finally:
        faulthandler.cancel_dump_traceback_later()
    threads = _thread_count()
    for _ in range(50):  # faulthandler's watchdog thread takes a moment to go
        if threads <= 1:
            break
        time.sleep(0.002)
        threads = _thread_count()
    return {"ready": True, "threads": threads}


def module_main(ctl: socket.socket, out_fd: int, message: Mapping[str, Any]) -> None:
    """A module zygote: import once, then a fresh child per call (or one call in itself)."""
    with suppress(OSError):
        os.setpgid(0, 0)
    shepherd.prctl(PR_SET_CHILD_SUBREAPER, 1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(out_fd, 1)  # what the import prints reaches the first call's output
    os.dup2(out_fd, 2)
    os.close(out_fd)
    if message.get("cwd"):
        with suppress(OSError):
            os.chdir(str(message["cwd"]))
    extend_sys_path([str(p) for p in message.get("sys_path", ())], first=True)
    if message.get("root"):  # import the tree's source as it is now (children inherit it)
        pycache = message.get("pycache")
        bytecode.use_fresh_bytecode(Path(str(message["root"])), Path(pycache) if pycache else None)
    faulthandler.enable(file=sys.stderr, all_threads=True)
    measure = message.get("measure")
    if measure:  # a measured call: what the import executes is part of its run
        from pytest_vgate.process import bootstrap

        bootstrap.start(str(measure[0]), str(measure[1]))
    ready = _import(message)
    flush_streams()
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.close(null)
    # Armed (again: whatever the import did to them) before any child is forked, for
    # every child (``child.child_main``), on fd 2, its output pipe: a fatal signal (a
    # segfault) dumps the stacks, and so does ``STACK_DUMP_SIGNAL``, which the pytest
    # process may send before the child ran a line of its own. What a verifier prints
    # is line-buffered.
    faulthandler.enable(file=2, all_threads=True)
    faulthandler.register(STACK_DUMP_SIGNAL, file=2, all_threads=True)
    for stream in (sys.stdout, sys.stderr):
        with suppress(AttributeError, ValueError):
            stream.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    wire.send(ctl, ready)
    if not ready["ready"]:
        os._exit(0)
    if message.get("oneshot") or ready["threads"] > 1:
        _serve_one(ctl)
    else:
        _serve_template(ctl)


@dataclass
class _Spare:
    pid: int
    sock: socket.socket  # the pytest process's end of the call socket
    out_fd: int  # read end of the child's output pipe


def _fork_spare(ctl: socket.socket) -> _Spare:
    ours, theirs = socket.socketpair()
    out_r, out_w = os.pipe()
    flush_streams()
    pid = fork_template()
    if pid == 0:
        try:
            ctl.close()
            ours.close()
            os.close(out_r)
            shepherd.prctl(PR_SET_CHILD_SUBREAPER, 1)
            child_main(theirs, out_w)
        finally:
            os._exit(70)
    theirs.close()
    os.close(out_w)
    with suppress(OSError):
        os.setpgid(pid, pid)
    return _Spare(pid, ours, out_r)


def _offer(ctl: socket.socket, children: set[int]) -> None:
    """Fork the next spare and hand it to the pytest process at once (unasked: it then
    has a child waiting when its next call starts)."""
    spare = _fork_spare(ctl)
    children.add(spare.pid)
    wire.send(ctl, {"spare": spare.pid}, [spare.sock.fileno(), spare.out_fd])
    spare.sock.close()
    os.close(spare.out_fd)


def _serve_template(ctl: socket.socket) -> None:
    children: set[int] = set()
    dying: set[int] = set()
    inbox = wire.Inbox(ctl)
    rehearse(WARM_UP_ROUNDS)  # our code warm before the first fork (``child.rehearse``)
    gc.freeze()  # fewer pages copied per fork; each child unfreezes for its verifier
    _offer(ctl, children)
    while True:
        message, fds = inbox.recv()
        for fd in fds:
            os.close(fd)
        if message is None:
            _shutdown(children)
        if message.get("op") == Op.MORE:
            _offer(ctl, children)  # first: the call that asked runs now
            for pid in message.get("reap") or ():  # the children of calls that ended
                _dismiss(int(pid), children, dying)
            kill_strays(children)
        elif not _serve_common(ctl, message, children, dying):
            wire.send(ctl, {"error": f"unknown request {message.get('op')!r}"})


def _serve_one(ctl: socket.socket) -> None:
    """Serve one call in this very process (its import left threads: no fork)."""
    message, fds = wire.Inbox(ctl).recv()
    for fd in fds:
        os.close(fd)
    if message is None or message.get("op") != Op.CALL:
        os._exit(0)
    ours, theirs = socket.socketpair()
    out_r, out_w = os.pipe()
    wire.send(ctl, {"pid": os.getpid()}, [ours.fileno(), out_r])  # a reply, not a spare
    ours.close()
    os.close(out_r)
    ctl.close()
    child_main(theirs, out_w)
