"""Where a run was at its deadline: the stack sample a base run takes just before its kill.

Core, no pytest. The measurement (``bootstrap``) has faulthandler's watchdog dump every
thread's stack shortly before the deadline; ``parse_dump`` reads that text, and
``innermost`` and ``in_change`` tell where each thread was against the change: a thread
is in the changed code when its innermost frame of the repository's own code (the
standard library and installed packages are what the code was calling) is a base-side
changed line, or inside a function that holds one (or that a pure insertion went into).
Test code is the check's own, never the change's.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_vgate.evidence.defined import is_test_path

if TYPE_CHECKING:
    from pytest_vgate.evidence.change import Change

# faulthandler's frame line, Python 3.8 to 3.13: '  File "PATH", line N in NAME'
FRAME_ROW = re.compile(r'^  File "(?P<path>.*)", line (?P<line>\d+) in (?P<function>.*)$')
THREAD_ROWS = ("Thread ", "Current thread ", "Stack ")
INSTALLED = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)


@dataclass(frozen=True)
class Frame:
    """One frame of a sampled stack: ``path`` as the interpreter named the file (relative
    to the base worktree once ``innermost`` placed it), the line it was at, its function."""

    path: str
    line: int
    function: str

    def shown(self) -> str:
        return f"{self.path}:{self.line} in {self.function}"

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "function": self.function}


Thread = tuple[Frame, ...]  # innermost frame first, as faulthandler writes them


def parse_dump(text: str) -> tuple[Thread, ...]:
    """The threads of one faulthandler dump (a thread without a Python frame is left out;
    a row that is not a frame, such as ``  ...`` for a deeper stack, is skipped)."""
    threads: list[list[Frame]] = []
    for row in text.splitlines():
        if row.startswith(THREAD_ROWS):
            threads.append([])
            continue
        found = FRAME_ROW.match(row)
        if found and threads:
            threads[-1].append(Frame(found["path"], int(found["line"]), found["function"].strip()))
    return tuple(tuple(frames) for frames in threads if frames)


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
