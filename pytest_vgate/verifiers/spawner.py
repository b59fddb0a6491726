"""Where verifier children come from, seen from the pytest process: the zygotes.

The pytest process never forks (it has threads: forking would copy their locks in
whatever state they are in). It starts one *base* zygote per process (per xdist
worker), a new interpreter with the allowlisted environment, and asks it for a
*module* zygote per verifier module; a call asks the module zygote for a child
(``zygote`` describes both sides). Control sockets are request/response under a lock
per socket. A module zygote is kept for the session, keyed by module, file, sys.path
and cwd; a module whose import leaves threads running is served by a fresh ``oneshot``
zygote per call instead (an import per call, no fork after threads).
"""

from __future__ import annotations

import atexit
import json
import os
import selectors
import socket
import sys
import threading
import time
import weakref
from collections.abc import Sequence
from contextlib import ExitStack, suppress
from dataclasses import dataclass, field
from typing import Any

from pytest_vgate import bytecode
from pytest_vgate.cell import build_env, check_cell
from pytest_vgate.defaults import ISOLATION_CHOICES
from pytest_vgate.process import Capture, contain, drain, start_helper
from pytest_vgate.verifiers import wire
from pytest_vgate.verifiers.zygote import BOOT

# Imported by the base zygote when the calling process has them imported: the test
# modules verifiers live in import pytest (~150-250 ms each otherwise). By name only;
# the core never imports pytest itself.
PRELOAD_IF_IMPORTED: tuple[str, ...] = ("pytest",)
MAX_MODULE_ZYGOTES = 32  # kept at once; the least recently used one goes first
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
        self, message: dict[str, Any], fds: Sequence[int] = (), reply: bool = True
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
            more: dict[str, Any] = {"op": "more"}
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
            message = {"op": "reap", "pid": theirs, "status": status}
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


def _stop_base(base: tuple[Control, Any]) -> None:
    control, proc = base
    control.close()  # end of stream: it kills its zygotes and exits
    with suppress(Exception):  # stopping goes on to the kill whatever the wait raised
        proc.wait(timeout=5.0)
    with suppress(Exception):  # a zygote that cannot be killed must not stop the shutdown
        proc.kill()
        proc.wait(timeout=5.0)


def _key(
    module: str, file: str | None, sys_path: Sequence[str], cwd: str, root: str
) -> tuple[Any, ...]:
    return (module, file, tuple(sys_path), cwd, root)


def _wait_ready(
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


def _discard(control: Control) -> None:
    """Kill a module zygote and have the base zygote collect it."""
    control.close()
    if control.reaper is not None:
        control.reaper.reap(control.pid)


class ZygoteHost:
    """The zygotes of one owner: a session (``SessionState``) or, for library calls
    outside a session, the process's default host (``default_host``).

    ``shutdown`` stops every zygote it started (and the spare child each keeps ready); a
    forked child of the owner drops them without stopping them (they are the parent's).
    """

    def __init__(self, isolation: str = "auto") -> None:
        if isolation not in ISOLATION_CHOICES:
            raise ValueError(f"isolation must be one of {ISOLATION_CHOICES}")
        self._lock = threading.Lock()
        self._base: tuple[Control, Any] | None = None  # (control, Popen)
        self._isolation = isolation  # the base zygote's containment (--vgate-isolation)
        self._missing: str | None = None  # strict, and why the base zygote has no namespace
        self._modules: dict[tuple[Any, ...], ModuleZygote] = {}
        self._key_locks: dict[tuple[Any, ...], threading.Lock] = {}
        self._threaded: set[tuple[Any, ...]] = set()
        self._cells = ExitStack()
        self._owner = os.getpid()
        _HOSTS.add(self)

    def set_isolation(self, isolation: str) -> None:
        """``--vgate-isolation`` for the verifier processes (auto, strict, off): ``auto`` and
        ``strict`` start the base zygote -- and so every verifier process -- in a private PID
        namespace with its own ``/proc`` where possible; ``strict`` fails without one."""
        if isolation not in ISOLATION_CHOICES:
            raise ValueError(f"isolation must be one of {ISOLATION_CHOICES}")
        if isolation != self._isolation:
            self.shutdown()  # zygotes started under another setting
        self._isolation, self._missing = isolation, None

    def _base_control(self) -> Control:
        """The base zygote, started on first use (and again if it died)."""
        with self._lock:
            if self._base is not None and not self._base[0].broken and self._base[1].poll() is None:
                return self._base[0]
            if self._missing is not None:
                raise IsolationMissing(self._missing)
            if self._base is not None:
                _stop_base(self._base)
            ours, theirs = socket.socketpair()
            preload = [m for m in PRELOAD_IF_IMPORTED if m in sys.modules]
            cell = self._cells.enter_context(check_cell("vgate-zygote-"))
            env = build_env(cell, pass_names=(), set_values={}, caller_env=os.environ)
            argv = [
                sys.executable,
                "-c",
                BOOT,
                json.dumps(sys.path),
                str(theirs.fileno()),
                json.dumps(preload),
                "none" if self._isolation == "off" else "namespace",
            ]
            try:
                proc = start_helper(argv, env=env, cwd=os.getcwd(), pass_fds=[theirs.fileno()])
            except OSError as exc:
                ours.close()
                raise ZygoteError(f"could not start the verifier zygote: {exc}") from None
            finally:
                theirs.close()
            base = (Control(ours, proc.pid, None), proc)
            try:
                with base[0].lock:
                    hello, fds = base[0]._next(REPLY_TIMEOUT)
                for fd in fds:
                    os.close(fd)
            except BaseException:
                _stop_base(base)
                raise
            if self._isolation == "strict" and hello.get("isolation") != "namespace":
                _stop_base(base)
                self._missing = f"required isolation missing: {hello.get('detail', hello)}"
                raise IsolationMissing(self._missing)
            if hello.get("pidns"):  # its pids are its namespace's; it is our child's child
                kids = contain.children(proc.pid)
                if len(kids) != 1:
                    _stop_base(base)
                    raise ZygoteError("the verifier zygote's namespace has no single init")
                base[0].pidns, base[0].tree, base[0].ns_pid = True, kids[0], 1
            self._base = base
            return self._base[0]

    def shutdown(self) -> None:
        """Stop every zygote it started (also at exit; a forked child leaves them alone)."""
        if self._owner != os.getpid():
            return
        with self._lock:
            modules = list(self._modules.values())
            self._modules.clear()
            base, self._base = self._base, None
        for zygote in modules:
            zygote.control.close()
        if base is not None:
            _stop_base(base)
        with suppress(Exception):  # at exit or unconfigure: a cell left is a warning, not a crash
            self._cells.close()

    def _forget_in_child(self) -> None:
        """A fork of the owner (a test forking the pytest process) drops its zygotes:
        they are the parent's, never stopped from here."""
        self._owner = os.getpid()
        self._lock = threading.Lock()
        self._key_locks.clear()
        for zygote in self._modules.values():
            with suppress(OSError):
                zygote.control.sock.close()
        if self._base is not None:
            with suppress(OSError):
                self._base[0].sock.close()
        self._base = None
        self._modules.clear()
        self._cells.pop_all()

    def _start_module(
        self,
        module: str,
        file: str | None,
        sys_path: Sequence[str],
        cwd: str,
        root: str,
        deadline: float,
        oneshot: bool,
        capture_limit: int,
    ) -> ModuleZygote | ImportFailure:
        """Ask the base zygote for a module zygote and wait (until ``deadline``, monotonic)
        for its import. Raises ZygoteError when no zygote could be had."""
        base = self._base_control()
        prefix = bytecode.cache_prefix()
        pycache = os.fspath(prefix) if prefix is not None else None
        out_r, out_w = os.pipe()
        try:
            answer, fds = base.request(
                {
                    "op": "zygote",
                    "module": module,
                    "file": file,
                    "sys_path": list(sys_path),
                    "cwd": cwd,
                    "root": root,
                    "pycache": pycache,
                    "oneshot": oneshot,
                    "deadline": time.time() + max(0.0, deadline - time.monotonic()),
                },
                [out_w],
            )
        except BaseException:
            os.close(out_r)
            raise
        finally:
            os.close(out_w)
        if len(fds) != 1 or not isinstance(answer.get("pid"), int):
            os.close(out_r)
            for fd in fds:
                os.close(fd)
            raise ZygoteError(f"unexpected answer from the verifier zygote: {answer}")
        try:
            host = base.host_pid(int(answer["pid"]))
        except ZygoteError:
            os.close(out_r)
            os.close(fds[0])
            raise
        control = Control(socket.socket(fileno=fds[0]), host, base)
        control.pidns, control.ns_pid = base.pidns, int(answer["pid"])
        capture = Capture(capture_limit)
        try:
            ready = _wait_ready(control, out_r, capture, deadline)
        except BaseException:
            _discard(control)
            raise
        finally:
            os.close(out_r)
        output = capture.text()
        if ready is None:
            _discard(control)
            return ImportFailure(
                "timeout",
                f"the verifier's module {module!r} was still importing at the deadline; its "
                "process was killed"
                + (f"\nits output and stack:\n{output[-3000:]}" if output else ""),
                output,
            )
        if not ready.get("ready"):
            _discard(control)
            mode = str(ready.get("mode", "error"))
            if mode not in ("error", "panic", "unavailable"):
                mode = "error"
            return ImportFailure(mode, str(ready.get("detail", "")), output)
        return ModuleZygote(control, oneshot or int(ready.get("threads", 1)) > 1, output, pycache)

    def module_zygote(
        self,
        module: str,
        file: str | None,
        sys_path: Sequence[str],
        cwd: str,
        root: str,
        deadline: float,
        capture_limit: int,
    ) -> ModuleZygote | ImportFailure:
        """The zygote to fork this call's child from (see the module docstring)."""
        key = _key(module, file, sys_path, cwd, root)
        with self._lock:
            if key in self._threaded:
                threaded = True
            else:
                threaded = False
                found = self._modules.get(key)
                if found is not None and not found.control.broken:
                    self._modules[key] = self._modules.pop(key)  # most recently used last
                    return found
                key_lock = self._key_locks.setdefault(key, threading.Lock())
        if threaded:
            return self._start_module(
                module, file, sys_path, cwd, root, deadline, True, capture_limit
            )
        with key_lock:
            with self._lock:
                found = self._modules.get(key)
            if found is not None and not found.control.broken:
                return found
            made = self._start_module(
                module, file, sys_path, cwd, root, deadline, False, capture_limit
            )
            if isinstance(made, ImportFailure):
                return made
            if made.oneshot:  # its import left threads: this one serves this call only
                with self._lock:
                    self._threaded.add(key)
                return made
            with self._lock:
                self._modules[key] = made
                evicted = []
                while len(self._modules) > MAX_MODULE_ZYGOTES:
                    evicted.append(self._modules.pop(next(iter(self._modules))))
            for old in evicted:
                _discard(old.control)
            return made

    def forget(self, zygote: ModuleZygote) -> None:
        """Drop a module zygote that stopped answering (the next call starts a new one)."""
        with self._lock:
            for key, value in list(self._modules.items()):
                if value is zygote:
                    del self._modules[key]
        _discard(zygote.control)

    def zygote_pids(self) -> list[int]:
        """The zygotes running now (for tests and diagnostics)."""
        with self._lock:
            pids = [z.control.pid for z in self._modules.values()]
            if self._base is not None:
                pids.append(self._base[0].pid)
        return pids


# Every live host: at exit each stops its zygotes, and a fork of the owner forgets them.
_HOSTS: weakref.WeakSet[ZygoteHost] = weakref.WeakSet()
_default: list[ZygoteHost] = []  # the host of library calls outside a session, made once


def default_host() -> ZygoteHost:
    """The process's host for calls that bring none (library use, not a session)."""
    if not _default:
        _default.append(ZygoteHost())
    return _default[0]


def all_zygote_pids() -> list[int]:
    """The zygotes every live host of this process runs now (tests and diagnostics)."""
    return [pid for host in list(_HOSTS) for pid in host.zygote_pids()]


def _shutdown_all() -> None:
    for host in list(_HOSTS):
        host.shutdown()


def _forget_all_in_child() -> None:
    for host in list(_HOSTS):
        host._forget_in_child()


atexit.register(_shutdown_all)
os.register_at_fork(after_in_child=_forget_all_in_child)
