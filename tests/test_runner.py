"""The one runner, as a library call: run_oracle_check never raises and never passes wrongly."""

from __future__ import annotations

import math
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_vgate import Mode, run_oracle_check
from pytest_vgate.context import RunContext
from pytest_vgate.gate.runner import run_check
from pytest_vgate.gatesfile import GATE_KEYS, Gate
from pytest_vgate.verdict import Cause

PY = shlex.quote(sys.executable)
# Checks are drawn from a safe vocabulary: arbitrary text would run arbitrary programs.
SAFE_CHECKS = [
    f'{PY} -c "pass"',
    f'{PY} -c "raise SystemExit(3)"',
    f'{PY} -c "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"',
    "no-such-program-vgate-xyz --flag",
    "",
    "   ",
    "'unbalanced",
]
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
KEYS = [*sorted(GATE_KEYS - {"check"}), "verification_type", "junk"]  # and one unknown


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    check=st.sampled_from(sorted(SAFE_CHECKS)),
    alias=st.sampled_from(["check", "command", "evidence_shape"]),
    extra=st.dictionaries(st.sampled_from(KEYS), JSONISH, max_size=4),
    timeout=st.one_of(st.floats(allow_nan=True), st.integers(-2, 30), st.text(max_size=3)),
)
def test_never_raises_and_passes_only_on_an_expected_exit(
    check: str, alias: str, extra: dict[str, Any], timeout: Any
) -> None:
    gate = {**extra, alias: check}
    verdict = run_oracle_check(gate, timeout=timeout)
    assert verdict.mode in Mode
    if verdict.ok:
        assert verdict.exit_code is not None
        assert verdict.exit_code == 0 or "expect" in extra  # default expect: exit 0
        assert verdict.mode is Mode.PASS and verdict.cause is None
    else:
        assert verdict.cause is not None or verdict.mode is Mode.JUDGMENT


def test_the_envelope_shape_and_the_verdict_fields() -> None:
    verdict = run_oracle_check(
        {"verification_type": "command", "command": f'{PY} -c "print(42)"'}, timeout=30
    )
    assert verdict.ok and verdict.exit_code == 0 and verdict.stdout == "42\n"
    assert verdict.command[0] == sys.executable and verdict.errors == ()


def test_an_invalid_gate_is_an_error_verdict() -> None:
    verdict = run_oracle_check({"id": "x", "check": "true", "colour": "blue"})
    assert verdict.mode is Mode.ERROR and not verdict.ok
    assert "colour" in verdict.errors[0]
    assert run_oracle_check(42).mode is Mode.ERROR  # type: ignore[arg-type]


@settings(max_examples=40, deadline=None)
@given(
    check=st.sampled_from(SAFE_CHECKS),
    expect=st.one_of(st.none(), st.sampled_from([0, 3, [0, 3], [1], 137])),
)
def test_a_valid_gate_passes_only_when_it_ran_to_an_expected_exit(check: str, expect: Any) -> None:
    gate: dict[str, Any] = {"id": "g", "check": check}
    if expect is not None:
        gate["expect"] = expect
    verdict = run_oracle_check(gate, timeout=20)
    expected = [0] if expect is None else expect if isinstance(expect, list) else [expect]
    assert verdict.ok == (verdict.exit_code is not None and verdict.exit_code in expected)
    if "SIGKILL" in check:
        assert verdict.mode is Mode.CRASH  # killed by a signal: no answer, never a pass


def test_a_cwd_that_leads_out_of_the_tree_at_run_time_is_not_run(tmp_path: Path) -> None:
    """The gates file was checked at load; a base worktree may hold a symlink out."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "out").symlink_to(outside)
    gate = Gate(id="g", argv=(sys.executable, "-c", "open('ran', 'w')"), cwd="out", root=root)
    verdict = run_check(gate, RunContext(root=root, default_timeout=30))
    assert (verdict.mode, verdict.cause) == (Mode.ERROR, Cause.BROKEN_TEST)
    assert "outside the root" in verdict.detail
    assert not (outside / "ran").exists()


@pytest.mark.parametrize("timeout", [1e300, math.inf, math.nan, -1, 0, 86401])
def test_run_oracle_check_refuses_unbounded_timeouts(timeout: float) -> None:
    verdict = run_oracle_check({"check": f'{PY} -c "pass"'}, timeout=timeout)
    assert verdict.mode is Mode.ERROR
    assert "at most 86400" in verdict.detail and "internal error" not in verdict.detail
