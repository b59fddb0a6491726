"""The stack sample at a base run's deadline: real checks killed at their deadline, the
dump read back, and the hang rule judged on where each thread was."""

from __future__ import annotations

import shlex
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest
from helpers.measure import include_for

from pytest_vgate.context import RunContext
from pytest_vgate.evidence import TreeState, make_record
from pytest_vgate.evidence.change import Change
from pytest_vgate.evidence.reach import RunReach, in_change, innermost, red_reach
from pytest_vgate.gate.decide import Facts, RbgResult, decide, is_genuine_red
from pytest_vgate.gate.runner import run_check
from pytest_vgate.gatesfile import Gate, gate_from_mapping
from pytest_vgate.process.measure import MEASURED_KEY, Measured
from pytest_vgate.process.stack import Frame, parse_dump
from pytest_vgate.verdict import Cause, Mode, Rbg, Verdict

PY = shlex.quote(sys.executable)

LOOP = """\
def label(n):
    return "n=%d" % n


def spin(numbers):
    i = 0
    while numbers[i] % 2:
        i = i
    return numbers[i]
"""

DUMP = """\
Timeout (0:00:02.500000)!
Thread 0x00007f166e71d6c0 (most recent call first):
  File "/usr/lib/python3.12/threading.py", line 320 in wait
  File "/usr/lib/python3.12/threading.py", line 1016 in _bootstrap_inner

Thread 0x00007f166f05eb80 (most recent call first):
  File "<pytest-vgate measure>", line 174 in hit
  File "{root}/pkg/loop.py", line 7 in spin
  File "{root}/tests/test_loop.py", line 4 in test_spin
  ...
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "loop.py").write_text(LOOP)
    return tmp_path


def change_of(root: Path) -> Change:
    """The base side of a fix of ``spin``'s loop (line 8) and of ``label`` (line 2)."""
    real = str(root.resolve())
    return Change(real, real, base_changed={"pkg/loop.py": frozenset({2, 8})})


def sampled_run(root: Path, script: str, timeout: float = 3) -> tuple[Verdict, Measured]:
    (root / "check.py").write_text(textwrap.dedent(script))
    gate = gate_from_mapping({"id": "g", "check": f"{PY} check.py", "timeout": timeout}, root=root)
    measure = replace(include_for([root]), sample=True)
    verdict = run_check(gate, RunContext(root=root, measure=measure))
    measured = verdict.extra[MEASURED_KEY]
    assert isinstance(measured, Measured)
    return verdict, measured


def test_a_dump_is_read_thread_by_thread_innermost_first(project: Path) -> None:
    threads = parse_dump(DUMP.format(root=project.resolve()))
    assert [len(t) for t in threads] == [2, 3]
    assert threads[1][1] == Frame(f"{project.resolve()}/pkg/loop.py", 7, "spin")
    # The standard library's idle thread has no frame of the tree; ours is no file.
    assert innermost(threads, str(project.resolve())) == (Frame("pkg/loop.py", 7, "spin"),)


def test_a_frame_is_in_the_change_at_a_changed_line_or_in_a_function_holding_one(
    project: Path,
) -> None:
    change = change_of(project)
    assert in_change(change, [Frame("pkg/loop.py", 7, "spin")]) == Frame("pkg/loop.py", 7, "spin")
    assert in_change(change, [Frame("pkg/loop.py", 2, "label")]) is not None
    assert in_change(change, [Frame("pkg/loop.py", 1, "<module>")]) is None
    assert in_change(change, [Frame("tests/test_loop.py", 8, "test_spin")]) is None
    test_change = Change(change.head_top, change.base_top, {}, {"tests/test_x.py": frozenset({3})})
    assert in_change(test_change, [Frame("tests/test_x.py", 3, "test_x")]) is None


@pytest.mark.slow
def test_a_run_killed_at_its_deadline_names_the_frame_it_was_in(project: Path) -> None:
    verdict, measured = sampled_run(
        project,
        """\
        import sys
        sys.path.insert(0, ".")
        from pkg.loop import spin
        spin([1, 2])
        """,
    )
    assert verdict.mode is Mode.TIMEOUT
    assert measured.measured and measured.sampled, measured
    reach = red_reach(change_of(project), measured)
    assert reach.hung_in is not None and reach.hung_in.function == "spin", reach
    assert reach.hung_in.path == "pkg/loop.py" and reach.hung_in.line in (7, 8), reach


@pytest.mark.slow
def test_a_run_killed_in_its_own_wait_is_sampled_there(project: Path) -> None:
    verdict, measured = sampled_run(
        project,
        """\
        import sys, time
        sys.path.insert(0, ".")
        from pkg.loop import label
        label(2)
        time.sleep(60)
        """,
    )
    assert verdict.mode is Mode.TIMEOUT
    reach = red_reach(change_of(project), measured)
    assert reach.reached and reach.sampled, reach
    assert reach.hung_in is None and reach.stack == (Frame("check.py", 5, "<module>"),), reach


@pytest.mark.slow
def test_a_check_that_uses_the_watchdog_itself_keeps_it_and_the_sample_is_missing(
    project: Path,
) -> None:
    verdict, measured = sampled_run(
        project,
        """\
        import faulthandler, os, sys, time
        sys.path.insert(0, ".")
        from pkg.loop import spin
        fd = os.open("own-dump.txt", os.O_WRONLY | os.O_CREAT, 0o600)
        faulthandler.dump_traceback_later(0.5, file=fd)
        spin([1, 2])
        """,
    )
    assert verdict.mode is Mode.TIMEOUT
    assert "in spin" in (project / "own-dump.txt").read_text()  # the check's own dump
    assert measured.measured and not measured.sampled and not measured.stacks, measured


@pytest.mark.slow
def test_pytest_faulthandler_timeout_keeps_working_and_the_sample_is_missing(
    project: Path,
) -> None:
    (project / "test_hang.py").write_text("import time\n\n\ndef test_hang():\n    time.sleep(60)\n")
    gate = gate_from_mapping(
        {
            "id": "g",
            "check": f"{PY} -m pytest -q -p no:cacheprovider -o faulthandler_timeout=1 "
            "test_hang.py",
            "timeout": 8,  # pytest's own dump, 1 s into the test, comes well before
        },
        root=project,
    )
    measure = replace(include_for([project]), sample=True)
    verdict = run_check(gate, RunContext(root=project, measure=measure))
    measured = verdict.extra[MEASURED_KEY]
    assert isinstance(measured, Measured)
    assert verdict.mode is Mode.TIMEOUT
    assert "Timeout" in verdict.stderr and "test_hang" in verdict.stderr, verdict.stderr
    assert not measured.sampled, measured


def hang_verdict(reach: RunReach, change: Change) -> RbgResult:
    """The status ``decide`` gives a gate that passes now and hung on the base."""
    gate = Gate(id="g", check="python -m pytest -q", argv=("python", "-m", "pytest", "-q"))
    timeout = Verdict.failed(Mode.TIMEOUT, "no answer within 3s")
    tree = TreeState(commit="c" * 40, dirty="", label="ccccccc")
    runs = ((Verdict(Mode.PASS), "current"), (timeout, "base"))
    green, red = (
        make_record(gate, v, tree=tree, inputs_digest="", where=w, judged=is_genuine_red(v, gate))
        for v, w in runs
    )
    green_reach = RunReach(True, True, change.head_changed)
    given = Facts(gate, (Verdict(Mode.PASS),), (timeout,), (green,), (red,), history=(),
                  change=change, red_reach=reach, green_reach=green_reach)  # fmt: skip
    rbg = decide(given).rbg
    assert rbg is not None
    return rbg


def test_the_rule_proven_in_the_change_a_non_result_elsewhere_said_without_a_sample(
    project: Path,
) -> None:
    change = change_of(project)
    executed = {"pkg/loop.py": frozenset({8})}
    loop, wait = Frame("pkg/loop.py", 7, "spin"), Frame("tests/test_w.py", 9, "test_w")
    inside = hang_verdict(RunReach(True, True, executed, sampled=True, hung_in=loop), change)
    assert inside.status is Rbg.PROVEN and "pkg/loop.py:7 in spin, from the stack" in inside.reason
    elsewhere = hang_verdict(RunReach(True, True, executed, sampled=True, stack=(wait,)), change)
    assert elsewhere.status is Rbg.WEAK_RED and elsewhere.cause is Cause.ENVIRONMENT
    assert "tests/test_w.py:9 in test_w, outside the changed code" in elsewhere.reason
    unsampled = hang_verdict(RunReach(True, True, executed), change)
    assert unsampled.status is Rbg.PROVEN and "pkg/loop.py:8; no stack sample" in unsampled.reason
