"""A gate's verdict, decided in one place: ``decide(Facts) -> Decision``.

Pure core: no process, no file, no git. The gatherers (``gate/result.py`` with the runner,
the batches and ``evidence/``) run the checks and collect what they observed into
``Facts``: the runs on this tree and on the base, the ledger's records of them and of
earlier sessions, what each run executed of the change, the mutants a proven check ran
on. This module alone turns those facts into the verdict and its reasons, in the order
docs/red-before-green.md writes the rules:

1. the genuine-red heuristic (``genuine_red``): which failures are answers;
2. a judgment gate without a judge is skipped (``--vgate-strict``: it fails);
3. repeated runs that disagree are ``flaky``;
4. the red-before-green status: a regression gate; a check failing now keeps its own
   verdict; with a base run, the base decides (a skip, a pass: ``never-red``; a genuine
   red: ``proven``; any other red: ``weak-red``); without one, the ledger's records do;
5. with a base, what the runs executed (``coverage``): a red that ran the current tree or
   never reached the change, runs that reached none of it (``disconnected``); the right
   reds the heuristic misses (a missing feature, a hang the change removed); a proven
   green run that executed none of the change;
6. ``--no-vgate-require-red`` lets what proves nothing pass, its status shown;
7. the mutants of a proven gate: a check that kills none is ``undiscriminating``;
8. the gate passes only when its run passed and no rule above failed it: evidence can fail
   a gate, never pass one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from pytest_vgate.causes import (
    PYTEST_NOT_RED,
    SHELL_NOT_RED,
    UNITTEST_NOT_LOADED,
    UNITTEST_NOT_RED,
    runs_pytest,
)
from pytest_vgate.evidence.change import Change
from pytest_vgate.evidence.defined import missing_defined
from pytest_vgate.evidence.discriminate import (
    Discrimination,
    DiscriminationResult,
    MutantResult,
    Outcome,
)
from pytest_vgate.evidence.mutate import EXTREME
from pytest_vgate.evidence.reach import CoverageResult, CoverageStatus, RunReach
from pytest_vgate.evidence.record import Record, output_of, parse_time, skipped_only
from pytest_vgate.evidence.why import BASE_RAN_ITS_OWN
from pytest_vgate.gatesfile import Gate, RedPolicy
from pytest_vgate.gatesfile.kinds import kind_of
from pytest_vgate.jsonable import Jsonable
from pytest_vgate.verdict import DEFAULT_CAUSE, Cause, Mode, Rbg, Verdict

# -- the facts ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Facts:
    """What a gate's runs observed, gathered before anything is decided.

    ``greens``/``reds``: the runs on this tree and on the base (interleaved repeats), with
    their ledger records (``green_records``/``red_records``). ``history``: the ledger's
    earlier records of the gate; None when no evidence was asked for (library use: the
    run's own verdict is the gate's). ``change``, ``red_reach``, ``green_reach``: the
    change and what the first red and green run executed of it (None: not measured).
    ``argv_missing``: files the check names that the base does not have;
    ``changed_on_base``: those whose bytes differ there. ``mutants``: the mutants a proven
    check ran on, or a result saying why none could run (None: not tried yet).
    """

    gate: Gate
    greens: tuple[Verdict, ...]
    reds: tuple[Verdict, ...] = ()
    green_records: tuple[Record, ...] = ()
    red_records: tuple[Record, ...] = ()
    history: tuple[Record, ...] | None = None
    repeat: int = 1
    change: Change | None = None
    red_reach: RunReach | None = None
    green_reach: RunReach | None = None
    argv_missing: tuple[str, ...] = ()
    changed_on_base: tuple[str, ...] = ()
    mutants: tuple[MutantResult, ...] | DiscriminationResult | None = None
    require_red: bool = False
    strict: bool = False


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


@dataclass(frozen=True)
class Decision:
    """The gate's verdict: whether it passes, its mode and cause, and the statuses that
    decided it (each with its reason)."""

    ok: bool
    mode: Mode
    cause: Cause | None
    rbg: RbgResult | None = None
    coverage: CoverageResult | None = None
    discrimination: DiscriminationResult | None = None
    strict_failure: bool = False

    @property
    def wants_mutants(self) -> bool:
        """A proven gate that passes has its check tried on mutants of the change."""
        return (
            self.ok
            and self.rbg is not None
            and self.rbg.status is Rbg.PROVEN
            and self.discrimination is None
        )


def decide(facts: Facts) -> Decision:
    """The verdict of the gate the facts are about. Never raises on well-formed facts."""
    green = facts.greens[0]
    if green.mode is Mode.JUDGMENT:
        strict = Cause.BROKEN_TEST if facts.strict else None
        return Decision(False, Mode.JUDGMENT, strict, strict_failure=facts.strict)
    if facts.history is None or not facts.green_records:
        return Decision(green.ok, green.mode, green.cause)
    coverage = coverage_of(facts.change, facts.red_reach, facts.green_reach)
    rbg = red_before_green(facts, coverage)
    ok = green.ok and rbg.ok  # fail closed: evidence can fail a gate, never pass one
    mode: Mode
    cause: Cause | None
    if ok:
        mode, cause = green.mode, None
    elif rbg.mode is not None and (green.ok or rbg.status is Rbg.FLAKY):
        mode, cause = rbg.mode, rbg.cause
    elif green.ok:  # a rule refused without saying how: still a failure
        mode, cause = Mode.FAIL, Cause.BROKEN_TEST
    else:
        mode, cause = green.mode, green.cause
    discrimination: DiscriminationResult | None = None
    if ok and rbg.status is Rbg.PROVEN and facts.mutants is not None:
        discrimination = (
            facts.mutants
            if isinstance(facts.mutants, DiscriminationResult)
            else judge_mutants(facts.mutants)
        )
        if discrimination.fails:
            ok, mode, cause = False, Mode.FAIL, Cause.BROKEN_TEST
    return Decision(ok, mode, cause, rbg, coverage, discrimination)


# -- 1. the genuine-red heuristic ---------------------------------------------------------

_MODE_NOT_RED = {
    Mode.UNAVAILABLE: "the tool was not found, so the check never ran",
    Mode.TIMEOUT: "the check timed out: a non-result, not an answer",
    Mode.CRASH: "the check died without a result (crash or spawn failure)",
    Mode.BLANK: "the check is blank: there was nothing to run",
    Mode.ERROR: "the check raised an error instead of answering",
    Mode.PANIC: "the check panicked (SystemExit or similar) instead of answering",
    Mode.SANDBOX: "the sandbox refused the run (tool bytes moved or isolation missing)",
    Mode.UNGROUNDED: "the verifier passed or failed without running its tools",
    Mode.JUDGMENT: "a judgment gate is not executed",
    Mode.PASS: "the check passed",
}


def genuine_red(
    mode: Mode, exit_code: int | None, gate: Gate, output: str = ""
) -> tuple[bool, str]:
    """Was a run a red for the right reason, and why (not)? A check that ran to exit with
    a failing code. Not genuine: any mode but ``fail``; exit 126/127; a signal; a run in
    which unittest could not load a test it was named (whatever ``red_exit`` says); for
    pytest checks exits 2-5; with ``red_exit`` given, any code outside it (``red_exit``
    replaces the pytest rule). ``output`` (stdout and stderr) is read only for unittest's
    loader errors."""
    if mode is not Mode.FAIL:
        return False, _MODE_NOT_RED.get(mode, f"mode {mode.value} is not an answer")
    if exit_code is None:
        if gate.red_exit is not None and kind_of(gate.type).red_exit:
            return False, f"no exit code to match red_exit {list(gate.red_exit)}"
        return True, "the check ran and answered no"
    if exit_code < 0:
        return False, f"killed by signal {-exit_code}"
    if exit_code in SHELL_NOT_RED:
        return False, SHELL_NOT_RED[exit_code]
    if UNITTEST_NOT_LOADED.search(output):
        return False, UNITTEST_NOT_RED
    if gate.red_exit is not None:
        if exit_code in gate.red_exit:
            return True, f"exit {exit_code} is in red_exit {list(gate.red_exit)}"
        return False, f"exit {exit_code} is not in red_exit {list(gate.red_exit)}"
    if exit_code in PYTEST_NOT_RED and runs_pytest(gate.argv):
        return False, PYTEST_NOT_RED[exit_code]
    return True, f"exit {exit_code}: the check ran and answered no"


def is_genuine_red(verdict: Verdict, gate: Gate) -> tuple[bool, str]:
    """``genuine_red`` of a run's verdict, reading all it printed."""
    return genuine_red(
        verdict.mode, verdict.exit_code, gate, output_of(verdict.stdout, verdict.stderr)
    )


def _judge(record: Record, gate: Gate) -> tuple[bool, str]:
    """The heuristic on a record, judged again now (a changed ``red_exit`` re-judges old
    records). Its output is the kept tail, so a loader error the record saw when it was
    made (in the whole output) stands too."""
    if record.red_reason == UNITTEST_NOT_RED:
        return False, UNITTEST_NOT_RED
    return genuine_red(record.mode, record.exit_code, gate, output_of(record.stdout, record.stderr))


# -- 3-6. red before green ----------------------------------------------------------------


def red_before_green(facts: Facts, coverage: CoverageResult | None) -> RbgResult:
    """The gate's ``vgate_rbg`` status from its runs, their records and the ledger's."""
    gate, now = facts.gate, facts.green_records[0]
    then = facts.red_records[0] if facts.red_records else None
    if runs_disagree(facts.greens, facts.reds) and not _consistently_failing(facts.greens):
        return _flaky(facts)
    if gate.red is RedPolicy.NOT_REQUIRED:
        result = _regression(now, then)
    elif not now.ok:
        red = then if then is not None and _judge(then, gate)[0] else None
        where = " (red on the base too: the change does not fix it)" if red else ""
        result = RbgResult(
            Rbg.UNPROVEN,
            ok=False,
            reason=f"the check fails now{where}; nothing is proven until it passes",
            red_evidence=red,
        )
    elif then is None:
        return _from_history(gate, now, facts.history or (), facts.require_red)
    else:
        result = _with_base(gate, then)
    if then is None:
        return result
    result = _judge_execution(gate, result, coverage, facts.argv_missing)
    result = _missing_feature(result, facts.reds, then, coverage)
    result = _fixed_hang(result, facts.reds, then, coverage)
    result = _green_reached(result, coverage)
    result = _overlay_hint(gate, result, facts.changed_on_base)
    return result if facts.require_red else _relaxed(result)


def _signature(verdict: Verdict) -> tuple[str, int | None]:
    """What must repeat for runs to agree: the mode and the exit code."""
    return verdict.mode.value, verdict.exit_code


def runs_disagree(greens: Sequence[Verdict], reds: Sequence[Verdict]) -> bool:
    """Repeated runs of a side that did not all end alike: the check is flaky."""
    return any(len({_signature(v) for v in runs}) > 1 for runs in (greens, reds))


def _consistently_failing(greens: Sequence[Verdict]) -> bool:
    """Every green run failed alike: the check fails now, which keeps its own verdict."""
    return len({_signature(v) for v in greens}) == 1 and not greens[0].ok


def _flaky(facts: Facts) -> RbgResult:
    def pattern(runs: Sequence[Verdict]) -> str:
        return ", ".join("pass" if v.ok else f"{v.mode.value} {v.exit_code}" for v in runs)

    parts = [f"green: {pattern(facts.greens)}"]
    if facts.reds:
        parts.insert(0, f"red on the base: {pattern(facts.reds)}")
    early = " (stopped at the first disagreement)" if len(facts.greens) < facts.repeat else ""
    return _broken(
        Rbg.FLAKY,
        f"repeated runs disagree{early}: {'; '.join(parts)}; a flaky check proves nothing",
    )


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


def _regression(current: Record, base: Record | None) -> RbgResult:
    if not current.ok:
        return RbgResult(Rbg.REGRESSION, ok=False, reason="regression gate: the check fails now")
    if base is None or base.ok:
        on = " and on the base" if base is not None else ""
        return RbgResult(Rbg.REGRESSION, ok=True, reason=f"regression gate: passes now{on}")
    return _broken(
        Rbg.REGRESSION,
        f"regression gate (red: not-required) but it fails on the base ({_describe(base)}: "
        f"{base.red_reason}); it must pass on both, or declare it red: required",
        _weak_cause(base),
    )


def _with_base(gate: Gate, base: Record) -> RbgResult:
    """The base decides, like SWE-bench's FAIL_TO_PASS: a genuine red there is proven."""
    skipped = skipped_only(output_of(base.stdout, base.stderr)) if base.ok else None
    if skipped is not None:
        why = f": {skipped}" if skipped else " (it printed no reason; `-rs` shows pytest's)"
        return _broken(
            Rbg.WEAK_RED,
            f"skipped on the base{why}; a skip is no answer: make the test run there "
            "(carry what it needs with `overlay:`), or declare it `red: not-required`",
        )
    if base.ok:
        return _broken(
            Rbg.NEVER_RED, "the check passes on the base too: it cannot tell the change apart"
        )
    genuine, why = _judge(base, gate)
    if genuine:
        return _proven(f"red on the base ({_describe(base)}), green now", base)
    hint = ""
    missing = base.exit_code in (4, 5) and runs_pytest(gate.argv)
    if not gate.overlay and (missing or why == UNITTEST_NOT_RED):
        hint = (
            "; if the test is new in this change, carry it onto the base with "
            "`overlay: [tests/]` (the test files that encode the requirement)"
        )
    return _broken(
        Rbg.WEAK_RED,
        f"red on the base for the wrong reason: {why}{hint}",
        _weak_cause(base),
    )


def _from_history(
    gate: Gate, current: Record, history: Sequence[Record], require_red: bool
) -> RbgResult:
    """Without a base run, the ledger decides: a genuine red of the same check on another
    tree, recorded after ``stale_at``, with the same inputs (docs: "the ledger route")."""
    stale_at: datetime | None = parse_time(gate.stale_at) if gate.stale_at else None
    ignored: dict[str, int] = {}

    def skip(why: str) -> None:
        ignored[why] = ignored.get(why, 0) + 1

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
        return _proven(f"red earlier ({_describe(red)}), green now", red)
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
        return _broken(status, f"{text}{note}; --vgate-require-red needs a genuine red first")
    return RbgResult(status, ok=True, reason=f"{text}{note}; passes as unproven")


def _proven(reason: str, red: Record) -> RbgResult:
    return RbgResult(Rbg.PROVEN, ok=True, reason=reason, red_evidence=red)


def _broken(status: Rbg, reason: str, cause: Cause = Cause.BROKEN_TEST) -> RbgResult:
    return RbgResult(status, ok=False, reason=reason, mode=Mode.FAIL, cause=cause)


def _judge_execution(
    gate: Gate,
    result: RbgResult,
    coverage: CoverageResult | None,
    argv_missing: Sequence[str] = (),
) -> RbgResult:
    """Hold a base-route status to what the runs executed (docs: "Evidence by execution")."""
    if gate.red is RedPolicy.NOT_REQUIRED:
        return result
    if coverage is not None and coverage.contaminated:
        top = coverage.change.head_top
        files = ", ".join(coverage.contaminated[:5])
        more = len(coverage.contaminated) - 5
        return _broken(
            Rbg.WEAK_RED,
            f"the base run is contaminated: it executed files of the current tree "
            f"({files}{f' and {more} more' if more > 0 else ''} from {top}) instead of "
            "the base worktree (a PYTHONPATH, an editable install or a conftest pointing "
            "at the current tree); it is not counted as red",
        )
    if result.status is not Rbg.PROVEN:
        return result
    status = coverage.status if coverage is not None else None
    if status is None or status is CoverageStatus.UNMEASURED:
        if argv_missing:
            names = ", ".join(argv_missing[:5])
            return _broken(
                Rbg.WEAK_RED,
                f"the check names {names}, which exist now but not on the base (carry "
                "them with `overlay:`); its red ran without them",
            )
        if coverage is None:
            return result
        return replace(
            result,
            reason=(
                f"{result.reason}; coverage unmeasured ({coverage.reason}): judged on exit codes"
            ),
        )
    assert coverage is not None
    if status is CoverageStatus.NO_CHANGE:
        return replace(result, reason=f"{result.reason}; {coverage.reason}")
    red_reached = coverage.red is not None and coverage.red.reached
    green_reached = coverage.green is not None and coverage.green.reached
    if not red_reached and not green_reached:
        return _broken(
            Rbg.DISCONNECTED,
            "red on the base and green now, but neither run executed the change: "
            "something other than the change flipped it",
        )
    if not red_reached:
        return _broken(
            Rbg.WEAK_RED,
            "the red run never reached the change: it executed none of the base-side "
            "changed lines (nor, for a pure insertion, the function it went into, or the "
            "file for a new definition); e.g. the test did not "
            "exist on the base (carry it with `overlay:`)",
        )
    return replace(result, reason=f"{result.reason}; the runs executed the change ({status.value})")


def _missing_feature(
    result: RbgResult, reds: Sequence[Verdict], red: Record, coverage: CoverageResult | None
) -> RbgResult:
    """A weak red whose base run failed for want of a name the change defines is genuine:
    the feature is missing there (``evidence/defined.py``)."""
    if result.status is not Rbg.WEAK_RED or coverage is None or coverage.contaminated:
        return result
    if red.red_reason == UNITTEST_NOT_RED:  # unittest could not load the test it was named
        return result
    base = reds[0] if reds else None
    if base is None or (base.exit_code or 0) < 0:
        return result
    text = output_of(base.stdout, base.stderr)
    if base.mode is Mode.ERROR and base.checks:  # a verifier raised: its check says what
        text = "\n".join([text, *(c.detail for c in base.checks if c.mode is Mode.ERROR)])
    elif base.mode is not Mode.FAIL:
        return result
    line = missing_defined(text, coverage.change.defined)
    if not line:
        return result
    return _proven(f"red on the base because the feature is missing there ({line}), green now", red)


def _fixed_hang(
    result: RbgResult, reds: Sequence[Verdict], red: Record, coverage: CoverageResult | None
) -> RbgResult:
    """A base run killed at its deadline while it was executing the changed code is a
    genuine red: the change removed a hang. Where it was comes from the stack sample taken
    just before the kill: a thread inside the changed code proves it; a sample showing it
    elsewhere (the test's own wait) keeps the timeout a non-result. Without a sample, the
    changed lines it had executed stand in, and the reason says so."""
    if result.status is not Rbg.WEAK_RED or coverage is None or coverage.red is None:
        return result
    base = reds[0] if reds else None
    if base is None or base.mode is not Mode.TIMEOUT or coverage.contaminated:
        return result
    if any(run.mode is not Mode.TIMEOUT for run in reds):
        return result  # every red run must have hung, as every red must share a signature
    reach = coverage.red
    if not reach.measured:
        return result
    if reach.sampled and reach.hung_in is None:
        where = ", ".join(frame.shown() for frame in reach.stack[:3]) or "no code of the tree"
        return replace(
            result,
            reason=(
                f"{result.reason}; the stack sample at its deadline shows it at {where}, "
                "outside the changed code: it did not hang in what the change fixed"
            ),
        )
    if reach.sampled and reach.hung_in is not None:
        where = f"{reach.hung_in.shown()}, from the stack sample at its deadline"
    elif reach.reached:
        missing = "; ".join(reach.unsampled[:2]) or "the process took none"
        where = (
            f"{hang_site(coverage.change.base_changed, reach.executed)}; no stack sample "
            f"was taken ({missing}): judged on the changed lines it had executed"
        )
    else:
        return result
    return _proven(
        f"red on the base because it hung in the changed code: its run was still "
        f"executing it ({where}) when its deadline killed it, and the check passes now: "
        "the change removed a hang",
        red,
    )


def hang_site(changed: Mapping[str, frozenset[int]], executed: Mapping[str, frozenset[int]]) -> str:
    """``path:lines`` of the changed lines a killed run had executed (where it hung)."""
    sites = []
    for path, lines in sorted(changed.items()):
        ran = sorted(lines & executed.get(path, frozenset()))
        if ran:
            shown = ", ".join(map(str, ran[:6])) + (", ..." if len(ran) > 6 else "")
            sites.append(f"{path}:{shown}")
    return "; ".join(sites) or "the changed file"


def _green_reached(result: RbgResult, coverage: CoverageResult | None) -> RbgResult:
    """A proven gate whose measured green run executed none of the head-side change passes
    without it: its pass cannot depend on what the change computes."""
    if result.status is not Rbg.PROVEN or coverage is None or coverage.green is None:
        return result
    green = coverage.green
    if not green.measured or green.reached or not coverage.change.head_changed:
        return result
    if coverage.status in (CoverageStatus.UNMEASURED, CoverageStatus.NO_CHANGE):
        return result
    return _broken(
        Rbg.DISCONNECTED,
        "red on the base, but the green run executed none of the changed code (a `def` "
        "or `class` line run at import only defines a name): its pass does not depend "
        "on what the change computes",
    )


def _overlay_hint(gate: Gate, result: RbgResult, changed_on_base: Sequence[str]) -> RbgResult:
    """A never-red gate without overlay whose test file the change edits: the base ran the
    old test (more-itertools' `-k SlicedTests`: 5 tests passed there, 6 here)."""
    if result.status is not Rbg.NEVER_RED or gate.overlay or not changed_on_base:
        return result
    names = ", ".join(changed_on_base[:5])
    return replace(
        result,
        reason=(
            f"{result.reason}; {BASE_RAN_ITS_OWN} {names}, which differs here: if the change "
            f"added or edited the test, carry it onto the base with "
            f"`overlay: [{changed_on_base[0]}]`"
        ),
    )


RELAXABLE = (Rbg.NEVER_RED, Rbg.WEAK_RED, Rbg.DISCONNECTED)


def _relaxed(result: RbgResult) -> RbgResult:
    """--no-vgate-require-red: a gate without a genuine red passes, its status shown."""
    if result.ok or result.mode is None or result.status not in RELAXABLE:
        return result
    if result.cause is Cause.ENVIRONMENT:
        return result
    return replace(
        result,
        ok=True,
        mode=None,
        cause=None,
        reason=f"{result.reason}; passes: red is not required (--no-vgate-require-red)",
    )


# -- 5. what the runs executed of the change ----------------------------------------------


def coverage_of(
    change: Change | None, red: RunReach | None, green: RunReach | None
) -> CoverageResult | None:
    """``vgate_coverage`` from what the red (base) and green (current) runs executed: both
    reached the change (``covers``), one did (``partial``), none (``misses``); a change
    with no executable line is ``no-change``; anything not measured is ``unmeasured``,
    never ``misses``. None when the change was not measured."""
    if change is None:
        return None
    if change.error:
        return CoverageResult(CoverageStatus.UNMEASURED, change, red, green, change.error)
    if change.empty:
        why = "the change has no executable lines (comments, docstrings or non-Python files)"
        return CoverageResult(CoverageStatus.NO_CHANGE, change, red, green, why)
    runs = [r for r in (red, green) if r is not None]
    unmeasured = [r for r in runs if not r.measured]
    if not runs or unmeasured:
        why = unmeasured[0].reason if unmeasured else "no run was measured"
        return CoverageResult(CoverageStatus.UNMEASURED, change, red, green, why)
    # the red run must reach the change; the green run too where the head side has lines
    judged = [red, green] if change.head_changed else [red]
    hits = [r.reached for r in judged if r is not None]
    if hits and all(hits):
        status = CoverageStatus.COVERS
    elif any(r.reached for r in runs):
        status = CoverageStatus.PARTIAL
    else:
        status = CoverageStatus.MISSES
    return CoverageResult(status, change, red, green)


# -- 7. the mutants -----------------------------------------------------------------------


def judge_mutants(results: Sequence[MutantResult]) -> DiscriminationResult:
    """The verdict on a proven gate's mutants. ``planted``: those that gave an answer
    (killed or survived); the rest are listed. A gate is undiscriminating when an extreme
    mutant survived and none was killed: a surviving value mutant alone may be equivalent."""
    answered = [r for r in results if r.killed or r.mode is Outcome.SURVIVED]
    killed = sum(r.killed for r in answered)
    pseudo = _pseudo_tested(results)
    extreme_survived = any(r.kind == EXTREME and r.mode is Outcome.SURVIVED for r in results)
    if not answered:
        why = ", ".join(sorted({r.mode.value for r in results}))
        status, reason = Discrimination.UNMEASURED, f"no mutant gave an answer ({why})"
    elif killed:
        status, reason = Discrimination.DISCRIMINATING, ""
    elif extreme_survived:
        names = ", ".join(f"`{name}`" for name in pseudo) or "the changed code"
        status, reason = (
            Discrimination.UNDISCRIMINATING,
            f"the check passes when {names} does nothing",
        )
    else:
        status, reason = (
            Discrimination.UNMEASURED,
            "the check passed on every value mutant, and no extreme mutant could be planted; "
            "a value mutant may be equivalent, so this is not judged (see the survivors)",
        )
    return DiscriminationResult(
        status,
        killed=killed,
        planted=len(answered),
        pseudo_tested=pseudo,
        mutants=tuple(results),
        reason=reason,
    )


def _pseudo_tested(results: Sequence[MutantResult]) -> tuple[str, ...]:
    """Changed functions whose every extreme mutant survived: executed, not tested."""
    by_function: dict[str, list[MutantResult]] = {}
    for r in results:
        if r.kind == EXTREME:
            by_function.setdefault(r.function, []).append(r)
    return tuple(
        name
        for name, rs in by_function.items()
        if rs and all(r.mode is Outcome.SURVIVED for r in rs)
    )
