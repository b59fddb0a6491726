"""The verifier process's side of one call (the pytest process's side is ``isolation``).

A child forked from a module zygote waits for its job on its call socket (a spare waits
while an earlier verifier runs), runs :func:`~pytest_vgate.verifiers.invoke.execute`,
sends its answer back and exits without running anything the verifier left behind. Its
``ctx.run`` asks the pytest process to run the tool (:class:`Link`): the record of what
ran is kept there, out of the verifier's reach.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time
from contextlib import suppress
from typing import Any

from pytest_vgate.verifiers import wire
from pytest_vgate.verifiers.invoke import execute
from pytest_vgate.verifiers.messages import Op, VerifierJob
from pytest_vgate.verifiers.target import VerifierTarget

STACK_DUMP_LEAD = 0.25  # the child dumps its stack this long before the deadline
STACK_DUMP_SIGNAL = signal.SIGUSR1  # sent by the pytest process for that dump
REHEARSAL_NAME = "PYTEST_VGATE_REHEARSAL"  # set and unset again by ``_rehearse``


class Link:
    """The child's end of the call socket: one ``ctx.run`` request at a time, and the
    answer. Threads of the verifier share it."""

    def __init__(self, channel: wire.Channel) -> None:
        self.channel = channel
        self._send_lock = threading.Lock()
        self._request_lock = threading.Lock()
        self._next = 0

    def send(self, message: dict[str, Any]) -> None:
        with self._send_lock:
            self.channel.send(message)

    def request(self, message: dict[str, Any]) -> dict[str, Any]:
        """Send a request and wait for its answer (the pytest process answers in order)."""
        with self._request_lock:
            self._next += 1
            self.send({**message, "id": self._next})
            while True:
                answer = self.channel.recv()
                if answer is None:
                    raise ConnectionError("the pytest process closed the call")
                if answer.get("id") == self._next:
                    return answer


def flush_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        with suppress(BaseException):  # the verifier may have replaced the streams with anything
            stream.flush()


def _rehearsal_check(ctx: object) -> bool:
    """The verifier a spare rehearses its call with (:func:`_rehearsal`)."""
    return True


class _Rehearsal:
    """The link of the rehearsal: nothing leaves the process."""

    def send(self, message: dict[str, Any]) -> None:
        pass

    def request(self, message: dict[str, Any]) -> dict[str, Any]:
        return {}


def _rehearsal() -> VerifierJob | None:
    """The job of a rehearsal: a trivial call walked through our own code while the
    spare waits for its real job (``child_main``).

    A child's first touch of each page it shares with its zygote copies that page (the
    interpreter writes reference counts everywhere); walking the path of a call once --
    decode a job, set the environment, build ``ctx``, call a function of ours, encode
    the answer -- takes most of those copies before the job arrives, off the call's
    critical path. Nothing of the verifier's runs, nothing leaves the process, the
    environment is as it was. An optimisation: None when anything goes wrong.
    """
    try:
        here = os.getcwd()
        job = VerifierJob(
            target=VerifierTarget(__name__, _rehearsal_check.__name__),
            root=here,
            cell=here,
            gate=None,
            cwd=here,
            env=dict(os.environ),
            deadline=time.time() + 60.0,
            bytecode_checked=True,
        )
        (message,) = wire.FrameReader().feed(wire.encode(job.message()))
        decoded = VerifierJob.from_message(message)
        os.environ.update(decoded.env)  # a no-op
        os.environ[REHEARSAL_NAME] = ""
        del os.environ[REHEARSAL_NAME]
    # Catch-all: an optimisation never costs a call (a module's import may have changed
    # what our code relies on; the call itself then reports what that breaks).
    except BaseException:  # noqa: BLE001
        return None
    return decoded


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
    link = Link(wire.Channel(sock))
    rehearsal = _rehearsal()
    if rehearsal is not None:
        with suppress(BaseException):  # the same: an optimisation
            wire.encode(execute(rehearsal, _Rehearsal()).message())
    try:
        message = link.channel.recv()
        if message is None:
            os._exit(0)
        job = VerifierJob.from_message(message)
        os.environ.clear()
        os.environ.update(job.env)
        if job.cwd:
            with suppress(OSError):  # the caller's folder is gone: stay where we are
                os.chdir(job.cwd)
        answer = execute(job, link)
        flush_streams()  # before the answer: the pytest process then reads what is there
        link.send(answer.message())
    # The verifier child's fail-closed boundary (boundary.py): a bug of ours (or a signal
    # handler of the verifier firing late) must still answer; the parent makes it an error.
    except BaseException as exc:  # noqa: BLE001
        with suppress(BaseException):  # the link is gone: the parent sees a crash instead
            link.send({"op": Op.INTERNAL.value, "detail": f"{type(exc).__name__}: {exc}"})
    finally:
        flush_streams()
        os._exit(0)  # no atexit, no join of threads the verifier left running
