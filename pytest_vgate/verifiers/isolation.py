"""One verifier call, fail-closed: a fresh child process per call, killed when it is done.

The child is forked from its module's zygote (``spawner``); ``call.Call`` runs the call
itself. Nothing a verifier does survives into the next call, and the pytest process
never forks.
"""

from __future__ import annotations

import math
import os
import sys
import threading
import time
import warnings
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_vgate.gatesfile import EnvSpec
from pytest_vgate.process import DEFAULT_CAPTURE_LIMIT, bytecode
from pytest_vgate.process.cell import CellPool, build_env, cell_is_clean, check_cell, remove_tree
from pytest_vgate.process.contain import weakest
from pytest_vgate.process.tools import ToolInventory, toolchain_bin
from pytest_vgate.verdict import Mode
from pytest_vgate.verifiers import spawner
from pytest_vgate.verifiers.api import Isolation
from pytest_vgate.verifiers.call import Call
from pytest_vgate.verifiers.invoke import bounded
from pytest_vgate.verifiers.messages import VerifierJob
from pytest_vgate.verifiers.result import VerifierResult
from pytest_vgate.verifiers.target import VerifierTarget
from pytest_vgate.verifiers.toolhost import Toolbox, ToolHost

if TYPE_CHECKING:
    from pytest_vgate.context import RunContext
    from pytest_vgate.process.contain import Pool
    from pytest_vgate.process.measure import Probe


@dataclass(frozen=True)
class VerifierCall:
    """What every verifier call of one run shares, built once: from a ``RunContext`` in a
    session (``from_context``), by hand in library use.

    ``timeout`` is the default deadline (a target's own ``timeout`` wins); it is checked
    when the call is made, so a bad one is a failed result, never an exception here.
    ``tools`` is the session's inventory, ``tool_paths`` an ``id -> path`` mapping for
    library use. ``sys_path`` entries go first on the child's sys.path, then ours, then
    ``root``. ``caller_env`` (None: ours) is what the allowlisted environment of the
    verifier and of its tools is built from. ``cells`` and ``zygotes`` are the session's
    (``SessionState``); without them a call gets a fresh cell and the default zygotes.
    ``isolation`` only takes ``process`` (``"inline"`` is its deprecated alias).
    ``measure``: the run's measurement (``evidence.measure.start``); the verifier's
    process then measures itself from before its module's import, and the measurement
    reaches its tools and subprocesses through their environment. ``fresh``: the call's
    module zygote is its own (the tree changed since an earlier call imported it).
    ``containment`` (``--vgate-isolation``) and ``shepherds`` contain the tools a verifier
    runs as a command gate's check is contained.
    """

    root: Path
    timeout: float
    gate: Mapping[str, Any] | None = None
    tools: ToolInventory | None = None
    tool_paths: Mapping[str, str] | None = None
    isolation: Isolation | str | None = None
    sys_path: tuple[str, ...] = ()
    caller_env: Mapping[str, str] | None = None
    env: EnvSpec | None = None
    capture_limit: int = DEFAULT_CAPTURE_LIMIT
    scratch: Path | None = None
    cells: CellPool | None = None
    zygotes: spawner.ZygoteHost | None = None
    measure: Probe | None = None
    fresh: bool = False
    containment: str = "auto"
    shepherds: Pool | None = None

    @classmethod
    def from_context(cls, ctx: RunContext, **fields: Any) -> VerifierCall:
        """The session's values from ``ctx``; ``fields`` (a gate's timeout, env, ...) win."""
        given: dict[str, Any] = {
            "root": ctx.root,
            "timeout": ctx.default_timeout,
            "tools": ctx.inventory,
            "sys_path": ctx.sys_path,
            "caller_env": ctx.caller_env,
            "capture_limit": ctx.capture_limit,
            "cells": ctx.cells,
            "zygotes": ctx.zygotes,
            "fresh": ctx.fresh,
            "containment": ctx.isolation,
            "shepherds": ctx.shepherds,
        }
        return cls(**{**given, **fields})


class Cancel:
    """Lets a fan-out kill every child it started when the user presses Ctrl-C."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: set[Call] = set()
        self.cancelled = False

    def _add(self, call: Call) -> None:
        with self._lock:
            self._calls.add(call)
            if self.cancelled:
                call.kill()

    def _discard(self, call: Call) -> None:
        with self._lock:
            self._calls.discard(call)

    def cancel(self) -> None:
        with self._lock:
            self.cancelled = True
            calls = list(self._calls)
        for call in calls:
            call.kill()


def _isolation(value: Isolation | str | None, name: str) -> str | None:
    """None when ``value`` is acceptable (``inline`` is a deprecated alias of ``process``),
    else the error message."""
    if value is None or isinstance(value, Isolation):
        return None
    if value == "inline":
        warnings.warn(
            f"isolation='inline' for {name}: verifiers always run in a process of their "
            "own now; 'inline' is a deprecated alias of 'process'",
            DeprecationWarning,
            stacklevel=4,
        )
        return None
    try:
        Isolation(value)
    except ValueError:
        return f"isolation must be 'process' (or its deprecated alias 'inline'), not {value!r}"
    return None


def call_verifier(
    target: VerifierTarget, call: VerifierCall, *, cancel: Cancel | None = None
) -> VerifierResult:
    """Call one verifier under the fail-closed contract and return what happened.

    Never raises, except what the user sends (KeyboardInterrupt), after killing the child.
    """
    name = target.display
    limit = target.timeout if target.timeout is not None else call.timeout
    if (
        isinstance(limit, bool)
        or not isinstance(limit, (int, float))
        or not (math.isfinite(limit) and limit > 0)
    ):
        return VerifierResult.failure(
            name, Mode.ERROR, f"the deadline must be a positive number of seconds, not {limit!r}"
        )
    problem = _isolation(call.isolation, name)
    if problem is not None:
        return VerifierResult.failure(name, Mode.ERROR, problem)
    started = time.monotonic()
    deadline = started + float(limit)
    root_path = Path(call.root).absolute()
    source_env = dict(call.caller_env if call.caller_env is not None else os.environ)
    cwd = os.getcwd()
    path = [*map(str, call.sys_path), *sys.path, str(root_path)]
    env = call.env
    cell_context: AbstractContextManager[Path] = (
        check_cell("vgate-verifier-", parent=Path(call.scratch))
        if call.scratch is not None
        else call.cells.cell()
        if call.cells is not None
        else check_cell("vgate-verifier-")
    )
    with cell_context as cell:
        job_env = build_env(
            cell,
            pass_names=env.pass_names if env else (),
            set_values=dict(env.set_values) if env else {},
            caller_env=source_env,
            path_prefix=[str(toolchain_bin(root_path))],
        )
        passed = {n: source_env[n] for n in (env.pass_names if env else ()) if n in source_env}
        tool_set = bytecode.fresh_env(root_path, dict(env.set_values) if env else {}, passed)
        if call.measure is not None:
            job_env = call.measure.extend(job_env)
            tool_set.update(_measure_values(call.measure, cell, env, source_env))
        host = ToolHost(
            root=root_path,
            cell=cell,
            deadline=deadline,
            declared=target.tools,
            toolbox=Toolbox(
                root_path,
                inventory=call.tools,
                paths=dict(call.tool_paths) if call.tool_paths is not None else None,
                path_env=source_env.get("PATH"),
            ),
            caller_env=source_env,
            env_pass=env.pass_names if env else (),
            env_set=tool_set,
            capture_limit=call.capture_limit,
            own_dirs=_own_dirs(target, root_path),
            isolation=call.containment,
            shepherds=call.shepherds,
        )
        job = VerifierJob(
            target=target,
            root=str(root_path),
            cell=str(cell),
            gate=dict(call.gate) if call.gate is not None else None,
            cwd=cwd,
            env=job_env,
        )
        running = Call(name, host, call.capture_limit, call.zygotes or spawner.default_host())
        if cancel is not None:
            cancel._add(running)
        try:
            measure = (str(call.measure.data), str(call.measure.home)) if call.measure else None
            return _run_call(
                running,
                target,
                job,
                float(limit),
                path,
                cwd,
                (started, deadline),
                measure,
                fresh=call.fresh,
            )
        finally:
            if cancel is not None:
                cancel._discard(running)
            if not cell_is_clean(cell):  # what the verifier left goes now, not later
                remove_tree(cell)


def _run_call(
    call: Call,
    target: VerifierTarget,
    job: VerifierJob,
    timeout: float,
    path: Sequence[str],
    cwd: str,
    times: tuple[float, float],
    measure: tuple[str, str] | None = None,
    *,
    fresh: bool = False,
) -> VerifierResult:
    started, deadline = times  # monotonic: when the call started, when it must answer
    try:
        zygote = call.zygotes.module_zygote(
            target.module,
            target.file,
            path,
            cwd,
            str(call.host.root),
            deadline,
            call.capture_limit,
            measure,
            fresh=fresh,
        )
    except spawner.IsolationMissing as exc:  # --vgate-isolation strict
        call.host.close()
        return VerifierResult.failure(call.name, Mode.SANDBOX, str(exc))
    except spawner.ZygoteError as exc:
        return VerifierResult.failure(
            call.name, Mode.CRASH, f"could not start the verifier's process: {exc}"
        )
    if isinstance(zygote, spawner.ImportFailure):
        call.host.close()
        mode = Mode(zygote.mode)
        detail = zygote.detail
        if mode is Mode.TIMEOUT:
            detail = f"no result within the deadline of {timeout:g}s: {detail}"
        return VerifierResult.failure(
            call.name,
            mode,
            bounded(detail),
            duration=time.monotonic() - started,
            output=zygote.output,
        )
    if zygote.import_output:
        call.capture.feed(zygote.import_output.encode("utf-8", errors="replace"))
        zygote.import_output = ""  # reported once, with the first call
    result = call.run(zygote, job, timeout, started, deadline)
    # What contained the call: the verifier's process (its own PID namespace, else its
    # process group) and each tool it ran; the weakest of them is the call's.
    own = "namespace" if zygote.control.pidns else "group"
    return replace(result, isolation=weakest([own, *call.host.levels]))


def _measure_values(
    probe: Probe, cell: Path, env: EnvSpec | None, caller_env: Mapping[str, str]
) -> dict[str, str]:
    """The variables that carry the measurement into a verifier's tools: its
    ``PYTHONPATH`` put before the one the tool would have had."""
    plain = build_env(
        cell,
        pass_names=env.pass_names if env else (),
        set_values=dict(env.set_values) if env else {},
        caller_env=caller_env,
    )
    measured = probe.extend(plain)
    return {name: measured[name] for name in measured if measured[name] != plain.get(name)}


def _own_dirs(target: VerifierTarget, root: Path) -> list[Path]:
    """The verifier's own folder: a script there is the verifier's code (``ground``)."""
    if target.file:
        return [Path(target.file).parent]
    module = root / Path(*target.module.split("."))
    return [module.parent] if module.with_suffix(".py").is_file() else [module]
