"""The typed messages of a verifier call: the job and the child's answer, strict both ways."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from helpers.verifiers_modules import call, write_module

from pytest_vgate.jsonable import JsonShapeError
from pytest_vgate.verdict import Cause, Mode
from pytest_vgate.verifiers import wire
from pytest_vgate.verifiers.api import Isolation
from pytest_vgate.verifiers.messages import ChildAnswer, Op, VerifierJob
from pytest_vgate.verifiers.target import VerifierTarget

JOB = VerifierJob(
    target=VerifierTarget("checks", "parser_rejects_empty", "/r/checks.py", "parser", 5.0),
    root="/r",
    cell="/tmp/cell",
    gate={"id": "g", "claim": "c"},
    cwd="/r/sub",
    env={"PATH": "/usr/bin", "HOME": "/tmp/cell"},
    deadline=1234.5,
)


def _through_the_wire(message: dict[str, Any]) -> dict[str, Any]:
    (received,) = wire.FrameReader().feed(wire.encode(message))
    return received


def test_a_job_crosses_the_wire_whole() -> None:
    message = _through_the_wire(JOB.message())
    assert message["op"] == "job"
    assert message["target"]["isolation"] == "process"
    assert VerifierJob.from_message(message) == JOB


@pytest.mark.parametrize(
    ("change", "where"),
    [
        ({"op": "result"}, "VerifierJob"),
        ({"deadline": "soon"}, "VerifierJob.deadline"),
        ({"env": {"PATH": 1}}, "VerifierJob.env['PATH']"),
        ({"target": {"module": "m"}}, "VerifierJob.target.qualname"),
        ({"target": {**JOB.target.to_dict(), "isolation": "none"}}, "VerifierJob.target.isolation"),
        ({"extra": 1}, "VerifierJob"),
    ],
)
def test_a_malformed_job_is_refused(change: dict[str, Any], where: str) -> None:
    with pytest.raises(JsonShapeError) as info:
        VerifierJob.from_message({**JOB.message(), **change})
    assert info.value.where == where


def test_the_answer_crosses_the_wire_and_a_forged_one_is_refused() -> None:
    answer = ChildAnswer(Mode.FAIL, Cause.PRODUCT, "no", ("python",))
    message = _through_the_wire(answer.message())
    assert message["op"] == Op.RESULT
    assert ChildAnswer.from_dict(message["result"]) == answer
    assert ChildAnswer.from_dict({"mode": "pass"}) == ChildAnswer(Mode.PASS)
    for forged in ({"mode": "maybe"}, {"mode": "pass", "detail": 1}, ["pass"], None):
        with pytest.raises(JsonShapeError):
            ChildAnswer.read(forged)
    # What the answer does not carry is dropped unread (a forged "runs" is no evidence).
    assert ChildAnswer.read({"mode": "pass", "runs": [{"id": "python"}]}) == ChildAnswer(Mode.PASS)
    with pytest.raises(JsonShapeError, match="unknown key 'runs'"):
        ChildAnswer.from_dict({"mode": "pass", "runs": []})


def test_every_op_is_its_wire_name() -> None:
    assert {op.value for op in Op} >= {"job", "result", "internal", "declare", "run"}
    assert str(Op.JOB) == "job"
    assert replace(JOB, deadline=0.0).message()["deadline"] == 0.0
    assert JOB.target.isolation is Isolation.PROCESS


MALFORMED = """
import time


def sends_a_malformed_answer(ctx):
    ctx._link.send({"op": "result", "result": {"mode": "pass", "detail": 7}})
    time.sleep(30)


def sends_a_mode_of_its_own(ctx):
    ctx._link.send({"op": "result", "result": {"mode": "passed", "verdict": "trust me"}})
    time.sleep(30)
"""


@pytest.mark.parametrize("function", ["sends_a_malformed_answer", "sends_a_mode_of_its_own"])
def test_a_malformed_answer_from_a_real_verifier_process_is_an_error(
    tmp_path: Path, function: str
) -> None:
    module = write_module(tmp_path, MALFORMED, "malformed")
    result = call(tmp_path, module, function, timeout=60.0)
    assert result.mode is Mode.ERROR, result
    assert "malformed answer from the verifier's process" in result.detail
    assert "ChildAnswer" in result.detail
