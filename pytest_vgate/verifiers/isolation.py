"""One verifier call, fail-closed: a fresh child process per call, killed at the deadline.

The child comes from multiprocessing's ``forkserver`` (``spawn`` where there is none): a
clean interpreter state per call (no module state, lock or thread of an earlier verifier
survives), no fork of our threaded process, and a cheap fork per call once the server
runs (see ``spawner``: what the server preloads, and the spare started ahead). The child
gets the job and returns the result over a Pipe as plain data; it reports
each process group ``ctx.run`` starts so that the parent can kill it with the child.
``inline`` runs in a daemon thread of the caller: the deadline is enforced, nothing else.
"""

from __future__ import annotations

import math
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from contextlib import suppress
from multiprocessing.context import BaseContext
from pathlib import Path
from typing import Any

from pytest_vgate.cell import check_cell
from pytest_vgate.process import DEFAULT_CAPTURE_LIMIT, kill_process_group
from pytest_vgate.spec import EnvSpec
from pytest_vgate.tools import ToolInventory
from pytest_vgate.verdict import DEFAULT_CAUSE, Cause, Mode
from pytest_vgate.verifiers import spawner
from pytest_vgate.verifiers.api import Isolation
from pytest_vgate.verifiers.context import ToolUse
from pytest_vgate.verifiers.invoke import bounded, execute
from pytest_vgate.verifiers.result import VerifierResult
from pytest_vgate.verifiers.target import VerifierTarget

START_METHOD: str | None = None  # None: forkserver where available, else spawn
EXIT_GRACE = 2.0  # seconds a child that delivered no result gets to exit
OUTPUT_TAIL = 3000  # characters of the verifier's output kept


def multiprocessing_context() -> BaseContext:
    """The context verifier children come from (see the module docstring for why)."""
    return spawner.context(START_METHOD)


class Cancel:
    """Lets a fan-out kill every child it started when the user presses Ctrl-C."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: set[_ProcessCall] = set()
        self.cancelled = False

    def _add(self, call: _ProcessCall) -> None:
        with self._lock:
            self._calls.add(call)
            if self.cancelled:
                call.kill()

    def _discard(self, call: _ProcessCall) -> None:
        with self._lock:
            self._calls.discard(call)

    def cancel(self) -> None:
        with self._lock:
            self.cancelled = True
            calls = list(self._calls)
        for call in calls:
            call.kill()


class _Groups:
    """Process groups ``ctx.run`` started and has not finished (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._live: set[int] = set()

    def started(self, pgid: int) -> None:
        with self._lock:
            self._live.add(pgid)

    def finished(self, pgid: int) -> None:
        with self._lock:
            self._live.discard(pgid)

    def kill(self) -> None:
        with self._lock:
            live, self._live = self._live, set()
        for pgid in live:
            with suppress(ValueError):  # refused: not a group of a check's own
                kill_process_group(pgid, signal.SIGKILL)


def _read_tail(path: str) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - OUTPUT_TAIL))
            data = fh.read()
    except OSError:
        return ""
    text = data.decode("utf-8", errors="replace")
    return f"[...]{text}" if size > OUTPUT_TAIL else text


def _decode(name: str, raw: Any, duration: float, output: str) -> VerifierResult:
    """Strict decoding of the child's result: anything malformed is an error, never a pass."""
    try:
        mode = Mode(raw["mode"])
        cause = Cause(raw["cause"]) if raw.get("cause") else DEFAULT_CAUSE[mode]
        return VerifierResult(
            name=name,
            mode=mode,
            cause=cause,
            detail=str(raw.get("detail", "")),
            duration=duration,
            runs=tuple(ToolUse.from_dict(r) for r in raw.get("runs", ())),
            declared_tools=tuple(str(t) for t in raw.get("declared_tools", ())),
            output=output,
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        return VerifierResult.failure(
            name, Mode.ERROR, f"pytest-vgate: malformed result from the verifier child: {exc}"
        )


class _ProcessCall:
    """One child process running one verifier; the parent side of the protocol."""

    def __init__(self) -> None:
        self.child: spawner.Child | None = None
        self.groups = _Groups()
        self._killed = threading.Event()

    def kill(self) -> None:
        """Kill the child, what it started in its own group, and the ctx.run groups."""
        self._killed.set()
        child = self.child
        pid = child.proc.pid if child is not None else None
        if child is not None and pid is not None:
            with suppress(ValueError):
                kill_process_group(pid, signal.SIGKILL)
            with suppress(OSError, ValueError, AttributeError):
                child.proc.kill()
        self.groups.kill()

    def run(
        self, mp: BaseContext, name: str, job: dict[str, Any], timeout: float
    ) -> VerifierResult:
        started = time.monotonic()
        try:
            child = self.child = spawner.take_child(mp, min(spawner.SPARE_WAIT, timeout))
        except Exception as exc:  # noqa: BLE001 - any start failure is a crash, not a pass
            return VerifierResult.failure(
                name, Mode.CRASH, f"could not start the verifier's process: {exc}"
            )
        deadline = started + timeout
        job["deadline"] = time.time() + max(0.0, deadline - time.monotonic())
        delivered = False
        try:
            with suppress(OSError):  # the child is gone already: reported as a crash below
                child.conn.send(job)
            spawner.refill(mp)  # the next call's child starts while this one runs
            result, delivered = self._wait(child, name, job, timeout, started, deadline)
            return result
        except BaseException:
            self.kill()  # Ctrl-C while waiting: no grace for the child
            raise
        finally:
            self._reap(child, delivered)

    def _wait(
        self,
        child: spawner.Child,
        name: str,
        job: dict[str, Any],
        timeout: float,
        started: float,
        deadline: float,
    ) -> tuple[VerifierResult, bool]:
        """The call's result, and whether the child delivered it (it then has nothing
        left to do but exit)."""
        output = str(job["output"])
        conn, proc = child.conn, child.proc
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self._killed.is_set():
                self.kill()
                tail = _read_tail(output)
                return VerifierResult.failure(
                    name,
                    Mode.TIMEOUT,
                    f"no result within the deadline of {timeout:g}s; the verifier's process "
                    "was killed"
                    + (
                        f"\nits output and stack near the deadline:\n{tail}" if tail.strip() else ""
                    ),
                    duration=time.monotonic() - started,
                    output=tail,
                ), False
            ready = multiprocessing.connection.wait([conn, proc.sentinel], remaining)
            if conn in ready or (ready and conn.poll(0)):
                try:
                    message = conn.recv()
                except (EOFError, OSError):
                    return self._crash(child, name, output, started), False
                kind = message[0] if isinstance(message, tuple) and message else None
                if kind == "started":
                    self.groups.started(int(message[1]))
                elif kind == "finished":
                    self.groups.finished(int(message[1]))
                elif kind == "result":
                    duration = time.monotonic() - started
                    return _decode(name, message[1], duration, _read_tail(output)), True
                elif kind == "internal":
                    return VerifierResult.failure(
                        name,
                        Mode.ERROR,
                        f"pytest-vgate: internal error in the verifier child: {message[1]}",
                        duration=time.monotonic() - started,
                    ), True
                continue
            if ready:  # the sentinel alone: the child exited without a result
                return self._crash(child, name, output, started), False

    def _crash(
        self, child: spawner.Child, name: str, output: str, started: float
    ) -> VerifierResult:
        with suppress(BaseException):  # the exit status only improves the message
            child.proc.join(EXIT_GRACE)
        code = child.proc.exitcode
        if code is not None and code < 0:
            try:
                how = f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                how = f"was killed by signal {-code}"
        elif code is not None:
            how = f"exited with status {code}"
        else:
            how = "closed its result pipe"
        tail = _read_tail(output)
        detail = f"the verifier's process {how} without delivering a result"
        if tail.strip():
            detail += f"\nits last output:\n{tail}"
        return VerifierResult.failure(
            name, Mode.CRASH, bounded(detail), duration=time.monotonic() - started, output=tail
        )

    def _reap(self, child: spawner.Child, delivered: bool) -> None:
        """Leave nothing behind: the child, what it started in its group, the ctx.run
        groups, the pipe. A child that delivered its answer has nothing left to do but
        exit and is killed at once; any other one gets a moment to exit first."""
        if child.proc.pid is not None:
            if not delivered:
                multiprocessing.connection.wait([child.proc.sentinel], EXIT_GRACE)
            self.kill()  # before the child is reaped, so its pid still names its group
            # Its exit status arrives through the forkserver; multiprocessing collects a
            # late one when the next child starts.
            child.proc.join(0 if delivered else EXIT_GRACE)
        with suppress(OSError):
            child.conn.close()


def _call_process(
    name: str, job: dict[str, Any], timeout: float, scratch: Path | None, cancel: Cancel | None
) -> VerifierResult:
    fd, output = tempfile.mkstemp(prefix="vgate-verifier-", suffix=".out", dir=scratch)
    os.close(fd)
    job["output"] = output
    job["cwd"] = os.getcwd()  # a spare child started before a chdir of ours
    call = _ProcessCall()
    if cancel is not None:
        cancel._add(call)
    try:
        return call.run(multiprocessing_context(), name, job, timeout)
    except BaseException:
        call.kill()  # Ctrl-C while waiting: kill the children first, then let it propagate
        raise
    finally:
        if cancel is not None:
            cancel._discard(call)
        with suppress(OSError):
            os.unlink(output)


def _call_inline(name: str, job: dict[str, Any], timeout: float) -> VerifierResult:
    groups = _Groups()
    box: list[dict[str, Any]] = []
    started = time.monotonic()
    job["deadline"] = time.time() + timeout

    def body() -> None:
        # Catch-all: a bug of ours in a thread would otherwise vanish into threading's hook.
        try:
            box.append(execute(job, groups, fresh_process=False))
        except BaseException as exc:  # noqa: BLE001
            box.append({"mode": "error", "detail": f"pytest-vgate: internal error: {exc!r}"})

    thread = threading.Thread(target=body, name=f"vgate-verifier-{name}", daemon=True)
    try:
        thread.start()
        thread.join(timeout)
    except BaseException:
        groups.kill()
        raise
    duration = time.monotonic() - started
    if thread.is_alive() or not box:
        groups.kill()
        return VerifierResult.failure(
            name,
            Mode.TIMEOUT,
            f"no result within the deadline of {timeout:g}s (inline: the verifier's thread "
            "could not be stopped and keeps running in the background)",
            duration=duration,
        )
    groups.kill()  # runs still in flight when the verifier returned
    return _decode(name, box[0], duration, "")


def call_verifier(
    target: VerifierTarget,
    *,
    root: Path | str,
    timeout: float,
    gate: Mapping[str, Any] | None = None,
    tools: ToolInventory | Mapping[str, str] | None = None,
    isolation: Isolation | str | None = None,
    sys_path: Sequence[str] = (),
    caller_env: Mapping[str, str] | None = None,
    env: EnvSpec | None = None,
    capture_limit: int = DEFAULT_CAPTURE_LIMIT,
    scratch: Path | str | None = None,
    cancel: Cancel | None = None,
) -> VerifierResult:
    """Call one verifier under the fail-closed contract and return what happened.

    ``timeout`` is the default deadline (the target's own ``timeout`` wins). ``tools`` is
    the session inventory or an ``id -> path`` mapping. ``sys_path`` entries go first on
    the child's sys.path, then ours, then ``root``. Never raises, except what the user
    sends (KeyboardInterrupt), after killing the child.
    """
    name = target.display
    limit = target.timeout if target.timeout is not None else timeout
    if (
        isinstance(limit, bool)
        or not isinstance(limit, (int, float))
        or not (math.isfinite(limit) and limit > 0)
    ):
        return VerifierResult.failure(
            name, Mode.ERROR, f"the deadline must be a positive number of seconds, not {limit!r}"
        )
    try:
        mode = Isolation(isolation if isolation is not None else target.isolation)
    except ValueError:
        return VerifierResult.failure(
            name, Mode.ERROR, f"isolation must be 'process' or 'inline', not {isolation!r}"
        )
    root_path = Path(root).absolute()
    job: dict[str, Any] = {
        "target": target.to_dict(),
        "root": str(root_path),
        "gate": dict(gate) if gate is not None else None,
        "inventory": tools.to_dict() if isinstance(tools, ToolInventory) else None,
        "tool_paths": dict(tools) if isinstance(tools, Mapping) else {},
        "caller_env": dict(caller_env if caller_env is not None else os.environ),
        "env_pass": list(env.pass_names) if env else [],
        "env_set": dict(env.set_values) if env else {},
        "capture_limit": capture_limit,
        "sys_path": [*map(str, sys_path), *sys.path, str(root_path)],
    }
    scratch_path = Path(scratch) if scratch is not None else None
    with check_cell("vgate-verifier-", parent=scratch_path) as cell:
        job["cell"] = str(cell)
        if mode is Isolation.INLINE:
            return _call_inline(name, job, float(limit))
        return _call_process(name, job, float(limit), scratch_path, cancel)
