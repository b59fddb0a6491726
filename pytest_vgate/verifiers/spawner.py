"""Where verifier children come from: the forkserver (what it preloads) and a warm spare.

Every call gets a child of its own, forked from the forkserver, a single-threaded process
that has imported only the modules named by :func:`preload_modules` and runs no verifier
code. Starting a child (connect to the server, fork, unpickle, ``spawn.prepare``) costs
milliseconds; :func:`take_child` hands out a *spare* that :func:`refill` started while the
previous verifier ran, so that cost is paid off the critical path. A spare has only
waited for its job: it is exactly as fresh as a child started on demand, and it is used
for one call only. What a spare captured when it started (cwd, sys.path) is set again
from the job.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import threading
from contextlib import suppress
from multiprocessing.context import BaseContext

from pytest_vgate.process import kill_process_group
from pytest_vgate.verifiers.child import child_main

# Imported by the forkserver once when the calling process has them imported: the test
# modules verifiers live in import pytest (~150-250 ms per child otherwise). By name
# only; we never import pytest ourselves. Verifier modules are never preloaded: see
# docs/verifiers.md ("What the server preloads").
PRELOAD_IF_IMPORTED: tuple[str, ...] = ("pytest",)
WARM_SPARE = True  # keep one started child waiting for the next call
SPARE_WAIT = 5.0  # seconds take_child waits for a spare on its way before starting one

_lock = threading.Lock()
_preloaded = False
_spare: Child | None = None
_filling: threading.Thread | None = None


def preload_modules() -> list[str]:
    """What the forkserver imports once, so that no child imports it again."""
    names = ["__main__", __name__, child_main.__module__]
    names += [m for m in PRELOAD_IF_IMPORTED if m in sys.modules]
    return names


def context(method: str | None) -> BaseContext:
    """The multiprocessing context for ``method`` (None: forkserver where available,
    else spawn), with our preload set before the forkserver starts."""
    global _preloaded
    chosen = method or (
        "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    )
    mp = multiprocessing.get_context(chosen)
    if chosen == "forkserver":
        with _lock:
            if not _preloaded:  # only effective before the server starts; harmless after
                mp.set_forkserver_preload(preload_modules())
                _preloaded = True
    return mp


class Child:
    """A started verifier child waiting for its job on ``conn`` (our end of its pipe)."""

    def __init__(self, mp: BaseContext) -> None:
        self.method = mp.get_start_method()
        self.owner = os.getpid()
        self.conn, child_end = mp.Pipe(duplex=True)
        self.proc = mp.Process(target=child_main, args=(child_end,), daemon=True)  # type: ignore[attr-defined]
        try:
            self.proc.start()
        except BaseException:
            with suppress(OSError):
                self.conn.close()
            raise
        finally:
            child_end.close()

    def waiting(self, method: str) -> bool:
        """Still alive, ours, and of ``method``: safe to hand the next job to."""
        if self.owner != os.getpid() or self.method != method:
            return False
        try:
            return self.proc.exitcode is None and not self.conn.poll(0)
        except (OSError, EOFError, ValueError):  # its pipe is broken: it died
            return False

    def discard(self) -> None:
        """Kill an unused child (its own process group) and close our end."""
        if self.owner == os.getpid() and self.proc.pid is not None:
            with suppress(ValueError):
                kill_process_group(self.proc.pid, signal.SIGKILL)
            with suppress(OSError, ValueError, AttributeError):
                self.proc.kill()  # not yet the leader of its own group
                self.proc.join(0)
        with suppress(OSError):
            self.conn.close()


def take_child(mp: BaseContext, wait: float = SPARE_WAIT) -> Child:
    """The waiting spare if it is usable, else a child started now (may raise). A spare
    still starting is waited for up to ``wait`` seconds."""
    global _spare
    with _lock:
        filling = _filling
    if filling is not None:  # a spare on its way is ready sooner than a new child
        filling.join(max(0.0, wait))
    with _lock:
        spare, _spare = _spare, None
    if spare is not None:
        if spare.waiting(mp.get_start_method()):
            return spare
        spare.discard()
    return Child(mp)


def refill(mp: BaseContext) -> None:
    """Start the spare for the next call in a thread of its own (starting a child waits
    for the forkserver's fork), unless one waits or is on its way already."""
    global _filling
    if not WARM_SPARE:
        return
    with _lock:
        if _spare is not None or _filling is not None:
            return
        _filling = threading.Thread(target=_fill, args=(mp,), name="vgate-spare", daemon=True)
        _filling.start()  # under the lock: take_child may join it as soon as it is seen


def _fill(mp: BaseContext) -> None:
    global _spare, _filling
    child: Child | None
    try:
        child = Child(mp)
    # Catch-all: a spare is an optimisation; whatever stops it must not fail a call (the
    # next call starts its own child and reports a failure to start as its crash).
    except Exception:  # noqa: BLE001
        child = None
    with _lock:
        _filling = None
        if child is not None and _spare is None:
            _spare, child = child, None
    if child is not None:
        child.discard()


def drop_spare() -> None:
    """Kill the waiting spare, if any (e.g. before changing the start method)."""
    global _spare
    with _lock:
        spare, _spare = _spare, None
    if spare is not None:
        spare.discard()
