"""Plugin code that judges or adjusts gates, held to the fail-closed rules.

Judges (``pytest_vgate_judge``) and adjusters (``pytest_vgate_adjust_verdict``) are other
people's code in the pytest process: each call runs on a daemon thread within the gate's
deadline, and whatever it does (raise, hang, return junk) is a failed verdict with a mode,
never a pass. A hung thread cannot be killed in-process: it is left running, its late
answer ignored.
"""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

from pytest_vgate.context import RunContext, gate_timeout
from pytest_vgate.evidence.record import Where
from pytest_vgate.gatesfile import Gate
from pytest_vgate.payload import CheckPayload, JsonObject
from pytest_vgate.verdict import DEFAULT_CAUSE, Cause, Mode, Verdict
from pytest_vgate.verifiers import Outcome

P = TypeVar("P", bound=CheckPayload)


@dataclass(frozen=True)
class JudgeContext:
    """What a judge gets besides the gate.

    ``root`` is the tree to judge: the gates root, or its image in the base worktree
    (``where`` is then ``"base"``) for the red run of ``--vgate-base``. ``deadline`` is a
    ``time.monotonic()`` value; past it the judge's answer no longer counts.
    """

    root: Path
    where: Where
    timeout: float
    deadline: float

    def remaining(self) -> float:
        return max(self.deadline - time.monotonic(), 0.0)


@dataclass(frozen=True)
class Call:
    """How one call of plugin code ended: returned, raised, or still running at the deadline."""

    value: object = None
    error: BaseException | None = None
    error_text: str = ""
    timed_out: bool = False
    duration: float = 0.0


def call_with_deadline(fn: Callable[[], object], timeout: float, name: str) -> Call:
    """Run ``fn`` on a daemon thread and wait at most ``timeout`` seconds for it."""
    box: dict[str, Any] = {}
    done = threading.Event()

    def target() -> None:
        try:
            box["value"] = fn()
        # Catch-all by design: plugin code's exceptions become a verdict, never a crash.
        except BaseException as exc:  # noqa: BLE001
            box["error"] = exc
            box["text"] = traceback.format_exc(limit=8)
        finally:
            done.set()

    started = time.monotonic()
    thread = threading.Thread(target=target, name=f"vgate {name}", daemon=True)
    thread.start()
    finished = done.wait(max(timeout, 0.0))
    duration = time.monotonic() - started
    if not finished:
        return Call(timed_out=True, duration=duration)
    return Call(
        value=box.get("value"),
        error=box.get("error"),
        error_text=box.get("text", ""),
        duration=duration,
    )


def describe(value: object, limit: int = 120) -> str:
    """A short repr of plugin output; never raises (``repr`` is the plugin's code)."""
    try:
        text = repr(value)
    except Exception as exc:  # noqa: BLE001 - a broken __repr__ is still described
        text = f"<{type(value).__name__} whose repr raised {type(exc).__name__}>"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _raised(call: Call, what: str, extra: Mapping[str, Any]) -> Verdict:
    exc = call.error
    assert exc is not None
    mode = Mode.ERROR if isinstance(exc, Exception) else Mode.PANIC
    return Verdict.failed(
        mode,
        f"{what} raised {type(exc).__name__}: {describe(exc)}",
        errors=(call.error_text,) if call.error_text else (),
        duration=call.duration,
        extra=extra,
    )


def verdict_from_judgment(call: Call, plugin: str, timeout: float) -> Verdict | None:
    """The verdict a judge's call gives; None when the judge declined (returned None).

    Only an ``Outcome`` instance can pass; ``True``, dicts, strings and look-alikes are junk.
    """
    what = f"the judge {plugin!r} (pytest_vgate_judge)"
    extra = {"judge": plugin}
    if call.timed_out:
        return Verdict.failed(
            Mode.TIMEOUT,
            f"{what} gave no answer within the deadline of {timeout:g}s; its thread cannot "
            "be stopped in-process and is left running, its late answer ignored",
            duration=call.duration,
            extra=extra,
        )
    if call.error is not None:
        return _raised(call, what, extra)
    value = call.value
    if value is None:
        return None
    if type(value) is Outcome:
        if value.ok is True:
            return Verdict(mode=Mode.PASS, detail=value.detail, duration=call.duration, extra=extra)
        return Verdict.failed(
            Mode.FAIL,
            value.detail or f"{what} said no",
            cause=Cause.PRODUCT,
            duration=call.duration,
            extra=extra,
        )
    return Verdict.failed(
        Mode.FAIL,
        f"{what} returned {describe(value)}; a judge returns Outcome.passed(reason), "
        "Outcome.failed(reason) or None",
        cause=Cause.BROKEN_TEST,
        duration=call.duration,
        extra=extra,
    )


def make_judge(
    ask: Callable[[Gate, JudgeContext], tuple[str, Call] | None],
) -> Callable[[Gate, RunContext], Verdict | None]:
    """A judge for ``RunContext.judge``: ``ask`` calls the judges (first result) and gives
    the deciding answer with the plugin that gave it, or None when none answered. A judge
    that raises or hangs decides too, as a failure. All share the gate's one deadline.
    """

    def judge(gate: Gate, ctx: RunContext) -> Verdict | None:
        timeout = gate_timeout(gate, ctx)
        context = JudgeContext(
            root=ctx.root,
            where=Where.CURRENT if ctx.root == gate.root else Where.BASE,
            timeout=timeout,
            deadline=time.monotonic() + timeout,
        )
        answer = ask(gate, context)
        if answer is None:
            return None
        name, call = answer
        return verdict_from_judgment(call, name, timeout)

    return judge


# -- adjusters ---------------------------------------------------------------------------


def verdict_of_payload(payload: CheckPayload) -> Verdict:
    """The gate's final verdict as adjusters see it: this run's facts, the final mode/cause."""
    green = payload.green
    base = Verdict.from_dict(green) if green is not None else Verdict(mode=Mode.PASS)
    return replace(
        base,
        mode=payload.mode,
        cause=payload.cause,
        detail=payload.detail or payload.rbg_reason or base.detail,
    )


def apply_adjustments(payload: P, proposals: Sequence[tuple[str, Call]]) -> P:
    """Fold adjusters' answers into a gate's payload; only stricter answers are applied.

    A failing verdict (any mode but ``pass``/``judgment``) is applied: the gate fails with
    it. ``pass`` on a gate that is not passing, and ``judgment``, are upgrade attempts:
    ignored and listed under ``adjustments``. An adjuster that raises, hangs or returns
    something that is not a ``Verdict`` fails the gate (``error``/``panic``/``timeout``):
    the policy it stands for could not be applied.
    """
    result = payload
    notes: list[JsonObject] = list(result.adjustments or ())
    for plugin, call in proposals:
        what = f"the adjuster {plugin!r} (pytest_vgate_adjust_verdict)"
        before = result.mode.value
        if call.timed_out:
            proposed: Verdict | None = Verdict.failed(
                Mode.TIMEOUT,
                f"{what} gave no answer within the gate's deadline; its thread is left running",
            )
        elif call.error is not None:
            proposed = _raised(call, what, {})
        elif call.value is None:
            continue
        elif type(call.value) is not Verdict:
            proposed = Verdict.failed(
                Mode.ERROR,
                f"{what} returned {describe(call.value)}; an adjuster returns a Verdict or None",
            )
        else:
            proposed = call.value
        assert proposed is not None
        if proposed.mode is Mode.PASS and result.ok:
            continue
        if proposed.mode in (Mode.PASS, Mode.JUDGMENT):
            notes.append(
                JsonObject(
                    {
                        "plugin": plugin,
                        "action": "ignored",
                        "from": before,
                        "to": proposed.mode.value,
                        "detail": f"{what} tried to turn mode {before} into "
                        f"{proposed.mode.value}; an adjuster may only make a verdict stricter",
                    }
                )
            )
            continue
        cause = proposed.cause or DEFAULT_CAUSE[proposed.mode] or Cause.BROKEN_TEST
        detail = proposed.detail or f"failed by {what}"
        notes.append(
            JsonObject(
                {
                    "plugin": plugin,
                    "action": "applied",
                    "from": before,
                    "to": proposed.mode.value,
                    "detail": detail,
                }
            )
        )
        first, _, rest = result.report.partition("\n")
        result = replace(
            result,
            ok=False,
            mode=proposed.mode,
            cause=cause,
            detail=detail,
            strict_failure=False,
            report=(
                f"gate {result.id!r} failed: mode {proposed.mode.value}, cause "
                f"{cause.value} (set by {what}: {detail})\nbefore:   {first}"
                + (f"\n{rest}" if rest else "")
            ),
        )
    if notes:
        result = replace(result, adjustments=tuple(notes))
    return result
