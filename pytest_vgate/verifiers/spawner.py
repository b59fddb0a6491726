"""Where verifier children come from, seen from the pytest process: the zygotes.

The pytest process never forks (it has threads: forking would copy their locks in
whatever state they are in); its zygotes do (``zygote`` describes them). A module zygote
is kept for the session, keyed by module, file, sys.path and cwd; a module whose import
leaves threads running gets a fresh ``oneshot`` zygote per call instead.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import socket
import sys
import threading
import time
import weakref
from collections.abc import Sequence
from contextlib import ExitStack, suppress
from typing import Any

from pytest_vgate.defaults import ISOLATION_CHOICES
from pytest_vgate.process import Capture, bytecode, contain, start_helper
from pytest_vgate.process.cell import build_env, check_cell

# What a call sees of a zygote, named here too: the spawner is the verifiers' door to them.
from pytest_vgate.verifiers.control import REPLY_TIMEOUT as REPLY_TIMEOUT
from pytest_vgate.verifiers.control import Control as Control
from pytest_vgate.verifiers.control import ImportFailure as ImportFailure
from pytest_vgate.verifiers.control import IsolationMissing as IsolationMissing
from pytest_vgate.verifiers.control import ModuleZygote as ModuleZygote
from pytest_vgate.verifiers.control import ZygoteError as ZygoteError
from pytest_vgate.verifiers.control import discard, stop_base, wait_ready
from pytest_vgate.verifiers.messages import Op, ZygoteMessage
from pytest_vgate.verifiers.zygote import BOOT

# Imported by the base zygote when the calling process has them imported: the test
# modules verifiers live in import pytest (once per module zygote otherwise). By name only;
# the core never imports pytest itself.
PRELOAD_IF_IMPORTED: tuple[str, ...] = ("pytest",)
MAX_MODULE_ZYGOTES = 32  # kept at once; the least recently used one goes first


def _key(
    module: str, file: str | None, sys_path: Sequence[str], cwd: str, root: str
) -> tuple[Any, ...]:
    return (module, file, tuple(sys_path), cwd, root)


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
                stop_base(self._base)
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
                "none" if self._isolation == "off" else _zygote_want(self._isolation),
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
                stop_base(base)
                raise
            if self._isolation == "strict" and hello.get("isolation") != "namespace":
                stop_base(base)
                self._missing = f"required isolation missing: {hello.get('detail', hello)}"
                raise IsolationMissing(self._missing)
            if hello.get("pidns"):  # its pids are its namespace's; it is our child's child
                kids = contain.children(proc.pid)
                if len(kids) != 1:
                    stop_base(base)
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
            stop_base(base)
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
        measure: Sequence[str] | None = None,
    ) -> ModuleZygote | ImportFailure:
        """Ask the base zygote for a module zygote and wait (until ``deadline``, monotonic)
        for its import. Raises ZygoteError when no zygote could be had."""
        base = self._base_control()
        prefix = bytecode.cache_prefix()
        pycache = os.fspath(prefix) if prefix is not None else None
        out_r, out_w = os.pipe()
        try:
            answer, fds = base.request(
                ZygoteMessage(
                    op=Op.ZYGOTE,
                    module=module,
                    file=file,
                    sys_path=list(sys_path),
                    cwd=cwd,
                    root=root,
                    pycache=pycache,
                    oneshot=oneshot,
                    deadline=time.time() + max(0.0, deadline - time.monotonic()),
                    measure=list(measure) if measure is not None else None,
                ),
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
            ready = wait_ready(control, out_r, capture, deadline)
        except BaseException:
            discard(control)
            raise
        finally:
            os.close(out_r)
        output = capture.text()
        if ready is None:
            discard(control)
            return ImportFailure(
                "timeout",
                f"the verifier's module {module!r} was still importing at the deadline; its "
                "process was killed"
                + (f"\nits output and stack:\n{output[-3000:]}" if output else ""),
                output,
            )
        if not ready.get("ready"):
            discard(control)
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
        measure: Sequence[str] | None = None,
        *,
        fresh: bool = False,
    ) -> ModuleZygote | ImportFailure:
        """The zygote to fork this call's child from (see the module docstring).

        A measured call (``measure``: the run's data folder and the bootstrap's folder)
        gets a zygote of its own that measures from before its import and serves this
        call only: the module's import is part of what the run executed. So does a
        ``fresh`` call: the tree's files changed since a cached zygote imported them."""
        start = functools.partial(self._start_module, module, file, sys_path, cwd, root, deadline)
        if measure is not None or fresh:
            return start(True, capture_limit, measure)
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
            return start(True, capture_limit)
        with key_lock:
            with self._lock:
                found = self._modules.get(key)
            if found is not None and not found.control.broken:
                return found
            made = start(False, capture_limit)
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
                discard(old.control)
            return made

    def forget(self, zygote: ModuleZygote) -> None:
        """Drop a module zygote that stopped answering (the next call starts a new one)."""
        with self._lock:
            for key, value in list(self._modules.items()):
                if value is zygote:
                    del self._modules[key]
        discard(zygote.control)

    def zygote_pids(self) -> list[int]:
        """The zygotes running now (for tests and diagnostics)."""
        with self._lock:
            pids = [z.control.pid for z in self._modules.values()]
            if self._base is not None:
                pids.append(self._base[0].pid)
        return pids


# Every live host: at exit each stops its zygotes, and a fork of the owner forgets them.
_HOSTS: weakref.WeakSet[ZygoteHost] = weakref.WeakSet()


@functools.cache
def default_host() -> ZygoteHost:
    """The process's host for calls that bring none (library use, not a session), made
    once."""
    return ZygoteHost()


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


def _zygote_want(isolation: str) -> str:
    """The base zygote's namespace, as for checks (``contain.shepherd_for``): without root,
    ``auto`` takes none, so verifiers see the uids and setuid behaviour they would see
    without pytest-vgate."""
    from pytest_vgate.process.contain import shepherd_for

    return "namespace" if shepherd_for(isolation) == "namespace" else "none"
