"""The child side of a process-isolated verifier call (the parent side is ``isolation``).

Kept small and importable on its own: the forkserver preloads it. The child waits for
its job (a spare waits while an earlier verifier runs), runs
:func:`~pytest_vgate.verifiers.invoke.execute`, sends the result back and exits without
running anything the verifier left behind.
"""

from __future__ import annotations

import faulthandler
import multiprocessing.connection
import os
import sys
import threading
import time
from contextlib import suppress
from typing import Any

from pytest_vgate.verifiers.invoke import execute

STACK_DUMP_LEAD = 0.25  # the child dumps its stack this long before the deadline


class _PipeReporter:
    """The child's side of the group reports; shares the pipe with the result."""

    def __init__(self, conn: multiprocessing.connection.Connection) -> None:
        self.conn = conn
        self.lock = threading.Lock()

    def send(self, message: tuple[Any, ...]) -> None:
        with self.lock:
            self.conn.send(message)

    def started(self, pgid: int) -> None:
        self.send(("started", pgid))

    def finished(self, pgid: int) -> None:
        self.send(("finished", pgid))


def child_main(conn: multiprocessing.connection.Connection) -> None:
    """Entry point of a verifier child: receive the job, run it, send the result, exit.

    The child leads its own process group (so the parent can kill what the verifier
    started directly), reads nothing from our stdin and writes its output to a file.
    """
    with suppress(OSError):
        os.setpgrp()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    reporter = _PipeReporter(conn)
    try:
        job = conn.recv()
        if job.get("cwd"):
            with suppress(OSError):  # the caller's folder is gone: stay where we are
                os.chdir(job["cwd"])
        out = os.open(job["output"], os.O_WRONLY | os.O_APPEND)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.close(out)
        faulthandler.enable(file=sys.stderr, all_threads=True)  # segfault: stack in output
        lead = max(0.01, float(job["deadline"]) - time.time() - STACK_DUMP_LEAD)
        faulthandler.dump_traceback_later(lead, exit=False, file=sys.stderr)
        result = execute(job, reporter, fresh_process=True)
        faulthandler.cancel_dump_traceback_later()
        _flush()  # before the result: the parent reads the output file once it has it
        reporter.send(("result", result))
    # Catch-all: a bug of ours (or a signal handler of the verifier firing late) must
    # still answer; the parent turns this into an error rather than a crash.
    except BaseException as exc:  # noqa: BLE001
        with suppress(BaseException):
            reporter.send(("internal", f"{type(exc).__name__}: {exc}"))
    finally:
        _flush()
        os._exit(0)  # no atexit, no join of threads the verifier left running


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with suppress(BaseException):
            stream.flush()
