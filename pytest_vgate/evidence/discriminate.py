"""Does a check's answer depend on what the changed lines compute? Ask it, with mutants.

Core, no pytest. ``discriminate`` plants mutants (``evidence/mutate``) of the changed code
a passing gate's green run executed and runs its check on each, one at a time, in a private
copy of the current tree (``private_copy``: a base worktree of ``HEAD``, with its holder,
marker and clean-up): the user's files are never written. Mutants a batch already ran in
forks of the collected head session (``gate/fork.py``) come in as ``Forked`` verdicts,
judged by the same rules (``Outcome``; docs/discrimination.md).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_vgate.evidence.change import Change, Lines
from pytest_vgate.evidence.defined import check_modules, is_check_file
from pytest_vgate.evidence.identity import list_tree
from pytest_vgate.evidence.mutate import FileChange, Mutant, plant, seed_of
from pytest_vgate.gatesfile import Gate
from pytest_vgate.jsonable import Jsonable, StrEnum
from pytest_vgate.process.measure import MEASURED_KEY, Measured, MeasureSpec
from pytest_vgate.verdict import DEFAULT_CAUSE, Cause, Mode, Verdict

if TYPE_CHECKING:
    from pytest_vgate.baseline import BaseWorktree
    from pytest_vgate.context import RunContext

SHOWN_SURVIVORS = 5
NOT_FORKED = "no batch forked it (its check is not pytest on node ids, or batches are off)"


class Discrimination(StrEnum):
    """junit ``vgate_discrimination``."""

    DISCRIMINATING = "discriminating"
    UNDISCRIMINATING = "undiscriminating"
    NONE = "none"
    UNMEASURED = "unmeasured"


class Outcome(StrEnum):
    """What one mutant's run came to (the JSON report's ``mode`` of a mutant). Not killed:
    the mutated code itself raised (any check running it fails: coverage, not testing), or
    the environment gave no result, twice."""

    KILLED = "killed"
    TIMEOUT = "timeout"  # the check hung on it: killed at the gate's own deadline
    SURVIVED = "survived"
    RAISED_IN_CHANGE = "raised-in-change"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class MutantResult(Jsonable):
    """One mutant and what the check did on it."""

    path: str
    line: int
    kind: str
    operator: str
    before: str
    after: str
    function: str
    killed: bool
    mode: Outcome
    how: str = "solo"  # "fork": in a fork of the collected head session; "solo": a copy
    why_solo: str = ""
    seconds: float = 0.0  # from the fork to its answer (a forked mutant's)
    tests: float = 0.0  # of which its tests' own durations

    @property
    def shown(self) -> str:
        return f"{self.path}:{self.line}  {self.before} → {self.after}"


@dataclass(frozen=True)
class Forked:
    """A mutant as a batch ran it in forks of the collected head session: each attempt's
    verdict (a second only after a non-result), or why it must run solo instead."""

    runs: tuple[Verdict, ...] = ()
    why_solo: str = ""
    seconds: float = 0.0
    tests: float = 0.0


def mutant_key(mutant: Mutant) -> str:
    """What names a mutant across processes: its file and its whole text."""
    return hashlib.sha256(f"{mutant.path}\0{mutant.text}".encode()).hexdigest()[:24]


@dataclass(frozen=True)
class DiscriminationResult(Jsonable):
    """A gate's mutants and the verdict on them; ``to_dict`` is the JSON report's
    ``discrimination``. ``fails``: the gate must fail (undiscriminating)."""

    status: Discrimination
    killed: int = 0
    planted: int = 0
    pseudo_tested: tuple[str, ...] = ()
    mutants: tuple[MutantResult, ...] = ()
    reason: str = ""

    @property
    def fails(self) -> bool:
        return self.status is Discrimination.UNDISCRIMINATING

    @property
    def survivors(self) -> tuple[MutantResult, ...]:
        return tuple(m for m in self.mutants if m.mode is Outcome.SURVIVED)

    @property
    def score(self) -> str:
        """junit ``vgate_mutants``: ``k/m``, killed of planted."""
        return f"{self.killed}/{self.planted}"


def executed_files(
    change: Change, executed: Lines, check_modules: frozenset[str] = frozenset()
) -> list[FileChange]:
    """The changed Python files a green run executed, as ``plant`` reads them; test code
    and a verifier gate's own modules (``defined.is_check_file``) are the check itself,
    not the change it tests."""
    out = []
    for rel, lines in sorted(change.head_changed.items()):
        ran = frozenset(executed.get(rel, frozenset()))
        if not ran or is_check_file(rel, check_modules):
            continue
        try:
            text = (Path(change.head_top) / rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        out.append(FileChange(rel, text, frozenset(lines), ran))
    return out


RunCheck = Callable[["Gate", "RunContext"], Verdict]


def discriminate(
    gate: Gate,
    change: Change,
    executed: Lines,
    *,
    limit: int,
    run: RunCheck,
    make_copy: Callable[[], BaseWorktree],
    context_in: Callable[[BaseWorktree], RunContext],
    forked: Mapping[str, Forked] | None = None,
) -> tuple[MutantResult, ...] | DiscriminationResult:
    """Plant up to ``limit`` mutants of the changed code the green run ``executed`` and run
    ``gate``'s check on each in a private copy (``make_copy``; ``context_in`` gives the
    run context there), but for those ``forked`` already ran (by ``mutant_key``): their
    results, for ``gate/decide.py`` to judge. Never raises for a reason of the tree or the
    check: when no mutant can be tried, a result that says why (``none``, or
    ``unmeasured`` for what cannot be measured)."""
    files = executed_files(change, executed, check_modules(gate))
    if not files:
        return DiscriminationResult(
            Discrimination.NONE,
            reason="the check executed no changed Python code that can be mutated",
        )
    mutants = plant(files, seed=seed_of(gate.id), limit=limit)
    if not mutants:
        return DiscriminationResult(
            Discrimination.NONE,
            reason="the changed code the check executed offers no mutant (no function body, "
            "operator or constant of the documented set)",
        )
    given = forked or {}
    results = {i: r for i, m in enumerate(mutants) if (r := _forked(m, given.get(mutant_key(m))))}
    solo = {i: m for i, m in enumerate(mutants) if i not in results}
    if solo:
        why = {
            i: given.get(mutant_key(m), Forked(why_solo=NOT_FORKED)).why_solo
            for i, m in solo.items()
        }
        problem = _solo(gate, change, run, make_copy, context_in, solo, why)
        if isinstance(problem, str) and not results:
            return DiscriminationResult(Discrimination.UNMEASURED, reason=problem)
        results.update(
            problem
            if not isinstance(problem, str)
            else {
                i: _result(m, Outcome.UNKNOWN, "solo", f"{why[i]}; {problem}")
                for i, m in solo.items()
            }
        )
    return tuple(results[i] for i in sorted(results))


def _solo(
    gate: Gate,
    change: Change,
    run: RunCheck,
    make_copy: Callable[[], BaseWorktree],
    context_in: Callable[[BaseWorktree], RunContext],
    mutants: Mapping[int, Mutant],
    why: Mapping[int, str],
) -> dict[int, MutantResult] | str:
    """``mutants`` run one at a time in a private copy, or what kept them from running."""
    from pytest_vgate.baseline import BaselineError

    try:
        tree = make_copy()
    except BaselineError as exc:
        return f"no private copy of the tree: {exc}"
    try:
        base = replace(context_in(tree), measure=None, fresh=True)
        problem = _control(gate, base, change, tree, run)
        if problem:
            return problem
        return {
            i: replace(_try(gate, base, tree, m, run), why_solo=why[i]) for i, m in mutants.items()
        }
    finally:
        tree.remove()


def _forked(mutant: Mutant, forked: Forked | None) -> MutantResult | None:
    """A forked mutant's result, judged as a solo run's (None: it runs solo)."""
    if forked is None or not forked.runs:
        return None
    outcome = _outcome(forked.runs[0], mutant)
    if outcome is Outcome.UNKNOWN and len(forked.runs) > 1:
        outcome = _outcome(forked.runs[1], mutant)
    found = _result(mutant, outcome, "fork")
    return replace(found, seconds=round(forked.seconds, 6), tests=round(forked.tests, 6))


_OF_THE_MUTANT = ("path", "line", "kind", "operator", "before", "after", "function")


def _result(mutant: Mutant, outcome: Outcome, how: str, why_solo: str = "") -> MutantResult:
    return MutantResult(
        **{name: getattr(mutant, name) for name in _OF_THE_MUTANT},
        killed=outcome in (Outcome.KILLED, Outcome.TIMEOUT),
        mode=outcome,
        how=how,
        why_solo=why_solo,
    )


def _control(gate: Gate, ctx: RunContext, change: Change, tree: BaseWorktree, run: RunCheck) -> str:
    """Run the unmutated copy once: the check must pass there, and run the copy's files
    (not the user's tree through an editable install or a PYTHONPATH). "" when it does."""
    files = sorted(change.head_changed)
    copy_files = [os.path.realpath(tree.path / rel) for rel in files]
    head_files = [os.path.join(change.head_top, rel) for rel in files]
    measure = MeasureSpec((*copy_files, *head_files))
    verdict = run(gate, replace(ctx, measure=measure))
    measured = verdict.extra.get(MEASURED_KEY)
    if not verdict.ok:
        return (
            f"the check does not pass on an unmutated private copy of the tree (mode "
            f"{verdict.mode.value}, exit {verdict.exit_code}): it needs files git does not "
            "track (a build product, an ignored file), so mutants cannot be tried"
        )
    if isinstance(measured, Measured) and measured.measured:
        ran_copy = any(f in measured.files for f in copy_files)
        ran_head = any(os.path.realpath(f) in measured.files for f in head_files)
        if ran_head and not ran_copy:
            return (
                "on a private copy of the tree the check still ran the current tree's files "
                "(an editable install, a PYTHONPATH or a conftest pointing at it), so mutants "
                "in the copy would not be seen"
            )
    return ""


def _try(
    gate: Gate, ctx: RunContext, tree: BaseWorktree, mutant: Mutant, run: RunCheck
) -> MutantResult:
    """Plant one mutant in the copy, run the check (twice on a non-result), restore."""
    target = tree.path / mutant.path
    original = target.read_bytes()
    try:
        target.write_text(mutant.text, encoding="utf-8")
        outcome = _outcome(run(gate, ctx), mutant)
        if outcome is Outcome.UNKNOWN:
            outcome = _outcome(run(gate, ctx), mutant)
    finally:
        target.write_bytes(original)
    return _result(mutant, outcome, "solo")


def _outcome(verdict: Verdict, mutant: Mutant) -> Outcome:
    if verdict.ok:
        return Outcome.SURVIVED
    if verdict.mode is Mode.TIMEOUT:
        return Outcome.TIMEOUT
    if DEFAULT_CAUSE.get(verdict.mode) is Cause.ENVIRONMENT or verdict.cause is Cause.ENVIRONMENT:
        return Outcome.UNKNOWN
    if raised_in(verdict.stdout + "\n" + verdict.stderr, mutant.path, mutant.span):
        return Outcome.RAISED_IN_CHANGE
    return Outcome.KILLED


# Where an exception was raised: a traceback frame (``File "x.py", line 3``) followed by
# the exception's line, or pytest's ``x.py:3: ZeroDivisionError`` under its source excerpt.
_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+)')
_EXCEPTION = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Warning)|[A-Z]\w+)(?::|$)")
_PYTEST_SITE = re.compile(r"^(\S+?\.pyw?):(\d+): ([A-Za-z_][\w.]*)$")


def raised_in(output: str, path: str, span: tuple[int, int]) -> bool:
    """Whether every exception the output reports was raised inside ``span`` of ``path``,
    and none of them is an ``AssertionError`` (a check's own failure is a kill)."""
    sites: list[tuple[str, int, str]] = []
    frame: tuple[str, int] | None = None
    for line in output.splitlines():
        hit = _FRAME.match(line)
        if hit:
            frame = (hit.group(1), int(hit.group(2)))
            continue
        site = _PYTEST_SITE.match(line.strip())
        if site:
            sites.append((site.group(1), int(site.group(2)), site.group(3)))
            frame = None
            continue
        if frame is not None and not line.startswith(" "):
            error = _EXCEPTION.match(line)
            if error:
                sites.append((*frame, error.group(1)))
                frame = None
    if not sites:
        return False
    return all(
        _same_file(where, path) and span[0] <= line <= span[1] and "AssertionError" not in name
        for where, line, name in sites
    )


def _same_file(printed: str, rel: str) -> bool:
    a = os.path.normpath(printed).replace(os.sep, "/")
    b = os.path.normpath(rel).replace(os.sep, "/")
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def report_lines(result: DiscriminationResult) -> list[str]:
    """What a failure report says of the mutants: the verdict, pseudo-tested functions and
    the surviving mutants as ``path:line  before → after``."""
    head = f"discrimination: {result.status.value} ({result.score} mutants killed)"
    lines = [head + (f": {result.reason}" if result.reason else "")]
    if result.pseudo_tested and not result.fails:
        lines.append(f"  pseudo-tested: {', '.join(result.pseudo_tested)}")
    survivors = result.survivors
    for mutant in survivors[:SHOWN_SURVIVORS]:
        lines.append(f"  survived {mutant.shown}")
    if len(survivors) > SHOWN_SURVIVORS:
        lines.append(f"  and {len(survivors) - SHOWN_SURVIVORS} more surviving mutants")
    return lines


def private_copy(repo_top: Path, root: Path) -> BaseWorktree:
    """A private copy of the current tree: a worktree of ``HEAD`` (this plugin's own, removed
    with the base worktree's clean-up) with the files that differ from it copied on."""
    from pytest_vgate.baseline import BaselineError, BaseWorktree

    top = Path(os.path.realpath(repo_top))
    listing = list_tree(top, top=top, commit="HEAD")
    if listing is None:
        raise BaselineError("git could not list the files that differ from HEAD")
    paths = sorted({*listing.changed, *listing.untracked})
    present = [p for p in paths if os.path.lexists(top / p)]
    root_real = os.path.realpath(root)
    overlay = [os.path.relpath(top / p, root_real) for p in present]
    root_rel = os.path.relpath(root_real, top)
    tree = BaseWorktree.create(top, "HEAD", overlay, root_rel=root_rel, uncommitted=paths)
    for gone in sorted(set(paths) - set(present)):  # deleted in the work tree: here too
        victim = tree.path / gone
        inside = os.path.realpath(victim.parent).startswith(os.path.realpath(tree.path))
        if inside and (victim.is_file() or victim.is_symlink()):
            victim.unlink()
    return tree
