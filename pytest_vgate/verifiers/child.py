"""The verifier process's side of one call (the pytest process's side is ``isolation``).

A child forked from a module zygote waits for its job on its call socket (a spare waits
while an earlier verifier runs), runs :func:`~pytest_vgate.verifiers.invoke.execute`,
sends its answer back and exits without running anything the verifier left behind. Its
``ctx.run`` asks the pytest process to run the tool (:class:`Link`): the record of what
ran is kept there, out of the verifier's reach.
"""

from __future__ import annotations

import gc
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Mapping
from contextlib import suppress
from typing import Any

from pytest_vgate.process.shepherd import kill_strays
from pytest_vgate.verifiers import wire
from pytest_vgate.verifiers.invoke import execute
from pytest_vgate.verifiers.messages import InternalMessage, Op, VerifierJob
from pytest_vgate.verifiers.target import VerifierTarget

STACK_DUMP_LEAD = 0.25  # the child dumps its stack this long before the deadline
STACK_DUMP_SIGNAL = signal.SIGUSR1  # sent by the pytest process for that dump


class Link:
    """The child's end of the call socket: one ``ctx.run`` request at a time, and the
    answer. Threads of the verifier share it."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.inbox = wire.Inbox(sock)
        self._send_lock = threading.Lock()
        self._request_lock = threading.Lock()
        self._next = 0

    def send(self, message: Mapping[str, object]) -> None:
        with self._send_lock:
            wire.send(self.sock, message)

    def request(self, message: Mapping[str, object]) -> dict[str, Any]:
        """Send a request and wait for its answer (the pytest process answers in order)."""
        with self._request_lock:
            self._next += 1
            self.send({**message, "id": self._next})
            while True:
                answer, _ = self.inbox.recv()
                if answer is None:
                    raise ConnectionError("the pytest process closed the call")
                if answer.get("id") == self._next:
                    return answer


def flush_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        with suppress(BaseException):  # the verifier may have replaced the streams with anything
            stream.flush()


def _rehearsal_check(ctx: object) -> bool:
    """The verifier a spare rehearses its call with (:func:`rehearse`)."""
    return True


class _Rehearsal:
    """The link of the rehearsal: nothing leaves the process."""

    def send(self, message: Mapping[str, object]) -> None:
        pass

    def request(self, message: Mapping[str, object]) -> dict[str, Any]:
        return {}


_REHEARSAL_FRAME: list[bytes] = []  # the rehearsal's job on the wire, made once (``_frame``)


def _frame() -> bytes:
    """The job of a rehearsal as the wire carries it, made on first use (in the zygote,
    before it forks: its children inherit it). Its environment is the process's own."""
    if not _REHEARSAL_FRAME:
        here = os.getcwd()
        job = VerifierJob(
            target=VerifierTarget(__name__, _rehearsal_check.__name__),
            root=here,
            cell=here,
            gate=None,
            cwd=here,
            env=dict(os.environ),
            deadline=time.time() + 3600.0,
            bytecode_checked=True,
        )
        _REHEARSAL_FRAME.append(wire.encode(job.message()))
    return _REHEARSAL_FRAME[0]


def rehearse(rounds: int = 1) -> None:
    """Walk a trivial call of our own through a child's path ``rounds`` times: decode a
    job, replace the environment, build ``ctx``, call a function of ours, encode the
    answer. The zygote does it before it forks (its children start with that code
    specialised), a spare once more while it waits (the pages it then copies are off the
    call's critical path): docs/verifiers.md, "What a call costs". Nothing of the
    verifier's runs; an optimisation: whatever goes wrong is ignored.
    """
    try:
        frame = _frame()
        for _ in range(rounds):
            (message,) = wire.FrameReader().feed(frame)
            job = VerifierJob.from_message(message)
            os.environ.clear()
            os.environ.update(job.env)  # what it was: the frame was made here or forked
            wire.encode(execute(job, _Rehearsal()).message())
    # Catch-all: an optimisation never costs a call (a module's import may have changed
    # what our code relies on; the call itself then reports what that breaks).
    except BaseException:  # noqa: BLE001
        pass


def child_main(sock: socket.socket, out_fd: int) -> None:
    """Entry point of a verifier child: receive the job, run it, send the answer, exit.

    The child leads its own process group (so the pytest process can kill what the
    verifier started directly), reads nothing from any stdin, writes its output to the
    pipe the pytest process drains, and runs with exactly the job's environment.
    """
    with suppress(OSError):
        os.setpgid(0, 0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(out_fd, 1)
    os.dup2(out_fd, 2)
    os.close(out_fd)
    # Inherited from the zygote (``zygote.module_main``, which armed them before any child
    # was forked): line-buffered sys.stdout and sys.stderr (what the verifier printed
    # before dying is not lost), faulthandler on fd 2 for a fatal signal (a segfault: the
    # stack in its output) and for ``STACK_DUMP_SIGNAL``, the stack dump near the
    # deadline (C code: it works while the verifier is stuck in C).
    link = Link(sock)
    rehearse()
    try:
        message, _ = link.inbox.recv()
        if message is None:
            os._exit(0)
        job = VerifierJob.from_message(message)
        gc.unfreeze()  # the zygote froze the import's objects: the verifier gets a plain
        # process's collector (what it drops is freed); the pages stay shared until then
        os.environ.clear()
        os.environ.update(job.env)
        if job.cwd:
            with suppress(OSError):  # the caller's folder is gone: stay where we are
                os.chdir(job.cwd)
        answer = execute(job, link)
        flush_streams()  # before the answer: the pytest process then reads what is there
        kill_strays(set())  # all the verifier started is below us (a subreaper): gone first
        link.send(answer.message())
    # The verifier child's fail-closed boundary (boundary.py): a bug of ours (or a signal
    # handler of the verifier firing late) must still answer; the parent makes it an error.
    except BaseException as exc:  # noqa: BLE001
        with suppress(BaseException):  # the link is gone: the parent sees a crash instead
            kill_strays(set())
            link.send(InternalMessage(op=Op.INTERNAL, detail=f"{type(exc).__name__}: {exc}"))
    finally:
        flush_streams()
        os._exit(0)  # no atexit, no join of threads the verifier left running
