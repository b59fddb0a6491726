"""The verdict module (``gate/decide.py``): every rule, as a table of cases and one by one.

The table comes first: one row per edge of a rule, grouped by rule in the order decide.py
applies them, each naming the verdict, the statuses (red-before-green, coverage,
discrimination) and what the reason says. It holds every status docs/red-before-green.md
names (``test_the_table_covers_every_status_the_docs_name`` reads them from the page).
The tests after it, in the same order, say what a row cannot. Facts are built by hand:
decide is pure, and what gathers them is tested in ``test_evidence.py`` and the end-to-end
sessions.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

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
from pytest_vgate.evidence.reach import CoverageStatus, RunReach
from pytest_vgate.gate.decide import (
    Decision,
    Facts,
    RbgResult,
    _fixed_hang,
    coverage_of,
    decide,
    hang_site,
    is_genuine_red,
    judge_mutants,
)
from pytest_vgate.gatesfile import Gate, GateType, RedPolicy
from pytest_vgate.process.stack import Frame
from pytest_vgate.verdict import Cause, CheckVerdict, Mode, Rbg, Verdict

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
NINE, TEN, ELEVEN = (f"2026-01-01T{h}:00:00.000000Z" for h in ("09", "10", "11"))


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
    time: str = TEN,
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
    now: Verdict | tuple[Verdict, ...],
    base: Verdict | tuple[Verdict, ...] | None = None,
    *,
    history: tuple[Record, ...] | None = (),
    require_red: bool = True,
    repeat: int = 0,
    **more: object,
) -> Facts:
    """The facts of the green runs ``now`` (and the base runs ``base``) of ``gate`` on two
    trees, with their records as the gatherer makes them; red is required unless said (the
    default under ``--vgate-base``). Several runs: ``--vgate-repeat``, as many as the
    longer side unless ``repeat`` says more."""
    greens = now if isinstance(now, tuple) else (now,)
    reds = base if isinstance(base, tuple) else () if base is None else (base,)
    return Facts(
        gate,
        greens,
        reds,
        tuple(rec(v, FIXED, gate=gate) for v in greens),
        tuple(rec(v, BUGGY, gate=gate, where="base") for v in reds),
        history=history,
        repeat=repeat or max(len(greens), len(reds)),
        require_red=require_red,
        **more,  # type: ignore[arg-type]
    )


def classify(
    gate: Gate,
    current: Record,
    *,
    base: Record | None,
    history: Sequence[Record],
    require_red: bool,
) -> RbgResult:
    """The red-before-green status ``decide`` gives a gate whose runs made these records
    (``require_red``: ``--vgate-require-red``, with or without a base run)."""
    decision = decide(
        Facts(
            gate,
            (_verdict(current),),
            (_verdict(base),) if base is not None else (),
            (current,),
            (base,) if base is not None else (),
            history=tuple(history),
            require_red=require_red,
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


# --- the table: one row per edge of a rule, in decide.py's order --------------------------

OLD_TEST = ("tests/test_fix.py",)  # the file the check names: not on the base, or other there
OVERLAID = replace(GATE, overlay=("tests/",))
NOT_REQUIRED = replace(GATE, red=RedPolicy.NOT_REQUIRED)
UNITTEST = replace(GATE, argv=UNITTEST_ARGV, check=" ".join(UNITTEST_ARGV))
VERIFIED = Gate(
    id="add-verified", type=GateType.PYTHON, claim="add adds", verifiers=("checks:add",)
)
SCRIPT = replace(GATE, argv=("python", "check.py"), check="python check.py", red_exit=(1,))
JUDGED = Gate(id="docs", type=GateType.SEMANTIC, claim="the docs are friendly")
JUDGMENT = Verdict(mode=Mode.JUDGMENT)

NO_TESTS_RAN = Verdict.failed(Mode.FAIL, "exit 5", exit_code=5, command=PYTEST_ARGV)
SCRIPT_EXIT_4 = Verdict.failed(Mode.FAIL, "exit 4", exit_code=4)
INTERNAL = Verdict.failed(Mode.FAIL, "exit 3", exit_code=3, command=PYTEST_ARGV)
SKIPPED = Verdict(mode=Mode.PASS, exit_code=0, stdout="s\n1 skipped in 0.01s\n")
SKIPPED_WHY = Verdict(
    mode=Mode.PASS, exit_code=0, stdout="SKIPPED [1] tests/test_fix.py:3: needs the network\n"
    "1 skipped in 0.01s\n"
)  # fmt: skip
NOT_LOADED_RED = Verdict.failed(Mode.FAIL, "exit 1", exit_code=1, stderr=NOT_LOADED)
# The feature the change adds (``sub``), missing on the base, in each way a run can say it.
WANTS_SUB = "E   ImportError: cannot import name 'sub' from 'pkg.mathx'"
MISSING = Verdict.failed(Mode.FAIL, "exit 2", exit_code=2, stdout=WANTS_SUB)
MISSING_OTHER = Verdict.failed(
    Mode.FAIL, "exit 2", exit_code=2, stdout="E   ImportError: cannot import name 'mul' from 'pkg'"
)
MISSING_KILLED = Verdict.failed(Mode.FAIL, "signal 9", exit_code=-9, stdout=WANTS_SUB)
MISSING_CRASHED = Verdict.failed(Mode.CRASH, "crash", stdout=WANTS_SUB)
MISSING_NOT_LOADED = Verdict.failed(  # unittest: the test module did not import
    Mode.FAIL, "exit 1", exit_code=1, stderr="ERROR: test_fix (unittest.loader._FailedTest."
    "test_fix)\nImportError: Failed to import test module: test_fix\n"
    "ImportError: cannot import name 'sub' from 'pkg.mathx'\n"
)  # fmt: skip
NAMEERROR = "NameError: name 'sub' is not defined"
RED_WANTS_SUB = Verdict.failed(Mode.FAIL, "exit 1", exit_code=1, stdout=f"E   {NAMEERROR}")
MISSING_IN_VERIFIER = Verdict.failed(
    Mode.ERROR, "checks:add raised", checks=(CheckVerdict("checks:add", Mode.ERROR, NAMEERROR),)
)
MISSING_NO_CHECK = Verdict.failed(Mode.ERROR, "verifiers raised", stdout=NAMEERROR)
MISSING_IN_PASSING_CHECK = Verdict.failed(Mode.ERROR, "checks:add raised", checks=(
    CheckVerdict("checks:add", Mode.ERROR, "KeyError: 'x'"),
    CheckVerdict("checks:sub", Mode.PASS, NAMEERROR),
))  # fmt: skip
MISSING_BEFORE_TIMEOUT = Verdict.failed(Mode.TIMEOUT, "checks:slow timed out", checks=(
    CheckVerdict("checks:add", Mode.ERROR, NAMEERROR),
    CheckVerdict("checks:slow", Mode.TIMEOUT, "deadline"),
))  # fmt: skip

CHANGE = Change(
    head_top="/head",
    base_top="/base",
    head_changed={"pkg/mathx.py": frozenset({2})},
    base_changed={"pkg/mathx.py": frozenset({2})},
    tree=frozenset({"pkg/mathx.py"}),
    defined=frozenset({"sub"}),
)
DELETION = replace(CHANGE, head_changed={})  # only lines removed: nothing new to execute
NO_CHANGE = Change(head_top="/head", base_top="/base")  # comments, docstrings only
UNREAD = replace(CHANGE, error="git diff failed")
REACHED = RunReach(True, True, {"pkg/mathx.py": frozenset({2})}, frozenset({"pkg/mathx.py"}))
MISSED = RunReach(True, False)
NOT_PYTHON = RunReach(False, reason="the check is not Python")
CONTAMINATED = replace(REACHED, contaminated=("pkg/mathx.py",))
SEVEN_CONTAMINATED = replace(REACHED, contaminated=tuple(f"{c}.py" for c in "abcdefg"))
FIVE_CONTAMINATED = replace(REACHED, contaminated=SEVEN_CONTAMINATED.contaminated[:5])
HUNG = replace(REACHED, sampled=True, hung_in=Frame("pkg/mathx.py", 2, "add"))
HUNG_CONTAMINATED = replace(HUNG, contaminated=("pkg/mathx.py",))
UNSAMPLED = replace(REACHED, unsampled=("no faulthandler",))
WAITING = replace(MISSED, sampled=True, stack=(Frame("tests/test_fix.py", 9, "wait"),))
MEASURED: dict[str, Any] = {"change": CHANGE, "red_reach": REACHED, "green_reach": REACHED}
RED_MISSED: dict[str, Any] = {**MEASURED, "red_reach": MISSED}
GREEN_MISSED: dict[str, Any] = {**MEASURED, "green_reach": MISSED}
BOTH_MISSED: dict[str, Any] = {**MEASURED, "red_reach": MISSED, "green_reach": MISSED}
RED_UNMEASURED: dict[str, Any] = {**MEASURED, "red_reach": NOT_PYTHON}
RED_CONTAMINATED: dict[str, Any] = {**MEASURED, "red_reach": CONTAMINATED}


def mutant(kind: str, mode: Outcome, function: str = "add") -> MutantResult:
    killed = mode in (Outcome.KILLED, Outcome.TIMEOUT)
    return MutantResult("pkg/mathx.py", 2, kind, "op", "a + b", "None", function, killed, mode)


KILLED = (mutant("extreme", Outcome.KILLED),)
SURVIVED = (mutant("extreme", Outcome.SURVIVED),)
UNTRIED = DiscriminationResult(Discrimination.NONE, reason="no mutable code in the change")

OLD_CLAIM = replace(GATE, claim="add subtracts")
BROKEN = (False, Mode.FAIL, Cause.BROKEN_TEST)
PASSES = (True, Mode.PASS, None)
PRODUCT = (False, Mode.FAIL, Cause.PRODUCT)
ENVIRONMENT = (False, Mode.FAIL, Cause.ENVIRONMENT)
COVERS, PARTIAL, MISSES = CoverageStatus.COVERS, CoverageStatus.PARTIAL, CoverageStatus.MISSES
UNMEASURED, NOTHING = CoverageStatus.UNMEASURED, CoverageStatus.NO_CHANGE
RELAXED = "; passes: red is not required (--no-vgate-require-red)"
HINT = "; if the test is new in this change, carry it onto the base with `overlay: [tests/]`"
ON_BASE = f"base HEAD~1, exit 1, {TEN}"


class Case(NamedTuple):
    """One row: the facts, the verdict (ok, mode, cause), the statuses the decision must
    carry (None: none) and what its reasons say."""

    id: str
    given: Facts
    verdict: tuple[bool, Mode, Cause | None]
    status: Rbg | None
    says: str = ""
    coverage: CoverageStatus | None = None
    discrimination: Discrimination | None = None


TABLE: list[Case] = [
    # decide(): a judgment gate without a judge; no evidence asked for
    Case("judgment", Facts(JUDGED, (JUDGMENT,)), (False, Mode.JUDGMENT, None), None),
    Case("judgment-strict", Facts(JUDGED, (JUDGMENT,), strict=True),
         (False, Mode.JUDGMENT, Cause.BROKEN_TEST), None),
    Case("no-evidence", Facts(GATE, (RED,)), PRODUCT, None),
    Case("no-evidence-passes", Facts(GATE, (PASS,)), PASSES, None),
    Case("no-evidence-despite-a-base", facts(GATE, PASS, PASS, history=None), PASSES, None),
    Case("no-records", Facts(GATE, (PASS,), history=()), PASSES, None),

    # repeats: runs of one side that did not all end alike
    Case("flaky", facts(GATE, (PASS, RED), (RED, RED)), BROKEN, Rbg.FLAKY,
         "repeated runs disagree: red on the base: fail 1, fail 1; green: pass, fail 1; "
         "a flaky check proves nothing"),
    Case("flaky-failing-first", facts(GATE, (RED, PASS), (RED, RED)), BROKEN, Rbg.FLAKY,
         "green: fail 1, pass;"),
    Case("flaky-failing-unalike", facts(GATE, (RED, TIMEOUT), (RED, RED)), BROKEN, Rbg.FLAKY,
         "green: fail 1, timeout None;"),
    Case("flaky-on-the-base", facts(GATE, PASS, (RED, PASS)), BROKEN, Rbg.FLAKY,
         "repeated runs disagree (stopped at the first disagreement): red on the base: "
         "fail 1, pass; green: pass;"),
    Case("flaky-without-a-base", facts(GATE, (PASS, RED)), BROKEN, Rbg.FLAKY,
         "repeated runs disagree: green: pass, fail 1;"),
    Case("failing-alike-is-not-flaky", facts(GATE, RED, (RED, PASS)), PRODUCT, Rbg.UNPROVEN,
         "the check fails now"),

    # the status: a regression gate
    Case("regression", facts(NOT_REQUIRED, PASS, PASS), PASSES, Rbg.REGRESSION,
         "regression gate: passes now and on the base"),
    Case("regression-without-a-base", facts(NOT_REQUIRED, PASS), PASSES, Rbg.REGRESSION,
         "regression gate: passes now"),
    Case("regression-red-on-base", facts(NOT_REQUIRED, PASS, RED), BROKEN, Rbg.REGRESSION,
         f"fails on the base ({ON_BASE}: exit 1: the check ran and answered no); "
         "it must pass on both"),
    Case("regression-timeout-on-base", facts(NOT_REQUIRED, PASS, TIMEOUT), ENVIRONMENT,
         Rbg.REGRESSION, "fails on the base (base HEAD~1, timeout"),
    Case("regression-red-on-base-lenient", facts(NOT_REQUIRED, PASS, RED, require_red=False),
         BROKEN, Rbg.REGRESSION, "it must pass on both"),
    Case("regression-fails-now", facts(NOT_REQUIRED, RED, PASS), PRODUCT, Rbg.REGRESSION,
         "regression gate: the check fails now"),
    Case("regression-contaminated", facts(NOT_REQUIRED, PASS, PASS, **RED_CONTAMINATED), PASSES,
         Rbg.REGRESSION, "passes now and on the base", COVERS),
    Case("regression-missing-feature-on-base", facts(NOT_REQUIRED, PASS, MISSING, **RED_MISSED),
         BROKEN, Rbg.REGRESSION, "it must pass on both", PARTIAL),
    Case("regression-hung-on-base", facts(NOT_REQUIRED, PASS, TIMEOUT, **{**MEASURED,
         "red_reach": HUNG}), ENVIRONMENT, Rbg.REGRESSION, "it must pass on both", COVERS),

    # the status: a check that fails now keeps its own verdict
    Case("unproven-fails-now", facts(GATE, RED, RED), PRODUCT, Rbg.UNPROVEN,
         "the check fails now (red on the base too: the change does not fix it); "
         "nothing is proven until it passes"),
    Case("fails-now-weak-base", facts(GATE, RED, NO_TEST), PRODUCT, Rbg.UNPROVEN,
         "the check fails now; nothing is proven until it passes"),
    Case("fails-now-keeps-its-mode", facts(GATE, TIMEOUT, RED),
         (False, Mode.TIMEOUT, Cause.ENVIRONMENT), Rbg.UNPROVEN, "red on the base too"),
    Case("fails-now-without-a-base", facts(GATE, RED, history=(rec(RED, BUGGY),)), PRODUCT,
         Rbg.UNPROVEN, "the check fails now; nothing is proven"),
    Case("fails-now-lenient", facts(GATE, RED, PASS, require_red=False), PRODUCT, Rbg.UNPROVEN,
         "the check fails now"),

    # the status: with a base run, the base decides
    Case("proven-by-the-base", facts(GATE, PASS, RED), PASSES, Rbg.PROVEN,
         f"red on the base ({ON_BASE}), green now"),
    Case("proven-by-an-unnamed-base", replace(facts(GATE, PASS, RED), red_records=(
         replace(rec(RED, BUGGY, where="base"), base_ref=None),)), PASSES, Rbg.PROVEN,
         f"red on the base (bbbbbbb, exit 1, {TEN}), green now"),
    Case("proven-in-red_exit", facts(replace(GATE, red_exit=(4,)), PASS, NO_TEST), PASSES,
         Rbg.PROVEN, "red on the base (base HEAD~1, exit 4"),
    Case("weak-red-skipped", facts(GATE, PASS, SKIPPED), BROKEN, Rbg.WEAK_RED,
         "skipped on the base (it printed no reason; `-rs` shows pytest's); a skip is no answer"),
    Case("weak-red-skipped-why", facts(GATE, PASS, SKIPPED_WHY), BROKEN, Rbg.WEAK_RED,
         "skipped on the base: tests/test_fix.py:3: needs the network; a skip is no answer"),
    Case("never-red", facts(GATE, PASS, PASS), BROKEN, Rbg.NEVER_RED,
         "the check passes on the base too: it cannot tell the change apart"),
    Case("weak-red-usage-error", facts(GATE, PASS, NO_TEST), BROKEN, Rbg.WEAK_RED,
         "red on the base for the wrong reason: pytest exit 4: usage error (e.g. the test id "
         f"does not exist){HINT}"),
    Case("weak-red-nothing-collected", facts(GATE, PASS, NO_TESTS_RAN), BROKEN, Rbg.WEAK_RED,
         f"no tests were collected{HINT}"),
    Case("weak-red-not-loaded", facts(UNITTEST, PASS, NOT_LOADED_RED), BROKEN, Rbg.WEAK_RED,
         f"the test never answered{HINT}"),
    Case("weak-red-internal-error", facts(GATE, PASS, INTERNAL, require_red=False), PASSES,
         Rbg.WEAK_RED, f"pytest exit 3: internal error{RELAXED}"),
    Case("weak-red-overlaid", facts(OVERLAID, PASS, NO_TEST, require_red=False), PASSES,
         Rbg.WEAK_RED, f"(e.g. the test id does not exist){RELAXED}"),
    Case("weak-red-not-in-red_exit", facts(replace(GATE, red_exit=(3,)), PASS, RED), BROKEN,
         Rbg.WEAK_RED, "exit 1 is not in red_exit [3]"),
    Case("weak-red-exit-4-not-pytest", facts(SCRIPT, PASS, SCRIPT_EXIT_4, require_red=False),
         PASSES, Rbg.WEAK_RED, f"exit 4 is not in red_exit [1]{RELAXED}"),
    Case("weak-red-timeout", facts(GATE, PASS, TIMEOUT), ENVIRONMENT, Rbg.WEAK_RED,
         "the check timed out: a non-result"),

    # the status: without a base run, the ledger decides
    Case("proven-by-the-ledger", facts(GATE, PASS, history=(rec(RED, BUGGY),)), PASSES,
         Rbg.PROVEN, f"red earlier (bbbbbbb, exit 1, {TEN}), green now"),
    Case("proven-by-the-latest-red",
         facts(GATE, PASS, history=(rec(RED, BUGGY, time=ELEVEN), rec(RED, BUGGY, time=NINE))),
         PASSES, Rbg.PROVEN, f"red earlier (bbbbbbb, exit 1, {ELEVEN})"),
    Case("ledger-judgment-record", facts(GATE, PASS, history=(rec(JUDGMENT, BUGGY),)), BROKEN,
         Rbg.UNPROVEN, "no red evidence in the ledger; --vgate-require-red needs a genuine red"),
    Case("weak-red-in-the-ledger",
         facts(GATE, PASS, history=(rec(TIMEOUT, BUGGY, time=ELEVEN),
                                    rec(NO_TEST, BUGGY, time=NINE))),
         BROKEN, Rbg.WEAK_RED, f"the only red (bbbbbbb, timeout, {ELEVEN}) was for the wrong "
         "reason: the check timed out: a non-result, not an answer; --vgate-require-red needs"),
    Case("weak-red-in-the-ledger-lenient",
         facts(GATE, PASS, history=(rec(NO_TEST, BUGGY),), require_red=False), PASSES,
         Rbg.WEAK_RED, "usage error (e.g. the test id does not exist); passes as unproven"),
    Case("requirement-changed", facts(GATE, PASS, history=(rec(RED, BUGGY, gate=OLD_CLAIM),)),
         (False, Mode.FAIL, Cause.REQUIREMENT_CHANGED), Rbg.REQUIREMENT_CHANGED,
         f"the red evidence (bbbbbbb, exit 1, {TEN}) was for a different claim text"),
    Case("requirement-changed-latest",
         facts(GATE, PASS, history=(rec(RED, BUGGY, gate=OLD_CLAIM, time=ELEVEN),
                                    rec(RED, BUGGY, gate=OLD_CLAIM, time=NINE))),
         (False, Mode.FAIL, Cause.REQUIREMENT_CHANGED), Rbg.REQUIREMENT_CHANGED,
         f"(bbbbbbb, exit 1, {ELEVEN}) was for a different claim"),
    Case("requirement-changed-lenient",
         facts(GATE, PASS, history=(rec(RED, BUGGY, gate=OLD_CLAIM),), require_red=False),
         (False, Mode.FAIL, Cause.REQUIREMENT_CHANGED), Rbg.REQUIREMENT_CHANGED,
         "different claim text"),
    Case("proven-besides-another-claim",
         facts(GATE, PASS, history=(rec(RED, BUGGY, gate=OLD_CLAIM, time=ELEVEN),
                                    rec(RED, BUGGY, time=NINE))),
         PASSES, Rbg.PROVEN, f"red earlier (bbbbbbb, exit 1, {NINE})"),
    Case("unproven-no-ledger", facts(GATE, PASS, require_red=False), PASSES, Rbg.UNPROVEN,
         "no red evidence in the ledger; passes as unproven"),
    Case("unproven-required", facts(GATE, PASS), BROKEN, Rbg.UNPROVEN,
         "no red evidence in the ledger; --vgate-require-red needs a genuine red first"),

    # what the runs executed of the change (with a base run)
    Case("proven-covers", facts(GATE, PASS, RED, **MEASURED), PASSES, Rbg.PROVEN,
         "green now; the runs executed the change (covers)", COVERS),
    Case("proven-red-names-the-feature", facts(GATE, PASS, RED_WANTS_SUB, **MEASURED), PASSES,
         Rbg.PROVEN, f"red on the base ({ON_BASE}), green now; the runs executed", COVERS),
    Case("weak-red-contaminated", facts(GATE, PASS, RED, **RED_CONTAMINATED),
         BROKEN, Rbg.WEAK_RED, "the base run is contaminated: it executed files of the current "
         "tree (pkg/mathx.py from /head)", COVERS),
    Case("contaminated-names-five",
         facts(GATE, PASS, RED, **{**MEASURED, "red_reach": SEVEN_CONTAMINATED}), BROKEN,
         Rbg.WEAK_RED, "(a.py, b.py, c.py, d.py, e.py and 2 more from /head)", COVERS),
    Case("contaminated-five",
         facts(GATE, PASS, RED, **{**MEASURED, "red_reach": FIVE_CONTAMINATED}), BROKEN,
         Rbg.WEAK_RED, "(a.py, b.py, c.py, d.py, e.py from /head)", COVERS),
    Case("never-red-contaminated", facts(GATE, PASS, PASS, **RED_CONTAMINATED), BROKEN,
         Rbg.WEAK_RED, "the base run is contaminated", COVERS),
    Case("weak-red-missing-on-base", facts(GATE, PASS, RED, argv_missing=OLD_TEST), BROKEN,
         Rbg.WEAK_RED, "the check names tests/test_fix.py, which exist now but not on the base"),
    Case("missing-on-base-unmeasured",
         facts(GATE, PASS, RED, argv_missing=OLD_TEST, **RED_UNMEASURED), BROKEN, Rbg.WEAK_RED,
         "exist now but not on the base", UNMEASURED),
    Case("missing-on-base-measured", facts(GATE, PASS, RED, argv_missing=OLD_TEST, **MEASURED),
         PASSES, Rbg.PROVEN, "the runs executed the change (covers)", COVERS),
    Case("proven-unmeasured", facts(GATE, PASS, RED, **RED_UNMEASURED), PASSES, Rbg.PROVEN,
         "green now; coverage unmeasured (the check is not Python): judged on exit codes",
         UNMEASURED),
    Case("proven-change-unread", facts(GATE, PASS, RED, **{**MEASURED, "change": UNREAD}), PASSES,
         Rbg.PROVEN, "coverage unmeasured (git diff failed)", UNMEASURED),
    Case("proven-no-run-measured", facts(GATE, PASS, RED, change=CHANGE), PASSES, Rbg.PROVEN,
         "coverage unmeasured (no run was measured)", UNMEASURED),
    Case("proven-no-change", facts(GATE, PASS, RED, **{**BOTH_MISSED, "change": NO_CHANGE}),
         PASSES, Rbg.PROVEN, "green now; the change has no executable lines", NOTHING),
    Case("disconnected", facts(GATE, PASS, RED, **BOTH_MISSED), BROKEN, Rbg.DISCONNECTED,
         "red on the base and green now, but neither run executed the change", MISSES),
    Case("weak-red-never-reached", facts(GATE, PASS, RED, **RED_MISSED), BROKEN, Rbg.WEAK_RED,
         "the red run never reached the change", PARTIAL),
    Case("weak-red-stays-weak-disconnected", facts(GATE, PASS, NO_TEST, **BOTH_MISSED), BROKEN,
         Rbg.WEAK_RED, "usage error", MISSES),

    # the right reds the heuristic misses: a missing feature
    Case("proven-missing-feature", facts(GATE, PASS, MISSING, **MEASURED), PASSES, Rbg.PROVEN,
         "red on the base because the feature is missing there (ImportError: cannot import "
         "name 'sub' from 'pkg.mathx'), green now", COVERS),
    Case("missing-feature-never-reached", facts(GATE, PASS, MISSING, **RED_MISSED), PASSES,
         Rbg.PROVEN, "the feature is missing there", PARTIAL),
    Case("missing-feature-verifier", facts(VERIFIED, PASS, MISSING_IN_VERIFIER, **RED_MISSED),
         PASSES, Rbg.PROVEN, f"the feature is missing there ({NAMEERROR})", PARTIAL),
    Case("missing-feature-passing-check", facts(VERIFIED, PASS, MISSING_IN_PASSING_CHECK,
         **RED_MISSED), BROKEN, Rbg.WEAK_RED, "raised an error instead of answering", PARTIAL),
    Case("missing-feature-no-check", facts(VERIFIED, PASS, MISSING_NO_CHECK, **RED_MISSED),
         BROKEN, Rbg.WEAK_RED, "raised an error instead of answering", PARTIAL),
    Case("missing-feature-timed-out-verifier", facts(VERIFIED, PASS, MISSING_BEFORE_TIMEOUT,
         **RED_MISSED), ENVIRONMENT, Rbg.WEAK_RED, "the check timed out", PARTIAL),
    Case("missing-feature-contaminated", facts(GATE, PASS, MISSING, **RED_CONTAMINATED), BROKEN,
         Rbg.WEAK_RED, "the base run is contaminated", COVERS),
    Case("missing-feature-not-loaded", facts(UNITTEST, PASS, MISSING_NOT_LOADED, **RED_MISSED),
         BROKEN, Rbg.WEAK_RED, "unittest could not load a test", PARTIAL),
    Case("missing-feature-killed", facts(GATE, PASS, MISSING_KILLED, **RED_MISSED), BROKEN,
         Rbg.WEAK_RED, "killed by signal 9", PARTIAL),
    Case("missing-feature-crashed", facts(GATE, PASS, MISSING_CRASHED, **RED_MISSED),
         ENVIRONMENT, Rbg.WEAK_RED, "died without a result", PARTIAL),
    Case("missing-other-name", facts(GATE, PASS, MISSING_OTHER, **RED_MISSED), BROKEN,
         Rbg.WEAK_RED, "pytest exit 2: interrupted", PARTIAL),
    Case("missing-feature-unmeasured", facts(GATE, PASS, MISSING), BROKEN, Rbg.WEAK_RED,
         "pytest exit 2: interrupted"),

    # the right reds the heuristic misses: a hang the change removed
    Case("proven-fixed-hang", facts(GATE, PASS, TIMEOUT, **{**MEASURED, "red_reach": HUNG}),
         PASSES, Rbg.PROVEN, "red on the base because it hung in the changed code: its run was "
         "still executing it (pkg/mathx.py:2 in add, from the stack sample at its deadline)",
         COVERS),
    Case("fixed-hang-unsampled", facts(GATE, PASS, TIMEOUT, **{**MEASURED, "red_reach": UNSAMPLED}),
         PASSES, Rbg.PROVEN, "(pkg/mathx.py:2; no stack sample was taken (no faulthandler): "
         "judged on the changed lines it had executed)", COVERS),
    Case("fixed-hang-unsampled-unsaid", facts(GATE, PASS, TIMEOUT, **MEASURED), PASSES,
         Rbg.PROVEN, "no stack sample was taken (the process took none)", COVERS),
    Case("fixed-hang-elsewhere", facts(GATE, PASS, TIMEOUT, **{**MEASURED, "red_reach": WAITING}),
         ENVIRONMENT, Rbg.WEAK_RED, "the stack sample at its deadline shows it at "
         "tests/test_fix.py:9 in wait, outside the changed code", PARTIAL),
    Case("fixed-hang-no-frame", facts(GATE, PASS, TIMEOUT, **{**MEASURED, "red_reach": replace(
         WAITING, stack=())}), ENVIRONMENT, Rbg.WEAK_RED, "the stack sample at its deadline "
         "shows it at no code of the tree, outside the changed code", PARTIAL),
    Case("fixed-hang-never-reached", facts(GATE, PASS, TIMEOUT, **RED_MISSED), ENVIRONMENT,
         Rbg.WEAK_RED, "the check timed out", PARTIAL),
    Case("fixed-hang-contaminated",
         facts(GATE, PASS, TIMEOUT, **{**MEASURED, "red_reach": HUNG_CONTAMINATED}), BROKEN,
         Rbg.WEAK_RED, "the base run is contaminated", COVERS),

    # a proven gate whose green run executed none of the change
    Case("disconnected-green", facts(GATE, PASS, RED, **GREEN_MISSED), BROKEN, Rbg.DISCONNECTED,
         "red on the base, but the green run executed none of the changed code", PARTIAL),
    Case("green-missed-unmeasured",
         facts(GATE, PASS, RED, **{**GREEN_MISSED, "red_reach": NOT_PYTHON}), PASSES,
         Rbg.PROVEN, "coverage unmeasured", UNMEASURED),
    Case("green-missed-deletion", facts(GATE, PASS, RED, **{**GREEN_MISSED, "change": DELETION}),
         PASSES, Rbg.PROVEN, "the runs executed the change (covers)", COVERS),
    Case("missing-feature-green-missed", facts(GATE, PASS, MISSING, **BOTH_MISSED), BROKEN,
         Rbg.DISCONNECTED, "the green run executed none of the changed code", MISSES),
    Case("fixed-hang-green-missed", facts(GATE, PASS, TIMEOUT, **{**GREEN_MISSED,
         "red_reach": HUNG}), BROKEN, Rbg.DISCONNECTED, "the green run executed none", PARTIAL),

    # the never-red hint: the base ran its own version of the test
    Case("never-red-old-test", facts(GATE, PASS, PASS, changed_on_base=OLD_TEST), BROKEN,
         Rbg.NEVER_RED, "it cannot tell the change apart; the base ran its own version of "
         "tests/test_fix.py, which differs here: if the change added or edited the test, "
         "carry it onto the base with `overlay: [tests/test_fix.py]`"),
    Case("never-red-overlaid", facts(OVERLAID, PASS, PASS, changed_on_base=OLD_TEST,
         require_red=False), PASSES, Rbg.NEVER_RED, f"cannot tell the change apart{RELAXED}"),
    Case("weak-red-old-test", facts(GATE, PASS, NO_TEST, changed_on_base=OLD_TEST,
         require_red=False), PASSES, Rbg.WEAK_RED, f"{HINT} (the test files that encode the "
         f"requirement){RELAXED}"),

    # --no-vgate-require-red: what proves nothing passes, its status shown
    Case("weak-red-relaxed", facts(GATE, PASS, NO_TEST, require_red=False), PASSES, Rbg.WEAK_RED,
         RELAXED),
    Case("never-red-relaxed", facts(GATE, PASS, PASS, require_red=False), PASSES, Rbg.NEVER_RED,
         RELAXED),
    Case("disconnected-relaxed", facts(GATE, PASS, RED, require_red=False, **BOTH_MISSED),
         PASSES, Rbg.DISCONNECTED, RELAXED, MISSES),
    Case("timeout-not-relaxed", facts(GATE, PASS, TIMEOUT, require_red=False), ENVIRONMENT,
         Rbg.WEAK_RED, "the check timed out: a non-result, not an answer"),

    # the mutants of a proven gate that passes
    Case("discriminating", facts(GATE, PASS, RED, mutants=KILLED, **MEASURED), PASSES,
         Rbg.PROVEN, "covers", COVERS, Discrimination.DISCRIMINATING),
    Case("undiscriminating", facts(GATE, PASS, RED, mutants=SURVIVED, **MEASURED), BROKEN,
         Rbg.PROVEN, "the check passes when `add` does nothing", COVERS,
         Discrimination.UNDISCRIMINATING),
    Case("undiscriminating-names-the-pseudo-tested", facts(GATE, PASS, RED, **MEASURED, mutants=(
         mutant("extreme", Outcome.SURVIVED), mutant("extreme", Outcome.UNKNOWN),
         mutant("extreme", Outcome.SURVIVED, "sub"))), BROKEN, Rbg.PROVEN,
         "the check passes when `sub` does nothing", COVERS, Discrimination.UNDISCRIMINATING),
    Case("undiscriminating-names-extreme-only", facts(GATE, PASS, RED, **MEASURED, mutants=(
         mutant("extreme", Outcome.SURVIVED), mutant("value", Outcome.SURVIVED, "sub"))), BROKEN,
         Rbg.PROVEN, "the check passes when `add` does nothing", COVERS,
         Discrimination.UNDISCRIMINATING),
    Case("undiscriminating-unnamed", facts(GATE, PASS, RED, **MEASURED, mutants=(
         mutant("extreme", Outcome.SURVIVED), mutant("extreme", Outcome.UNKNOWN))), BROKEN,
         Rbg.PROVEN, "the check passes when the changed code does nothing", COVERS,
         Discrimination.UNDISCRIMINATING),
    Case("value-survivors-unjudged", facts(GATE, PASS, RED, mutants=(mutant("value",
         Outcome.SURVIVED),), **MEASURED), PASSES, Rbg.PROVEN, "a value mutant may be "
         "equivalent", COVERS, Discrimination.UNMEASURED),
    Case("value-survivors-extreme-unknown", facts(GATE, PASS, RED, **MEASURED, mutants=(
         mutant("value", Outcome.SURVIVED), mutant("extreme", Outcome.UNKNOWN))), PASSES,
         Rbg.PROVEN, "a value mutant may be equivalent", COVERS, Discrimination.UNMEASURED),
    Case("no-mutant-answered", facts(GATE, PASS, RED, **MEASURED, mutants=(
         mutant("extreme", Outcome.UNKNOWN), mutant("value", Outcome.RAISED_IN_CHANGE))),
         PASSES, Rbg.PROVEN, "no mutant gave an answer (raised-in-change, unknown)", COVERS,
         Discrimination.UNMEASURED),
    Case("mutants-untried", facts(GATE, PASS, RED, mutants=UNTRIED, **MEASURED), PASSES,
         Rbg.PROVEN, "no mutable code in the change", COVERS, Discrimination.NONE),
    Case("mutants-only-for-proven", facts(GATE, PASS, NO_TEST, require_red=False,
         mutants=SURVIVED), PASSES, Rbg.WEAK_RED, RELAXED),
]  # fmt: skip


def _reasons(decision: Decision) -> str:
    return " | ".join(r.reason for r in (decision.rbg, decision.discrimination) if r is not None)


@pytest.mark.parametrize("case", TABLE, ids=[case.id for case in TABLE])
def test_the_verdict_of_each_case(case: Case) -> None:
    decision = decide(case.given)
    assert (decision.ok, decision.mode, decision.cause) == case.verdict
    assert (decision.rbg.status if decision.rbg else None) is case.status
    assert (decision.coverage.status if decision.coverage else None) is case.coverage
    discrimination = decision.discrimination
    assert (discrimination.status if discrimination else None) is case.discrimination
    assert case.says in _reasons(decision)


def test_the_table_covers_every_status_the_docs_name() -> None:
    """Every ``vgate_rbg``, ``vgate_coverage`` and ``vgate_discrimination`` value the page
    names has a case."""
    page = DOCS.read_text(encoding="utf-8")
    start = page.index("## How a gate's verdict is decided")
    rules = page[start : page.index("\n## ", start + 1)]
    named = set(re.findall(r"\*\*([a-z-]+)\*\*", rules))
    statuses = {s.value for s in Rbg}
    assert statuses <= named, sorted(statuses - named)
    assert {case.status.value for case in TABLE if case.status} == statuses
    assert {case.coverage for case in TABLE if case.coverage} == set(CoverageStatus)
    assert {case.discrimination for case in TABLE if case.discrimination} == set(Discrimination)
    assert len({case.id for case in TABLE}) == len(TABLE)


def test_evidence_never_turns_a_failing_run_into_a_pass() -> None:
    """Whatever the evidence, a run that failed (and the record it made) keeps the gate
    failing."""
    for case in TABLE:
        given = case.given
        for failing in (RED, TIMEOUT, Verdict.failed(Mode.ERROR, "boom")):
            made = given.green_records
            records = (rec(failing, FIXED, gate=given.gate), *made[1:]) if made else ()
            decision = decide(
                replace(given, greens=(failing, *given.greens[1:]), green_records=records)
            )
            assert not decision.ok, (case.id, failing.mode)


def test_a_proven_gate_that_passes_asks_for_mutants_and_nothing_else_does() -> None:
    for case in TABLE:
        asks = case.verdict[0] and case.status is Rbg.PROVEN and case.discrimination is None
        assert decide(case.given).wants_mutants is asks, case.id


# --- decide(): the judgment gate, and the run's own verdict -------------------------------


def test_only_strict_fails_a_judgment_gate() -> None:
    """``strict_failure`` is what makes the session count a skipped judgment gate as failed."""
    for strict in (False, True):
        decision = decide(Facts(JUDGED, (JUDGMENT,), strict=strict))
        assert (decision.ok, decision.strict_failure) == (False, strict)


def test_a_run_and_its_record_that_disagree_fail_the_gate() -> None:
    """Fail closed on facts no gatherer makes: a failing run whose record says it passed
    keeps its own verdict, whatever the status, and has its check tried on no mutant; a
    passing run whose record says it failed (a status that fails without a mode) fails all
    the same."""
    given = facts(GATE, PASS, RED, mutants=SURVIVED, **MEASURED)
    decision = decide(replace(given, greens=(TIMEOUT,)))
    assert (decision.ok, decision.mode, decision.cause) == (False, Mode.TIMEOUT, Cause.ENVIRONMENT)
    assert decision.rbg is not None and decision.rbg.status is Rbg.PROVEN
    assert decision.discrimination is None and not decision.wants_mutants
    never_red = decide(replace(facts(GATE, PASS, PASS), greens=(TIMEOUT,)))
    assert (never_red.ok, never_red.mode, never_red.cause) == (
        False,
        Mode.TIMEOUT,
        Cause.ENVIRONMENT,
    )
    decision = decide(replace(given, green_records=(rec(RED, FIXED),)))
    assert (decision.ok, decision.mode, decision.cause) == BROKEN
    assert decision.rbg is not None and decision.rbg.status is Rbg.UNPROVEN


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
        (("sh", "run.sh"), Mode.FAIL, 0, None, True, "exit 0: the check ran"),  # expect: [1]
        (PYTEST_ARGV, Mode.FAIL, 1, (1,), True, "is in red_exit"),
        (PYTEST_ARGV, Mode.FAIL, 1, (3,), False, "not in red_exit"),
        (PYTEST_ARGV, Mode.FAIL, 4, (4,), True, "is in red_exit"),
        (PYTEST_ARGV, Mode.FAIL, None, None, True, "answered no"),
        (PYTEST_ARGV, Mode.FAIL, None, (1,), False, "no exit code to match red_exit [1]"),
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
    """A verifier answers without an exit code: ``red_exit`` has nothing to match there."""
    gate = Gate(id="v", type=GateType.PYTHON, verifiers=("checks:first",))
    assert is_genuine_red(Verdict(mode=Mode.FAIL), gate)[0] is True
    assert is_genuine_red(Verdict(mode=Mode.FAIL), replace(gate, red_exit=(1,)))[0] is True
    assert is_genuine_red(Verdict(mode=Mode.ERROR), gate)[0] is False


# --- the status: a regression gate, a check failing now, the base, the ledger -------------


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
    if base is None:
        assert result.reason == "regression gate: passes now"


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


def test_a_wrong_red_on_the_base_is_no_red_evidence_for_a_failing_check(
    trees: dict[str, TreeState],
) -> None:
    base = rec(NO_TEST, trees["buggy"], where="base")
    result = classify(GATE, rec(RED, trees["fixed"]), base=base, history=[], require_red=True)
    assert (result.status, result.ok, result.red_evidence) == (Rbg.UNPROVEN, False, None)


def test_a_failing_run_keeps_its_own_mode(trees: dict[str, TreeState]) -> None:
    history = [rec(RED, trees["buggy"])]
    current = rec(TIMEOUT, trees["fixed"])
    result = classify(GATE, current, base=None, history=history, require_red=True)
    assert (result.ok, result.mode, result.cause) == (False, None, None)


def test_base_genuine_red_then_green_is_proven(trees: dict[str, TreeState]) -> None:
    base = rec(RED, trees["buggy"], where="base")
    result = classify(GATE, rec(PASS, trees["fixed"]), base=base, history=[], require_red=True)
    assert (result.status, result.ok, result.mode, result.cause) == (Rbg.PROVEN, True, None, None)
    assert result.red_evidence == base
    assert "base HEAD~1, exit 1" in result.reason


def test_green_on_the_base_too_is_never_red(trees: dict[str, TreeState]) -> None:
    history = [rec(RED, trees["buggy"])]  # the base decides, not the ledger
    base = rec(PASS, trees["buggy"], where="base")
    current = rec(PASS, trees["fixed"])
    strict = classify(GATE, current, base=base, history=history, require_red=True)
    assert (strict.status, strict.ok) == (Rbg.NEVER_RED, False)
    assert (strict.mode, strict.cause) == (Mode.FAIL, Cause.BROKEN_TEST)
    lenient = classify(GATE, current, base=base, history=history, require_red=False)
    assert (lenient.status, lenient.ok, lenient.mode, lenient.cause) == (
        Rbg.NEVER_RED,
        True,
        None,
        None,
    )
    assert lenient.reason.endswith("passes: red is not required (--no-vgate-require-red)")


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
    """Weak-red fails under ``--vgate-require-red``; without it, it passes, unless the base
    could not answer for the environment's sake (a timeout, a missing tool)."""
    base = rec(base_verdict, trees["buggy"], gate=gate, where="base")
    current = rec(PASS, trees["fixed"], gate=gate)
    strict = classify(gate, current, base=base, history=[], require_red=True)
    assert (strict.status, strict.ok, strict.mode, strict.cause) == (
        Rbg.WEAK_RED,
        False,
        Mode.FAIL,
        cause,
    )
    assert why in strict.reason
    lenient = classify(gate, current, base=base, history=[], require_red=False)
    if cause is Cause.ENVIRONMENT:
        assert lenient == strict
    else:
        assert (lenient.status, lenient.ok, lenient.mode, lenient.cause) == (
            Rbg.WEAK_RED,
            True,
            None,
            None,
        )


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
        ("2026-01-01T10:00:00Z", Rbg.PROVEN),  # the red came at that very time: it counts
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


def test_a_record_of_no_readable_time_is_before_stale_at(trees: dict[str, TreeState]) -> None:
    gate = replace(GATE, stale_at="2026-01-01T09:00:00Z")
    history = [rec(RED, trees["buggy"], gate=gate, time="yesterday")]
    current = rec(PASS, trees["fixed"], gate=gate)
    result = classify(gate, current, base=None, history=history, require_red=False)
    assert result.status is Rbg.UNPROVEN
    assert "recorded before stale_at" in result.reason


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


def test_classify_reads_the_ledger_it_wrote(tmp_path: Path, trees: dict[str, TreeState]) -> None:
    ledger = Ledger.default(tmp_path)
    assert ledger.append([rec(RED, trees["buggy"])]) == []
    history, warnings = ledger.read()
    result = classify(GATE, rec(PASS, trees["fixed"]), base=None, history=history, require_red=True)
    assert (result.status, warnings) == (Rbg.PROVEN, [])
    again = RbgResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert again == result


# --- what the runs executed: a hang the change removed -----------------------------------


def test_a_hang_is_proven_only_when_every_red_run_hung() -> None:
    """Repeated base runs that did not all time out are flaky before this rule is reached
    (decide's order, the first assertion); the rule holds on its own all the same, so that
    no reordering makes one hung run of several a proof."""
    hung = {**MEASURED, "red_reach": HUNG}
    assert (
        decide(facts(GATE, PASS, (TIMEOUT, RED), **hung)).rbg
        == decide(facts(GATE, PASS, (TIMEOUT, RED))).rbg
    )
    weak = RbgResult(Rbg.WEAK_RED, False, "timed out", Mode.FAIL, Cause.ENVIRONMENT)
    red = rec(TIMEOUT, BUGGY, where="base")
    coverage = coverage_of(CHANGE, HUNG, REACHED)
    assert _fixed_hang(weak, (TIMEOUT, TIMEOUT), red, coverage).status is Rbg.PROVEN
    assert _fixed_hang(weak, (TIMEOUT, RED), red, coverage) == weak


def test_where_a_killed_run_hung() -> None:
    """The changed lines a killed run had executed, six at most per file, files it ran none
    of left out."""
    changed = {"a.py": frozenset(range(1, 9)), "b.py": frozenset({3}), "c.py": frozenset({1})}
    executed = {"a.py": frozenset(range(1, 9)), "c.py": frozenset({1})}
    assert hang_site(changed, executed) == "a.py:1, 2, 3, 4, 5, 6, ...; c.py:1"
    assert hang_site(changed, {"a.py": frozenset(range(1, 7))}) == "a.py:1, 2, 3, 4, 5, 6"
    assert hang_site(changed, {"a.py": frozenset({2, 4})}) == "a.py:2, 4"
    assert hang_site(changed, {}) == "the changed file"


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
    half = judge_mutants([result("extreme", Outcome.SURVIVED), result("extreme", Outcome.KILLED)])
    assert half.pseudo_tested == ()  # one extreme mutant of `f` was killed: `f` is tested
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


def test_coverage_judges_each_run_by_its_role_not_its_identity() -> None:
    """One reach object given for both runs of a deletion: the red run reached the change,
    and the green run has no head-side line to reach: ``covers`` either way."""
    deletion = replace(CHANGE, head_changed={})
    same = decide(facts(GATE, PASS, RED, change=deletion, red_reach=REACHED, green_reach=REACHED))
    copy = replace(REACHED)
    apart = decide(facts(GATE, PASS, RED, change=deletion, red_reach=REACHED, green_reach=copy))
    assert same.coverage is not None and apart.coverage is not None
    assert same.coverage.status is apart.coverage.status is CoverageStatus.COVERS
