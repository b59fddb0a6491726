"""The one fail-closed runner: every check of every kind goes through ``run_check``.

``run_check`` never raises (except ``KeyboardInterrupt``, which is the user's and
stops the session as in plain pytest): it runs inside ``boundary.fail_closed``, the pytest
process's one catch-all. Whatever goes wrong, ours or the check's, becomes a failed
``Verdict`` with a mode and a cause; no path yields a pass from an error.
"""

from __future__ import annotations

import functools
import importlib
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_vgate.causes import command_cause
from pytest_vgate.context import RunContext, gate_timeout
from pytest_vgate.defaults import DEFAULT_TIMEOUT
from pytest_vgate.gate.boundary import fail_closed
from pytest_vgate.gatesfile import Gate, GatesFileError, gate_from_mapping, values
from pytest_vgate.gatesfile.kinds import kind_of
from pytest_vgate.process import ProcessResult, SpawnTarget, bytecode, run_process
from pytest_vgate.process.cell import build_env, check_cell
from pytest_vgate.process.measure import MEASURED_KEY, Measured
from pytest_vgate.process.measure import start as start_measuring
from pytest_vgate.process.tools import ToolCheck, ToolInventory, pinned_tools, toolchain_bin
from pytest_vgate.verdict import ISOLATION_KEY, Cause, Mode, ToolRecord, Verdict

if TYPE_CHECKING:
    from pytest_vgate.citations import Citation, CitationChecker, CitationResult
    from pytest_vgate.verifiers import VerifierTarget


def run_check(gate: Gate, ctx: RunContext) -> Verdict:
    """Run one gate's check on ``ctx.root`` and return what was observed. Never raises."""
    return fail_closed(lambda: _dispatch(gate, ctx), f"gate {gate.id!r}", gate.argv)


def run_verifier(target: VerifierTarget, ctx: RunContext) -> Verdict:
    """Run one ``@verifier`` function collected from a test module. Never raises."""
    from pytest_vgate.verifiers import VerifierCall, run_verifiers

    return fail_closed(
        lambda: run_verifiers([target], VerifierCall.from_context(ctx)),
        f"verifier {target.display!r}",
        (),
    )


def run_citation(checker: CitationChecker, citation: Citation) -> tuple[Verdict, CitationResult]:
    """Check one citation through the same fail-closed boundary. Never raises.

    ``verified`` is ``pass``; any other outcome is ``fail`` (cause ``product``: the
    document is wrong); an exception of ours is ``error`` and a ``dropped`` result.
    """
    from pytest_vgate.citations import CitationResult
    from pytest_vgate.verdict import CitationStatus

    checked: list[CitationResult] = []

    def run() -> Verdict:
        result = checker.check_raising(citation)
        checked.append(result)
        if result.ok:
            return Verdict(mode=Mode.PASS, detail=result.reason)
        return Verdict.failed(
            Mode.FAIL, f"citation is {result.status.value}: {result.reason}", cause=Cause.PRODUCT
        )

    verdict = fail_closed(run, f"citation {citation.location!r}", ())
    if checked:
        return verdict, checked[0]
    return verdict, CitationResult(citation, CitationStatus.DROPPED, reason=verdict.detail)


def _dispatch(gate: Gate, ctx: RunContext) -> Verdict:
    return run_function(kind_of(gate.type).run)(gate, ctx)


@functools.cache
def run_function(ref: str) -> Callable[[Gate, RunContext], Verdict]:
    """A gate kind's run function from its ``module:function`` reference (``spec.kinds``)."""
    module, _, name = ref.partition(":")
    found: Callable[[Gate, RunContext], Verdict] = getattr(importlib.import_module(module), name)
    return found


def run_judgment(gate: Gate, ctx: RunContext) -> Verdict:
    """A judgment gate (``semantic``, ``self_review``): the judge's verdict, or ``judgment``."""
    judged = ctx.judge(gate, ctx) if ctx.judge is not None else None
    if judged is not None:
        return judged
    return Verdict(
        mode=Mode.JUDGMENT,
        detail=f"{gate.type.value} gates need a rubric and a judge, not re-execution",
    )


def run_command(gate: Gate, ctx: RunContext) -> Verdict:
    """The command oracle, shared by ``command`` and ``code`` gates (one mechanism)."""
    if not gate.argv:
        what = f"its check {gate.check.strip()!r} runs nothing" if gate.check.strip() else ""
        return Verdict.failed(
            Mode.BLANK,
            f"gate {gate.id!r} has an empty check{f' ({what})' if what else ''}: nothing can "
            "be re-executed",
        )
    timeout = gate_timeout(gate, ctx)
    tool_id = gate.argv[0]
    cwd, toolchain = _gate_dirs(ctx.root, gate.cwd)
    if not _inside(cwd, ctx.root):  # a symlink in this tree (e.g. the base) leads out
        return Verdict.failed(
            Mode.ERROR,
            f"the check's folder {gate.cwd!r} resolves to {cwd}, outside the root "
            f"{ctx.root}; not run",
            command=gate.argv,
        )
    if not cwd.is_dir():
        return Verdict.failed(
            Mode.CRASH, f"the check's folder {cwd} does not exist", command=gate.argv
        )
    if ctx.inventory is not None and "/" not in tool_id and tool_id in ctx.inventory:
        inventory = ctx.inventory
    else:
        # Library use, or a path-like program: it belongs to the tree under test, so it
        # is resolved against the gate's cwd on the tree being run (the base worktree for
        # a red run), even when a gate declared the same path in `tools` and the session
        # inventory resolved it against the gates root.
        inventory = ToolInventory.build(
            [tool_id], root=ctx.root, path_env=ctx.caller_env.get("PATH"), cwd=cwd
        )
    check = inventory.verify(tool_id)
    if check.mode is Mode.UNAVAILABLE:
        if "/" in tool_id and os.path.isfile(cwd / tool_id):  # any word: never raises
            return Verdict.failed(
                Mode.CRASH, f"could not start {tool_id!r}: {check.message}", command=gate.argv
            )
        return Verdict.failed(Mode.UNAVAILABLE, check.message, command=gate.argv)
    if not check.ok or check.entry.path is None:
        return _changed(check, f"tool {tool_id!r}", "not executed", gate.argv)
    record = check.entry.record()
    argv = (check.entry.path, *gate.argv[1:])
    # The other declared tools, which the check may start through sh, env or a script:
    # rechecked now and after the run, and found first on its PATH by their identity.
    declared = _declared_inventory(gate, ctx, tool_id)
    others = [i for i in dict.fromkeys(gate.tools) if i in declared and i != tool_id]
    moved = _moved(declared, others, gate.argv)
    if moved is not None:
        return moved
    pinned = [e for i in (tool_id, *others) if (e := declared.get(i) or inventory.get(i))]
    passed = {n: ctx.caller_env[n] for n in gate.env.pass_names if n in ctx.caller_env}
    set_values = bytecode.fresh_env(ctx.root, dict(gate.env.set_values), passed)
    shims = pinned_tools(pinned)
    with ctx.cells.cell() if ctx.cells is not None else check_cell() as cell:
        env = build_env(
            cell,
            pass_names=gate.env.pass_names,
            set_values=set_values,
            caller_env=ctx.caller_env,
            path_prefix=(toolchain,) if shims is None else (str(shims), toolchain),
        )
        probe = None
        if ctx.measure is not None:
            probe = start_measuring(ctx.measure, cell, env, timeout=timeout)
        measured: Measured | None = None
        if probe is not None:
            env = probe.env
        result = run_process(
            argv,
            cwd=cwd,
            env=env,
            timeout=timeout,
            capture_limit=ctx.capture_limit,
            isolation=ctx.isolation,
            shepherds=ctx.shepherds,
            need_pid=False,  # a gate's verdict never names the pid: one answer per check
        )
        if probe is not None:
            measured = probe.collect()
    verdict = verdict_from_process(gate, result, timeout=timeout, tools=(record,))
    moved = _moved(declared, [tool_id, *others] if tool_id in declared else others, gate.argv)
    if moved is not None:  # a declared tool changed while the check ran: no answer
        verdict = moved
    if result.isolation:  # what contained this run: namespace, contained or group
        verdict = replace(verdict, extra={**verdict.extra, ISOLATION_KEY: result.isolation})
    if measured is not None:
        verdict = replace(verdict, extra={**verdict.extra, MEASURED_KEY: measured})
    return verdict


def _declared_inventory(gate: Gate, ctx: RunContext, tool_id: str) -> ToolInventory:
    """Where the gate's declared tools (by name) are held: the session's inventory, or for
    library use one built now."""
    ids = [t for t in gate.tools if "/" not in t]
    if ctx.inventory is not None and all(t in ctx.inventory for t in ids):
        return ctx.inventory
    return ToolInventory.build(ids, root=ctx.root, path_env=ctx.caller_env.get("PATH"))


def _moved(inventory: ToolInventory, ids: Sequence[str], command: Sequence[str]) -> Verdict | None:
    """``sandbox`` when one of ``ids`` (found tools) no longer has its inventory bytes."""
    for tool_id in ids:
        entry = inventory.get(tool_id)
        if entry is None or not entry.found:
            continue  # not found at all: only a check that starts it notices
        check = inventory.verify(tool_id)
        if not check.ok:
            what = f"declared tool {tool_id!r}"
            return _changed(check, what, "the check's answer is not taken", command)
    return None


def _changed(check: ToolCheck, what: str, so: str, command: Sequence[str]) -> Verdict:
    """``sandbox``: a tool's bytes are not those of the inventory."""
    return Verdict.failed(
        Mode.SANDBOX,
        f"{what} changed since the inventory was taken; {so}: {check.message}",
        command=tuple(command),
        extra={"expected_sha256": check.expected_sha256, "found_sha256": check.found_sha256},
    )


@functools.lru_cache(maxsize=1024)
def _gate_dirs(root: Path, cwd: str) -> tuple[Path, str]:
    """A gate's resolved cwd and its root's toolchain folder, worked out once per process.

    Whether the cwd still is a folder is checked by every run; a symlinked cwd that is
    re-pointed during the session keeps the target it had when first resolved.
    """
    return (root / cwd).resolve(), str(toolchain_bin(root))


def forget_folders() -> None:
    """Forget the folders resolved so far (``SessionState.close``): a session of its own."""
    _gate_dirs.cache_clear()
    _inside.cache_clear()


@functools.lru_cache(maxsize=1024)
def _inside(path: Path, root: Path) -> bool:
    root_real = os.path.realpath(root)
    return os.path.commonpath([os.path.realpath(path), root_real]) == root_real


def verdict_from_process(
    gate: Gate,
    result: ProcessResult,
    *,
    timeout: float,
    tools: tuple[ToolRecord, ...] = (),
) -> Verdict:
    """Map what a process did onto the mode vocabulary (documented in docs/modes.md)."""
    common: dict[str, Any] = {
        "command": gate.argv,
        "exit_code": result.exit_code,
        "stdout": result.stdout,
        "stderr": result.stderr,
        "stdout_bytes": result.stdout_bytes,
        "stderr_bytes": result.stderr_bytes,
        "duration": result.duration,
        "tools": tools,
    }
    if result.spawn_target is SpawnTarget.ISOLATION:  # --vgate-isolation strict, none here
        return Verdict.failed(Mode.SANDBOX, f"not run: {result.spawn_error}", **common)
    if result.spawn_error is not None:
        # Only a missing program (or #! interpreter) is "unavailable"; a missing cwd or a
        # file that cannot be executed is a spawn failure: "crash".
        mode = Mode.UNAVAILABLE if result.program_not_found else Mode.CRASH
        return Verdict.failed(
            mode, f"could not start {gate.argv[0]!r}: {result.spawn_error}", **common
        )
    if result.timed_out:
        return Verdict.failed(
            Mode.TIMEOUT,
            f"no answer within the deadline of {timeout:g}s; the process group was killed",
            **common,
        )
    code = result.exit_code
    if code is not None and code < 0:
        return Verdict.failed(
            Mode.CRASH, f"killed by signal {-code} before it could answer", **common
        )
    if code in gate.expect:
        return Verdict(mode=Mode.PASS, **common)
    expected = ", ".join(str(c) for c in gate.expect)
    cause, why = command_cause(gate, code, result.stderr) if code is not None else (None, "")
    detail = f"exit code {code}, expected {expected}" + (f"; {why}" if why else "")
    return Verdict.failed(Mode.FAIL, detail, cause=cause or Cause.PRODUCT, **common)


def run_oracle_check(gate: Gate | Mapping[str, Any], timeout: float = DEFAULT_TIMEOUT) -> Verdict:
    """Library API: re-execute one gate (a ``Gate`` or a plain dict) and return the verdict.

    Accepts the gates.yaml shape and the seed envelope shape (``verification_type`` +
    ``command``). Never raises: an invalid gate is a verdict with mode ``error``.
    """

    def run() -> Verdict:
        if isinstance(gate, Gate):
            parsed = gate
        elif isinstance(gate, Mapping):
            data = dict(gate)
            data.setdefault("id", "gate")
            try:
                parsed = gate_from_mapping(data, root=Path.cwd())
            except GatesFileError as exc:
                return Verdict.failed(Mode.ERROR, f"invalid gate: {exc}")
        else:
            return Verdict.failed(
                Mode.ERROR,
                f"run_oracle_check() takes a Gate or a mapping, not {type(gate).__name__}",
            )
        try:
            seconds = values.timeout("timeout", timeout)
        except values.BadValue as exc:
            return Verdict.failed(Mode.ERROR, f"run_oracle_check(): {exc.message}")
        return run_check(parsed, RunContext(root=parsed.root, default_timeout=seconds))

    return fail_closed(run, "run_oracle_check()")
