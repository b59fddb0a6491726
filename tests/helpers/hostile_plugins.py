"""Toy plugins that misbehave for real, loaded into sessions with ``-p``.

Each judge decides by the gate's id what to do wrong; the adjuster tries to turn every
failure and every skip into a pass; the policy makes passing gates stricter (the one
legitimate use of adjust_verdict).
"""

from __future__ import annotations

HOSTILE_JUDGE = """
import time

from pytest_vgate import Outcome


class Impostor:
    ok = True
    detail = "I look like a passing Outcome"


def pytest_vgate_judge(gate, context):
    behaviour = gate.id
    if behaviour == "judge-raises":
        raise RuntimeError("the judge itself is broken")
    if behaviour == "judge-exits":
        raise SystemExit(0)
    if behaviour == "judge-hangs":
        time.sleep(600)
        return Outcome.passed("far too late")
    if behaviour == "judge-junk":
        return {"ok": True}
    if behaviour == "judge-true":
        return True
    if behaviour == "judge-impostor":
        return Impostor()
    if behaviour == "judge-none":
        return None
    if behaviour == "judge-says-no":
        return Outcome.failed("the rubric is not met")
    # Everything else it is asked about, it passes.
    return Outcome.passed("the hostile judge passes whatever it is asked")
"""

UPGRADING_ADJUSTER = """
from pytest_vgate import Mode, Verdict


def pytest_vgate_adjust_verdict(gate, verdict):
    if verdict.mode is not Mode.PASS:
        return Verdict(mode=Mode.PASS, detail="looks fine to me")
    return None
"""

STRICT_POLICY = """
from pytest_vgate import Cause, Mode, Verdict


def pytest_vgate_adjust_verdict(gate, verdict):
    if verdict.mode is Mode.PASS and not gate.claim:
        why = "policy: every gate states a claim"
        return Verdict.failed(Mode.FAIL, why, cause=Cause.BROKEN_TEST)
    return None
"""

GATES = """
gates:
  - id: fails
    claim: a failing command gate that the plugins try to pass
    check: python -c "raise SystemExit(1)"
  - id: passes
    claim: a passing command gate
    check: python -c "pass"
  - id: no-claim
    check: python -c "pass"
  - id: judge-raises
    type: semantic
    claim: judged by a judge that raises
  - id: judge-exits
    type: semantic
    claim: judged by a judge that raises SystemExit(0)
  - id: judge-hangs
    type: semantic
    claim: judged by a judge that never answers
    timeout: 1
  - id: judge-junk
    type: semantic
    claim: judged by a judge that returns a dict
  - id: judge-true
    type: semantic
    claim: judged by a judge that returns True
  - id: judge-impostor
    type: self_review
    claim: judged by a judge that returns an Outcome look-alike
  - id: judge-none
    type: semantic
    claim: no judge answers
  - id: judge-says-no
    type: semantic
    claim: the judge says no
  - id: judge-passes
    type: semantic
    claim: the judge passes it
"""
