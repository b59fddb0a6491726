"""The verifier process's side of one call (the pytest process's side is ``isolation``).

A child forked from a module zygote waits for its job on its call socket (a spare waits
while an earlier verifier runs), runs :func:`~pytest_vgate.verifiers.invoke.execute`,
sends its answer back and exits without running anything the verifier left behind. Its
``ctx.run`` asks the pytest process to run the tool (:class:`Link`): the record of what
ran is kept there, out of the verifier's reach.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import socket
import sys
import threading
from contextlib import suppress
from typing import Any

from pytest_vgate.verifiers import wire
from pytest_vgate.verifiers.invoke import execute

STACK_DUMP_LEAD = 0.25  # the child dumps its stack this long before the deadline
STACK_DUMP_SIGNAL = signal.SIGUSR1  # sent by the pytest process for that dump


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
    for stream in (sys.stdout, sys.stderr):  # what it printed before dying is not lost
        with suppress(AttributeError, ValueError):
            stream.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    # The stack dump near the deadline: a signal handler of faulthandler's (C code: it
    # works while the verifier is stuck in C), armed before the job arrives.
    faulthandler.enable(file=sys.stderr, all_threads=True)  # segfault: stack in output
    faulthandler.register(STACK_DUMP_SIGNAL, file=sys.stderr, all_threads=True)
    link = Link(wire.Channel(sock))
    try:
        job = link.channel.recv()
        if job is None:
            os._exit(0)
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in job.get("env", {}).items()})
        if job.get("cwd"):
            with suppress(OSError):  # the caller's folder is gone: stay where we are
                os.chdir(job["cwd"])
        result = execute(job, link)
        flush_streams()  # before the answer: the pytest process then reads what is there
        link.send({"op": "result", "result": result})
    # The verifier child's fail-closed boundary (boundary.py): a bug of ours (or a signal
    # handler of the verifier firing late) must still answer; the parent makes it an error.
    except BaseException as exc:  # noqa: BLE001
        with suppress(BaseException):  # the link is gone: the parent sees a crash instead
            link.send({"op": "internal", "detail": f"{type(exc).__name__}: {exc}"})
    finally:
        flush_streams()
        os._exit(0)  # no atexit, no join of threads the verifier left running
