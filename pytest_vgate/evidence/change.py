"""The change under test: executable lines that differ between the base and the current tree.

The base side is the base worktree as the red run saw it (the base revision with the
gate's overlay copied on); the head side is the current working tree (tracked files,
committed or not, and untracked files that are not ignored). Lines are mapped to
coverage.py's statements (``process/statements.py``), so a comment or a docstring is never
"changed code", and a change inside a multi-line statement is the statement's first line,
as coverage records it.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_vgate.evidence.defined import added_modules, added_names
from pytest_vgate.evidence.identity import UNTRACKED, git_paths, is_left_out, left_out_below
from pytest_vgate.evidence.insertion import insertion_anchors
from pytest_vgate.evidence.mutate import definition_lines
from pytest_vgate.paths import is_test_path
from pytest_vgate.process.statements import Lines as Parsed
from pytest_vgate.process.statements import executable_lines

PYTHON_SUFFIXES = (".py", ".pyw")
Lines = Mapping[str, frozenset[int]]  # path relative to the repository -> line numbers


@dataclass(frozen=True)
class Change:
    """The change between ``base_top`` (the base worktree) and ``head_top`` (this tree).

    ``head_changed`` / ``base_changed``: executable lines added or changed on each side.
    ``inserted``: files changed by pure insertion (executable lines added on the head,
    none removed or changed on the base, the file present on both): a red reaches such a
    change by executing the file on the base, or, when every insertion went into an
    existing function, by executing one of ``anchors`` (that function's statements on the
    base, ``evidence/insertion.py``). ``error``: the change could not be computed.
    """

    head_top: str
    base_top: str
    head_changed: Lines = field(default_factory=dict)
    base_changed: Lines = field(default_factory=dict)
    inserted: frozenset[str] = frozenset()
    anchors: Lines = field(default_factory=dict)  # inserted file -> base statements to run
    tree: frozenset[str] = frozenset()  # the current tree's files (tracked, or not ignored)
    error: str = ""
    # Head-side changed lines that only define a name (a ``def``/``class`` header and its
    # decorators): an import runs them, so running them is not executing the change.
    definitions: Lines = field(default_factory=dict)
    # Names the change defines (added functions, classes, methods, module-level
    # assignments) and the modules it adds (dotted): a base run failing for want of one
    # of them failed because the feature is missing (``evidence/defined.py``).
    defined: frozenset[str] = frozenset()

    @property
    def empty(self) -> bool:
        return not any(self.head_changed.values()) and not any(self.base_changed.values())

    @property
    def files(self) -> frozenset[str]:
        """Every file with executable changed lines on either side."""
        sides = (self.head_changed, self.base_changed)
        return frozenset(p for side in sides for p, ls in side.items() if ls)


def lines_to_json(lines: Lines) -> dict[str, list[int]]:
    return {path: sorted(ls) for path, ls in sorted(lines.items()) if ls}


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="surrogateescape")
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def _map(changed: set[int], text: str) -> frozenset[int]:
    return _map_parsed(changed, executable_lines(text))


def _map_parsed(changed: set[int], parsed: Parsed | None) -> frozenset[int]:
    if parsed is None:
        return frozenset(changed)
    statements, first = parsed
    return frozenset(first.get(n, n) for n in changed) & statements


def diff_file(
    base_text: str | None, head_text: str | None
) -> tuple[frozenset[int], frozenset[int], frozenset[int] | None]:
    """(base-side, head-side) executable lines changed between two versions of a file, and
    the anchors of a pure insertion (``evidence/insertion.py``)."""
    if base_text == head_text:
        return frozenset(), frozenset(), None
    if base_text is None:
        head = head_text or ""
        return frozenset(), _map(set(range(1, head.count("\n") + 2)), head), None
    if head_text is None:
        return _map(set(range(1, base_text.count("\n") + 2)), base_text), frozenset(), None
    a, b = base_text.splitlines(), head_text.splitlines()
    base_lines: set[int] = set()
    head_lines: set[int] = set()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag in ("replace", "delete"):
            base_lines.update(range(i1 + 1, i2 + 1))
        if tag in ("replace", "insert"):
            head_lines.update(range(j1 + 1, j2 + 1))
    # A side is parsed only when the answer needs it: its own changed lines, or, for a
    # pure insertion, the base statements around it (the anchors).
    base_side = _map(base_lines, base_text) if base_lines else frozenset()
    head_side = _map(head_lines, head_text) if head_lines else frozenset()
    anchors = None
    base_parsed = executable_lines(base_text) if head_side and not base_side else None
    if base_parsed is not None:
        anchors = insertion_anchors(base_text, head_text, base_parsed[0], head_side)
    return base_side, head_side, anchors


def compute_change(
    head_top: Path,
    base_top: Path,
    base_sha: str,
    exclude: Sequence[Path] = (),
    untracked: Sequence[str] | None = None,
) -> Change:
    """The change from the base worktree ``base_top`` (at ``base_sha``) to ``head_top``.

    ``exclude``: paths that are no part of the tree (files the session writes, the copies
    of pytest xdist puts into a worker's checkout): never changed code, never mutated.
    ``untracked``: the tree's untracked files, when the session listed them already.
    Never raises: a git failure is a Change with ``error`` set (judged as unmeasured).
    """
    head_real, base_real = os.path.realpath(head_top), os.path.realpath(base_top)
    diffed = git_paths(["diff", "--name-only", "-z", "--no-renames", base_sha, "--"], head_top, 120)
    if untracked is None:
        untracked = git_paths(UNTRACKED, head_top, 120)
    tracked = git_paths(["ls-files", "-z", "--"], head_top, 120)
    if diffed is None or untracked is None or tracked is None:
        return Change(head_real, base_real, error="git could not list the changed files")
    head_changed: dict[str, frozenset[int]] = {}
    base_changed: dict[str, frozenset[int]] = {}
    inserted: set[str] = set()
    anchors: dict[str, frozenset[int]] = {}
    definitions: dict[str, frozenset[int]] = {}
    defined: set[str] = set()
    left_out = left_out_below(exclude, head_real)
    for rel in sorted({*diffed, *untracked}):
        if not rel.endswith(PYTHON_SUFFIXES) or is_left_out(rel, left_out):
            continue
        base_text = _read(Path(base_real) / rel)
        head_text = _read(Path(head_real) / rel)
        base_lines, head_lines, found = diff_file(base_text, head_text)
        if base_lines:
            base_changed[rel] = base_lines
        if head_lines:
            head_changed[rel] = head_lines
            headers = definition_lines(head_text or "") & head_lines
            if headers:
                definitions[rel] = headers
            if not is_test_path(rel):  # a test added is not a feature: its own rules
                defined |= added_names(base_text, head_text or "")
                if base_text is None:
                    defined |= added_modules(rel)
            if not base_lines and base_text is not None:
                inserted.add(rel)
                if found:
                    anchors[rel] = found
    return Change(
        head_top=head_real,
        base_top=base_real,
        head_changed=head_changed,
        base_changed=base_changed,
        inserted=frozenset(inserted),
        anchors=anchors,
        tree=frozenset([*tracked, *untracked]),
        definitions=definitions,
        defined=frozenset(defined),
    )
