"""Red-before-green: decide a gate's ``vgate_rbg`` status from its runs and its history.

The rules (docs/red-before-green.md): with a base run, the base decides, like SWE-bench's
FAIL_TO_PASS / PASS_TO_PASS; without one, the ledger decides. A failing current run always
keeps its own mode and cause: red-before-green never turns a failure into a pass, and
never overrides a product or environment failure with a test-quality verdict.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from pytest_vgate.causes import UNITTEST_NOT_RED, runs_pytest
from pytest_vgate.evidence.record import (
    Record,
    judge_red,
    output_of,
    parse_time,
)
from pytest_vgate.gatesfile import Gate, RedPolicy
from pytest_vgate.jsonable import Jsonable
from pytest_vgate.verdict import DEFAULT_CAUSE, Cause, Mode, Rbg


@dataclass(frozen=True)
class RbgResult(Jsonable):
    """A gate's red-before-green status and what it does to the gate's verdict.

    ``ok`` False with ``mode``/``cause`` set: the gate must fail with these (its check
    passed, but it proves nothing). ``ok`` False with both None: the current run failed;
    keep its own mode and cause. ``red_evidence``: the red run the status rests on.
    """

    status: Rbg
    ok: bool
    reason: str
    mode: Mode | None = None
    cause: Cause | None = None
    red_evidence: Record | None = None


def _judge(record: Record, gate: Gate) -> tuple[bool, str]:
    """The genuine-red heuristic on a record. Its output is the kept tail, so a loader
    error the record saw when it was made (in the whole output) stands too."""
    if record.red_reason == UNITTEST_NOT_RED:
        return False, UNITTEST_NOT_RED
    return judge_red(record.mode, record.exit_code, gate, output_of(record.stdout, record.stderr))


def _describe(record: Record) -> str:
    where = f"base {record.base_ref}" if record.where == "base" and record.base_ref else ""
    tree = where or record.tree.label
    code = f"exit {record.exit_code}" if record.exit_code is not None else record.mode.value
    return f"{tree}, {code}, {record.time}"


def _weak_cause(record: Record) -> Cause:
    """A base that could not answer (timeout, missing tool) is the environment's fault."""
    if DEFAULT_CAUSE.get(record.mode) is Cause.ENVIRONMENT:
        return Cause.ENVIRONMENT
    return Cause.BROKEN_TEST


def classify(
    gate: Gate,
    current: Record,
    *,
    base: Record | None,
    history: Sequence[Record],
    require_red: bool,
) -> RbgResult:
    """The status of ``gate`` given this session's run(s) and the ledger's earlier records."""
    if gate.red is RedPolicy.NOT_REQUIRED:
        return _regression(current, base)
    if not current.ok:
        red = base if base is not None and _judge(base, gate)[0] else None
        where = " (red on the base too: the change does not fix it)" if red else ""
        return RbgResult(
            Rbg.UNPROVEN,
            ok=False,
            reason=f"the check fails now{where}; nothing is proven until it passes",
            red_evidence=red,
        )
    if base is not None:
        return _with_base(gate, base)
    return _from_history(gate, current, history, require_red)


def _regression(current: Record, base: Record | None) -> RbgResult:
    if not current.ok:
        return RbgResult(Rbg.REGRESSION, ok=False, reason="regression gate: the check fails now")
    if base is None or base.ok:
        on = " and on the base" if base is not None else ""
        return RbgResult(Rbg.REGRESSION, ok=True, reason=f"regression gate: passes now{on}")
    return RbgResult(
        Rbg.REGRESSION,
        ok=False,
        reason=(
            f"regression gate (red: not-required) but it fails on the base ({_describe(base)}: "
            f"{base.red_reason}); it must pass on both, or declare it red: required"
        ),
        mode=Mode.FAIL,
        cause=_weak_cause(base),
    )


# pytest's last line ("1 skipped in 0.01s", "2 skipped, 1 deselected in ...") and a reason
# it printed (``-rs``: "SKIPPED [1] tests/test_x.py:3: needs the feature"); unittest's
# "OK (skipped=1)" after "Ran 1 test".
_PYTEST_TALLY = re.compile(r"^=*\s*((?:\d+ \w+(?:, )?)+) in [\d.]+s", re.MULTILINE)
_PYTEST_REASON = re.compile(r"^SKIPPED \[\d+\] ([^\n]+)", re.MULTILINE)
_UNITTEST_RAN = re.compile(r"^Ran (\d+) tests?\b", re.MULTILINE)
_UNITTEST_SKIPPED = re.compile(r"^OK \(skipped=(\d+)\)", re.MULTILINE)
_UNITTEST_REASON = re.compile(r"\bskipped '([^'\n]*)'")


def skipped_only(output: str) -> str | None:
    """When a run that passed only skipped its tests: pytest's (or unittest's) reason, or
    "" when it printed none; None when some test really ran."""
    tallies = _PYTEST_TALLY.findall(output)
    if tallies:
        pairs = (part.split(" ", 1) for part in tallies[-1].split(", "))
        counts = {word: int(n) for n, word in pairs}
        if counts.get("skipped") and not counts.get("passed") and not counts.get("xpassed"):
            reasons = _PYTEST_REASON.findall(output)
            return "; ".join(r.strip() for r in reasons[:3])
        return None
    ran, skipped = _UNITTEST_RAN.findall(output), _UNITTEST_SKIPPED.findall(output)
    if ran and skipped and int(ran[-1]) == int(skipped[-1]) > 0:
        return "; ".join(_UNITTEST_REASON.findall(output)[:3])
    return None


def _with_base(gate: Gate, base: Record) -> RbgResult:
    skipped = skipped_only(output_of(base.stdout, base.stderr)) if base.ok else None
    if skipped is not None:
        why = f": {skipped}" if skipped else " (it printed no reason; `-rs` shows pytest's)"
        return RbgResult(
            Rbg.WEAK_RED,
            ok=False,
            reason=(
                f"skipped on the base{why}; a skip is no answer: make the test run there "
                "(carry what it needs with `overlay:`), or declare it `red: not-required`"
            ),
            mode=Mode.FAIL,
            cause=Cause.BROKEN_TEST,
        )
    if base.ok:
        return RbgResult(
            Rbg.NEVER_RED,
            ok=False,
            reason="the check passes on the base too: it cannot tell the change apart",
            mode=Mode.FAIL,
            cause=Cause.BROKEN_TEST,
        )
    genuine, why = _judge(base, gate)
    if genuine:
        return RbgResult(
            Rbg.PROVEN,
            ok=True,
            reason=f"red on the base ({_describe(base)}), green now",
            red_evidence=base,
        )
    hint = ""
    missing = base.exit_code in (4, 5) and runs_pytest(gate.argv)
    if not gate.overlay and (missing or why == UNITTEST_NOT_RED):
        hint = (
            "; if the test is new in this change, carry it onto the base with "
            "`overlay: [tests/]` (the test files that encode the requirement)"
        )
    return RbgResult(
        Rbg.WEAK_RED,
        ok=False,
        reason=f"red on the base for the wrong reason: {why}{hint}",
        mode=Mode.FAIL,
        cause=_weak_cause(base),
    )


def _from_history(
    gate: Gate, current: Record, history: Sequence[Record], require_red: bool
) -> RbgResult:
    stale_at: datetime | None = None
    ignored: dict[str, int] = {}

    def skip(why: str) -> None:
        ignored[why] = ignored.get(why, 0) + 1

    if gate.stale_at:
        stale_at = parse_time(gate.stale_at)
    genuine_same: list[Record] = []
    genuine_other_claim: list[Record] = []
    weak: list[tuple[Record, str]] = []
    for rec in history:
        if rec.gate_id != gate.id or rec.fingerprint != current.fingerprint or rec.ok:
            continue
        if rec.mode is Mode.JUDGMENT:
            continue
        if not current.tree.is_git:
            skip("not a git tree, so a change of tree cannot be told")
            continue
        if rec.tree.key == current.tree.key:
            skip("ran on this same tree")
            continue
        if gate.stale_at:
            when = parse_time(rec.time)
            if stale_at is None or when is None or when < stale_at:
                skip(f"recorded before stale_at {gate.stale_at}")
                continue
        if rec.inputs_digest != current.inputs_digest:
            skip("inputs changed since")
            continue
        genuine, why = _judge(rec, gate)
        if not genuine:
            weak.append((rec, why))
        elif rec.claim_hash == current.claim_hash:
            genuine_same.append(rec)
        else:
            genuine_other_claim.append(rec)
    note = "".join(f"; {n} red record(s) ignored: {why}" for why, n in ignored.items())
    if genuine_same:
        red = max(genuine_same, key=lambda r: r.time)
        return RbgResult(
            Rbg.PROVEN,
            ok=True,
            reason=f"red earlier ({_describe(red)}), green now",
            red_evidence=red,
        )
    if genuine_other_claim:
        red = max(genuine_other_claim, key=lambda r: r.time)
        return RbgResult(
            Rbg.REQUIREMENT_CHANGED,
            ok=False,
            reason=(
                f"the red evidence ({_describe(red)}) was for a different claim text; "
                "show the check red again for the current claim (or run with --vgate-base)"
            ),
            mode=Mode.FAIL,
            cause=Cause.REQUIREMENT_CHANGED,
            red_evidence=red,
        )
    if weak:
        red, why = max(weak, key=lambda item: item[0].time)
        status, text = (
            Rbg.WEAK_RED,
            f"the only red ({_describe(red)}) was for the wrong reason: {why}",
        )
    else:
        status, text = Rbg.UNPROVEN, "no red evidence in the ledger"
    if require_red:
        return RbgResult(
            status,
            ok=False,
            reason=f"{text}{note}; --vgate-require-red needs a genuine red first",
            mode=Mode.FAIL,
            cause=Cause.BROKEN_TEST,
        )
    return RbgResult(status, ok=True, reason=f"{text}{note}; passes as unproven")
