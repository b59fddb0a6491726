"""What a page about a gate shows that its payload does not carry: the change's diff.

On the controller, while the base worktrees exist, each gate entry with a coverage map
gains ``diff``: the unified hunks of the files its map names, from the base revision to the
current tree, so that ``merge`` needs no checkout to show the changed lines themselves.
Bounded (``MAX_FILES``, ``MAX_HUNK_LINES``, clipped lines); never raises.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Mapping, MutableMapping
from pathlib import Path
from typing import Any

from pytest_vgate.clip import clip
from pytest_vgate.evidence.identity import GIT_SAFE
from pytest_vgate.process import run_git

CONTEXT = 3
MAX_FILES = 50  # files per gate's diff
MAX_HUNK_LINES = 400  # diff lines per file; the rest is said, not shown
LINE_LIMIT = 400  # characters per shown line
COVERAGE_MAPS = ("head_changed", "base_changed", "head_executed", "base_executed")


def changed_paths(coverage: object) -> list[str]:
    """The files a gate's coverage maps name (changed or executed), in name order."""
    if not isinstance(coverage, Mapping):
        return []
    found: set[str] = set()
    for key in COVERAGE_MAPS[:2]:
        side = coverage.get(key)
        if isinstance(side, Mapping):
            found.update(str(path) for path, lines in side.items() if lines)
    return sorted(found)


class ChangeDiff:
    """The diff from one base commit to the working tree of one repository, per file,
    computed once (many gates name the same files)."""

    def __init__(self, top: Path, sha: str) -> None:
        self.top = Path(top)
        self.sha = sha
        self._files: dict[str, dict[str, Any]] = {}

    def file(self, rel: str) -> dict[str, Any]:
        if rel not in self._files:
            self._files[rel] = file_diff(rel, self._base_text(rel), self._head_text(rel))
        return self._files[rel]

    def _base_text(self, rel: str) -> str | None:
        result = run_git([*GIT_SAFE, "show", f"{self.sha}:{rel}"], cwd=self.top, timeout=60.0)
        return result.stdout if result.exit_code == 0 else None

    def _head_text(self, rel: str) -> str | None:
        path = self.top / rel
        real, top = os.path.realpath(path), os.path.realpath(self.top)
        if os.path.commonpath([real, top]) != top:
            return None  # nothing outside the repository is read
        try:
            return path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None


def file_diff(rel: str, base_text: str | None, head_text: str | None) -> dict[str, Any]:
    """``{"path", "status", "hunks": [{"base_start", "head_start", "lines": [{"op", "base",
    "head", "text"}]}], "cut"}``; ``op`` is `` `` (context), ``-`` (base only) or ``+``."""
    status = "added" if base_text is None else "deleted" if head_text is None else "modified"
    a = (base_text or "").splitlines()
    b = (head_text or "").splitlines()
    hunks: list[dict[str, Any]] = []
    shown = cut = 0
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for group in matcher.get_grouped_opcodes(CONTEXT):
        lines: list[dict[str, Any]] = []
        for tag, i1, i2, j1, j2 in group:
            rows: list[tuple[str, int | None, int | None, str]]
            if tag == "equal":
                rows = [(" ", i + 1, j1 + i - i1 + 1, a[i]) for i in range(i1, i2)]
            else:
                rows = [("-", i + 1, None, a[i]) for i in range(i1, i2)]
                rows += [("+", None, j + 1, b[j]) for j in range(j1, j2)]
            for op, base_no, head_no, text in rows:
                if shown >= MAX_HUNK_LINES:
                    cut += 1
                    continue
                shown += 1
                lines.append(
                    {"op": op, "base": base_no, "head": head_no, "text": clip(text, LINE_LIMIT)}
                )
        if lines:
            first = group[0]
            hunks.append({"base_start": first[1] + 1, "head_start": first[3] + 1, "lines": lines})
    return {"path": rel, "status": status, "hunks": hunks, "cut": cut}


def gate_diff(coverage: object, diff: ChangeDiff) -> list[dict[str, Any]]:
    """The diff of the files a gate's coverage names (at most ``MAX_FILES``)."""
    return [diff.file(rel) for rel in changed_paths(coverage)[:MAX_FILES]]


def add_diffs(
    entries: Iterable[MutableMapping[str, Any]], diff_for: Mapping[str, ChangeDiff]
) -> None:
    """Give each gate entry with a coverage map its ``diff``; ``diff_for`` maps a gate's
    ``source`` gates file to its repository's diff (a gate whose file is not there gets the
    only diff when there is one)."""
    only = next(iter(diff_for.values())) if len(diff_for) == 1 else None
    for entry in entries:
        if not changed_paths(entry.get("coverage")):
            continue
        source = str(entry.get("source") or "").rpartition(":")[0]
        diff = diff_for.get(source, only)
        if diff is not None:
            entry["diff"] = gate_diff(entry.get("coverage"), diff)
