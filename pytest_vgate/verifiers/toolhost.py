"""The pytest process's side of ``ctx.run``: it runs the tool and keeps the record.

A verifier's ``ctx.run`` only asks (``context``); :class:`ToolHost` answers through the
tool inventory and the command oracle (``process.run_process``) with the call's cell,
environment and remaining time, and records every completed run: the verifier's pass is
judged against this record (``ground``), which its own process cannot reach.
"""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import threading
import time
from collections.abc import Mapping, Sequence
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_vgate.process import (
    DEFAULT_CAPTURE_LIMIT,
    SpawnTarget,
    kill_process_group,
    run_process,
)
from pytest_vgate.process.cell import build_env
from pytest_vgate.process.tools import (
    ToolEntry,
    ToolInventory,
    ToolMovedError,
    ToolUnavailableError,
    pinned_tools,
    resolve_tool,
    toolchain_bin,
)
from pytest_vgate.verdict import Mode
from pytest_vgate.verifiers.context import ToolRun, ToolUse, expected_codes

if TYPE_CHECKING:
    from pytest_vgate.process.contain import Pool

TOOL_GRACE = 3.0  # seconds a tool may outlive the call's deadline before its own kill
# Interpreters, by the name of the file that runs, and the options that take code inline.
INTERPRETER = re.compile(
    r"(?:python|pypy|jython)[\d.]*[mtw]?|node(?:js)?|deno|bun|ruby|perl[\d.]*|php[\d.]*|lua[\d.]*"
    r"|r|rscript|julia|tclsh[\d.]*|wish|osascript|pwsh|powershell|(?:ba|da|z|k|mk|c|tc|fi)?sh"
)
INLINE_OPTIONS = frozenset(
    {"-c", "-e", "-E", "--eval", "-p", "--print", "-r", "--command", "-command", "-Command", "-"}
)


def authored_run(
    path: str, args: Sequence[str], *, cwd: Path, cell: Path, own: Sequence[Path]
) -> bool:
    """Whether a run is an interpreter running code the verifier supplied: inline
    (``python -c``, ``node -e``, ``sh -c``, stdin), or a script it wrote in its cell or
    that lies next to it (``own``: the verifier module's folder). Such a run computes the
    verifier's own answer; it grounds no pass."""
    name = os.path.basename(path).lower().removesuffix(".exe")
    if not INTERPRETER.fullmatch(name):
        return False
    for arg in args:
        if arg in INLINE_OPTIONS:
            return True
        if re.fullmatch(r"-[A-Za-z]*c", arg) and name.startswith(("python", "pypy")):
            return True  # python's clustered options: -Ic, -Bc
        if arg.startswith("-"):
            continue
        try:
            script = Path(os.path.realpath(cwd / arg))
            return script.is_file() and (
                script.is_relative_to(cell) or any(script.parent == d for d in own)
            )
        except (OSError, ValueError):
            return False
    return False


class Toolbox:
    """Resolves tool ids for ``ctx.run``: the session inventory first, then an explicit
    ``id -> path`` mapping, then ``<root>/.toolchain/bin`` and the caller's PATH."""

    def __init__(
        self,
        root: Path,
        *,
        inventory: ToolInventory | None = None,
        paths: Mapping[str, str] | None = None,
        path_env: str | None = None,
    ) -> None:
        self._root = root
        self._inventory = inventory or ToolInventory()
        self._paths = dict(paths or {})
        self._path_env = path_env
        self._lock = threading.Lock()

    def entry(self, tool: str) -> ToolEntry:
        """The entry to run now; raises ToolUnavailableError / ToolMovedError."""
        with self._lock:
            if tool not in self._inventory:
                entry = self._resolve(tool)
                self._inventory = ToolInventory([*self._entries(), entry])
                if not entry.found:
                    raise ToolUnavailableError(entry.detail or f"tool {tool!r} was not found")
                return entry
            check = self._inventory.verify(tool)
        if check.mode is Mode.UNAVAILABLE:
            raise ToolUnavailableError(check.message or f"tool {tool!r} was not found")
        if not check.ok:
            raise ToolMovedError(f"tool {tool!r} was not run: {check.message}")
        return check.entry

    def _entries(self) -> list[ToolEntry]:
        return [e for i in self._inventory.ids if (e := self._inventory.get(i)) is not None]

    def _resolve(self, tool: str) -> ToolEntry:
        if tool in self._paths:
            path = os.path.abspath(self._paths[tool])
            found = resolve_tool(path, root=self._root, path_env=None)
            return dataclasses.replace(found, id=tool)
        return resolve_tool(tool, root=self._root, path_env=self._path_env)


class CallEnded(Exception):
    """A tool was about to start after its verifier's call ended: it is killed at once."""


class ToolHost:
    """``ctx.run`` requests of one verifier call, answered and recorded (thread-safe).

    ``deadline`` is ``time.monotonic()`` seconds: a tool gets the call's remaining time.
    ``isolation`` and ``shepherds`` contain the tools as a command gate's check is
    contained (``process.run_process``); ``levels`` holds what contained each tool run.
    Once ``kill`` was called no tool starts, and one that started meanwhile is killed.
    """

    def __init__(
        self,
        *,
        root: Path,
        cell: Path,
        deadline: float,
        declared: Sequence[str],
        toolbox: Toolbox,
        caller_env: Mapping[str, str],
        env_pass: Sequence[str] = (),
        env_set: Mapping[str, str] | None = None,
        capture_limit: int = DEFAULT_CAPTURE_LIMIT,
        own_dirs: Sequence[Path] = (),
        isolation: str = "auto",
        shepherds: Pool | None = None,
    ) -> None:
        self.root = root
        self.isolation = isolation
        self._shepherds = shepherds
        self.levels: set[str] = set()  # what contained the tool runs (namespace, ...)
        self.cell = cell
        self._own = [Path(os.path.realpath(d)) for d in own_dirs]
        self.unavailable_answered = False  # the host said a tool is unavailable
        self.deadline = deadline
        self._declared = list(dict.fromkeys(declared))
        self._toolbox = toolbox
        self._caller_env = dict(caller_env)
        self._env_pass = tuple(env_pass)
        self._env_set = dict(env_set or {})
        self._capture_limit = capture_limit
        self._lock = threading.Lock()
        self._runs: list[ToolUse] = []
        self._violations: list[tuple[Mode, str]] = []
        self._live: set[int] = set()
        self._closed = False
        self._stopped = False  # the call ended: no tool starts from now on

    @property
    def declared(self) -> tuple[str, ...]:
        with self._lock:
            return tuple(self._declared)

    def declare(self, tools: Sequence[str]) -> None:
        """Tools the verifier's own ``@verifier(tools=...)`` adds (never removes any)."""
        with self._lock:
            self._declared.extend(t for t in map(str, tools) if t not in self._declared)

    def serve(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """Answer one ``ctx.run`` request: ``{"run": ...}`` or ``{"error", "message"}``."""
        tool = str(request.get("tool", ""))
        try:
            args = [str(a) for a in request.get("args", ())]
            codes = expected_codes(request.get("expect", 0))
        except TypeError as exc:
            return self._refuse(Mode.ERROR, "error", f"ctx.run({tool!r}): {exc}")
        declared = self.declared
        if declared and tool not in declared:
            return self._refuse(
                Mode.ERROR,
                "undeclared",
                f"ctx.run({tool!r}): {tool!r} is not among the verifier's declared tools "
                f"{list(declared)}; add it to @verifier(tools=[...])",
            )
        try:
            entry = self._toolbox.entry(tool)
        except ToolUnavailableError as exc:
            with self._lock:
                self.unavailable_answered = True
            return {"error": "unavailable", "message": str(exc)}
        except ToolMovedError as exc:
            return self._refuse(Mode.SANDBOX, "moved", str(exc))
        assert entry.path is not None
        assert entry.sha256 is not None
        # The other declared tools, which this one may start (sh -c, env, a script):
        # rechecked now and after the run, found first on its PATH by their identity.
        others = [t for t in declared if t != tool]
        try:
            pinned = [entry, *self._found(others)]
        except ToolMovedError as exc:
            return self._refuse(Mode.SANDBOX, "moved", str(exc))
        cwd = Path(str(request["cwd"])) if request.get("cwd") else self.root
        shims = pinned_tools(pinned)
        env = build_env(
            self.cell,
            pass_names=self._env_pass,
            set_values=self._env_set,
            caller_env=self._caller_env,
            path_prefix=[*([str(shims)] if shims else []), str(toolchain_bin(self.root))],
        )
        answer = self._run(tool, entry, args, codes, cwd, env)
        try:
            self._found([tool, *others])
        except ToolMovedError as exc:  # changed while it ran: that run answers nothing
            return self._refuse(Mode.SANDBOX, "moved", f"{exc} (while ctx.run({tool!r}) ran)")
        return answer

    def _found(self, tools: Sequence[str]) -> list[ToolEntry]:
        """The entries of ``tools`` that were found, rechecked; raises ToolMovedError."""
        found = []
        for tool in tools:
            try:
                found.append(self._toolbox.entry(tool))
            except ToolUnavailableError:
                continue  # found nowhere: only a run that starts it notices
        return found

    def _run(
        self,
        tool: str,
        entry: ToolEntry,
        args: list[str],
        codes: tuple[int, ...],
        cwd: Path,
        env: dict[str, str],
    ) -> dict[str, Any]:
        assert entry.path is not None
        assert entry.sha256 is not None
        ended = {"error": "error", "message": f"ctx.run({tool!r}): the call has ended"}
        with self._lock:
            if self._stopped:  # the verifier answered, died or ran out of time
                return ended
        try:
            result = run_process(
                (entry.path, *args),
                cwd=cwd,
                env=env,
                # Past the call's deadline: a tool still running then is killed with the
                # verifier (mode timeout), not cut short just before it.
                timeout=max(0.0, self.deadline - time.monotonic()) + TOOL_GRACE,
                capture_limit=self._capture_limit,
                on_start=self._started,
                isolation=self.isolation,
                shepherds=self._shepherds,
            )
        except CallEnded:  # started as the call ended: run_process killed all of it
            return ended
        with self._lock:
            if result.pid is not None:
                self._live.discard(result.pid)
            if result.spawn_target is not SpawnTarget.ISOLATION:
                self.levels.add(result.isolation)
        if result.spawn_target is SpawnTarget.ISOLATION:  # --vgate-isolation strict
            return self._refuse(Mode.SANDBOX, "error", f"ctx.run({tool!r}): {result.spawn_error}")
        run = ToolRun(
            tool=tool,
            path=entry.path,
            sha256=entry.sha256,
            argv=result.argv,
            exit_code=result.exit_code,
            stdout=result.stdout,
            stderr=result.stderr,
            duration=result.duration,
            timed_out=result.timed_out,
            spawn_error=result.spawn_error,
            expect=codes,
        )
        if run.completed and run.exit_code is not None:
            with self._lock:
                if not self._closed:  # a run finishing after the verifier answered is ignored
                    use = ToolUse(
                        tool,
                        entry.path,
                        entry.sha256,
                        run.exit_code,
                        codes,
                        run.duration,
                        argv=tuple(result.argv),
                        authored=authored_run(
                            entry.path,
                            args,
                            cwd=cwd,
                            cell=Path(os.path.realpath(self.cell)),
                            own=self._own,
                        ),
                    )
                    self._runs.append(use)
        return {"run": run.to_dict()}

    def _started(self, pid: int) -> None:
        with self._lock:
            if self._stopped:
                raise CallEnded(pid)
            self._live.add(pid)

    def _refuse(self, mode: Mode, kind: str, message: str) -> dict[str, Any]:
        with self._lock:
            self._violations.append((mode, message))
        return {"error": kind, "message": message}

    def close(self) -> tuple[tuple[ToolUse, ...], tuple[tuple[Mode, str], ...]]:
        """Stop recording (the verifier answered or died) and hand back runs and violations."""
        with self._lock:
            self._closed = True
            return tuple(self._runs), tuple(self._violations)

    def kill(self) -> None:
        """Kill the tools still running (the verifier answered, died or ran out of time)."""
        with self._lock:
            self._stopped = True
            live, self._live = self._live, set()
        for pgid in live:
            with suppress(ValueError):  # refused: not a group of a check's own
                kill_process_group(pgid, signal.SIGKILL)


def ground(
    mode: Mode,
    detail: str,
    runs: Sequence[ToolUse],
    declared: Sequence[str],
    *,
    unavailable_answered: bool = True,
) -> tuple[Mode, str] | None:
    """Whether a pass rests on what the tools answered; the failing mode and detail if not.

    A pass of a verifier that declares tools needs a completed run that is not authored
    (an interpreter running the verifier's own code); any completed run that ended with
    an exit code the verifier did not expect (``expect=``, default 0) contradicts a pass:
    it is *unbound*. A verifier that answers ``unavailable`` when the host never said a
    tool was (it raised ``ToolUnavailableError`` itself) gave a non-result of its own:
    an error of the verifier (cause ``broken_test``), not of the environment.
    """
    if mode is Mode.UNAVAILABLE and not unavailable_answered:
        return Mode.ERROR, (
            f"the verifier raised ToolUnavailableError itself ({detail}); no ctx.run() was "
            "answered so: a non-result the host never produced is the verifier's own error"
        )
    if mode is not Mode.PASS:
        return None
    unbound = [r for r in runs if not r.as_expected]
    if unbound:
        listed = "; ".join(
            f"{r.id} exited {r.exit_code}, expected {', '.join(map(str, r.expect))}"
            for r in unbound
        )
        return Mode.UNGROUNDED, (
            f"unbound pass: the verifier passed although a tool run ended otherwise than it "
            f"expected ({listed}); declare the exit code it expects with "
            "ctx.run(..., expect=CODE) or fail on it"
        )
    if declared and not any(not r.authored for r in runs):
        if runs:
            return Mode.UNGROUNDED, (
                f"the verifier declares tools {list(declared)} but its only runs were "
                "authored: an interpreter running the verifier's own code (-c/-e, a script "
                "in its folder or cell) computes its answer, it is no tool's answer"
            )
        return Mode.UNGROUNDED, (
            f"the verifier declares tools {list(declared)} but passed without a completed "
            "ctx.run() of any of them; a pass must rest on a tool's answer"
        )
    return None
