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
from pytest_vgate.evidence.identity import GIT_SAFE
from pytest_vgate.gatesfile import GatesFileError, load_gates_file
from pytest_vgate.jsonable import Jsonable
from pytest_vgate.paths import relative
from pytest_vgate.process import run_git
from pytest_vgate.process.regular import read_regular

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
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
    unparametrized: str = ""  # the node id without its parameter set, as pytest named it
    file: str = ""  # absolute: the module that collected it (``path`` may be a base class's)

    @property
    def base_nodeid(self) -> str:
        """The node id without parametrization: runs every parameter set of the test (an
        id holding ``::`` or ``[`` is still one test)."""
        if self.unparametrized:
            return self.unparametrized
        head, _, last = self.nodeid.partition("[")[0].rpartition("::")
        return f"{head}::{last}" if head else self.nodeid


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
    result = run_git([*GIT_SAFE, *args], cwd=cwd, timeout=120.0)
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
    lines = {str(top / rel): rows for rel, rows in parse_diff(diff).items()}
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


_DEFINES_TEST = re.compile(r"^\s*(?:async\s+def|def|class)\s+[Tt]est")


def parse_diff(diff: str) -> dict[str, set[int]]:
    """Changed lines per path (relative to the repository) of a ``git diff -U0``.

    Hunks are read by their line counts, so an added line that itself reads ``++ x`` (shown
    as ``+++ x``) is content, never a file header. A path git quoted (tabs, quotes, bytes
    it escapes) is unquoted; the tab git ends an unquoted path with a space in is dropped.
    A pure deletion marks the lines around it (a test that lost a line changed), unless
    what it removed was a whole test: deleting a test changes none of its neighbours.
    """
    lines: dict[str, set[int]] = {}
    current: set[int] | None = None
    rows = diff.split("\n")
    i = 0
    while i < len(rows):
        row = rows[i]
        i += 1
        if row.startswith("+++ "):
            target = _diff_path(row[4:])
            current = None
            if target is not None and target.startswith("b/"):
                current = lines.setdefault(target[2:], set())
            continue
        match = _HUNK.match(row)
        if not match:
            continue
        old = int(match.group(2) or "1")
        start, count = int(match.group(3)), int(match.group(4) or "1")
        removed: list[str] = []
        seen_old = seen_new = 0
        while (seen_old < old or seen_new < count) and i < len(rows):
            body = rows[i]
            i += 1
            if body.startswith("-"):
                seen_old += 1
                removed.append(body[1:])
            elif body.startswith("+"):
                seen_new += 1
            elif not body.startswith("\\"):  # "\\ No newline at end of file"
                break
        if current is None:
            continue
        if count:
            current.update(range(start, start + count))
        elif not any(_DEFINES_TEST.match(r) for r in removed):  # a deletion after `start`
            current.update((start, start + 1))
    return lines


def _diff_path(text: str) -> str | None:
    """The path of a ``+++`` header: None for /dev/null."""
    if text.startswith('"'):
        return _c_unquote(text)
    if text.endswith("\t"):  # git adds it after a path that holds a space
        text = text[:-1]
    return None if text == "/dev/null" else text


def _c_unquote(text: str) -> str:
    """git's C-style quoted path (``"a\\tb"``, octal bytes ``\\303\\251``) as a str."""
    body = text[1:-1] if text.endswith('"') and len(text) > 1 else text[1:]
    try:  # the escapes git writes are Python's too; the octal ones are bytes (latin-1)
        unescaped = body.encode("utf-8", "surrogateescape").decode("unicode_escape")
        return unescaped.encode("latin-1").decode("utf-8", "surrogateescape")
    except UnicodeError:  # not git's quoting (a lone trailing backslash): taken as it is
        return body


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
    # A claim is text to read: a lone surrogate becomes U+FFFD, a control character a space.
    paragraph = re.sub("[\ud800-\udfff]", "\ufffd", paragraph)
    paragraph = "".join(c if c.isprintable() else " " for c in paragraph)
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


# What YAML may hold unescaped (its printable set): anything else is written as \uXXXX.
_YAML_UNPRINTABLE = re.compile(
    r"[^\t\n\r\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
)


def _q(text: str) -> str:
    """A YAML double-quoted scalar (JSON strings are valid YAML) that loads back to
    ``text`` exactly: DEL, C1 controls and lone surrogates (a path's undecodable bytes)
    are escaped, since YAML refuses them raw."""
    quoted = json.dumps(text, ensure_ascii=False)
    return _YAML_UNPRINTABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", quoted)


def render_gates_file(
    tests: Sequence[CollectedTest],
    *,
    change: Change,
    root: Path,
    folder: Path,
    overlay: Sequence[str],
    pythonpath: Sequence[str] = (),
    command: str = "",
) -> str:
    """The gates file text: one gate per test, its check run from ``root``.

    ``pythonpath``: folders (relative to ``root``) the tests import the project from, set
    as ``PYTHONPATH`` for every check, so the base worktree's runs import the base's copy
    with no install. ``command``: the line that proves the file, for its header."""
    root_real = Path(os.path.realpath(root))
    rel_overlay = sorted({_rel(p, root_real) for p in overlay})
    command = command or f"pytest --vgate <this file> --vgate-base {change.base} --vgate-only"
    lines = [
        f"# Written by `pytest --vgate-init {change.base}` ({change.sha[:12]}): one gate per",
        "# test added or changed since then. Prove them red on the base, green here, with:",
        f"#   {command}",
    ]
    root_rel = os.path.relpath(root_real, os.path.realpath(folder))
    if root_rel != ".":
        lines.append(f"root: {_q(PurePosixPath(Path(root_rel)).as_posix())}")
    if pythonpath:
        lines.append("defaults:")
        lines.append(f"  env: {{set: {{PYTHONPATH: {_q(os.pathsep.join(pythonpath))}}}}}")
    lines.append("gates:")
    for gate_id, test in zip(gate_ids(tests), tests, strict=True):
        check = shlex.join(["python", "-m", "pytest", "-q", test.base_nodeid])
        lines.append(f"  - id: {gate_id}")
        lines.append(f"    claim: {_q(humanize(test))}")
        lines.append(f"    check: {_q(check)}")
        if rel_overlay:
            lines.append("    overlay: [" + ", ".join(_q(p) for p in rel_overlay) + "]")
    return "\n".join(lines) + "\n"


def inexpressible(test: CollectedTest) -> str:
    """Why a gates file cannot name this test, or "" when it can."""
    node = test.base_nodeid
    if _YAML_UNPRINTABLE.search(node) and any("\ud800" <= c <= "\udfff" for c in node):
        return "its path is not valid UTF-8, and a gates file holds only Unicode text"
    if "::" in (test.file or test.path):
        return "its file name holds `::`, which pytest reads as the end of the path"
    if node.startswith("-"):
        return "its node id starts with `-`, which pytest reads as an option"
    return ""


DOCTEST_SUFFIXES = (".py", ".md", ".rst", ".txt")


def changed_doctests(change: Change, root: Path) -> list[tuple[str, int]]:
    """(path relative to ``root``, first line) of each doctest example the diff touches:
    a ``>>>`` line and the lines of output after it. Such examples are not test functions
    init can find by its collection, so they are named, not silently left out."""
    top = Path(os.path.realpath(root))
    found: list[tuple[str, int]] = []
    for path in change.files:
        real = Path(os.path.realpath(path))
        if not path.endswith(DOCTEST_SUFFIXES) or top not in real.parents:
            continue
        changed = change.lines[path]
        start = 0
        for number, text in enumerate(_file_lines(path), 1):
            stripped = text.strip()
            if stripped.startswith(">>>"):
                start = start or number
            elif not stripped or stripped in ('"""', "'''", "```"):
                start = 0
            if start and number in changed:
                where = (real.relative_to(top).as_posix(), start)
                if where not in found:
                    found.append(where)
    return found


def import_folders(root: Path, missing: Iterable[str]) -> list[str]:
    """Folders of ``root`` (``src`` first) that hold the modules the tests could not
    import, relative to ``root``: a project used from its checkout with no install."""
    top = Path(root)
    try:
        candidates = sorted(
            (d for d in top.iterdir() if d.is_dir() and not d.name.startswith(".")),
            key=lambda d: (d.name != "src", d.name),
        )
    except OSError:
        return []
    found: list[str] = []
    for name in dict.fromkeys(missing):
        for folder in candidates:
            if (folder / name).is_dir() or (folder / f"{name}.py").is_file():
                rel = folder.relative_to(top).as_posix()
                if rel not in found:
                    found.append(rel)
                break
    return found


def _rel(path: str, root: Path) -> str:
    """``path`` inside ``root`` (symlinks followed), or an error naming it."""
    inside = relative(path, root, resolve=True)
    if inside is None:
        raise InitError(f"{path} is outside the gates root {root}; run from the project")
    return inside


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
