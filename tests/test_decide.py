"""The verdict module (``gate/decide.py``): every rule, as a table of cases and one by one.

The table covers every status docs/red-before-green.md names (``test_the_table_covers_every
_status_the_docs_name`` reads them from the page); the cases below it are the rules' edges.
Facts are built by hand: decide is pure, and what gathers them is tested in
``test_evidence.py`` and the end-to-end sessions.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from helpers.git_repo import FIX_TEST_ID

from pytest_vgate.evidence import Ledger, Record, TreeState, make_record, tree_state
from pytest_vgate.evidence.change import Change
from pytest_vgate.evidence.discriminate import (
    Discrimination,
    DiscriminationResult,
    MutantResult,
    Outcome,
)
from pytest_vgate.evidence.reach import RunReach
from pytest_vgate.gate.decide import (
    Facts,
    RbgResult,
    decide,
    is_genuine_red,
    judge_mutants,
)
from pytest_vgate.gatesfile import Gate, GateType, RedPolicy
from pytest_vgate.process.stack import Frame
from pytest_vgate.verdict import Cause, Mode, Rbg, Verdict

DOCS = Path(__file__).resolve().parents[1] / "docs" / "red-before-green.md"
PYTEST_ARGV = ("python", "-m", "pytest", "-q", FIX_TEST_ID)
GATE = Gate(id="add-works", claim="add adds", check=" ".join(PYTEST_ARGV), argv=PYTEST_ARGV)
PASS = Verdict(mode=Mode.PASS, exit_code=0, command=PYTEST_ARGV)
RED = Verdict.failed(Mode.FAIL, "exit 1", exit_code=1, command=PYTEST_ARGV)
NO_TEST = Verdict.failed(Mode.FAIL, "exit 4", exit_code=4, command=PYTEST_ARGV)
TIMEOUT = Verdict.failed(Mode.TIMEOUT, "deadline")
UNITTEST_ARGV = ("python", "-m", "unittest", "-q", "tests.test_more.SlicedTests.test_negative")
NOT_LOADED = (  # python3.11 -m unittest names a method its class does not have
    "E\n======================================================================\n"
    "ERROR: test_negative (unittest.loader._FailedTest.test_negative)\n"
    "----------------------------------------------------------------------\n"
    "AttributeError: type object 'SlicedTests' has no attribute 'test_negative'\n"
)
NOT_LOADED_38 = "ERROR: test_negative (unittest.loader._FailedTest)\n"  # Python 3.8-3.10
UNITTEST_RED = "FAIL: test_even (tests.test_more.SlicedTests.test_even)\nAssertionError: 1 != 2\n"

BUGGY = TreeState(commit="b" * 40, dirty="", label="bbbbbbb", repo="r" * 40)
FIXED = TreeState(commit="f" * 40, dirty="", label="fffffff", repo="r" * 40)


@pytest.fixture
def trees() -> dict[str, TreeState]:
    """The fixed tree and the buggy tree (two commits of one repository)."""
    return {"fixed": FIXED, "buggy": BUGGY}


def rec(
    verdict: Verdict,
    tree: TreeState,
    *,
    gate: Gate = GATE,
    where: str = "current",
    time: str = "2026-01-01T10:00:00.000000Z",
    inputs: str = "",
) -> Record:
    base_ref = "HEAD~1" if where == "base" else None
    return make_record(
        gate,
        verdict,
        tree=tree,
        inputs_digest=inputs,
        where=where,
        base_ref=base_ref,
        time=time,
        judged=is_genuine_red(verdict, gate),
    )


def facts(
    gate: Gate,
    now: Verdict,
    base: Verdict | None = None,
    *,
    history: tuple[Record, ...] = (),
    require_red: bool = True,
    **more: object,
) -> Facts:
    """The facts of one green run (and one base run) of ``gate``, on two trees; red is
    required unless said (the default under ``--vgate-base``)."""
    return Facts(
        gate,
        (now,),
        (base,) if base is not None else (),
        (rec(now, FIXED, gate=gate),),
        (rec(base, BUGGY, gate=gate, where="base"),) if base is not None else (),
        history=history,
        require_red=require_red,
        **more,  # type: ignore[arg-type]
    )


def classify(
    gate: Gate, current: Record, *, base: Record | None, history: object, require_red: bool
) -> RbgResult:
    """The red-before-green status ``decide`` gives a gate whose runs made these records.
    ``require_red`` speaks to the ledger route here; with a base run it is required (the
    default under ``--vgate-base``; what relaxing it does is in the table)."""
    decision = decide(
        Facts(
            gate,
            (_verdict(current),),
            (_verdict(base),) if base is not None else (),
            (current,),
            (base,) if base is not None else (),
            history=tuple(history),  # type: ignore[call-overload]
            require_red=require_red or base is not None,
        )
    )
    assert decision.rbg is not None
    return decision.rbg


def _verdict(record: Record) -> Verdict:
    return Verdict(
        mode=record.mode,
        cause=record.cause,
        exit_code=record.exit_code,
        stdout=record.stdout,
        stderr=record.stderr,
    )


# --- the table: every status, as docs/red-before-green.md names them -----------------

CHANGE = Change(
    head_top="/head",
    base_top="/base",
    head_changed={"pkg/mathx.py": frozenset({2})},
    base_changed={"pkg/mathx.py": frozenset({2})},
    tree=frozenset({"pkg/mathx.py"}),
    defined=frozenset({"sub"}),
)
INSERTION = replace(CHANGE, base_changed={}, inserted=frozenset({"pkg/mathx.py"}))
REACHED = RunReach(True, True, {"pkg/mathx.py": frozenset({2})}, frozenset({"pkg/mathx.py"}))
MISSED = RunReach(True, False)
CONTAMINATED = RunReach(
    True, True, {"pkg/mathx.py": frozenset({2})}, contaminated=("pkg/mathx.py",)
)
HUNG = RunReach(True, True, {"pkg/mathx.py": frozenset({2})}, sampled=True,
                hung_in=Frame("pkg/mathx.py", 2, "add"))  # fmt: skip
MISSING = Verdict.failed(
    Mode.FAIL, "exit 2", exit_code=2, stdout="E   ImportError: cannot import name 'sub' from 'pkg'"
)
SKIPPED = Verdict(mode=Mode.PASS, exit_code=0, stdout="s\n1 skipped in 0.01s\n")
NOT_REQUIRED = replace(GATE, red=RedPolicy.NOT_REQUIRED)
JUDGED = Gate(id="docs", type=GateType.SEMANTIC, claim="the docs are friendly")


def mutant(kind: str, mode: Outcome) -> MutantResult:
    killed = mode in (Outcome.KILLED, Outcome.TIMEOUT)
    return MutantResult("pkg/mathx.py", 2, kind, "op", "a + b", "None", "add", killed, mode)


KILLED = (mutant("extreme", Outcome.KILLED),)
SURVIVED = (mutant("extreme", Outcome.SURVIVED),)
MEASURED = {"change": CHANGE, "red_reach": REACHED, "green_reach": REACHED}

OLD_CLAIM = rec(RED, BUGGY, gate=replace(GATE, claim="add subtracts"))
HANG = {"change": CHANGE, "red_reach": HUNG, "green_reach": REACHED}
BROKEN = (False, Mode.FAIL, Cause.BROKEN_TEST)
PASSES = (True, Mode.PASS, None)

# (id, facts, (ok, mode, cause), rbg status, what the reason says)
TABLE: list[tuple[str, Facts, tuple[bool, Mode, Cause | None], Rbg | None, str]] = [
    ("proven-by-the-base", facts(GATE, PASS, RED), PASSES, Rbg.PROVEN, "red on the base"),
    ("proven-by-the-ledger", facts(GATE, PASS, history=(rec(RED, BUGGY),)), PASSES, Rbg.PROVEN,
     "red earlier"),
    ("proven-missing-feature", facts(GATE, PASS, MISSING, **MEASURED), PASSES, Rbg.PROVEN,
     "the feature is missing there"),
    ("proven-fixed-hang", facts(GATE, PASS, TIMEOUT, **HANG), PASSES, Rbg.PROVEN,
     "hung in the changed code"),
    ("proven-covers", facts(GATE, PASS, RED, **MEASURED), PASSES, Rbg.PROVEN,
     "the runs executed the change (covers)"),
    ("never-red", facts(GATE, PASS, PASS), BROKEN, Rbg.NEVER_RED, "passes on the base too"),
    ("never-red-old-test", facts(GATE, PASS, PASS, changed_on_base=("tests/test_fix.py",)),
     BROKEN, Rbg.NEVER_RED, "overlay: [tests/test_fix.py]"),
    ("weak-red-usage-error", facts(GATE, PASS, NO_TEST), BROKEN, Rbg.WEAK_RED, "usage error"),
    ("weak-red-timeout", facts(GATE, PASS, TIMEOUT), (False, Mode.FAIL, Cause.ENVIRONMENT),
     Rbg.WEAK_RED, "timed out"),
    ("weak-red-skipped", facts(GATE, PASS, SKIPPED), BROKEN, Rbg.WEAK_RED, "skipped on the base"),
    ("weak-red-contaminated", facts(GATE, PASS, RED, **{**MEASURED, "red_reach": CONTAMINATED}),
     BROKEN, Rbg.WEAK_RED, "contaminated"),
    ("weak-red-never-reached", facts(GATE, PASS, RED, **{**MEASURED, "red_reach": MISSED}),
     BROKEN, Rbg.WEAK_RED, "never reached"),
    ("weak-red-missing-on-base", facts(GATE, PASS, RED, argv_missing=("tests/test_fix.py",)),
     BROKEN, Rbg.WEAK_RED, "exist now but not on the base"),
    ("weak-red-relaxed", facts(GATE, PASS, NO_TEST, require_red=False), PASSES, Rbg.WEAK_RED,
     "red is not required"),
    ("unproven-no-ledger", facts(GATE, PASS, require_red=False), PASSES, Rbg.UNPROVEN,
     "no red evidence"),
    ("unproven-required", facts(GATE, PASS, require_red=True), BROKEN, Rbg.UNPROVEN,
     "needs a genuine red"),
    ("unproven-fails-now", facts(GATE, RED, RED), (False, Mode.FAIL, Cause.PRODUCT), Rbg.UNPROVEN,
     "the change does not fix it"),
    ("regression", facts(NOT_REQUIRED, PASS, PASS), PASSES, Rbg.REGRESSION,
     "passes now and on the base"),
    ("regression-red-on-base", facts(NOT_REQUIRED, PASS, RED), BROKEN, Rbg.REGRESSION,
     "it must pass on both"),
    ("requirement-changed", facts(GATE, PASS, history=(OLD_CLAIM,)),
     (False, Mode.FAIL, Cause.REQUIREMENT_CHANGED), Rbg.REQUIREMENT_CHANGED, "different claim"),
    ("disconnected", facts(GATE, PASS, RED, change=CHANGE, red_reach=MISSED, green_reach=MISSED),
     BROKEN, Rbg.DISCONNECTED, "neither run executed the change"),
    ("disconnected-green", facts(GATE, PASS, RED, **{**MEASURED, "green_reach": MISSED}),
     BROKEN, Rbg.DISCONNECTED, "the green run executed none"),
    ("flaky", replace(facts(GATE, PASS, RED), greens=(PASS, RED), repeat=2), BROKEN, Rbg.FLAKY,
     "repeated runs disagree"),
    ("judgment", Facts(JUDGED, (Verdict(mode=Mode.JUDGMENT),)), (False, Mode.JUDGMENT, None),
     None, ""),
    ("judgment-strict", Facts(JUDGED, (Verdict(mode=Mode.JUDGMENT),), strict=True),
     (False, Mode.JUDGMENT, Cause.BROKEN_TEST), None, ""),
    ("no-evidence", Facts(GATE, (RED,)), (False, Mode.FAIL, Cause.PRODUCT), None, ""),
    ("discriminating", facts(GATE, PASS, RED, mutants=KILLED, **MEASURED), PASSES, Rbg.PROVEN,
     ""),
    ("undiscriminating", facts(GATE, PASS, RED, mutants=SURVIVED, **MEASURED), BROKEN,
     Rbg.PROVEN, ""),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "given", "verdict", "status", "says"), TABLE, ids=[t[0] for t in TABLE]
)
def test_the_verdict_of_each_case(
    case: str,
    given: Facts,
    verdict: tuple[bool, Mode, Cause | None],
    status: Rbg | None,
    says: str,
) -> None:
    decision = decide(given)
    assert (decision.ok, decision.mode, decision.cause) == verdict
    assert (decision.rbg.status if decision.rbg else None) is status
    assert says in (decision.rbg.reason if decision.rbg else "")


def test_the_table_covers_every_status_the_docs_name() -> None:
    """Every ``vgate_rbg`` and ``vgate_discrimination`` value the page names has a case."""
    page = DOCS.read_text(encoding="utf-8")
    start = page.index("## How a gate's verdict is decided")
    rules = page[start : page.index("\n## ", start + 1)]
    named = set(re.findall(r"\*\*([a-z-]+)\*\*", rules))
    statuses = {s.value for s in Rbg}
    assert statuses <= named, sorted(statuses - named)
    decided = [decide(given) for _, given, *_ in TABLE]
    seen = {d.rbg.status.value for d in decided if d.rbg}
    seen |= {d.discrimination.status.value for d in decided if d.discrimination}
    assert statuses <= seen, sorted(statuses - seen)
    assert {"discriminating", "undiscriminating"} <= seen


def test_evidence_never_turns_a_failing_run_into_a_pass() -> None:
    """Whatever the evidence, a run that failed keeps the gate failing."""
    for _, given, *_ in TABLE:
        for failing in (RED, TIMEOUT, Verdict.failed(Mode.ERROR, "boom")):
            decision = decide(replace(given, greens=(failing, *given.greens[1:])))
            assert not decision.ok, given


def test_a_proven_gate_asks_for_mutants_and_nothing_else_does() -> None:
    asked = {case for case, given, *_ in TABLE if decide(given).wants_mutants}
    assert asked == {"proven-by-the-base", "proven-by-the-ledger", "proven-missing-feature",
                     "proven-fixed-hang", "proven-covers"}  # fmt: skip
    untried = DiscriminationResult(Discrimination.NONE, reason="no mutable code")
    decision = decide(replace(TABLE[0][1], mutants=untried))
    assert decision.ok and decision.discrimination == untried and not decision.wants_mutants


# --- the genuine-red heuristic ----------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "mode", "exit_code", "red_exit", "genuine", "why"),
    [
        (PYTEST_ARGV, Mode.FAIL, 1, None, True, "exit 1"),
        (PYTEST_ARGV, Mode.FAIL, 2, None, False, "interrupted"),
        (PYTEST_ARGV, Mode.FAIL, 3, None, False, "internal error"),
        (PYTEST_ARGV, Mode.FAIL, 4, None, False, "usage error"),
        (PYTEST_ARGV, Mode.FAIL, 5, None, False, "no tests were collected"),
        (("pytest", "-q"), Mode.FAIL, 4, None, False, "usage error"),
        (("/venv/bin/py.test",), Mode.FAIL, 5, None, False, "no tests"),
        (("python3", "-mpytest"), Mode.FAIL, 2, None, False, "interrupted"),
        (("pytest-3",), Mode.FAIL, 4, None, False, "usage error"),
        (("python", "check.py"), Mode.FAIL, 4, None, True, "exit 4"),
        (("python", "-m", "pytester"), Mode.FAIL, 4, None, True, "exit 4"),
        (("sh", "run.sh"), Mode.FAIL, 127, None, False, "command not found"),
        (("sh", "run.sh"), Mode.FAIL, 126, None, False, "could not be executed"),
        (("sh", "run.sh"), Mode.FAIL, 127, (127,), False, "command not found"),
        (("sh", "run.sh"), Mode.FAIL, -9, None, False, "signal 9"),
        (PYTEST_ARGV, Mode.FAIL, 1, (1,), True, "is in red_exit"),
        (PYTEST_ARGV, Mode.FAIL, 1, (3,), False, "not in red_exit"),
        (PYTEST_ARGV, Mode.FAIL, 4, (4,), True, "is in red_exit"),
        (PYTEST_ARGV, Mode.PASS, 0, None, False, "passed"),
        (PYTEST_ARGV, Mode.UNAVAILABLE, None, None, False, "not found"),
        (PYTEST_ARGV, Mode.TIMEOUT, None, None, False, "timed out"),
        (PYTEST_ARGV, Mode.CRASH, None, None, False, "died"),
        (PYTEST_ARGV, Mode.BLANK, None, None, False, "blank"),
        (PYTEST_ARGV, Mode.ERROR, None, None, False, "error"),
        (PYTEST_ARGV, Mode.PANIC, None, None, False, "panicked"),
        (PYTEST_ARGV, Mode.SANDBOX, None, None, False, "sandbox"),
        (PYTEST_ARGV, Mode.UNGROUNDED, None, None, False, "without running"),
    ],
)
def test_is_genuine_red(
    argv: tuple[str, ...],
    mode: Mode,
    exit_code: int | None,
    red_exit: tuple[int, ...] | None,
    genuine: bool,
    why: str,
) -> None:
    gate = replace(GATE, argv=argv, red_exit=red_exit)
    verdict = Verdict(mode=mode, exit_code=exit_code)
    ok, reason = is_genuine_red(verdict, gate)
    assert ok is genuine
    assert why in reason


@pytest.mark.parametrize(
    ("stderr", "red_exit", "genuine", "why"),
    [
        (UNITTEST_RED, None, True, "exit 1"),
        (NOT_LOADED, None, False, "could not load a test"),
        (NOT_LOADED_38, None, False, "could not load a test"),
        (NOT_LOADED, (1,), False, "could not load a test"),
    ],
    ids=["a-failing-test", "not-loaded", "not-loaded-3.8", "not-loaded-red_exit"],
)
def test_a_test_unittest_could_not_load_is_not_a_red(
    stderr: str, red_exit: tuple[int, ...] | None, genuine: bool, why: str
) -> None:
    gate = replace(GATE, argv=UNITTEST_ARGV, red_exit=red_exit)
    verdict = Verdict(mode=Mode.FAIL, exit_code=1, stderr=stderr)
    ok, reason = is_genuine_red(verdict, gate)
    assert ok is genuine
    assert why in reason


def test_a_failing_python_verifier_is_a_genuine_red() -> None:
    gate = Gate(id="v", type=GateType.PYTHON, verifiers=("checks:first",))
    assert is_genuine_red(Verdict(mode=Mode.FAIL), gate)[0] is True
    assert is_genuine_red(Verdict(mode=Mode.ERROR), gate)[0] is False


# --- the red-before-green rules, case by case --------------------------------------


def test_base_genuine_red_then_green_is_proven(trees: dict[str, TreeState]) -> None:
    base = rec(RED, trees["buggy"], where="base")
    result = classify(GATE, rec(PASS, trees["fixed"]), base=base, history=[], require_red=True)
    assert (result.status, result.ok, result.mode, result.cause) == (Rbg.PROVEN, True, None, None)
    assert result.red_evidence == base
    assert "base HEAD~1, exit 1" in result.reason


def test_green_on_the_base_too_is_never_red(trees: dict[str, TreeState]) -> None:
    history = [rec(RED, trees["buggy"])]  # the base decides, not the ledger
    base = rec(PASS, trees["buggy"], where="base")
    result = classify(
        GATE, rec(PASS, trees["fixed"]), base=base, history=history, require_red=False
    )
    assert (result.status, result.ok) == (Rbg.NEVER_RED, False)
    assert (result.mode, result.cause) == (Mode.FAIL, Cause.BROKEN_TEST)


@pytest.mark.parametrize(
    ("base_verdict", "gate", "cause", "why"),
    [
        (NO_TEST, GATE, Cause.BROKEN_TEST, "usage error"),
        (RED, replace(GATE, red_exit=(3,)), Cause.BROKEN_TEST, "not in red_exit"),
        (Verdict.failed(Mode.ERROR, "boom"), GATE, Cause.BROKEN_TEST, "error"),
        (TIMEOUT, GATE, Cause.ENVIRONMENT, "timed out"),
        (Verdict.failed(Mode.UNAVAILABLE, "no tool"), GATE, Cause.ENVIRONMENT, "not found"),
    ],
)
def test_red_on_the_base_for_the_wrong_reason_is_weak_red(
    trees: dict[str, TreeState], base_verdict: Verdict, gate: Gate, cause: Cause, why: str
) -> None:
    base = rec(base_verdict, trees["buggy"], gate=gate, where="base")
    current = rec(PASS, trees["fixed"], gate=gate)
    result = classify(gate, current, base=base, history=[], require_red=False)
    assert (result.status, result.ok, result.mode, result.cause) == (
        Rbg.WEAK_RED,
        False,
        Mode.FAIL,
        cause,
    )
    assert why in result.reason


def test_a_unittest_loader_error_before_a_long_tail_is_still_weak_red(
    trees: dict[str, TreeState],
) -> None:
    """The record keeps the last 4096 characters of the output; the loader's error came
    first, so only the judgment made on the whole output remembers it."""
    gate = replace(GATE, argv=UNITTEST_ARGV)
    stderr = NOT_LOADED + UNITTEST_RED * 200
    base = rec(Verdict.failed(Mode.FAIL, "exit 1", exit_code=1, stderr=stderr), trees["buggy"],
               gate=gate, where="base")  # fmt: skip
    assert "_FailedTest" not in base.stderr  # cut from the kept tail
    result = classify(gate, rec(PASS, trees["fixed"], gate=gate), base=base, history=[],
                      require_red=True)  # fmt: skip
    assert (result.status, result.cause) == (Rbg.WEAK_RED, Cause.BROKEN_TEST)
    assert "could not load a test" in result.reason


def test_red_on_the_base_and_red_now_keeps_the_product_failure(
    trees: dict[str, TreeState],
) -> None:
    base = rec(RED, trees["buggy"], where="base")
    current = rec(RED, trees["buggy"])
    result = classify(GATE, current, base=base, history=[], require_red=True)
    assert (result.status, result.ok, result.mode, result.cause) == (
        Rbg.UNPROVEN,
        False,
        None,
        None,
    )
    assert result.red_evidence == base
    assert "fails now" in result.reason


@pytest.mark.parametrize(
    ("base_verdict", "current_verdict", "ok", "mode", "cause"),
    [
        (PASS, PASS, True, None, None),
        (None, PASS, True, None, None),
        (RED, PASS, False, Mode.FAIL, Cause.BROKEN_TEST),
        (TIMEOUT, PASS, False, Mode.FAIL, Cause.ENVIRONMENT),
        (PASS, RED, False, None, None),
    ],
)
def test_regression_gates_must_pass_on_both(
    trees: dict[str, TreeState],
    base_verdict: Verdict | None,
    current_verdict: Verdict,
    ok: bool,
    mode: Mode | None,
    cause: Cause | None,
) -> None:
    gate = replace(GATE, red=RedPolicy.NOT_REQUIRED)
    base = rec(base_verdict, trees["buggy"], gate=gate, where="base") if base_verdict else None
    current = rec(current_verdict, trees["fixed"], gate=gate)
    result = classify(gate, current, base=base, history=[], require_red=True)
    assert (result.status, result.ok, result.mode, result.cause) == (
        Rbg.REGRESSION,
        ok,
        mode,
        cause,
    )


def test_ledger_red_on_another_tree_then_green_is_proven(trees: dict[str, TreeState]) -> None:
    early = rec(RED, trees["buggy"], time="2026-01-01T09:00:00.000000Z")
    late = rec(RED, trees["buggy"], time="2026-01-01T09:30:00.000000Z")
    history = [late, early, rec(PASS, trees["fixed"])]
    result = classify(GATE, rec(PASS, trees["fixed"]), base=None, history=history, require_red=True)
    assert (result.status, result.ok, result.mode, result.cause) == (Rbg.PROVEN, True, None, None)
    assert result.red_evidence == late
    assert trees["buggy"].label in result.reason
    assert "exit 1" in result.reason


def test_a_red_on_the_same_tree_proves_nothing(trees: dict[str, TreeState]) -> None:
    history = [rec(RED, trees["fixed"])]  # red then green on the very same tree: flaky
    result = classify(
        GATE, rec(PASS, trees["fixed"]), base=None, history=history, require_red=False
    )
    assert (result.status, result.ok) == (Rbg.UNPROVEN, True)
    assert "same tree" in result.reason


def test_outside_git_the_ledger_cannot_prove(tmp_path: Path) -> None:
    plain = tree_state(tmp_path)
    history = [rec(RED, plain)]
    result = classify(GATE, rec(PASS, plain), base=None, history=history, require_red=False)
    assert result.status is Rbg.UNPROVEN
    assert "not a git tree" in result.reason


@pytest.mark.parametrize(
    ("stale_at", "status"),
    [
        ("2026-01-01T09:00:00Z", Rbg.PROVEN),  # the red came after: it counts
        ("2026-01-01T11:00:00Z", Rbg.UNPROVEN),  # the red came before: stale
        ("2026-01-01T11:00:00", Rbg.UNPROVEN),  # naive: UTC
        ("2026-01-01T11:00:00+02:00", Rbg.PROVEN),  # 09:00 UTC
        ("not a time", Rbg.UNPROVEN),  # fail closed
    ],
)
def test_evidence_before_stale_at_does_not_count(
    trees: dict[str, TreeState], stale_at: str, status: Rbg
) -> None:
    gate = replace(GATE, stale_at=stale_at)
    history = [rec(RED, trees["buggy"], gate=gate, time="2026-01-01T10:00:00.000000Z")]
    current = rec(PASS, trees["fixed"], gate=gate, time="2026-01-02T10:00:00.000000Z")
    result = classify(gate, current, base=None, history=history, require_red=False)
    assert result.status is status
    if status is Rbg.UNPROVEN:
        assert "stale_at" in result.reason


def test_evidence_with_other_inputs_does_not_count(trees: dict[str, TreeState]) -> None:
    history = [rec(RED, trees["buggy"], inputs="before")]
    current = rec(PASS, trees["fixed"], inputs="after")
    result = classify(GATE, current, base=None, history=history, require_red=False)
    assert result.status is Rbg.UNPROVEN
    assert "inputs changed" in result.reason
    same = rec(PASS, trees["fixed"], inputs="before")
    assert classify(GATE, same, base=None, history=history, require_red=False).ok


def test_red_evidence_for_another_claim_is_requirement_changed(
    trees: dict[str, TreeState],
) -> None:
    old = replace(GATE, claim="add returns the difference")
    history = [rec(RED, trees["buggy"], gate=old)]
    result = classify(
        GATE, rec(PASS, trees["fixed"]), base=None, history=history, require_red=False
    )
    assert (result.status, result.ok, result.mode, result.cause) == (
        Rbg.REQUIREMENT_CHANGED,
        False,
        Mode.FAIL,
        Cause.REQUIREMENT_CHANGED,
    )
    assert result.red_evidence == history[0]
    both = [*history, rec(RED, trees["buggy"])]  # a red for the current claim too
    assert (
        classify(GATE, rec(PASS, trees["fixed"]), base=None, history=both, require_red=False).status
        is Rbg.PROVEN
    )


def test_only_weak_reds_in_the_ledger(trees: dict[str, TreeState]) -> None:
    history = [rec(NO_TEST, trees["buggy"]), rec(TIMEOUT, trees["buggy"])]
    current = rec(PASS, trees["fixed"])
    lenient = classify(GATE, current, base=None, history=history, require_red=False)
    assert (lenient.status, lenient.ok, lenient.mode) == (Rbg.WEAK_RED, True, None)
    strict = classify(GATE, current, base=None, history=history, require_red=True)
    assert (strict.status, strict.ok, strict.mode, strict.cause) == (
        Rbg.WEAK_RED,
        False,
        Mode.FAIL,
        Cause.BROKEN_TEST,
    )


def test_no_red_evidence_is_unproven(trees: dict[str, TreeState]) -> None:
    unrelated = [
        rec(RED, trees["buggy"], gate=replace(GATE, id="another-gate")),
        rec(RED, trees["buggy"], gate=replace(GATE, argv=("python", "-m", "pytest", "-x"))),
        rec(PASS, trees["buggy"]),
    ]
    current = rec(PASS, trees["fixed"])
    lenient = classify(GATE, current, base=None, history=unrelated, require_red=False)
    assert (lenient.status, lenient.ok, lenient.mode, lenient.cause) == (
        Rbg.UNPROVEN,
        True,
        None,
        None,
    )
    strict = classify(GATE, current, base=None, history=unrelated, require_red=True)
    assert (strict.status, strict.ok, strict.mode, strict.cause) == (
        Rbg.UNPROVEN,
        False,
        Mode.FAIL,
        Cause.BROKEN_TEST,
    )


def test_a_failing_run_keeps_its_own_mode(trees: dict[str, TreeState]) -> None:
    history = [rec(RED, trees["buggy"])]
    current = rec(TIMEOUT, trees["fixed"])
    result = classify(GATE, current, base=None, history=history, require_red=True)
    assert (result.ok, result.mode, result.cause) == (False, None, None)


def test_classify_reads_the_ledger_it_wrote(tmp_path: Path, trees: dict[str, TreeState]) -> None:
    ledger = Ledger.default(tmp_path)
    assert ledger.append([rec(RED, trees["buggy"])]) == []
    history, warnings = ledger.read()
    result = classify(GATE, rec(PASS, trees["fixed"]), base=None, history=history, require_red=True)
    assert (result.status, warnings) == (Rbg.PROVEN, [])
    again = RbgResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert again == result


# --- the mutants ------------------------------------------------------------------------


def result(kind: str, mode: Outcome, function: str = "f") -> MutantResult:
    killed = mode in (Outcome.KILLED, Outcome.TIMEOUT)
    return MutantResult("a.py", 1, kind, "op", "x", "y", function, killed, mode)


def test_the_verdict_on_the_mutants() -> None:
    survived = judge_mutants(
        [result("extreme", Outcome.SURVIVED), result("value", Outcome.SURVIVED)]
    )
    assert survived.status is Discrimination.UNDISCRIMINATING and survived.fails
    assert survived.score == "0/2" and survived.pseudo_tested == ("f",)
    assert survived.reason == "the check passes when `f` does nothing"
    mixed = judge_mutants(
        [result("extreme", Outcome.SURVIVED), result("extreme", Outcome.KILLED, "g")]
    )
    assert mixed.status is Discrimination.DISCRIMINATING and not mixed.fails
    assert mixed.pseudo_tested == ("f",)  # named even when others are killed
    hung = judge_mutants([result("extreme", Outcome.TIMEOUT)])
    assert hung.status is Discrimination.DISCRIMINATING and hung.score == "1/1"
    # A surviving value mutant alone never fails a gate: it may be equivalent.
    values = judge_mutants([result("value", Outcome.SURVIVED)])
    assert values.status is Discrimination.UNMEASURED and not values.fails
    # Raised in the change, or unknown: neither a kill nor a survivor.
    raised = judge_mutants(
        [result("value", Outcome.RAISED_IN_CHANGE), result("extreme", Outcome.UNKNOWN)]
    )
    assert raised.status is Discrimination.UNMEASURED and raised.score == "0/0"
    assert ast.literal_eval(repr(raised.to_dict()))["planted"] == 0
