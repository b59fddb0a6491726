"""Red before green for one gate: records of this session's runs, classified with history.

Pure core. ``Evidence`` is what one process knows about a gates root for the whole
session (its tree, the ledger's earlier records bound to this repository, the base trees
and the change against each); ``prove`` turns a gate's runs (``Series``), and what they
executed (``CoverageResult``), into ledger records and an ``RbgResult``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_vgate.causes import UNITTEST_NOT_RED
from pytest_vgate.evidence import (
    Ledger,
    RbgResult,
    Record,
    TreeState,
    classify,
    inputs_digest,
    make_record,
    tree_state,
)
from pytest_vgate.evidence.change import Change, compute_change
from pytest_vgate.evidence.defined import missing_defined
from pytest_vgate.evidence.identity import content_digest, known_commits, named_files
from pytest_vgate.evidence.reach import CoverageResult, CoverageStatus
from pytest_vgate.evidence.record import Where, output_of
from pytest_vgate.evidence.why import BASE_RAN_ITS_OWN
from pytest_vgate.gatesfile import Gate, RedPolicy
from pytest_vgate.process.regular import read_regular
from pytest_vgate.verdict import Cause, Mode, Rbg, Verdict

if TYPE_CHECKING:
    from pytest_vgate.baseline import BaseWorktree


@dataclass
class Evidence:
    """Session-wide evidence of one gates root, loaded once per process."""

    root: Path
    ledger: Ledger
    tree: TreeState
    history: dict[str, list[Record]] = field(default_factory=dict)  # by gate id
    warnings: list[str] = field(default_factory=list)
    base_ref: str | None = None
    base_trees: dict[str, TreeState] = field(default_factory=dict)  # worktree path -> state
    changes: dict[str, Change] = field(default_factory=dict)  # worktree path -> change
    # Paths no part of the tree: the session's own files, xdist's copies of pytest.
    not_the_tree: tuple[Path, ...] = ()
    # In the process that writes the ledger (``remember_built``): each record's JSON object
    # as ``encode`` made it, by id, with the record (see ``record_of``).
    remember_built: bool = False
    built: dict[int, tuple[dict[str, Any], Record]] = field(default_factory=dict, repr=False)

    @classmethod
    def load(
        cls,
        root: Path,
        ledger_path: Path | None,
        base_ref: str | None,
        tree: TreeState | None = None,
        exclude: Sequence[Path] = (),
    ) -> Evidence:
        """Read the ledger; ``tree`` is the controller's view of the tree, when there is one.

        ``exclude``: files the session writes itself (junit, JSON report), which never
        change the tree's identity. Records not bound to this repository are dropped.
        """
        ledger = Ledger(ledger_path) if ledger_path is not None else Ledger.default(root)
        records, warnings = ledger.read()
        not_the_tree = (ledger.file, *exclude)
        if tree is None:
            tree = tree_state(root, exclude=not_the_tree)
        kept, dropped = bind_records(records, tree, root)
        history: dict[str, list[Record]] = {}
        for record in kept:
            history.setdefault(record.gate_id, []).append(record)
        return cls(
            root=root,
            ledger=ledger,
            tree=tree,
            history=history,
            warnings=[*warnings, *(ledger.warning(text) for text in dropped)],
            base_ref=base_ref,
            not_the_tree=not_the_tree,
        )

    def encode(self, records: Sequence[Record]) -> tuple[dict[str, Any], ...]:
        """The records' JSON objects, as a gate's payload carries them to the ledger's
        writer; in that process each is remembered with its record (``record_of``)."""
        out = tuple(record.to_dict() for record in records)
        if self.remember_built:
            for data, record in zip(out, records, strict=True):
                self.built[id(data)] = (data, record)
        return out

    def record_of(self, data: object) -> Record:
        """The record a payload's JSON object stands for. One ``encode`` made in this
        process is taken back as the record it was made from (whatever happened to the
        payload's copy since: the ledger keeps what was observed); any other (a worker's,
        a merged shard's) is decoded, strictly (``JsonShapeError`` if it does not fit)."""
        hit = self.built.pop(id(data), None)
        if hit is not None and hit[0] is data:
            return hit[1]
        return Record.from_dict(data)

    def base_tree(self, base_root: Path) -> TreeState:
        key = str(base_root)
        if key not in self.base_trees:
            self.base_trees[key] = tree_state(base_root)
        return self.base_trees[key]

    def change_for(self, base: BaseWorktree) -> Change:
        """The change from this base worktree to the current tree, computed once."""
        key = str(base.path)
        if key not in self.changes:
            self.changes[key] = compute_change(
                base.repo, base.path, base.sha, exclude=self.not_the_tree
            )
        return self.changes[key]


def bind_records(
    records: Iterable[Record], tree: TreeState, root: Path
) -> tuple[list[Record], list[str]]:
    """Keep the records of this repository that name a commit it has; say what was dropped.

    Outside git nothing is dropped (the ledger cannot prove anything there anyway).
    """
    records = list(records)
    if not tree.is_git or not records:
        return records, []
    # A shallow clone cannot name its root (identity None, here or in the record): then a
    # record is bound by the commit it names, which must exist here.
    ours = [r for r in records if None in (r.tree.repo, tree.repo) or r.tree.repo == tree.repo]
    foreign = len(records) - len(ours)
    known = known_commits(root, (r.tree.commit or "" for r in ours))
    if known is None:
        return [], [f"git could not check the {len(records)} records' commits; none is used"]
    kept = [r for r in ours if r.tree.commit in known]
    unknown = [r for r in ours if r.tree.commit not in known]
    notes = []
    if foreign:
        notes.append(
            f"ignored {foreign} record(s) not bound to this repository (root commit "
            f"{(tree.repo or '?')[:12]}): copied from another repository, or written by hand"
        )
    if unknown:
        shown = ", ".join(sorted({(r.tree.commit or "none")[:12] for r in unknown})[:3])
        notes.append(
            f"ignored {len(unknown)} record(s) naming a commit this repository does not have "
            f"({shown})"
        )
    return kept, notes


def signature(verdict: Verdict) -> tuple[str, int | None]:
    """What must repeat for runs to agree: the mode and the exit code."""
    return verdict.mode.value, verdict.exit_code


@dataclass(frozen=True)
class Series:
    """A gate's runs in one session: green runs on this tree, red runs on the base,
    interleaved (red 1, green 1, red 2, ...). ``repeat``: the runs asked for of each."""

    greens: tuple[Verdict, ...]
    reds: tuple[Verdict, ...] = ()
    repeat: int = 1

    @property
    def flaky(self) -> bool:
        return any(len({signature(v) for v in runs}) > 1 for runs in (self.greens, self.reds))

    @property
    def stopped_early(self) -> bool:
        return len(self.greens) < self.repeat

    def to_dict(self, reached: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
        runs: list[dict[str, Any]] = []
        for i in range(max(len(self.greens), len(self.reds))):
            for where, seq in ((Where.BASE, self.reds), (Where.CURRENT, self.greens)):
                if i < len(seq):
                    v = seq[i]
                    facts = {"mode": v.mode.value, "exit_code": v.exit_code}
                    runs.append({"where": where.value, "run": i + 1, **facts})
        for run, extra in zip(runs, reached, strict=False):
            run.update(extra)
        return {
            "n": self.repeat,
            "runs": runs,
            "stopped_early": self.stopped_early,
            # A check that passes or fails at random shows one fixed pattern of 2N runs
            # (red N times, green N times) with probability at most 4^-N.
            "bound": 4.0**-self.repeat,
        }


def missing_on_base(gate: Gate, root: Path, base_root: Path) -> list[str]:
    """Files the check names that exist in the current tree but not on the base."""
    return [rel for rel in named_files(gate, root) if not (base_root / rel).exists()]


def changed_on_base(gate: Gate, root: Path, base_root: Path) -> list[str]:
    """Files the check names whose bytes on the base differ from the current tree's."""
    changed = []
    for rel in named_files(gate, root):
        try:
            if read_regular(root / rel) != read_regular(base_root / rel):
                changed.append(rel)
        except OSError:  # a folder, a special file, missing on the base: not this rule's
            continue
    return changed


def _overlay_hint(gate: Gate, result: RbgResult, base_root: Path) -> RbgResult:
    """A never-red gate without overlay whose test file the change edits: the base ran the
    old test (more-itertools' `-k SlicedTests`: 5 tests passed there, 6 here)."""
    if result.status is not Rbg.NEVER_RED or gate.overlay:
        return result
    changed = changed_on_base(gate, gate.root, base_root)
    if not changed:
        return result
    names = ", ".join(changed[:5])
    return replace(
        result,
        reason=(
            f"{result.reason}; {BASE_RAN_ITS_OWN} {names}, which differs here: if the change "
            f"added or edited the test, carry it onto the base with `overlay: [{changed[0]}]`"
        ),
    )


def prove(
    gate: Gate,
    series: Series,
    evidence: Evidence,
    *,
    base_root: Path | None = None,
    require_red: bool = False,
    coverage: CoverageResult | None = None,
    argv_missing: Sequence[str] = (),
    run_extra: Sequence[dict[str, Any]] = (),
) -> tuple[RbgResult, Sequence[Record]]:
    """Classify the gate and return the records of this session's runs for the ledger.

    ``run_extra``: per run, in ``Series.to_dict`` order, what the ledger keeps besides the
    facts (whether it reached the change).
    """
    now_content = content_digest(gate, gate.root)
    now_inputs = inputs_digest(gate.root, gate.inputs)
    extras = list(run_extra)
    records: list[Record] = []
    greens: list[Record] = []
    reds: list[Record] = []
    base_content = base_inputs = ""
    if base_root is not None:
        base_content = content_digest(gate, base_root)
        base_inputs = inputs_digest(base_root, gate.inputs)
    for i in range(max(len(series.greens), len(series.reds))):
        if i < len(series.reds) and base_root is not None:
            red = make_record(
                gate,
                series.reds[i],
                tree=evidence.base_tree(base_root),
                inputs_digest=base_inputs,
                where=Where.BASE,
                base_ref=evidence.base_ref,
                content=base_content,
                extra=extras.pop(0) if extras else None,
            )
            reds.append(red)
            records.append(red)
        if i < len(series.greens):
            green = make_record(
                gate,
                series.greens[i],
                tree=evidence.tree,
                inputs_digest=now_inputs,
                where=Where.CURRENT,
                content=now_content,
                extra=extras.pop(0) if extras else None,
            )
            greens.append(green)
            records.append(green)
    now, then = greens[0], reds[0] if reds else None
    if series.flaky and not _consistently_failing(series):
        return _flaky(series), records
    result = classify(
        gate,
        now,
        base=then,
        history=evidence.history.get(gate.id, ()),
        require_red=require_red,
    )
    if then is not None:
        result = judge_execution(gate, result, coverage, argv_missing)
        result = _missing_feature(result, series, then, coverage)
        result = _fixed_hang(result, series, then, coverage)
        result = _green_reached(result, coverage)
        if base_root is not None:
            result = _overlay_hint(gate, result, base_root)
        if not require_red:
            result = _relaxed(result)
    return result, records


def _missing_feature(
    result: RbgResult, series: Series, red: Record, coverage: CoverageResult | None
) -> RbgResult:
    """A weak red whose base run failed for want of a name the change defines is genuine:
    the feature is missing there (``evidence/defined.py``)."""
    if result.status is not Rbg.WEAK_RED or coverage is None or coverage.contaminated:
        return result
    if red.red_reason == UNITTEST_NOT_RED:  # unittest could not load the test it was named
        return result
    base = series.reds[0] if series.reds else None
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
    return RbgResult(
        Rbg.PROVEN,
        ok=True,
        reason=f"red on the base because the feature is missing there ({line}), green now",
        red_evidence=red,
    )


def _fixed_hang(
    result: RbgResult, series: Series, red: Record, coverage: CoverageResult | None
) -> RbgResult:
    """A base run killed at its deadline while it was executing the changed code is a
    genuine red: the change removed a hang. Where it was comes from the stack sample taken
    just before the kill (``evidence/stack.py``): a thread inside the changed code proves
    it; a sample showing it elsewhere (the test's own wait) keeps the timeout a non-result.
    Without a sample, the changed lines it had executed stand in, and the reason says so."""
    if result.status is not Rbg.WEAK_RED or coverage is None or coverage.red is None:
        return result
    base = series.reds[0] if series.reds else None
    if base is None or base.mode is not Mode.TIMEOUT or coverage.contaminated:
        return result
    if any(run.mode is not Mode.TIMEOUT for run in series.reds):
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
    return RbgResult(
        Rbg.PROVEN,
        ok=True,
        reason=(
            f"red on the base because it hung in the changed code: its run was still "
            f"executing it ({where}) when its deadline killed it, and the check passes now: "
            "the change removed a hang"
        ),
        red_evidence=red,
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
    return RbgResult(
        Rbg.DISCONNECTED,
        ok=False,
        reason=(
            "red on the base, but the green run executed none of the changed code (a `def` "
            "or `class` line run at import only defines a name): its pass does not depend "
            "on what the change computes"
        ),
        mode=Mode.FAIL,
        cause=Cause.BROKEN_TEST,
    )


def _consistently_failing(series: Series) -> bool:
    """Every green run failed alike: the check fails now, which keeps its own verdict."""
    return len({signature(v) for v in series.greens}) == 1 and not series.greens[0].ok


def _flaky(series: Series) -> RbgResult:
    def pattern(runs: Sequence[Verdict]) -> str:
        return ", ".join("pass" if v.ok else f"{v.mode.value} {v.exit_code}" for v in runs)

    parts = [f"green: {pattern(series.greens)}"]
    if series.reds:
        parts.insert(0, f"red on the base: {pattern(series.reds)}")
    early = " (stopped at the first disagreement)" if series.stopped_early else ""
    return RbgResult(
        Rbg.FLAKY,
        ok=False,
        reason=f"repeated runs disagree{early}: {'; '.join(parts)}; a flaky check proves nothing",
        mode=Mode.FAIL,
        cause=Cause.BROKEN_TEST,
    )


def judge_execution(
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
        return RbgResult(
            Rbg.WEAK_RED,
            ok=False,
            reason=(
                f"the base run is contaminated: it executed files of the current tree "
                f"({files}{f' and {more} more' if more > 0 else ''} from {top}) instead of "
                "the base worktree (a PYTHONPATH, an editable install or a conftest pointing "
                "at the current tree); it is not counted as red"
            ),
            mode=Mode.FAIL,
            cause=Cause.BROKEN_TEST,
        )
    if result.status is not Rbg.PROVEN:
        return result
    status = coverage.status if coverage is not None else None
    if status is None or status is CoverageStatus.UNMEASURED:
        if argv_missing:
            names = ", ".join(argv_missing[:5])
            return RbgResult(
                Rbg.WEAK_RED,
                ok=False,
                reason=(
                    f"the check names {names}, which exist now but not on the base (carry "
                    "them with `overlay:`); its red ran without them"
                ),
                mode=Mode.FAIL,
                cause=Cause.BROKEN_TEST,
            )
        if coverage is None:
            return result
        return replace(
            result,
            reason=(
                f"{result.reason}; coverage unmeasured ({coverage.reason}): judged on exit codes"
            ),
        )
    if status is CoverageStatus.NO_CHANGE:
        return replace(result, reason=f"{result.reason}; {coverage.reason}" if coverage else "")
    assert coverage is not None
    red_reached = coverage.red is not None and coverage.red.reached
    green_reached = coverage.green is not None and coverage.green.reached
    if not red_reached and not green_reached:
        return RbgResult(
            Rbg.DISCONNECTED,
            ok=False,
            reason=(
                "red on the base and green now, but neither run executed the change: "
                "something other than the change flipped it"
            ),
            mode=Mode.FAIL,
            cause=Cause.BROKEN_TEST,
        )
    if not red_reached:
        return RbgResult(
            Rbg.WEAK_RED,
            ok=False,
            reason=(
                "the red run never reached the change: it executed none of the base-side "
                "changed lines (nor, for a pure insertion, the function it went into, or the "
                "file for a new definition); e.g. the test did not "
                "exist on the base (carry it with `overlay:`)"
            ),
            mode=Mode.FAIL,
            cause=Cause.BROKEN_TEST,
        )
    return replace(result, reason=f"{result.reason}; the runs executed the change ({status.value})")


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
