"""The pytest process's side of one verifier call: ``Call`` hands the child its job,
serves its ``ctx.run`` requests (``toolhost``), drains its output into a head+tail bound and
reads its answer under the deadline; whatever happens, the child's process group and the
tools it asked for are killed before it returns. ``isolation.call_verifier`` makes one.
"""

from __future__ import annotations

import os
import select
import selectors
import signal
import socket
import threading
import time
from contextlib import suppress
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_vgate.clip import clip
from pytest_vgate.process import Capture, bytecode, drain, kill_process_group
from pytest_vgate.verdict import DEFAULT_CAUSE, Mode, worst_mode
from pytest_vgate.verifiers import spawner, wire
from pytest_vgate.verifiers.child import STACK_DUMP_LEAD, STACK_DUMP_SIGNAL
from pytest_vgate.verifiers.invoke import bounded
from pytest_vgate.verifiers.messages import CallMessage, ChildAnswer, Op, VerifierJob
from pytest_vgate.verifiers.result import VerifierResult
from pytest_vgate.verifiers.toolhost import ToolHost, ground

EXIT_GRACE = 2.0  # seconds a child that delivered no answer gets to tell its exit status
DRAIN_GRACE = 0.5  # seconds we keep reading a dead child's output
DUMP_GRACE = 1.0  # seconds past the deadline we wait for stacks asked for and not come
OUTPUT_TAIL = 3000  # characters of the verifier's output shown in a crash/timeout detail
CHUNK = 1 << 16
# What a verifier process may answer; every other mode is the pytest process's to give.
CHILD_MODES = frozenset({Mode.PASS, Mode.FAIL, Mode.ERROR, Mode.PANIC, Mode.UNAVAILABLE})


def _tail(text: str) -> str:
    return clip(text, OUTPUT_TAIL, keep="tail", mark="[...]")


def _decode(
    name: str, raw: Any, duration: float, output: str, output_bytes: int, host: ToolHost
) -> VerifierResult:
    """The child's answer, judged against the pytest process's record of its tool runs.

    Strict: anything malformed is an error, a mode the child may not give is an error,
    never a pass; tool-use violations and an unbound pass override what the child said.
    """
    runs, violations = host.close()
    declared = host.declared
    try:
        answer = ChildAnswer.read(raw)
        mode, cause, detail = answer.mode, answer.cause, answer.detail
        if mode not in CHILD_MODES:
            raise ValueError(f"a verifier process cannot answer mode {mode.value!r}")
    except ValueError as exc:  # JsonShapeError included
        return VerifierResult.failure(
            name,
            Mode.ERROR,
            f"pytest-vgate: malformed answer from the verifier's process: {exc}",
            duration=duration,
            runs=runs,
            declared_tools=declared,
            output=output,
            output_bytes=output_bytes,
        )
    if violations:
        mode = worst_mode([mode, *(m for m, _ in violations)])
        cause = None
        detail = "\n".join([*(msg for _, msg in violations), detail]).strip()
    else:
        unground = ground(
            mode, detail, runs, declared, unavailable_answered=host.unavailable_answered
        )
        if unground is not None:
            (mode, detail), cause = unground, None
    if mode is not Mode.PASS and cause is None:
        cause = DEFAULT_CAUSE[mode]
    return VerifierResult(
        name=name,
        mode=mode,
        cause=cause if mode is not Mode.PASS else None,
        detail=bounded(detail),
        duration=duration,
        runs=runs,
        declared_tools=declared,
        output=output,
        output_bytes=output_bytes,
    )


class Call:
    """The pytest process's side of one call: job, ctx.run answers, output, answer."""

    def __init__(
        self, name: str, host: ToolHost, capture_limit: int, zygotes: spawner.ZygoteHost
    ) -> None:
        self.name = name
        self.host = host
        self.zygotes = zygotes
        self.capture_limit = capture_limit
        self.capture = Capture(capture_limit)
        self.pid: int | None = None
        self.reaper: spawner.Control | None = None
        self._killed = threading.Event()
        self.answered = False  # the child answered, after killing all it had started
        self._serving: list[threading.Thread] = []  # one per ctx.run request
        self._send_lock = threading.Lock()
        self._dumped_at: int | None = None  # output bytes when the stacks were asked for

    def kill(self) -> None:
        """Kill the child (its whole group) and the tools it asked for."""
        self._killed.set()
        if self.pid is not None:
            with suppress(ValueError):
                kill_process_group(self.pid, signal.SIGKILL)
        self.host.kill()

    def output(self) -> str:
        return self.capture.text()

    def run(
        self,
        zygote: spawner.ModuleZygote,
        job: VerifierJob,
        timeout: float,
        started: float,
        deadline: float,
    ) -> VerifierResult:
        try:
            pid, fds = _take_child(zygote, deadline)
        except spawner.ZygoteError as exc:
            self.zygotes.forget(zygote)
            return VerifierResult.failure(
                self.name, Mode.CRASH, f"could not start the verifier's process: {exc}"
            )
        self.pid = pid
        self.reaper = zygote.control.reaper if zygote.oneshot else zygote.control
        sock = socket.socket(fileno=fds[0])
        out_fd = fds[1]
        # The verifier's deadline runs from here: the zygotes' start-up (ours) and the
        # module's import (bounded by a deadline of its own) are not its time.
        deadline = time.monotonic() + timeout
        self.host.deadline = deadline
        try:
            sock.setblocking(False)
            os.set_blocking(out_fd, False)
            job = replace(job, deadline=time.time() + timeout)
            if zygote.pycache is not None:  # the source as it is now (``bytecode``)
                bytecode.invalidate(Path(zygote.pycache), job.root)
                job = replace(job, bytecode_checked=True)
            if not wire.send_by(sock, job.message(), deadline):
                return self._crash(sock, out_fd, started)
            return self._wait(sock, out_fd, timeout, started, deadline)
        except BaseException:
            self.kill()  # Ctrl-C while waiting: no grace for the child
            raise
        finally:
            self.kill()  # the child has nothing left to do; nor have its tools
            for thread in self._serving:  # a tool starting meanwhile is killed at once
                thread.join(spawner.REPLY_TIMEOUT)
            if self.reaper is not None and self.pid is not None:
                # Unanswered: wait until its zygote killed what it left (an orphan, a daemon).
                later = self.answered and self.reaper is zygote.control
                self.reaper.reap(self.pid, status=not self.answered, later=later)
            with suppress(OSError):
                sock.close()
            with suppress(OSError):
                os.close(out_fd)

    def _wait(
        self, sock: Any, out_fd: int, timeout: float, started: float, deadline: float
    ) -> VerifierResult:
        reader = wire.FrameReader()
        pidfd = _pidfd(self.pid)
        sel = selectors.DefaultSelector()
        try:
            sel.register(sock, selectors.EVENT_READ)
            sel.register(out_fd, selectors.EVENT_READ)
            if pidfd is not None:
                sel.register(pidfd, selectors.EVENT_READ)
            sock_open = True
            dump_at: float | None = deadline - STACK_DUMP_LEAD
            while True:
                now = time.monotonic()
                if now >= deadline or self._killed.is_set():
                    return self._timeout(out_fd, timeout, started)
                if dump_at is not None and now >= dump_at:
                    dump_at = None
                    self._dumped_at = self.capture.total
                    self._dump_stack(pidfd)
                events = sel.select((dump_at or deadline) - now)
                died = False
                for key, _ in events:
                    if key.fd == out_fd:
                        if not drain(out_fd, self.capture, rounds=64):
                            sel.unregister(out_fd)
                    elif key.fd == pidfd:
                        died = True
                if sock_open and (died or any(k.fd == sock.fileno() for k, _ in events)):
                    try:
                        messages, sock_open = _receive(sock, reader)
                    except wire.WireError as exc:
                        return self._violation(f"a malformed message: {exc}", started)
                    for message in messages:
                        done = self._handle(message, sock, started, deadline)
                        if done is not None:
                            self.answered = True
                            drain(out_fd, self.capture, rounds=64)  # printed before it answered
                            return done
                    if not sock_open:
                        sel.unregister(sock)
                if died or not sock_open:
                    return self._crash(sock, out_fd, started)
        finally:
            sel.close()
            if pidfd is not None:
                os.close(pidfd)

    def _dump_stack(self, pidfd: int | None) -> None:
        """Have the child write its threads' stacks to its output (faulthandler)."""
        try:
            if pidfd is not None:
                signal.pidfd_send_signal(pidfd, STACK_DUMP_SIGNAL)
            elif self.pid is not None:
                kill_process_group(self.pid, STACK_DUMP_SIGNAL)
        except (OSError, ValueError):
            pass  # gone already: its death is reported instead

    def _handle(
        self, message: dict[str, Any], sock: Any, started: float, deadline: float
    ) -> VerifierResult | None:
        op = message.get("op")
        if op == Op.RUN:
            args = (message, sock, deadline)
            thread = threading.Thread(target=self._serve, args=args, daemon=True)
            self._serving.append(thread)
            thread.start()
        elif op == Op.DECLARE:
            tools = message.get("tools")
            if isinstance(tools, list):
                self.host.declare([str(t) for t in tools])
        elif op == Op.RESULT:
            duration = time.monotonic() - started
            return _decode(
                self.name,
                message.get("result"),
                duration,
                self.output(),
                self.capture.total,
                self.host,
            )
        elif op == Op.INTERNAL:
            return VerifierResult.failure(
                self.name,
                Mode.ERROR,
                f"pytest-vgate: internal error in the verifier's process: {message.get('detail')}",
                duration=time.monotonic() - started,
                output=self.output(),
                output_bytes=self.capture.total,
            )
        return None

    def _serve(self, message: dict[str, Any], sock: Any, deadline: float) -> None:
        # Catch-all: a bug of ours in this thread must still answer the verifier (which
        # waits) and must not vanish into threading's hook.
        try:
            answer = self.host.serve(message)
        except Exception as exc:  # noqa: BLE001
            answer = {"error": "error", "message": f"pytest-vgate: internal error: {exc!r}"}
        answer["id"] = message.get("id")
        with self._send_lock:
            wire.send_by(sock, answer, deadline + 1.0)

    def _violation(self, what: str, started: float) -> VerifierResult:
        self.host.close()
        return VerifierResult.failure(
            self.name,
            Mode.ERROR,
            f"the verifier's process broke the call protocol: {what}",
            duration=time.monotonic() - started,
            output=self.output(),
            output_bytes=self.capture.total,
        )

    def _timeout(self, out_fd: int, timeout: float, started: float) -> VerifierResult:
        if self._dumped_at is not None and self.capture.total == self._dumped_at:
            # The stacks were asked for and have not come yet (a loaded machine): a
            # moment more for them, then the kill.
            with selectors.DefaultSelector() as sel:
                sel.register(out_fd, selectors.EVENT_READ)
                if sel.select(DUMP_GRACE):
                    time.sleep(0.05)  # the rest of the dump
                    drain(out_fd, self.capture, rounds=64)
        self.kill()
        self.host.close()
        _drain_until_closed(out_fd, self.capture)
        tail = _tail(self.output())
        return VerifierResult.failure(
            self.name,
            Mode.TIMEOUT,
            f"no result within the deadline of {timeout:g}s; the verifier's process was killed"
            + (f"\nits output and stack near the deadline:\n{tail}" if tail.strip() else ""),
            duration=time.monotonic() - started,
            output=self.output(),
            output_bytes=self.capture.total,
        )

    def _crash(self, sock: Any, out_fd: int, started: float) -> VerifierResult:
        self.host.close()
        _drain_until_closed(out_fd, self.capture)
        code: int | None = None
        if self.reaper is not None and self.pid is not None:  # it, and all it left behind
            code = self.reaper.reap(self.pid, status=True)
            self.reaper = None  # collected
        if code is not None and code < 0:
            try:
                how = f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                how = f"was killed by signal {-code}"
        elif code is not None:
            how = f"exited with status {code}"
        else:
            how = "closed its result channel"
        tail = _tail(self.output())
        detail = f"the verifier's process {how} without delivering a result"
        if tail.strip():
            detail += f"\nits last output:\n{tail}"
        return VerifierResult.failure(
            self.name,
            Mode.CRASH,
            bounded(detail),
            duration=time.monotonic() - started,
            output=self.output(),
            output_bytes=self.capture.total,
        )


def _take_child(zygote: spawner.ModuleZygote, deadline: float) -> tuple[int, list[int]]:
    """A child of ``zygote`` waiting for its job: pid, [call socket, output pipe]. A
    spare that died while it waited (a stray kill, the OOM killer) is replaced, never
    reported as this call's crash."""
    wait = max(spawner.REPLY_TIMEOUT, deadline - time.monotonic())  # our start-up, not its
    for _ in range(3):
        if zygote.oneshot:
            answer, fds = zygote.control.request(CallMessage(op=Op.CALL))
            pid = answer.get("pid")
            if isinstance(pid, int):  # itself: our pid of it
                pid = zygote.control.host_pid(pid)
        else:
            pid, fds = zygote.control.take_spare(wait)
        if len(fds) != 2 or not isinstance(pid, int):
            for fd in fds:
                os.close(fd)
            raise spawner.ZygoteError(f"unexpected answer from the verifier zygote: {pid!r}")
        if zygote.oneshot or _waiting(pid, fds[0]):
            return pid, fds
        for fd in fds:
            os.close(fd)
        zygote.control.reap(pid)
    raise spawner.ZygoteError("the verifier zygote's children die before they start")


def _waiting(pid: int, fd: int) -> bool:
    """Whether the spare ``pid`` (its call socket ``fd``) is alive and waiting."""
    pidfd = _pidfd(pid)
    if pidfd is not None:
        try:
            return not select.select([pidfd], [], [], 0)[0]
        finally:
            os.close(pidfd)
    try:
        data = socket.socket(fileno=os.dup(fd)).recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except BlockingIOError:
        return True
    except OSError:
        return False
    return bool(data)


def _pidfd(pid: int | None) -> int | None:
    """A descriptor that becomes readable when ``pid`` exits (Linux), else None (then the
    end of the call socket tells)."""
    if pid is None or not hasattr(os, "pidfd_open"):
        return None
    try:
        return int(os.pidfd_open(pid))
    except OSError:
        return None


def _receive(sock: Any, reader: wire.FrameReader) -> tuple[list[dict[str, Any]], bool]:
    """The messages available now, and whether the socket is still open."""
    messages: list[dict[str, Any]] = []
    for _ in range(64):
        try:
            data = sock.recv(CHUNK)
        except BlockingIOError:
            return messages, True
        except OSError:
            return messages, False
        if not data:
            return messages, False
        messages.extend(reader.feed(data))
    return messages, True


def _drain_until_closed(fd: int, capture: Capture) -> None:
    """Read a dead child's output until every writer is gone, ``DRAIN_GRACE`` at most
    (a grandchild it left may hold the pipe)."""
    until = time.monotonic() + DRAIN_GRACE
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while time.monotonic() < until:
            if sel.select(until - time.monotonic()) and not drain(fd, capture, rounds=64):
                return
