"""From verdicts to a gate's final result: pass/fail, mode, cause, red-before-green.

Pure core: takes the gate, the run context(s) and the evidence so far, runs the
check through the fail-closed runner, and returns a JSON-able result whose
``report`` text is what a failing item shows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_vgate.proof import Evidence, prove
from pytest_vgate.runner import RunContext, run_check
from pytest_vgate.spec import Gate
from pytest_vgate.verdict import Cause, Mode, Verdict

TAIL_LINES = 20


@dataclass(frozen=True)
class GateResult:
    """The final word on one gate in one session."""

    gate: Gate
    verdict: Verdict  # the run on the current tree
    ok: bool
    mode: Mode
    cause: Cause | None
    rbg: str | None = None
    rbg_reason: str = ""
    base_verdict: Verdict | None = None
    red: dict[str, Any] | None = None  # the red evidence used (a ledger record)
    strict_failure: bool = False
    records: tuple[dict[str, Any], ...] = field(default_factory=tuple)  # for the ledger
    tree_label: str | None = None
    ledger: str | None = None

    def to_payload(self) -> dict[str, Any]:
        v = self.verdict
        return {
            "kind": "gate",
            "id": self.gate.id,
            "claim": self.gate.claim,
            "type": self.gate.type.value,
            "ok": self.ok,
            "mode": self.mode.value,
            "cause": self.cause.value if self.cause else None,
            "rbg": self.rbg,
            "rbg_reason": self.rbg_reason,
            "exit_code": v.exit_code,
            "duration": round(v.duration, 6),
            "command": list(v.command or self.gate.argv),
            "detail": v.detail,
            "stdout": v.stdout,
            "stderr": v.stderr,
            "stdout_bytes": v.stdout_bytes,
            "stderr_bytes": v.stderr_bytes,
            "errors": list(v.errors),
            "checks": [c.to_dict() for c in v.checks],
            "tools": [t.to_dict() for t in v.tools],
            "green": v.to_dict(),
            "base": self.base_verdict.to_dict() if self.base_verdict else None,
            "red": self.red,
            "strict_failure": self.strict_failure,
            "records": list(self.records),
            "tree_label": self.tree_label,
            "ledger": self.ledger,
            "source": f"{self.gate.source}:{self.gate.line}" if self.gate.source else None,
            "report": format_report(self),
        }


def evaluate_gate(
    gate: Gate,
    ctx: RunContext,
    *,
    strict: bool = False,
    evidence: Evidence | None = None,
    base_ctx: RunContext | None = None,
    require_red: bool = False,
) -> GateResult:
    """Run the gate (and its base run, if any) and decide its result.

    Without ``evidence`` no red-before-green status is given (library use).
    """
    verdict = run_check(gate, ctx)
    if evidence is None or verdict.mode is Mode.JUDGMENT:
        return decide(gate, verdict, strict=strict)
    base = run_check(gate, base_ctx) if base_ctx is not None else None
    rbg, records = prove(
        gate,
        verdict,
        evidence,
        base=base,
        base_root=base_ctx.root if base_ctx is not None else None,
        require_red=require_red,
    )
    ok = verdict.ok and rbg.ok  # fail closed: evidence can fail a gate, never pass one
    mode: Mode
    cause: Cause | None
    if ok:
        mode, cause = verdict.mode, None
    elif verdict.ok and rbg.mode is not None:
        mode, cause = rbg.mode, rbg.cause
    elif verdict.ok:  # classify refused without saying how: still a failure
        mode, cause = Mode.FAIL, Cause.BROKEN_TEST
    else:
        mode, cause = verdict.mode, verdict.cause
    red = rbg.red_evidence.to_dict() if rbg.red_evidence is not None else None
    return GateResult(
        gate=gate,
        verdict=verdict,
        ok=ok,
        mode=mode,
        cause=cause,
        rbg=rbg.status.value,
        rbg_reason=rbg.reason,
        base_verdict=base,
        red=red,
        records=tuple(r.to_dict() for r in records),
        tree_label=evidence.tree.label,
        ledger=str(evidence.ledger.path),
    )


def decide(gate: Gate, verdict: Verdict, *, strict: bool = False) -> GateResult:
    """The result of a gate from the verdict of its run on the current tree."""
    if verdict.mode is Mode.JUDGMENT:
        cause = Cause.BROKEN_TEST if strict else None
        return GateResult(
            gate=gate,
            verdict=verdict,
            ok=False,
            mode=Mode.JUDGMENT,
            cause=cause,
            strict_failure=strict,
        )
    return GateResult(
        gate=gate, verdict=verdict, ok=verdict.ok, mode=verdict.mode, cause=verdict.cause
    )


def _tail(text: str, lines: int = TAIL_LINES) -> str:
    parts = text.rstrip("\n").split("\n")
    if len(parts) <= lines:
        return "\n".join(parts)
    return "\n".join([f"[... {len(parts) - lines} earlier lines]", *parts[-lines:]])


def format_report(result: GateResult) -> str:
    """The failure report of a gate: claim, argv, expected vs actual, mode, cause, tails."""
    gate, v = result.gate, result.verdict
    lines = [
        f"gate {gate.id!r} failed: mode {result.mode.value}"
        + (f", cause {result.cause.value}" if result.cause else "")
    ]
    if gate.claim:
        lines.append(f"claim:    {gate.claim}")
    if gate.argv:
        lines.append(f"command:  {_argv_text(gate.argv)}")
    if v.detail:
        lines.append(f"detail:   {v.detail}")
    if gate.argv:
        expected = " or ".join(str(c) for c in gate.expect)
        actual = "none (did not run to exit)" if v.exit_code is None else str(v.exit_code)
        passed = " (the check passed; red-before-green fails the gate)" if v.ok else ""
        lines.append(f"exit:     expected {expected}, actual {actual}{passed}")
    lines.append(f"duration: {v.duration:.2f}s")
    if result.rbg:
        lines.append(
            f"red-before-green: {result.rbg}"
            + (f" ({result.rbg_reason})" if result.rbg_reason else "")
        )
    for check in v.checks:
        lines.append(
            f"  check {check.name}: {check.mode.value}"
            + (f" - {check.detail}" if check.detail else "")
        )
    for tool in v.tools:
        lines.append(f"tool:     {tool.id} = {tool.path} (sha256 {tool.sha256[:16]}...)")
    for name, text, total in (
        ("stderr", v.stderr, v.stderr_bytes),
        ("stdout", v.stdout, v.stdout_bytes),
    ):
        if text.strip():
            lines.append(f"--- {name} ({total} bytes, last {TAIL_LINES} lines) ---")
            lines.append(_tail(text))
    if result.base_verdict is not None:
        b = result.base_verdict
        lines.append(f"--- on the base: mode {b.mode.value}, exit {b.exit_code} ---")
        if b.stderr.strip():
            lines.append(_tail(b.stderr, 8))
    return "\n".join(lines)


def _argv_text(argv: Sequence[str]) -> str:
    import shlex

    return shlex.join(argv)
