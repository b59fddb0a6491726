"""Judges and adjusters held to the fail-closed rules (pytest_vgate.plugin.judging).

Real threads, real hangs, real exceptions: whatever plugin code does, a pass comes only
from an ``Outcome.passed()`` judge or from a gate that already passed.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pluggy
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_vgate import Cause, Gate, Mode, Outcome, Verdict
from pytest_vgate.context import RunContext
from pytest_vgate.gate.runner import run_check
from pytest_vgate.gatesfile import GateType
from pytest_vgate.payload import CheckPayload, GatePayload
from pytest_vgate.plugin import hookspecs
from pytest_vgate.plugin.extending import ask_judges, install_guard
from pytest_vgate.plugin.judging import (
    Call,
    apply_adjustments,
    call_with_deadline,
    make_judge,
    verdict_from_judgment,
)


class Impostor:
    ok = True
    detail = "looks like a passing Outcome"


class OutcomeSubclass(Outcome):
    pass


def payload_state(payload: CheckPayload) -> str:
    """``pass``, ``skip`` (judgment, not strict) or ``fail``: what a gate's payload says."""
    if payload.ok:
        return "pass"
    if payload.mode is Mode.JUDGMENT and not payload.strict_failure:
        return "skip"
    return "fail"


def _sleep_forever() -> object:
    time.sleep(600)
    return Outcome.passed("too late")


def test_call_with_deadline_returns_raises_and_gives_up_on_a_hang() -> None:
    assert call_with_deadline(lambda: 42, 5, "t").value == 42
    raised = call_with_deadline(lambda: 1 / 0, 5, "t")
    assert isinstance(raised.error, ZeroDivisionError)
    assert "ZeroDivisionError" in raised.error_text
    hung = call_with_deadline(_sleep_forever, 0.2, "hang")
    assert hung.timed_out
    assert hung.value is None
    # The hung thread is a daemon: it cannot keep the interpreter alive.
    assert all(t.daemon for t in threading.enumerate() if t.name == "vgate hang")


@pytest.mark.parametrize(
    "value",
    [True, 1, "pass", {"ok": True}, [Outcome.passed()], Impostor(), Mode.PASS],
    ids=["True", "1", "str", "dict", "list", "impostor", "Mode.PASS"],
)
def test_junk_from_a_judge_fails_with_cause_broken_test(value: object) -> None:
    verdict = verdict_from_judgment(Call(value=value), "junk", 5)
    assert verdict is not None
    assert (verdict.mode, verdict.cause) == (Mode.FAIL, Cause.BROKEN_TEST)
    assert "returned" in verdict.detail


def test_an_outcome_subclass_is_junk_too() -> None:
    verdict = verdict_from_judgment(Call(value=OutcomeSubclass(True)), "sub", 5)
    assert verdict is not None and verdict.mode is Mode.FAIL


@pytest.mark.parametrize(
    ("error", "mode"),
    [
        (RuntimeError("bug"), Mode.ERROR),
        (SystemExit(0), Mode.PANIC),
        (KeyboardInterrupt(), Mode.PANIC),
    ],
)
def test_a_judge_that_raises_fails(error: BaseException, mode: Mode) -> None:
    verdict = verdict_from_judgment(Call(error=error), "raiser", 5)
    assert verdict is not None
    assert verdict.mode is mode and verdict.cause is Cause.BROKEN_TEST


def test_answers_that_count() -> None:
    passed = verdict_from_judgment(Call(value=Outcome.passed("fine")), "j", 5)
    failed = verdict_from_judgment(Call(value=Outcome.failed("no")), "j", 5)
    timed_out = verdict_from_judgment(Call(timed_out=True), "j", 5)
    assert passed is not None and passed.mode is Mode.PASS and passed.extra["judge"] == "j"
    assert failed is not None and (failed.mode, failed.cause) == (Mode.FAIL, Cause.PRODUCT)
    assert timed_out is not None and timed_out.mode is Mode.TIMEOUT
    assert verdict_from_judgment(Call(value=None), "j", 5) is None


def _semantic(tmp_path: Path, timeout: float | None = None) -> Gate:
    return Gate(id="g", type=GateType.SEMANTIC, claim="c", root=tmp_path, timeout=timeout)


class _Judge:
    """A plugin object with one ``pytest_vgate_judge`` implementation."""

    def __init__(self, answer: Any) -> None:
        self.pytest_vgate_judge = pluggy.HookimplMarker("pytest")(answer)


def _judges(*plugins: tuple[str, Any]) -> Any:
    """A judge made as the pytest layer makes it: real pluggy, our hookspecs and guard."""
    pm = pluggy.PluginManager("pytest")
    pm.add_hookspecs(hookspecs)
    install_guard(pm)
    for name, answer in reversed(plugins):  # pluggy calls the last registered first
        pm.register(_Judge(answer), name)
    hook = pm.hook.pytest_vgate_judge
    return make_judge(lambda gate, context: ask_judges(hook, gate, context))


def test_the_runner_asks_the_judge_and_first_answer_wins(tmp_path: Path) -> None:
    seen: list[str] = []

    def declines(gate: Gate, context: Any) -> object:
        seen.append(f"declines {context.where} {context.root == tmp_path}")
        return None

    def answers(gate: Gate, context: Any) -> object:
        seen.append("answers")
        return Outcome.failed("rubric not met")

    def never_called(gate: Gate, context: Any) -> object:
        raise AssertionError("firstresult: not reached")

    judge = _judges(("a", declines), ("b", answers), ("c", never_called))
    verdict = run_check(_semantic(tmp_path), RunContext(root=tmp_path, judge=judge))
    assert (verdict.mode, verdict.detail) == (Mode.FAIL, "rubric not met")
    assert verdict.extra["judge"] == "b"
    assert seen == ["declines current True", "answers"]


def test_a_judge_that_raises_decides_as_a_failure_named_for_it(tmp_path: Path) -> None:
    def raises(gate: Gate, context: Any) -> object:
        raise RuntimeError("broken judge")

    def never_called(gate: Gate, context: Any) -> object:
        raise AssertionError("firstresult: not reached")

    judge = _judges(("a", raises), ("b", never_called))
    verdict = run_check(_semantic(tmp_path), RunContext(root=tmp_path, judge=judge))
    assert (verdict.mode, verdict.cause) == (Mode.ERROR, Cause.BROKEN_TEST)
    assert "the judge 'a' (pytest_vgate_judge) raised RuntimeError" in verdict.detail


class _RaisingWrapper:
    @pluggy.HookimplMarker("pytest")(wrapper=True)
    def pytest_vgate_judge(self, gate: Gate, context: Any) -> Any:
        yield
        raise RuntimeError("the wrapper is broken")


def test_a_hook_wrapper_that_raises_fails_the_gate_named_as_a_wrapper(tmp_path: Path) -> None:
    """The judges are called through pluggy, wrappers included: a wrapper's exception is
    a failure with a mode, never a pass, even over a passing judge."""
    pm = pluggy.PluginManager("pytest")
    pm.add_hookspecs(hookspecs)
    install_guard(pm)
    pm.register(_Judge(lambda gate, context: Outcome.passed("fine")), "judge")
    pm.register(_RaisingWrapper(), "wrapper")
    hook = pm.hook.pytest_vgate_judge
    judge = make_judge(lambda gate, context: ask_judges(hook, gate, context))
    verdict = run_check(_semantic(tmp_path), RunContext(root=tmp_path, judge=judge))
    assert (verdict.mode, verdict.cause) == (Mode.ERROR, Cause.BROKEN_TEST)
    assert "a hook wrapper of pytest_vgate_judge" in verdict.detail


def test_without_an_answer_the_gate_stays_judgment(tmp_path: Path) -> None:
    judge = _judges(("a", lambda gate, context: None))
    verdict = run_check(_semantic(tmp_path), RunContext(root=tmp_path, judge=judge))
    assert verdict.mode is Mode.JUDGMENT


@pytest.mark.slow
def test_a_hanging_judge_times_out_at_the_gates_deadline(tmp_path: Path) -> None:
    judge = _judges(("hangs", lambda gate, context: _sleep_forever()))
    verdict = run_check(_semantic(tmp_path, timeout=0.5), RunContext(root=tmp_path, judge=judge))
    assert (verdict.mode, verdict.cause) == (Mode.TIMEOUT, Cause.ENVIRONMENT)
    assert "cannot be stopped in-process" in verdict.detail
    assert "the judge 'hangs'" in verdict.detail


# -- adjusters ---------------------------------------------------------------------------


def _payload(state: str) -> GatePayload:
    mode = {"pass": Mode.PASS, "fail": Mode.FAIL, "skip": Mode.JUDGMENT, "strict": Mode.JUDGMENT}
    return GatePayload(
        id="g",
        ok=state == "pass",
        mode=mode[state],
        cause=Cause.PRODUCT if state == "fail" else None,
        strict_failure=state == "strict",
        detail="",
        report=f"gate 'g' failed: mode {mode[state].value}",
    )


def test_a_stricter_answer_is_applied() -> None:
    answer = Verdict.failed(Mode.FAIL, "policy says no", cause=Cause.BROKEN_TEST)
    result = apply_adjustments(_payload("pass"), [("policy", Call(value=answer))])
    assert (result.ok, result.mode, result.cause) == (False, "fail", "broken_test")
    assert result.adjustments is not None
    assert result.adjustments[0]["action"] == "applied"
    assert result.report.startswith("gate 'g' failed: mode fail, cause broken_test")


@pytest.mark.parametrize("state", ["fail", "skip", "strict"])
@pytest.mark.parametrize("mode", [Mode.PASS, Mode.JUDGMENT])
def test_an_upgrade_is_ignored_and_reported(state: str, mode: Mode) -> None:
    before = _payload(state)
    result = apply_adjustments(before, [("upgrader", Call(value=Verdict(mode=mode)))])
    assert replace(result, adjustments=None) == before
    assert result.adjustments is not None
    assert result.adjustments[0]["action"] == "ignored"
    assert "may only make a verdict stricter" in result.adjustments[0]["detail"]


@pytest.mark.parametrize(
    ("call", "mode"),
    [
        (Call(error=RuntimeError("bug")), "error"),
        (Call(timed_out=True), "timeout"),
        (Call(value="pass"), "error"),
        (Call(value=True), "error"),
    ],
    ids=["raises", "hangs", "str", "True"],
)
def test_a_broken_adjuster_fails_the_gate(call: Call, mode: str) -> None:
    result = apply_adjustments(_payload("pass"), [("broken", call)])
    assert (result.ok, result.mode) == (False, mode)


_answers = st.one_of(
    st.none(),
    st.sampled_from(list(Mode)).map(lambda m: Verdict(mode=m)),
    st.sampled_from([True, "pass", 1, {"mode": "pass"}]),
).map(lambda value: Call(value=value))
_calls = st.one_of(
    _answers,
    st.just(Call(timed_out=True)),
    st.just(Call(error=RuntimeError("x"))),
    st.just(Call(error=SystemExit(0))),
)


@given(
    state=st.sampled_from(["pass", "fail", "skip", "strict"]),
    calls=st.lists(st.tuples(st.sampled_from(["a", "b"]), _calls), max_size=4),
)
def test_no_sequence_of_adjusters_makes_a_pass_out_of_anything_else(
    state: str, calls: list[tuple[str, Call]]
) -> None:
    before = _payload(state)
    after = apply_adjustments(before, calls)
    if payload_state(after) == "pass":
        assert state == "pass"
    if state != "pass":
        assert payload_state(after) in (payload_state(before), "fail")
