"""Did a run reach the change? Judging red and green runs on what they executed.

Rules (docs/red-before-green.md, "Evidence by execution"): a red run reaches the change
when it executed base-side changed lines, or, for a file changed by pure insertion, the
function the lines went into on the base (that file, for a new definition). A green run
reaches it when it executed head-side changed lines. A red run that executed files of the
current tree (not the base worktree) is contaminated.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_vgate.evidence.change import Change, Lines, lines_to_json
from pytest_vgate.evidence.defined import is_check_module
from pytest_vgate.jsonable import StrEnum
from pytest_vgate.paths import is_test_path
from pytest_vgate.process.measure import Measured
from pytest_vgate.process.stack import INSTALLED, Frame, Thread

SHOWN_LINES = 5  # changed lines listed per run in a failure report before "and N more"


class CoverageStatus(StrEnum):
    """junit ``vgate_coverage``: how the gate's runs met the change."""

    COVERS = "covers"
    PARTIAL = "partial"
    MISSES = "misses"
    NO_CHANGE = "no-change"
    UNMEASURED = "unmeasured"


@dataclass(frozen=True)
class RunReach:
    """One run against the change: what it executed of it (paths relative to the repo).

    A base run sampled at its deadline (``evidence/stack.py``): ``sampled``, ``stack``
    (per thread, its innermost frame of the repository's code) and ``hung_in`` (the first
    of them inside the changed code); ``unsampled``: why a process took no sample.
    """

    measured: bool
    reached: bool = False
    executed: Lines = field(default_factory=dict)  # changed lines it executed
    files: frozenset[str] = frozenset()  # changed files it executed at all
    contaminated: tuple[str, ...] = ()  # current-tree files a base run executed
    reason: str = ""
    sampled: bool = False
    stack: tuple[Frame, ...] = ()
    hung_in: Frame | None = None
    unsampled: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "measured": self.measured,
            "reached": self.reached,
            "executed": lines_to_json(self.executed),
            "files": sorted(self.files),
            "contaminated": list(self.contaminated),
            "reason": self.reason,
            "sample": {
                "taken": self.sampled,
                "frames": [frame.to_dict() for frame in self.stack],
                "in_change": self.hung_in.to_dict() if self.hung_in else None,
                "missing": list(self.unsampled),
            },
        }


def _relative(files: Mapping[str, frozenset[int]], top: str) -> dict[str, frozenset[int]]:
    prefix = top.rstrip(os.sep) + os.sep
    return {p[len(prefix) :]: lines for p, lines in files.items() if p.startswith(prefix)}


def red_reach(
    change: Change, run: Measured | None, check_modules: frozenset[str] = frozenset()
) -> RunReach:
    """A base run: did it execute base-side changed lines (or an inserted-into file)?
    Files of the current tree it ran are contamination, except the gate's
    ``check_modules`` (a verifier module new in the change is the check, asked of the
    base's code)."""
    if run is None or not run.measured:
        return RunReach(False, reason=run.reason if run else "not measured")
    on_base = _relative(run.files, change.base_top)
    on_head = _relative(run.files, change.head_top)
    contaminated = tuple(
        sorted(p for p in on_head if p in change.tree and not is_check_module(p, check_modules))
    )
    executed = {p: ls & on_base.get(p, frozenset()) for p, ls in change.base_changed.items()}
    executed = {p: ls for p, ls in executed.items() if ls}
    files = frozenset(p for p in change.files if p in on_base)
    reached = bool(executed) or any(_entered(change, p, on_base) for p in change.inserted)
    stack = innermost(run.stacks, change.base_top)
    return RunReach(
        True,
        reached,
        executed,
        files,
        contaminated,
        sampled=run.sampled,
        stack=stack,
        hung_in=in_change(change, stack),
        unsampled=run.unsampled,
    )


def _entered(change: Change, path: str, on_base: Mapping[str, frozenset[int]]) -> bool:
    """A base run reached a pure insertion into ``path``: it ran the function the lines
    went into (one of its anchors), or the file for a new definition."""
    if path not in on_base:
        return False
    anchors = change.anchors.get(path)
    return not anchors or bool(anchors & on_base[path])


def green_reach(change: Change, run: Measured | None) -> RunReach:
    """A current run: did it execute head-side changed lines? A ``def`` or ``class`` line
    run at import defines a name; only the body's lines count."""
    if run is None or not run.measured:
        return RunReach(False, reason=run.reason if run else "not measured")
    on_head = _relative(run.files, change.head_top)
    executed = {
        p: (ls & on_head.get(p, frozenset())) - change.definitions.get(p, frozenset())
        for p, ls in change.head_changed.items()
    }
    executed = {p: ls for p, ls in executed.items() if ls}
    files = frozenset(p for p in change.files if p in on_head)
    return RunReach(True, bool(executed), executed, files)


@dataclass(frozen=True)
class CoverageResult:
    """A gate's runs against the change; ``to_dict`` is the JSON report's ``coverage``."""

    status: CoverageStatus
    change: Change
    red: RunReach | None
    green: RunReach | None
    reason: str = ""

    @property
    def contaminated(self) -> tuple[str, ...]:
        return self.red.contaminated if self.red else ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status.value,
            "head_changed": lines_to_json(self.change.head_changed),
            "head_executed": lines_to_json(self.green.executed) if self.green else {},
            "base_changed": lines_to_json(self.change.base_changed),
            "base_executed": lines_to_json(self.red.executed) if self.red else {},
            "inserted": sorted(self.change.inserted),
            "red": self.red.to_dict() if self.red else None,
            "green": self.green.to_dict() if self.green else None,
            "reason": self.reason,
        }


def describe_lines(executed: Lines, changed: Lines, limit: int = SHOWN_LINES) -> str:
    """ "executed a.py:2, b.py:7; missed a.py:9 and 3 more" for a failure report."""
    hit = [f"{p}:{n}" for p, ls in sorted(executed.items()) for n in sorted(ls)]
    missed = [
        f"{p}:{n}"
        for p, ls in sorted(changed.items())
        for n in sorted(ls)
        if n not in executed.get(p, frozenset())
    ]
    return f"executed {_few(hit, limit)}; missed {_few(missed, limit)}"


def _few(items: Sequence[str], limit: int) -> str:
    if not items:
        return "none"
    more = len(items) - limit
    return ", ".join(items[:limit]) + (f" and {more} more" if more > 0 else "")


def innermost(threads: Iterable[Thread], base_top: str) -> tuple[Frame, ...]:
    """Per thread, its innermost frame in the base worktree's own code (path relative to
    it); threads with none (idle workers of the standard library) are left out."""
    prefix = base_top.rstrip(os.sep) + os.sep
    found: list[Frame] = []
    for thread in threads:
        for frame in thread:
            if frame.path.startswith("<") or any(p in frame.path for p in INSTALLED):
                continue
            real = os.path.realpath(frame.path)
            if real.startswith(prefix):
                found.append(Frame(real[len(prefix) :], frame.line, frame.function))
                break
    return tuple(found)


def in_change(change: Change, frames: Sequence[Frame]) -> Frame | None:
    """The first of ``frames`` (relative, from ``innermost``) that is inside the base
    side's changed code, or None."""
    spans: dict[str, list[tuple[int, int, str]]] = {}
    for frame in frames:
        if is_test_path(frame.path):
            continue
        changed = change.base_changed.get(frame.path, frozenset())
        wanted = changed | change.anchors.get(frame.path, frozenset())
        if frame.line in changed:
            return frame
        if not wanted:
            continue
        if frame.path not in spans:
            spans[frame.path] = _functions(os.path.join(change.base_top, frame.path))
        inside = [
            (a, b)
            for a, b, name in spans[frame.path]
            if a <= frame.line <= b and name == frame.function
        ]
        if inside:
            first, last = max(inside)  # the innermost function of that name holding the line
            if any(first <= n <= last for n in wanted):
                return frame
    return None


def _functions(path: str) -> list[tuple[int, int, str]]:
    """The line spans and names of every function in the file (none if it does not
    parse); a frame's function must have the name, so a module's ``def`` line is not in it."""
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as fh:
            tree = ast.parse(fh.read())
    except (OSError, SyntaxError, ValueError):
        return []
    spans = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            spans.append((node.lineno, node.end_lineno or node.lineno, node.name))
        elif isinstance(node, ast.Lambda):
            spans.append((node.lineno, node.end_lineno or node.lineno, "<lambda>"))
    return spans
