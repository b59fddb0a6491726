"""Several verifiers of one gate: run concurrently, joined into one fail-closed Verdict.

Each verifier gets a thread of ours (a single one runs in the caller's) and a child
process of its own, so one that hangs or panics neither delays nor silences the others;
the gate takes the worst mode of its checks and keeps every verifier's own result
(``checks``, and ``extra["verifiers"]``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from pytest_vgate.process.contain import weakest
from pytest_vgate.verdict import ISOLATION_KEY, Mode, Verdict, worst_mode
from pytest_vgate.verifiers.api import VerifierDefinitionError
from pytest_vgate.verifiers.call import EXIT_GRACE
from pytest_vgate.verifiers.invoke import bounded
from pytest_vgate.verifiers.isolation import Cancel, VerifierCall, call_verifier
from pytest_vgate.verifiers.result import VerifierResult
from pytest_vgate.verifiers.target import VerifierTarget

if TYPE_CHECKING:
    from pytest_vgate.context import RunContext
    from pytest_vgate.gatesfile import Gate


def join_results(results: Sequence[VerifierResult], duration: float = 0.0) -> Verdict:
    """One verdict for a gate from its verifiers' results (no results: ``blank``)."""
    if not results:
        return Verdict.failed(Mode.BLANK, "the gate names no verifiers: nothing was checked")
    checks = tuple(r.to_check_verdict() for r in results)
    tools = tuple(dict.fromkeys(t for r in results for t in r.tool_records()))
    extra: dict[str, object] = {"verifiers": [r.to_dict() for r in results]}
    level = weakest(r.isolation for r in results)  # what contained the gate's weakest call
    if level is not None:
        extra[ISOLATION_KEY] = level
    mode = worst_mode([r.mode for r in results])
    if mode is Mode.PASS:
        return Verdict(
            mode=Mode.PASS,
            detail=f"{len(results)} of {len(results)} verifiers passed",
            duration=duration,
            checks=checks,
            tools=tools,
            extra=extra,
        )
    failed = [r for r in results if not r.ok]
    cause = next(r.cause for r in failed if r.mode is mode)
    lines = [f"{len(failed)} of {len(results)} verifiers failed:"]
    for r in failed:
        first = r.detail.strip().splitlines()[0] if r.detail.strip() else ""
        lines.append(f"- {r.name}: {r.mode.value}" + (f": {first}" if first else ""))
    return Verdict.failed(
        mode,
        bounded("\n".join(lines)),
        cause=cause,
        duration=duration,
        checks=checks,
        tools=tools,
        errors=tuple(f"{r.name}: {r.mode.value}: {r.detail}" for r in failed),
        extra=extra,
    )


def run_verifiers(targets: Sequence[VerifierTarget], call: VerifierCall) -> Verdict:
    """Run ``targets`` concurrently, each as ``call_verifier(target, call)``, and join them.

    Raises only KeyboardInterrupt (after killing every child it started) and a bug of
    ours, which the caller's boundary (``boundary.fail_closed``) turns into mode ``error``.
    """
    started = time.monotonic()
    cancel = Cancel()
    results: list[VerifierResult | None] = [None] * len(targets)

    def one(index: int) -> VerifierResult:
        return call_verifier(targets[index], call, cancel=cancel)

    def in_thread(index: int) -> None:
        # Catch-all: a thread has no boundary above it; a bug of ours here would vanish
        # into threading.excepthook and leave a hole that must not read as a pass.
        try:
            results[index] = one(index)
        except BaseException as exc:  # noqa: BLE001
            results[index] = VerifierResult.failure(
                targets[index].display, Mode.ERROR, f"pytest-vgate: internal error: {exc!r}"
            )

    if len(targets) == 1:  # no thread: the caller's own (a bug of ours reaches its boundary)
        results[0] = one(0)
        threads = []
    else:
        threads = [
            threading.Thread(target=in_thread, args=(i,), name=f"vgate-fanout-{i}", daemon=True)
            for i in range(len(targets))
        ]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    except BaseException:
        cancel.cancel()  # Ctrl-C: kill every child, then let the interrupt propagate
        for thread in threads:
            if thread.ident is not None:
                thread.join(2 * EXIT_GRACE)
        raise
    final = [
        r
        if r is not None
        else VerifierResult.failure(t.display, Mode.ERROR, "pytest-vgate: no result recorded")
        for r, t in zip(results, targets, strict=False)
    ]
    return join_results(final, time.monotonic() - started)


def run_verifier_refs(gate: Gate, ctx: RunContext) -> Verdict:
    """A ``type: python`` gate: its ``module:function`` verifiers, fanned out, with the
    gates root on sys.path. The gate's ``tools`` are declared tools of every verifier."""
    try:
        targets = [VerifierTarget.from_reference(ref, name=ref) for ref in gate.verifiers]
    except VerifierDefinitionError as exc:
        return Verdict.failed(Mode.ERROR, str(exc))
    targets = [
        VerifierTarget(t.module, t.qualname, t.file, t.name, tools=gate.tools) for t in targets
    ]
    call = VerifierCall.from_context(
        ctx,
        timeout=gate.timeout if gate.timeout is not None else ctx.default_timeout,
        gate=gate.to_dict(),
        # The tree being run comes first: a red run on the base must not import the
        # current tree's modules through the session's own sys.path (its cwd, rootdir).
        sys_path=(str(ctx.root), *ctx.sys_path),
        env=gate.env,
    )
    if ctx.measure is None:
        return run_verifiers(targets, call)
    from pytest_vgate.process.cell import check_cell
    from pytest_vgate.process.measure import MEASURED_KEY
    from pytest_vgate.process.measure import start as start_measuring

    # Measured as a command's run is: every process of the run (each verifier's, its
    # tools') records into one folder, read once all have ended.
    with ctx.cells.cell() if ctx.cells is not None else check_cell("vgate-measure-") as cell:
        probe = start_measuring(ctx.measure, cell, {})
        verdict = run_verifiers(targets, replace(call, measure=probe))
        measured = probe.collect()
    return replace(verdict, extra={**verdict.extra, MEASURED_KEY: measured})
