"""One gate's runs and its result: run the check (and its base runs and mutants), gather
what they observed, let ``gate/decide.py`` decide, and build the JSON-able result whose
``report`` text is what a failing item shows. Core, no pytest.
"""

from __future__ import annotations

import functools
import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_vgate.context import RunContext, gate_timeout
from pytest_vgate.evidence.change import Change
from pytest_vgate.evidence.defined import check_modules
from pytest_vgate.evidence.discriminate import (
    Discrimination,
    DiscriminationResult,
    Forked,
    MutantResult,
    discriminate,
    private_copy,
    report_lines,
)
from pytest_vgate.evidence.identity import TreeState, content_digest, inputs_digest
from pytest_vgate.evidence.proof import Evidence, Series, changed_on_base, missing_on_base
from pytest_vgate.evidence.reach import (
    CoverageResult,
    RunReach,
    describe_lines,
    green_reach,
    red_reach,
)
from pytest_vgate.evidence.record import Record, Where, make_record
from pytest_vgate.evidence.why import explain
from pytest_vgate.gate.decide import Facts, decide, is_genuine_red, runs_disagree
from pytest_vgate.gate.runner import run_check
from pytest_vgate.gatesfile import Gate
from pytest_vgate.gatesfile.kinds import kind_of
from pytest_vgate.jsonable import JsonDict, json_objects
from pytest_vgate.payload import (
    CheckPayload,
    GatePayload,
    JsonObject,
    VerifierPayload,
    json_object,
)
from pytest_vgate.process.measure import MEASURED_KEY, Measured, MeasureSpec
from pytest_vgate.verdict import ISOLATION_KEY, Cause, Mode, Rbg, Verdict

if TYPE_CHECKING:
    from pytest_vgate.baseline import BaseWorktree

TAIL_LINES = 20
BASE_FACTOR = 3.0  # the base run's deadline: this many times the green run's duration,
BASE_MARGIN = 2.0  # and at least this many seconds more than it


@dataclass(frozen=True)
class GateResult:
    """The final word on one gate in one session."""

    gate: Gate
    verdict: Verdict  # the run on the current tree
    ok: bool
    mode: Mode
    cause: Cause | None
    rbg: Rbg | None = None
    rbg_reason: str = ""
    base_verdict: Verdict | None = None
    red: JsonDict | None = None  # the red evidence used (a ledger record)
    strict_failure: bool = False
    records: tuple[JsonDict, ...] = field(default_factory=tuple)  # for the ledger
    tree_label: str | None = None
    ledger: str | None = None
    coverage: CoverageResult | None = None
    repeat: JsonDict | None = None  # every run's exit code and the 4^-N bound
    discrimination: DiscriminationResult | None = None  # the mutants of the change

    def to_payload(
        self,
        *,
        nodeid: str | None = None,
        targets: tuple[JsonDict, ...] | None = None,
        verifier: bool = False,
    ) -> CheckPayload:
        """What the item hands the controller (``nodeid``: the item's; ``targets``: where
        to point a failure; ``verifier``: the gate is a ``@verifier`` item's)."""
        v = self.verdict
        green = v.to_dict()  # its checks and tools are the payload's, encoded once
        return (VerifierPayload if verifier else GatePayload)(
            id=self.gate.id,
            claim=self.gate.claim,
            type=self.gate.type,
            ok=self.ok,
            mode=self.mode,
            cause=self.cause,
            rbg=self.rbg,
            rbg_reason=self.rbg_reason,
            exit_code=v.exit_code,
            isolation=_isolation(v),
            duration=round(v.duration, 6),
            command=tuple(v.command or self.gate.argv),
            detail=v.detail,
            stdout=v.stdout,
            stderr=v.stderr,
            stdout_bytes=v.stdout_bytes,
            stderr_bytes=v.stderr_bytes,
            errors=tuple(v.errors),
            checks=tuple(map(JsonObject, json_objects(green["checks"]))),
            tools=tuple(map(JsonObject, json_objects(green["tools"]))),
            green=JsonObject(green),
            base=JsonObject(self.base_verdict.to_dict()) if self.base_verdict else None,
            red=json_object(self.red),
            strict_failure=self.strict_failure,
            records=tuple(map(JsonObject, self.records)),
            tree_label=self.tree_label,
            ledger=self.ledger,
            coverage=JsonObject(self.coverage.to_dict()) if self.coverage else None,
            repeat=json_object(self.repeat),
            discrimination=(
                JsonObject(self.discrimination.to_dict()) if self.discrimination else None
            ),
            source=f"{self.gate.source}:{self.gate.line}" if self.gate.source else None,
            report=format_report(self),
            targets=None if targets is None else tuple(map(JsonObject, targets)),
            nodeid=nodeid,
        )


def evaluate_gate(
    gate: Gate,
    ctx: RunContext,
    *,
    strict: bool = False,
    evidence: Evidence | None = None,
    base_ctx: RunContext | None = None,
    require_red: bool = False,
    coverage: bool = False,
    repeat: int = 1,
    base_tree: BaseWorktree | None = None,
    mutants: int = 0,
    batched: tuple[Verdict | None, Verdict | None] | None = None,
    forked: Mapping[str, Forked] | None = None,
) -> GateResult:
    """Run the gate (and its base runs, if any), gather what they observed, and let
    ``gate/decide.py`` decide its result.

    Without ``evidence`` no red-before-green status is given (library use). With
    ``repeat`` N the current and the base run N times each, interleaved, stopping at the
    first disagreement. With ``coverage`` (and a base), every run is measured on the
    change between ``base_tree`` and this tree; with ``mutants`` N as well, a proven gate's
    check runs on mutants of the changed code it executed (up to N of them,
    ``evidence/discriminate.py``). ``batched``: the first green and red verdicts a batch
    already gave (``batch.py``; None: that side runs here); ``forked``: the mutants its
    head batch already ran in forks (``fork.py``).
    """
    if evidence is None:
        return result_of(gate, take_measured(run_check(gate, ctx))[0], strict=strict)
    kind = kind_of(gate.type)
    sides = run_sides(
        gate, ctx, evidence=evidence, base_ctx=base_ctx, coverage=coverage, base_tree=base_tree
    )
    green_ctx, red_ctx, change, base_ctx = sides.green, sides.red, sides.change, sides.base
    greens: list[Verdict] = []
    reds: list[Verdict] = []
    first: Verdict | None = None
    if kind.judgment:  # without a judge there is nothing to prove
        first = run_check(gate, green_ctx)
        if first.mode is Mode.JUDGMENT:
            return result_of(gate, first, strict=strict)
    if repeat > 1:  # interleaved, red first, as in the change's own history
        for i in range(repeat):
            if red_ctx is not None:
                reds.append(run_check(gate, red_ctx))
                if runs_disagree(greens, reds):
                    break  # the first disagreement settles it: the check is flaky
            greens.append(first if i == 0 and first is not None else run_check(gate, green_ctx))
            if runs_disagree(greens, reds):
                break
    else:
        # Green first: its duration bounds the base run's deadline (a hang the change
        # removed costs seconds, not the gate's whole timeout).
        given = batched if batched is not None else (None, None)
        green = first if first is not None else given[0] or run_check(gate, green_ctx)
        greens.append(green)
        if red_ctx is not None:
            reds.append(given[1] or run_base(gate, red_ctx, green))
    green_runs = [take_measured(v) for v in greens]
    red_runs = [take_measured(v) for v in reds]
    series = Series(tuple(v for v, _ in green_runs), tuple(v for v, _ in red_runs), max(1, repeat))
    red_reaches: list[RunReach] = []
    green_reaches: list[RunReach] = []
    run_extra: list[JsonDict] = []
    if change is not None:
        red_reaches = [red_reach(change, m, check_modules(gate)) for _, m in red_runs]
        green_reaches = [green_reach(change, m) for _, m in green_runs]
        for i in range(max(len(green_runs), len(red_runs))):
            for runs, reaches in ((red_runs, red_reaches), (green_runs, green_reaches)):
                if i < len(runs):
                    run_extra.append(_run_extra(runs[i][0], reaches[i], change))
    base_root = base_ctx.root if base_ctx is not None else None
    green_records, red_records = _records(gate, series, evidence, base_root, run_extra, base_tree)
    facts = Facts(
        gate,
        series.greens,
        series.reds,
        green_records,
        red_records,
        history=tuple(evidence.history.get(gate.id, ())),
        repeat=max(1, repeat),
        change=change,
        red_reach=red_reaches[0] if red_reaches else None,
        green_reach=green_reaches[0] if green_reaches else None,
        argv_missing=tuple(missing_on_base(gate, ctx.root, base_root)) if base_root else (),
        require_red=require_red,
        strict=strict,
    )
    decision = decide(facts)
    never_red = decision.rbg is not None and decision.rbg.status is Rbg.NEVER_RED
    if never_red and base_root is not None and not gate.overlay:  # the hint reads files
        facts = replace(facts, changed_on_base=tuple(changed_on_base(gate, gate.root, base_root)))
        decision = decide(facts)
    if decision.wants_mutants and mutants > 0 and base_tree is not None:
        found = _mutants(gate, ctx, base_tree, change, decision.coverage, mutants, forked)
        decision = decide(replace(facts, mutants=found))
    rbg = decision.rbg
    red = rbg.red_evidence.to_dict() if rbg is not None and rbg.red_evidence is not None else None
    made = max(len(green_records), len(red_records))  # in the order made: red 1, green 1, ...
    records = [r for i in range(made) for r in (*red_records[i : i + 1], *green_records[i : i + 1])]
    return GateResult(
        gate=gate,
        verdict=series.greens[0],
        ok=decision.ok,
        mode=decision.mode,
        cause=decision.cause,
        rbg=rbg.status if rbg is not None else None,
        rbg_reason=rbg.reason if rbg is not None else "",
        base_verdict=series.reds[0] if series.reds else None,
        red=red,
        records=evidence.encode(records),
        tree_label=evidence.tree.label,
        ledger=str(evidence.ledger.path),
        coverage=decision.coverage,
        repeat=series.to_dict(run_extra) if base_ctx is not None or repeat > 1 else None,
        discrimination=decision.discrimination,
    )


def _records(
    gate: Gate,
    series: Series,
    evidence: Evidence,
    base_root: Path | None,
    run_extra: Sequence[JsonDict],
    base_tree: BaseWorktree | None = None,
) -> tuple[tuple[Record, ...], tuple[Record, ...]]:
    """The ledger records of this session's runs (greens, reds): the facts of each run,
    its tree and inputs, and whether it was a genuine red (``decide.is_genuine_red``).
    ``run_extra``: per run, in ``Series.to_dict`` order, what the ledger keeps besides."""
    extras = list(run_extra)
    greens: list[Record] = []
    reds: list[Record] = []

    def record(run: Verdict, tree: TreeState, digests: tuple[str, str], where: Where) -> Record:
        return make_record(
            gate,
            run,
            tree=tree,
            inputs_digest=digests[1],
            where=where,
            base_ref=evidence.base_ref if where is Where.BASE else None,
            content=digests[0],
            judged=is_genuine_red(run, gate),
            extra=extras.pop(0) if extras else None,
        )

    now = (content_digest(gate, gate.root), inputs_digest(gate.root, gate.inputs))
    then = ("", "")
    if base_root is not None:
        then = (content_digest(gate, base_root), inputs_digest(base_root, gate.inputs))
    for i in range(max(len(series.greens), len(series.reds))):
        if i < len(series.reds) and base_root is not None:
            tree = evidence.base_tree(base_root, base_tree)
            reds.append(record(series.reds[i], tree, then, Where.BASE))
        if i < len(series.greens):
            greens.append(record(series.greens[i], evidence.tree, now, Where.CURRENT))
    return tuple(greens), tuple(reds)


@dataclass(frozen=True)
class Sides:
    """The contexts a gate's green and red runs use, and the change they are measured on."""

    green: RunContext
    red: RunContext | None
    base: RunContext | None
    change: Change | None


def run_sides(
    gate: Gate,
    ctx: RunContext,
    *,
    evidence: Evidence | None = None,
    base_ctx: RunContext | None = None,
    coverage: bool = False,
    base_tree: BaseWorktree | None = None,
) -> Sides:
    """Each side's context: the base's ``sys.path`` rebased onto the base worktree, and
    both measured on the change when coverage is on and the change has Python lines."""
    measure: MeasureSpec | None = None
    red_measure: MeasureSpec | None = None
    change: Change | None = None
    kind = kind_of(gate.type)
    if base_ctx is not None and base_tree is not None:
        base_ctx = replace(base_ctx, sys_path=rebase_paths(base_ctx.sys_path, base_tree))
        if coverage and evidence is not None and not kind.judgment:
            change = evidence.change_for(base_tree)
            if not change.empty and not change.error:
                measure = measure_change(change, "head")
                red_measure = replace(measure_change(change, "base"), sample=True)
    green_ctx = ctx if ctx.measure is measure else replace(ctx, measure=measure)
    red_ctx = base_ctx
    if base_ctx is not None and base_ctx.measure is not red_measure:
        red_ctx = replace(base_ctx, measure=red_measure)
    return Sides(green_ctx, red_ctx, base_ctx, change)


def base_deadline(gate: Gate, green: Verdict, ctx: RunContext) -> float | None:
    """The base run's deadline derived from the green run that answered: a few seconds
    more than the green run took (``BASE_FACTOR`` times it, at least ``BASE_MARGIN``
    seconds more), never above the gate's own timeout; None when the green run gives no
    bound (it did not run to exit) or the gate's own timeout is the smaller."""
    if green.exit_code is None or green.mode is Mode.TIMEOUT:
        return None
    derived = max(BASE_FACTOR * green.duration, green.duration + BASE_MARGIN)
    return round(derived, 3) if derived < gate_timeout(gate, ctx) else None


def run_base(gate: Gate, ctx: RunContext, green: Verdict) -> Verdict:
    """The base run of a gate, under the deadline its green run gives (``base_deadline``)."""
    derived = base_deadline(gate, green, ctx)
    if derived is None:
        return run_check(gate, ctx)
    verdict = run_check(replace(gate, timeout=derived), ctx)
    if verdict.mode is not Mode.TIMEOUT:
        return verdict
    return replace(
        verdict,
        detail=f"no answer within {derived:g}s, the base deadline derived from the green "
        f"run ({green.duration:.2f}s; the gate's own timeout is {gate_timeout(gate, ctx):g}s); "
        "the process group was killed",
    )


def _mutants(
    gate: Gate,
    ctx: RunContext,
    base_tree: BaseWorktree,
    change: Change | None,
    cov: CoverageResult | None,
    limit: int,
    forked: Mapping[str, Forked] | None = None,
) -> tuple[MutantResult, ...] | DiscriminationResult:
    """The mutants of the change a proven gate's green run executed, run against its check;
    or, when none can be tried, a result saying why (``decide`` judges them)."""
    if kind_of(gate.type).judgment:
        return DiscriminationResult(Discrimination.NONE, reason="a judgment runs no code")
    if change is None or cov is None:
        return DiscriminationResult(Discrimination.UNMEASURED, reason="the change was not measured")
    if change.error:
        return DiscriminationResult(Discrimination.UNMEASURED, reason=change.error)
    if not change.head_changed:
        return DiscriminationResult(
            Discrimination.NONE,
            reason="the change has no executable Python lines on this side (comments, "
            "docstrings, deletions or non-Python files)",
        )
    green = cov.green
    if green is None or not green.measured:
        why = green.reason if green is not None and green.reason else cov.reason
        return DiscriminationResult(
            Discrimination.UNMEASURED,
            reason=f"what the check executed is not known ({why or 'not measured'})",
        )

    def context_in(tree: BaseWorktree) -> RunContext:
        root = tree.root_in_base(gate.root)
        return replace(ctx, root=root, sys_path=rebase_paths(ctx.sys_path, tree))

    return discriminate(
        gate,
        change,
        green.executed,
        limit=limit,
        run=run_check,
        make_copy=lambda: private_copy(base_tree.repo, gate.root),
        context_in=context_in,
        forked=forked,
    )


def measure_change(change: Change, side: str) -> MeasureSpec:
    """Record only the changed files, on both trees: all the judgment needs (a base run
    executing the current tree's changed files is what contamination is), and the cheapest
    to trace. ``lines``: the changed lines the judgment asks about, of the ``side`` the run
    is on (``base`` or ``head``); ``any_of``, on the base: the statements of the functions a
    pure insertion went into, of which one is enough. Once all of them ran, an engine may
    stop tracing (files are still recorded as they start)."""
    files = sorted(change.files | change.inserted)
    lines: dict[str, tuple[int, ...]] = {}
    any_of: dict[str, tuple[int, ...]] = {}
    for rel in files:
        if side == "head":
            head = os.path.join(change.head_top, rel)
            lines[head] = tuple(sorted(change.head_changed.get(rel, frozenset())))
            continue
        base = os.path.join(change.base_top, rel)
        lines[base] = tuple(sorted(change.base_changed.get(rel, frozenset())))
        if rel in change.inserted and change.anchors.get(rel):
            any_of[base] = tuple(sorted(change.anchors[rel]))
    return MeasureSpec(
        tuple(os.path.join(top, f) for f in files for top in (change.base_top, change.head_top)),
        lines=tuple(sorted(lines.items())),
        any_of=tuple(sorted(any_of.items())),
    )


def take_measured(verdict: Verdict) -> tuple[Verdict, Measured | None]:
    """Split what a measured run executed off its verdict (which must stay JSON-able)."""
    if MEASURED_KEY not in verdict.extra:
        return verdict, None
    extra = dict(verdict.extra)
    measured = extra.pop(MEASURED_KEY)
    return replace(verdict, extra=extra), measured if isinstance(measured, Measured) else None


def _run_extra(verdict: Verdict, reach: RunReach, change: Change) -> JsonDict:
    """What a run's record keeps of its coverage; a failure that executed none of the
    change is flagged as not caused by it (DeFlaker's rule)."""
    extra: JsonDict = {"measured": reach.measured, "reached_change": reach.reached}
    if reach.measured and not verdict.ok and not reach.reached and not change.empty:
        extra["not_caused_by_change"] = True
    return extra


def rebase_paths(paths: Sequence[str], base: BaseWorktree) -> tuple[str, ...]:
    """``sys.path`` for a run on the base: entries inside the current repository point at
    their image in the base worktree, so a base run never imports the current tree."""
    return _rebased(tuple(paths), str(base.repo), str(base.path), os.getcwd())


@functools.lru_cache(maxsize=16)  # the same for every gate of a session (its base is new)
def _rebased(paths: tuple[str, ...], repo: str, base: str, cwd: str) -> tuple[str, ...]:
    top = os.path.realpath(repo)
    out: list[str] = []
    for entry in paths:
        real = os.path.realpath(entry or cwd)
        image = os.path.join(base, os.path.relpath(real, top))
        inside = real == top or real.startswith(top + os.sep)
        out.append(image if inside and os.path.exists(image) else entry)
    return tuple(out)


def result_of(gate: Gate, verdict: Verdict, *, strict: bool = False) -> GateResult:
    """The result of a gate from the verdict of its run on the current tree alone (no
    evidence: library use, a ``@verifier`` item, a worker that cannot run the gate)."""
    decision = decide(Facts(gate, (verdict,), strict=strict))
    return GateResult(
        gate=gate,
        verdict=verdict,
        ok=decision.ok,
        mode=decision.mode,
        cause=decision.cause,
        strict_failure=decision.strict_failure,
    )


def _tail(text: str, lines: int = TAIL_LINES) -> str:
    parts = text.rstrip("\n").split("\n")
    if len(parts) <= lines:
        return "\n".join(parts)
    return "\n".join([f"[... {len(parts) - lines} earlier lines]", *parts[-lines:]])


def format_report(result: GateResult) -> str:
    """The failure report of a gate: claim, argv, expected vs actual, mode, cause, tails."""
    gate, v = result.gate, result.verdict
    lines = [
        f"gate {gate.id!r} failed: mode {result.mode.value}"
        + (f", cause {result.cause.value}" if result.cause else "")
    ]
    if gate.claim:
        lines.append(f"claim:    {gate.claim}")
    if gate.argv:
        lines.append(f"command:  {shlex.join(gate.argv)}")
    if v.detail:
        lines.append(f"detail:   {v.detail}")
    if gate.argv:
        expected = " or ".join(str(c) for c in gate.expect)
        actual = "none (did not run to exit)" if v.exit_code is None else str(v.exit_code)
        passed = " (the check passed; red-before-green fails the gate)" if v.ok else ""
        lines.append(f"exit:     expected {expected}, actual {actual}{passed}")
    lines.append(f"duration: {v.duration:.2f}s")
    if result.rbg:
        lines.append(
            f"red-before-green: {result.rbg}"
            + (f" ({result.rbg_reason})" if result.rbg_reason else "")
        )
    lines.extend(_coverage_lines(result))
    if result.discrimination is not None:
        lines.extend(report_lines(result.discrimination))
    for check in v.checks:
        lines.append(
            f"  check {check.name}: {check.mode.value}"
            + (f" - {check.detail}" if check.detail else "")
        )
    for tool in v.tools:
        lines.append(f"tool:     {tool.id} = {tool.path} (sha256 {tool.sha256[:16]}...)")
    for name, text, total in (
        ("stderr", v.stderr, v.stderr_bytes),
        ("stdout", v.stdout, v.stdout_bytes),
    ):
        if text.strip():
            lines.append(f"--- {name} ({total} bytes, last {TAIL_LINES} lines) ---")
            lines.append(_tail(text))
    lines.extend(explain(result.rbg, gate, result.base_verdict, result.rbg_reason))
    return "\n".join(lines)


def _coverage_lines(result: GateResult) -> list[str]:
    """The changed lines each run executed or missed (a few, then a count)."""
    cov = result.coverage
    if cov is None:
        return []
    lines = [f"coverage: {cov.status.value}" + (f" ({cov.reason})" if cov.reason else "")]
    for name, reach, changed in (
        ("red (base)", cov.red, cov.change.base_changed),
        ("green (now)", cov.green, cov.change.head_changed),
    ):
        if reach is not None and reach.measured and changed:
            lines.append(f"  {name}: {describe_lines(reach.executed, changed)}")
        elif reach is not None and not reach.measured and reach.reason != cov.reason:
            lines.append(f"  {name}: not measured ({reach.reason})")
        elif reach is not None and not reach.measured:
            lines.append(f"  {name}: not measured")
    return lines


def _isolation(verdict: Verdict) -> str | None:
    """What contained the run (a command check's process; None where no process ran)."""
    found = verdict.extra.get(ISOLATION_KEY)
    return found if isinstance(found, str) else None
