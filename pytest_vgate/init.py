"""``--vgate-init BASE``: gates for the tests a change added or changed.

Pure core. The pytest layer (``plugin/init_plugin.py``) collects the changed test files with
pytest itself and hands over one ``CollectedTest`` per test; this module reads the diff
from BASE to the working tree (``changed_lines``), keeps the tests whose source (or
whose class's own code) the diff touches (``select_tests``), and writes a gates file with
one ``python -m pytest -q NODEID`` gate per test, the changed test files as overlay.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
import stat
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path, PurePosixPath

from pytest_vgate.errors import VgateError
from pytest_vgate.jsonable import Jsonable
from pytest_vgate.process import run_git
from pytest_vgate.process.regular import read_regular
from pytest_vgate.spec import GatesFileError, load_gates_file

_GIT = ("-c", "core.quotepath=off", "-c", "core.hooksPath=/dev/null")
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")
_ID_BAD = re.compile(r"[^A-Za-z0-9._-]+")
MAX_ID = 128
UNTRACKED_LIMIT = 16 << 20  # an untracked file bigger than this is no source file


class InitError(VgateError):
    """``--vgate-init`` cannot do its work; the message says what to change."""


@dataclass(frozen=True)
class CollectedTest(Jsonable):
    """One test item as pytest collected it, with the source lines it spans.

    ``start``/``end`` cover the function with its decorators (1-based, inclusive);
    ``class_start``/``class_end`` the enclosing class, when there is one.
    """

    nodeid: str
    path: str  # absolute
    name: str  # the function's name, without parameters
    cls: str | None = None
    start: int = 0
    end: int = 0
    class_start: int = 0
    class_end: int = 0
    doc: str = ""

    @property
    def base_nodeid(self) -> str:
        """The node id without parametrization: runs every parameter set of the test."""
        head, _, last = self.nodeid.rpartition("::")
        return f"{head}::{last.split('[', 1)[0]}" if head else self.nodeid


@dataclass(frozen=True)
class Change:
    """The diff from a base revision to the working tree: changed lines per file."""

    top: Path  # the repository's work tree
    base: str
    sha: str
    lines: Mapping[str, frozenset[int]] = field(default_factory=dict)  # abs path -> lines

    @property
    def files(self) -> list[str]:
        return sorted(self.lines)


def _git(args: Sequence[str], cwd: Path) -> str:
    result = run_git([*_GIT, *args], cwd=cwd, timeout=120.0)
    if result.exit_code != 0:
        problem = result.spawn_error or ("timed out" if result.timed_out else "")
        raise InitError(f"`git {' '.join(args)}` failed in {cwd}: {problem or result.stderr}")
    return result.stdout


def changed_lines(where: Path, base: str) -> Change:
    """Lines added or changed since ``base`` in the working tree (staged, unstaged and
    untracked files alike). A deletion marks the lines around it: a test that lost a line
    has changed."""
    if not base or base.startswith("-"):
        raise InitError(f"--vgate-init {base!r} is not a git revision")
    try:
        top = Path(_git(["rev-parse", "--show-toplevel"], where).strip())
    except InitError as exc:
        raise InitError(
            f"{where} is not inside a git work tree, so there is no diff to read ({exc})"
        ) from None
    try:
        sha = _git(["rev-parse", "--verify", "--quiet", f"{base}^{{commit}}"], top).strip()
    except InitError:
        sha = ""
    if not sha:
        raise InitError(
            f"--vgate-init {base!r} is not a commit in {top}; check `git rev-parse {base}` "
            "(a shallow clone may need `git fetch --deepen`)"
        )
    diff = _git(
        # Fixed prefixes and no textconv: whatever the user's diff configuration says.
        ["diff", "--no-color", "--no-ext-diff", "--no-textconv", "--src-prefix=a/",
         "--dst-prefix=b/", "-U0", sha, "--"],
        top,
    )  # fmt: skip
    lines: dict[str, set[int]] = {}
    current: set[int] | None = None
    for row in diff.splitlines():
        if row.startswith("+++ "):
            target = row[4:]
            current = None
            if target != "/dev/null" and target.startswith("b/"):
                current = lines.setdefault(str(top / target[2:]), set())
            continue
        match = _HUNK.match(row)
        if match and current is not None:
            start, count = int(match.group(1)), int(match.group(2) or "1")
            if count:
                current.update(range(start, start + count))
            else:  # pure deletion after line `start`
                current.update((start, start + 1))
    untracked = _git(["ls-files", "--others", "--exclude-standard", "-z"], top)
    for rel in filter(None, untracked.split("\0")):
        path = top / rel
        try:  # only a regular file of source size: not a symlink, a FIFO, /dev/zero
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode) or st.st_size > UNTRACKED_LIMIT:
                continue
            count = len(read_regular(path).split(b"\n"))
        except OSError:
            continue
        lines[str(path)] = set(range(1, count + 1))
    return Change(
        top=top,
        base=base,
        sha=sha,
        lines={p: frozenset(v) for p, v in lines.items() if v and Path(p).is_file()},
    )


def is_test_file(path: str, patterns: Iterable[str]) -> bool:
    """A file pytest collects as a test module by name (``python_files``)."""
    name = os.path.basename(path)
    return name.endswith(".py") and any(fnmatch(path if "/" in p else name, p) for p in patterns)


def support_files(change: Change, test_files: Iterable[str], root: Path) -> list[str]:
    """Changed files a new test may need on the base: ``conftest.py`` files, and files in a
    test file's own folder (or below it) unless that folder is the root itself."""
    top = Path(os.path.realpath(root))
    folders = {Path(f).parent for f in test_files} - {top}
    found = []
    for path in change.files:
        p = Path(path)
        if top not in Path(os.path.realpath(p)).parents:
            continue  # only files of the gates root can be carried
        if p.name == "conftest.py" or any(d == p.parent or d in p.parents for d in folders):
            found.append(path)
    return found


def select_tests(tests: Iterable[CollectedTest], change: Change) -> list[CollectedTest]:
    """The tests the diff touches, one per test function (parameter sets folded), in
    collection order. A change in a class outside its test methods (``setUp``, a class
    attribute, a helper method) touches every test of the class."""
    chosen: dict[str, CollectedTest] = {}
    methods: dict[tuple[str, str], list[tuple[int, int]]] = {}
    tests = list(tests)
    for test in tests:
        if test.cls:
            methods.setdefault((test.path, test.cls), []).append((test.start, test.end))
    for test in tests:
        changed = change.lines.get(os.path.realpath(test.path)) or change.lines.get(test.path)
        if not changed or test.base_nodeid in chosen:
            continue
        hit = any(test.start <= n <= test.end for n in changed)
        if not hit and test.cls and test.class_start:
            spans = methods.get((test.path, test.cls), [])
            hit = any(
                test.class_start <= n <= test.class_end
                and not any(a <= n <= b for a, b in spans)
                and not _blank_or_comment(test.path, n)
                for n in changed
            )
        if hit:
            chosen[test.base_nodeid] = test
    return list(chosen.values())


def _blank_or_comment(path: str, line: int) -> bool:
    lines = _file_lines(path)
    if not 0 < line <= len(lines):
        return True
    stripped = lines[line - 1].strip()
    return not stripped or stripped.startswith("#")


@functools.lru_cache(maxsize=64)
def _file_lines(path: str) -> tuple[str, ...]:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return tuple(fh)
    except OSError:
        return ()


def humanize(test: CollectedTest) -> str:
    """The claim of a test: its docstring's first paragraph (a summary wrapped over several
    lines is one sentence), else its name in words."""
    paragraph = re.split(r"\n[ \t]*\n", test.doc.strip(), maxsplit=1)[0]
    first = " ".join(paragraph.split())
    if first:
        return first
    words = re.sub(r"^test_?", "", test.name).replace("_", " ").strip() or test.name
    return f"{test.cls}: {words}" if test.cls else words


def gate_ids(tests: Sequence[CollectedTest]) -> list[str]:
    """Ids from the test names: ``Class.test`` or ``test``; the module joins them when two
    tests would share one, and a number when even that is not unique."""

    def clean(text: str) -> str:
        text = _ID_BAD.sub("-", text).strip("-.") or "test"
        if not (text[0].isalnum() or text[0] == "_"):
            text = "_" + text
        return text[:MAX_ID]

    short = [clean(f"{t.cls}.{t.name}" if t.cls else t.name) for t in tests]
    long = [clean(f"{Path(t.path).stem}.{s}") for t, s in zip(tests, short, strict=True)]
    ids: list[str] = []
    seen: set[str] = set()
    for i, name in enumerate(short):
        candidate = name if short.count(name) == 1 else long[i]
        unique, n = candidate, 2
        while unique in seen:
            suffix = f"-{n}"
            unique, n = candidate[: MAX_ID - len(suffix)] + suffix, n + 1
        seen.add(unique)
        ids.append(unique)
    return ids


def _q(text: str) -> str:
    """A YAML double-quoted scalar (JSON strings are valid YAML)."""
    return json.dumps(text, ensure_ascii=False)


def render_gates_file(
    tests: Sequence[CollectedTest],
    *,
    change: Change,
    root: Path,
    folder: Path,
    overlay: Sequence[str],
) -> str:
    """The gates file text: one gate per test, its check run from ``root``."""
    root_real = Path(os.path.realpath(root))
    rel_overlay = sorted({_rel(p, root_real) for p in overlay})
    lines = [
        f"# Written by `pytest --vgate-init {change.base}` ({change.sha[:12]}): one gate per",
        "# test added or changed since then. Prove them red on the base, green here, with:",
        f"#   pytest --vgate <this file> --vgate-base {change.base}",
    ]
    root_rel = os.path.relpath(root_real, os.path.realpath(folder))
    if root_rel != ".":
        lines.append(f"root: {_q(PurePosixPath(Path(root_rel)).as_posix())}")
    lines.append("gates:")
    for gate_id, test in zip(gate_ids(tests), tests, strict=True):
        check = shlex.join(["python", "-m", "pytest", "-q", test.base_nodeid])
        lines.append(f"  - id: {gate_id}")
        lines.append(f"    claim: {_q(humanize(test))}")
        lines.append(f"    check: {_q(check)}")
        if rel_overlay:
            lines.append("    overlay: [" + ", ".join(_q(p) for p in rel_overlay) + "]")
    return "\n".join(lines) + "\n"


def _rel(path: str, root: Path) -> str:
    real = Path(os.path.realpath(path))
    try:
        return real.relative_to(root).as_posix()
    except ValueError as exc:
        raise InitError(f"{path} is outside the gates root {root}; run from the project") from exc


def write_gates_file(path: Path, text: str, *, force: bool) -> None:
    """Write atomically after loading the text back (a file we write always loads);
    an existing file is kept unless ``force``."""
    if os.path.lexists(path) and not force:  # a dangling symlink too: never replaced
        raise InitError(
            f"{path} exists; pass --vgate-init-force to overwrite it, or "
            "--vgate-init-out to write elsewhere"
        )
    if os.path.isdir(path):
        raise InitError(f"{path} is a folder; give --vgate-init-out a file name")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".vgate-init-", suffix=".yaml", dir=path.parent)
    except OSError as exc:
        raise InitError(f"cannot write {path}: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        try:
            load_gates_file(tmp)
        except GatesFileError as exc:
            raise InitError(f"the gates file written would not load (a bug): {exc}") from exc
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # as any file the user writes, not mkstemp's 0600
        os.replace(tmp, path)
    except OSError as exc:
        raise InitError(f"cannot write {path}: {exc.strerror or exc}") from exc
    finally:
        Path(tmp).unlink(missing_ok=True)
