"""``ctx``: what a verifier sees, and ``ctx.run``, its only way to run a tool.

``ctx.run`` goes through the command oracle (``process.run_process``: no shell, stdin
closed, an allowlisted environment, bounded output, the remaining time as deadline) and
through the tool inventory (resolved, hashed, rechecked before each run). Completed runs
are recorded: they are what makes a pass of a verifier that declares tools grounded.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pytest_vgate.cell import build_env
from pytest_vgate.process import DEFAULT_CAPTURE_LIMIT, ProcessResult, run_process
from pytest_vgate.tools import ToolEntry, ToolInventory, resolve_tool, toolchain_bin
from pytest_vgate.verdict import Mode, ToolRecord

# run_process reports the group it started before waiting when it supports ``on_start``;
# the parent then kills that group if the verifier's process is killed mid-run.
_HAS_ON_START = "on_start" in inspect.signature(run_process).parameters


class ToolUseError(Exception):
    """Base of the errors ``ctx.run`` raises; each maps onto a verdict mode."""

    mode = Mode.ERROR


class UndeclaredToolError(ToolUseError):
    """``ctx.run`` of a tool the verifier did not declare. The verifier fails with ``error``
    even if it catches this."""

    mode = Mode.ERROR


class ToolUnavailableError(ToolUseError):
    """The tool was found nowhere (``unavailable`` when the verifier lets it escape)."""

    mode = Mode.UNAVAILABLE


class ToolMovedError(ToolUseError):
    """The tool's bytes changed since the inventory; it was not run. The verifier fails with
    ``sandbox`` even if it catches this."""

    mode = Mode.SANDBOX


@dataclass(frozen=True)
class ToolUse:
    """The record of one completed ``ctx.run`` (the process ran to exit)."""

    id: str
    path: str
    sha256: str
    exit_code: int
    duration: float = 0.0

    def record(self) -> ToolRecord:
        return ToolRecord(id=self.id, path=self.path, sha256=self.sha256)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "path": self.path,
            "sha256": self.sha256,
            "exit_code": self.exit_code,
            "duration": round(self.duration, 6),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolUse:
        return cls(
            id=str(data["id"]),
            path=str(data["path"]),
            sha256=str(data.get("sha256", "")),
            exit_code=int(data["exit_code"]),
            duration=float(data.get("duration", 0.0)),
        )


@dataclass(frozen=True)
class ToolRun:
    """What ``ctx.run`` returns: the tool that ran and what its process did."""

    tool: str
    path: str
    sha256: str
    argv: tuple[str, ...]
    exit_code: int | None  # None when it timed out or could not start
    stdout: str
    stderr: str
    duration: float
    timed_out: bool = False
    spawn_error: str | None = None

    @property
    def ok(self) -> bool:
        """Exited with status 0."""
        return self.exit_code == 0

    @property
    def completed(self) -> bool:
        return self.exit_code is not None and not self.timed_out and self.spawn_error is None


class RunReporter(Protocol):
    """Where ``ctx.run`` announces the process groups it starts and finishes."""

    def started(self, pgid: int) -> None: ...

    def finished(self, pgid: int) -> None: ...


class NullReporter:
    def started(self, pgid: int) -> None:
        pass

    def finished(self, pgid: int) -> None:
        pass


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


class VerifierContext:
    """What a verifier gets as ``ctx``.

    ``root``: the tree under check (cwd of ``run``); ``cell``: a private scratch folder,
    removed after the call; ``deadline``: absolute ``time.time()`` seconds by which the
    verifier must have returned; ``gate``: the gate's data (a dict) or None.
    """

    def __init__(
        self,
        *,
        root: Path,
        cell: Path,
        deadline: float,
        gate: Mapping[str, Any] | None,
        declared_tools: Sequence[str],
        toolbox: Toolbox,
        caller_env: Mapping[str, str],
        env_pass: Sequence[str] = (),
        env_set: Mapping[str, str] | None = None,
        capture_limit: int = DEFAULT_CAPTURE_LIMIT,
        reporter: RunReporter | None = None,
    ) -> None:
        self.root = root
        self.cell = cell
        self.deadline = deadline
        self.gate = dict(gate) if gate is not None else None
        self.tools = tuple(declared_tools)
        self._toolbox = toolbox
        self._caller_env = dict(caller_env)
        self._env_pass = tuple(env_pass)
        self._env_set = dict(env_set or {})
        self._capture_limit = capture_limit
        self._reporter: RunReporter = reporter or NullReporter()
        self._lock = threading.Lock()
        self._runs: list[ToolUse] = []
        self._violations: list[tuple[Mode, str]] = []
        self._closed = False

    def remaining(self) -> float:
        """Seconds left until the deadline (never negative)."""
        return max(0.0, self.deadline - time.time())

    def run(self, tool: str, *args: str, cwd: Path | str | None = None) -> ToolRun:
        """Run a declared tool with ``args`` (no shell) in ``cwd`` (default: root) within the
        remaining time. Returns what happened; raises only ToolUseError subclasses."""
        if self.tools and tool not in self.tools:
            message = (
                f"ctx.run({tool!r}): {tool!r} is not among the verifier's declared tools "
                f"{list(self.tools)}; add it to @verifier(tools=[...])"
            )
            self._violate(Mode.ERROR, message)
            raise UndeclaredToolError(message)
        try:
            entry = self._toolbox.entry(tool)
        except ToolMovedError as exc:
            self._violate(Mode.SANDBOX, str(exc))
            raise
        assert entry.path is not None
        assert entry.sha256 is not None
        argv = (entry.path, *(str(a) for a in args))
        env = build_env(
            self.cell,
            pass_names=self._env_pass,
            set_values=self._env_set,
            caller_env=self._caller_env,
            path_prefix=[str(toolchain_bin(self.root))],
        )
        result = self._run_process(argv, Path(cwd) if cwd is not None else self.root, env)
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
        )
        if run.completed and run.exit_code is not None:
            with self._lock:
                if not self._closed:  # a run finishing after the verifier returned is ignored
                    use = ToolUse(tool, entry.path, entry.sha256, run.exit_code, run.duration)
                    self._runs.append(use)
        return run

    def _run_process(
        self, argv: tuple[str, ...], cwd: Path, env: Mapping[str, str]
    ) -> ProcessResult:
        timeout = self.remaining()
        if not _HAS_ON_START:
            return run_process(
                argv, cwd=cwd, env=env, timeout=timeout, capture_limit=self._capture_limit
            )
        started: list[int] = []

        def on_start(pid: int) -> None:
            started.append(pid)
            self._reporter.started(pid)

        try:
            return run_process(  # type: ignore[call-arg,unused-ignore]
                argv,
                cwd=cwd,
                env=env,
                timeout=timeout,
                capture_limit=self._capture_limit,
                on_start=on_start,
            )
        finally:
            for pid in started:
                self._reporter.finished(pid)

    def _violate(self, mode: Mode, message: str) -> None:
        with self._lock:
            self._violations.append((mode, message))

    def close(self) -> tuple[tuple[ToolUse, ...], tuple[tuple[Mode, str], ...]]:
        """Stop recording (the verifier returned) and hand back runs and violations."""
        with self._lock:
            self._closed = True
            return tuple(self._runs), tuple(self._violations)
