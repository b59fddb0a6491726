"""The base run's deadline comes from the green run: a hang the change removed costs a
few seconds more than the green run, not the gate's whole timeout; and a base run killed
there while executing the changed code is a genuine red."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.batch_repo import make_batch_repo, pytest_gate, session

from pytest_vgate.context import RunContext
from pytest_vgate.gate.result import BASE_MARGIN, base_deadline
from pytest_vgate.gatesfile import gate_from_mapping
from pytest_vgate.verdict import Mode, Verdict

pytestmark = pytest.mark.slow


def test_a_base_that_hangs_is_stopped_at_the_deadline_its_green_run_gives(
    tmp_path: Path,
) -> None:
    repo = make_batch_repo(
        tmp_path, gates=pytest_gate("halve", "tests/test_halve.py::test_halve", timeout=120)
    )
    code, gates, text = session(repo.root, repo.bug_sha, repo.root.name)
    halve = gates["halve"]
    base = halve["base"]
    assert base["mode"] == "timeout", text
    assert "derived from the green run" in base["detail"], base["detail"]
    green = halve["green"]["duration"]
    assert base["duration"] < 120  # killed at the derived deadline, not the gate's own
    assert base["duration"] >= green + BASE_MARGIN * 0.9
    # It hung in the changed lines: a genuine red, and the gate is proven.
    assert halve["rbg"] == "proven", (halve["rbg_reason"], text)
    assert "hung in the changed code" in halve["rbg_reason"]
    assert halve["mode"] == "pass" and code == 0, text


def _gate(timeout: float | None) -> object:
    data: dict[str, object] = {"id": "g", "check": "python -c pass"}
    if timeout is not None:
        data["timeout"] = timeout
    return gate_from_mapping(data, root=Path.cwd())


@pytest.mark.parametrize(
    ("green", "timeout", "expected"),
    [
        (Verdict(mode=Mode.PASS, exit_code=0, duration=0.5), None, 2.5),
        (Verdict(mode=Mode.PASS, exit_code=0, duration=4.0), None, 12.0),
        (Verdict(mode=Mode.PASS, exit_code=0, duration=4.0), 10, None),  # own timeout smaller
        (Verdict(mode=Mode.TIMEOUT, duration=60.0), None, None),  # no bound from a hang
        (Verdict(mode=Mode.CRASH, exit_code=None, duration=0.1), None, None),
    ],
)
def test_the_base_deadline(green: Verdict, timeout: float | None, expected: float | None) -> None:
    gate = _gate(timeout)
    assert base_deadline(gate, green, RunContext(root=Path.cwd())) == expected  # type: ignore[arg-type]
