"""The pytest process's end of a zygote: its control socket, what it hands back, and
how a zygote is stopped. ``spawner.ZygoteHost`` decides which zygotes exist."""

from __future__ import annotations

import os
import selectors
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

from pytest_vgate.process import Capture, contain, drain
from pytest_vgate.verifiers import wire
from pytest_vgate.verifiers.messages import MoreMessage, Op, ReapMessage

REPLY_TIMEOUT = 30.0  # seconds a zygote gets to answer a request (it answers at once)
HOST_PID_LOOKS = 5  # reads of a zygote's children before a pid is not among them


class ZygoteError(Exception):
    """A zygote could not be started or stopped answering; the call is a crash."""


class IsolationMissing(ZygoteError):
    """``--vgate-isolation strict`` and no private PID namespace here: mode ``sandbox``."""


class Control:
    """A control socket to a zygote: requests answered in order, and the spare children a
    module zygote offers unasked (kept until a call takes one)."""

    def __init__(self, sock: socket.socket, pid: int, reaper: Control | None) -> None:
        self.sock = sock
        self.pid = pid
        self.reaper = reaper  # who collects this zygote's exit (None: the Popen object)
        # In a PID namespace of the base zygote's the pids zygotes report are not ours:
        # ``host_pid`` finds ours among the children of ``tree`` (kill by ours, ask the
        # zygote to reap by its own, which ``reap`` looks up).
        self.pidns = False
        self.ns_pid = pid  # this zygote's pid as it sees itself
        self.tree = pid  # the process whose children this zygote's children are
        self._ns_of: dict[int, int] = {}
        self.lock = threading.Lock()
        self.broken = False
        self._inbox = wire.Inbox(sock)
        self._spares: list[tuple[int, list[int]]] = []
        self._dismissed: list[int] = []  # to reap, told with the next "more" (``reap``)

    def _next(self, timeout: float) -> tuple[dict[str, Any], list[int]]:
        """The next message that is not a spare (spares are kept), within ``timeout``."""
        end = time.monotonic() + timeout
        while True:
            message, fds = self._receive(end - time.monotonic())
            if message is not None:
                return message, fds

    def _receive(self, timeout: float) -> tuple[dict[str, Any] | None, list[int]]:
        """The next message; None (and nothing) for a spare, which is kept."""
        try:
            self.sock.settimeout(max(timeout, 0.001))
            message, fds = self._inbox.recv()
        except (OSError, wire.WireError) as exc:
            self.broken = True
            raise ZygoteError(f"the verifier zygote stopped answering: {exc}") from None
        if message is None:
            self.broken = True
            raise ZygoteError("the verifier zygote exited")
        if "spare" in message:
            if isinstance(message["spare"], int) and len(fds) == 2:
                self._spares.append((message["spare"], fds))
            else:
                for fd in fds:
                    os.close(fd)
            return None, []
        return message, fds

    def request(
        self, message: Mapping[str, object], fds: Sequence[int] = (), reply: bool = True
    ) -> tuple[dict[str, Any], list[int]]:
        with self.lock:
            if self.broken:
                raise ZygoteError("the zygote's control socket is closed")
            try:
                self.sock.settimeout(REPLY_TIMEOUT)
                wire.send(self.sock, message, fds)
            except OSError as exc:
                self.broken = True
                raise ZygoteError(f"the verifier zygote stopped answering: {exc}") from None
            if not reply:
                return {}, []
            return self._next(REPLY_TIMEOUT)

    def take_spare(self, timeout: float) -> tuple[int, list[int]]:
        """A child waiting for its job: pid, [call socket, output pipe]. Asks for the
        next one at once, so that it is forked while this call runs."""
        with self.lock:
            if self.broken:
                raise ZygoteError("the zygote's control socket is closed")
            end = time.monotonic() + timeout
            while not self._spares:
                _, fds = self._receive(end - time.monotonic())
                for fd in fds:  # an answer nobody waits for
                    os.close(fd)
            pid, fds = self._spares.pop(0)
            more = MoreMessage(op=Op.MORE)
            if self._dismissed:
                more["reap"], self._dismissed = self._dismissed, []
            try:
                wire.send(self.sock, more)
            except OSError:
                self.broken = True
        try:
            return self.host_pid(pid), fds
        except ZygoteError:
            for fd in fds:
                os.close(fd)
            raise

    def host_pid(self, pid: int) -> int:
        """Our pid of the process this zygote calls ``pid`` (its child, or itself)."""
        if not self.pidns:
            return pid
        if pid == self.ns_pid:
            return self.pid
        # The kernel's list of children may miss one while another is being collected
        # (the zygote collects the children of ended calls as this call starts): look
        # again before calling it gone. Newest first: the one asked for is a spare just
        # forked; the older ones are mostly children the zygote has not collected yet.
        for attempt in range(HOST_PID_LOOKS):
            if attempt:
                time.sleep(0.001 * attempt)
            for kid in reversed(contain.children(self.tree)):
                if contain.ns_pid(kid) == pid:
                    self._ns_of[kid] = pid
                    return kid
        raise ZygoteError(f"the verifier zygote's process {pid} is not among its children")

    def reap(self, pid: int, status: bool = False, later: bool = False) -> int | None:
        """Have ``pid`` (a child of this zygote) killed with its group and collected;
        ``status``: wait for its exit status. ``later``: the caller killed it already;
        tell the zygote with the next ``take_spare`` (one wake-up of it per call, not two;
        at the latest the zygote kills and collects it when it ends)."""
        theirs = self._ns_of.pop(pid, pid) if self.pidns else pid
        if later and not status:
            with self.lock:
                if not self.broken:
                    self._dismissed.append(theirs)
            return None
        try:
            message = ReapMessage(op=Op.REAP, pid=theirs, status=status)
            answer, _ = self.request(message, reply=status)
        except ZygoteError:
            return None
        code = answer.get("status")
        return int(code) if isinstance(code, int) else None

    def close(self) -> None:
        self.broken = True
        with self.lock:
            spares, self._spares = self._spares, []
        for _, fds in spares:
            for fd in fds:
                with suppress(OSError):
                    os.close(fd)
        with suppress(OSError):
            self.sock.close()


@dataclass
class ModuleZygote:
    control: Control
    oneshot: bool
    import_output: str = ""  # what the module printed while it was imported
    # The bytecode cache its processes use (chosen here: ``bytecode.cache_prefix``); the
    # tree's entries in it are checked here before each call (None: the child checks).
    pycache: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass(frozen=True)
class ImportFailure:
    """The module zygote could not import its module: the call's answer."""

    mode: str  # a Mode value
    detail: str
    output: str = ""


def stop_base(base: tuple[Control, Any]) -> None:
    control, proc = base
    control.close()  # end of stream: it kills its zygotes and exits
    with suppress(Exception):  # stopping goes on to the kill whatever the wait raised
        proc.wait(timeout=5.0)
    with suppress(Exception):  # a zygote that cannot be killed must not stop the shutdown
        proc.kill()
        proc.wait(timeout=5.0)


def wait_ready(
    control: Control, out_r: int, capture: Capture, deadline: float
) -> dict[str, Any] | None:
    """The zygote's ready message, or None at the deadline."""
    os.set_blocking(out_r, False)
    with selectors.DefaultSelector() as sel:
        sel.register(out_r, selectors.EVENT_READ)
        sel.register(control.sock, selectors.EVENT_READ)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            for key, _ in sel.select(remaining):
                if key.fd == out_r:
                    if not drain(out_r, capture, rounds=64):
                        sel.unregister(out_r)
                    continue
                with control.lock:  # readable: the ready message is on its way
                    message, fds = control._next(max(remaining, 1.0))
                for fd in fds:
                    os.close(fd)
                with suppress(OSError):
                    while drain(out_r, capture, rounds=64):  # what the import printed
                        if not sel.select(0.05):
                            break
                return message


def discard(control: Control) -> None:
    """Kill a module zygote and have the base zygote collect it."""
    control.close()
    if control.reaper is not None:
        control.reaper.reap(control.pid)
