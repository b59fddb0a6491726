"""The root's files: an index built once, resolution that never leaves the root, and
each file's text, lines and Python definitions read once and shared by every citation.

Resolution refuses absolute paths, ``..`` escapes (checked lexically, before any
``stat``) and symlinks that lead out (``realpath`` + ``commonpath``) before a byte is
read. Lines count by ``"\\n"`` only: form feeds, ``\\x1c``-``\\x1e`` and ``\\u2028`` are
not line breaks here, as they are not for ``grep -n``, editors or GitHub anchors.
"""

from __future__ import annotations

import ast
import bisect
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pytest_vgate.citations.anchor import (
    C_LIKE,
    PLAIN_BLOCK_LINES,
    PLAIN_MAX_LINES,
    PROSE_MAX_LINES,
    PyIndex,
    block_comment_lines,
    is_blank,
    is_comment,
    python_index,
    python_spans,
    same_word,
    span_anchors,
    text_words,
    whole_file,
)
from pytest_vgate.citations.entities import is_dotted, is_identifier
from pytest_vgate.regular import NotRegularFile, open_regular
from pytest_vgate.strenum import StrEnum

MAX_BYTES = 5 * 1024 * 1024  # files over this are reported, not read
VCS_DIRS = frozenset({".git", ".hg", ".svn", ".bzr"})  # never read, whatever is cited
SNIFF_BYTES = 8192  # a NUL in these makes a file binary
SKIP_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", ".bzr", "node_modules", "__pycache__", ".venv", "venv",
        ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".hypothesis",
        ".eggs", ".cache", ".idea", ".vscode", ".vgate", "site-packages", ".direnv",
    }
)  # fmt: skip
_DEF_WORDS = (
    r"async\s+def|def|class|function|func|fn|struct|enum|interface|trait|type|impl|module"
    r"|const|let|var|val|sub|macro"
)


class FileState(StrEnum):
    OK = "ok"
    BINARY = "binary"
    TOO_LARGE = "too-large"
    UNREADABLE = "unreadable"


@dataclass(frozen=True)
class Resolution:
    """Where a written path leads: a file inside the root, outside, a directory, or nothing."""

    rel: str | None = None  # root-relative posix path of an existing file inside the root
    outside: bool = False
    why_outside: str = ""
    is_dir: bool = False
    special: str = ""  # "a named pipe (FIFO)", ...: exists, is not a regular file
    vcs: str = ""  # the version-control folder the path lies in (".git")


@dataclass(frozen=True)
class EntityHits:
    """Where one entity occurs in one file (1-based lines, sorted)."""

    matches: tuple[int, ...]  # lines containing it (word-bounded), plus its definition lines
    defs: tuple[int, ...]  # lines that define it
    spans: tuple[tuple[int, int], ...]  # Python: first decorator .. end_lineno of each def

    @property
    def found(self) -> bool:
        return bool(self.matches)


@dataclass(frozen=True)
class _PyDef:
    name: str
    qualname: str
    start: int  # first decorator
    line: int  # the def/class line
    end: int


_DEF_LINE_RE = re.compile(
    rf"\b(?:{_DEF_WORDS})\s+(?:\*\s*)?([A-Za-z_$][\w$]*)|^\s*([A-Za-z_$][\w$]*)\s*(?::[^=]*)?=(?!=)"
)


def _word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def find_term(text: str, term: str) -> Iterator[int]:
    """Offsets of ``term`` in ``text``, word-bounded at the ends that are word characters,
    so ``func_3`` never matches inside ``func_30`` (``str.find``: no regex per entity)."""
    if not term:
        return
    head, tail, size = _word_char(term[0]), _word_char(term[-1]), len(term)
    i = text.find(term)
    while i >= 0:
        j = i + size
        if (not head or i == 0 or not _word_char(text[i - 1])) and (
            not tail or j >= len(text) or not _word_char(text[j])
        ):
            yield i
        i = text.find(term, i + 1)


def defines(line: str, name: str) -> bool:
    """A line that defines ``name`` in most languages (or assigns it at line start)."""
    return any(name in (m.group(1), m.group(2)) for m in _DEF_LINE_RE.finditer(line))


@dataclass
class SourceFile:
    """One file's text read once; occurrences, definitions and the AST built on demand."""

    rel: str
    state: FileState
    size: int = 0
    text: str = ""
    lines: list[str] = field(default_factory=list)
    _starts: list[int] = field(default_factory=list)
    _defs: dict[str, list[_PyDef]] | None = None
    _seen: dict[str, tuple[int, ...]] = field(default_factory=dict)
    _hits: dict[str, EntityHits] = field(default_factory=dict)
    _index: PyIndex | None = None
    _indexed: bool = False
    _comments: set[int] | None = None  # C-like files: comment-only lines

    @property
    def line_count(self) -> int:
        return len(self.lines)

    def line(self, number: int) -> str | None:
        return self.lines[number - 1] if 1 <= number <= len(self.lines) else None

    def line_has(self, number: int, term: str) -> bool:
        text = self.line(number)
        return text is not None and next(find_term(text, term), None) is not None

    @property
    def is_python(self) -> bool:
        return self.rel.endswith((".py", ".pyi", ".pyw"))

    def python_defs(self, name: str) -> list[_PyDef]:
        """Definitions whose last name is ``name`` (the AST is parsed on first use)."""
        if self._defs is None:
            self._defs = {}
            for d in _python_defs(self.text) if self.is_python else []:
                self._defs.setdefault(d.name, []).append(d)
        return self._defs.get(name, [])

    @property
    def stem(self) -> str:
        return self.rel.rsplit("/", 1)[-1].split(".", 1)[0]

    def py_index(self) -> PyIndex | None:
        """The AST index of a Python file (None for other files and unparseable ones)."""
        if not self._indexed:
            self._indexed = True
            self._index = python_index(self.text) if self.is_python else None
        return self._index

    def code_line(self, number: int) -> bool:
        """Not blank, not comment-only, not a docstring line: a line that holds code."""
        text = self.line(number)
        if text is None or is_blank(text) or is_comment(text, self.rel):
            return False
        if self.rel.endswith(C_LIKE):
            if self._comments is None:
                self._comments = block_comment_lines(self.lines)
            return number not in self._comments
        index = self.py_index()
        return index is None or number not in index.text_lines

    def anchor(self, entity: str, start: int, end: int) -> str | None:
        """How ``entity`` stands as its own code on lines ``start``..``end``, or None."""
        if not any(self.code_line(k) for k in range(start, end + 1)):
            return None  # blank and comment lines never verify a description that names code
        index = self.py_index()
        if index is not None and (is_identifier(entity) or is_dotted(entity)):
            for span in python_spans(index, entity, self.stem):
                how = span_anchors(index, span, start, end)
                if how is not None:
                    return how
            return None
        width = end - start + 1
        name = entity.rsplit(".", 1)[-1]
        for n in self.occurrences(entity):
            if n < start or n > end or not self.code_line(n):
                continue
            if width <= PLAIN_MAX_LINES:
                return f"on line {n}"
            if (
                index is None
                and n - start < 3
                and width <= PLAIN_BLOCK_LINES
                and not whole_file(start, end, self.line_count)
                and defines(self.lines[n - 1], name)
            ):
                return f"defined on line {n}, which opens the cited range"
        return None

    def inside_definition(self, entity: str, start: int, end: int) -> str | None:
        """Python: ``lines a-b`` of a definition of ``entity`` enclosing the cited lines."""
        index = self.py_index()
        if index is None or not (is_identifier(entity) or is_dotted(entity)):
            return None
        for span in python_spans(index, entity, self.stem):
            if span.kind == "def" and span.start <= start and end <= span.end:
                return f"lines {span.start}-{span.end}"
        return None

    def prose_anchor(self, description_words: list[str], start: int, end: int) -> str | None:
        """A description that names no code: its words must be on the cited lines."""
        if end - start + 1 > PROSE_MAX_LINES or whole_file(start, end, self.line_count):
            return None
        held = [t for t in self.lines[start - 1 : end] if not is_blank(t)]
        if not held:
            return None
        if not description_words:
            return "the cited lines exist; the description names nothing more to check"
        found = text_words(" ".join(held))
        for word in description_words:
            for other in sorted(found):
                if same_word(word, other):
                    return f"the description's word {word!r} is on the cited lines ({other!r})"
        return None

    def occurrences(self, term: str) -> tuple[int, ...]:
        """Sorted line numbers where ``term`` occurs, word-bounded."""
        cached = self._seen.get(term)
        if cached is None:
            found: dict[int, None] = {}
            starts, count = self._starts, len(self.lines)
            for offset in find_term(self.text, term):
                number = bisect.bisect_right(starts, offset)
                if number <= count:
                    found[number] = None
            cached = self._seen[term] = tuple(found)
        return cached

    def hits(self, entity: str) -> EntityHits:
        cached = self._hits.get(entity)
        if cached is None:
            cached = self._hits[entity] = self._compute_hits(entity)
        return cached

    def _code_occurrences(self, entity: str) -> set[int]:
        """Lines where ``entity`` stands as code (AST for Python, else non-comment lines)."""
        index = self.py_index()
        if index is not None and (is_identifier(entity) or is_dotted(entity)):
            return {
                s.head if s.kind == "def" else s.start
                for s in python_spans(index, entity, self.stem)
            }
        return {n for n in self.occurrences(entity) if self.code_line(n)}

    def _compute_hits(self, entity: str) -> EntityHits:
        matches = self._code_occurrences(entity)
        spans: list[tuple[int, int]] = []
        defs: set[int] = set()
        dotted = is_dotted(entity)
        name = entity.rsplit(".", 1)[-1] if dotted else entity
        if is_identifier(name):
            stem = self.rel.rsplit("/", 1)[-1].split(".", 1)[0]
            py = [d for d in self.python_defs(name) if _names(d, entity, stem)]
            for d in py:
                spans.append((d.start, d.end))
                defs.add(d.line)
            if not py and (not dotted or not self.is_python):
                defs.update(
                    n
                    for n in self.occurrences(name)
                    if self.code_line(n) and defines(self.lines[n - 1], name)
                )
        matches |= defs
        return EntityHits(tuple(sorted(matches)), tuple(sorted(defs)), tuple(sorted(spans)))


def _names(d: _PyDef, entity: str, stem: str) -> bool:
    if d.name == entity:
        return True
    return any(
        q == entity or q.endswith("." + entity) for q in (d.qualname, f"{stem}.{d.qualname}")
    )


_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")


def _python_defs(text: str) -> list[_PyDef]:
    """Definitions with spans; line numbers agree with ``\\n`` counting (lone CRs blanked)."""
    try:
        tree = ast.parse(re.sub(r"\r(?!\n)", " ", text))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []  # not parseable Python: no spans, the text search still works
    out: list[_PyDef] = []
    # (statements, qualname prefix, assignments there are definitions: module/class level)
    stack: list[tuple[list[ast.AST], str, bool]] = [(list(tree.body), "", True)]
    while stack:
        body, prefix, top = stack.pop()
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                qual = f"{prefix}{node.name}"
                first = min([d.lineno for d in node.decorator_list] + [node.lineno])
                end = node.end_lineno or node.lineno
                out.append(_PyDef(node.name, qual, first, node.lineno, end))
                stack.append((list(node.body), qual + ".", isinstance(node, ast.ClassDef)))
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                if top:
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    end = node.end_lineno or node.lineno
                    for t in targets:
                        if isinstance(t, ast.Name):
                            out.append(_PyDef(t.id, prefix + t.id, node.lineno, node.lineno, end))
            else:
                for block in _BLOCKS:
                    sub = getattr(node, block, None)
                    if isinstance(sub, list) and sub and isinstance(sub[0], ast.AST):
                        stack.append((sub, prefix, top))
    out.sort(key=lambda d: d.start)
    return out


def split_lines(text: str) -> tuple[list[str], list[int]]:
    """Lines by ``\\n`` only (a trailing CR dropped) and each line's start offset."""
    parts = text.split("\n")
    if parts and parts[-1] == "":
        parts.pop()
    starts: list[int] = []
    pos = 0
    lines: list[str] = []
    for part in parts:
        starts.append(pos)
        pos += len(part) + 1
        lines.append(part[:-1] if part.endswith("\r") else part)
    return lines, starts


def inside(path: str, root: str) -> bool:
    """Both absolute and normalized; True when ``path`` is ``root`` or below it."""
    try:
        return os.path.commonpath([root, path]) == root
    except ValueError:
        return False


class RootFiles:
    """The root's file index and file cache for one session."""

    def __init__(self, root: Path | str, *, max_bytes: int = MAX_BYTES) -> None:
        self.root = os.path.realpath(root)
        self.max_bytes = max_bytes
        self._files: dict[str, SourceFile] = {}
        self._by_name: dict[str, list[str]] | None = None
        self._resolved: dict[tuple[str, str], Resolution] = {}
        self._doc_dirs: dict[str, str] = {}
        self.index_source = ""  # "git" or "walk", once built
        self.loads = 0  # files read from disk (each once)

    # -- the index -----------------------------------------------------------------------

    def by_basename(self, name: str) -> list[str]:
        if self._by_name is None:
            self._by_name = {}
            for rel in self._list_files():
                self._by_name.setdefault(rel.rsplit("/", 1)[-1], []).append(rel)
        return self._by_name.get(name, [])

    def _list_files(self) -> list[str]:
        listed = _git_files(self.root)
        if listed is not None:
            self.index_source = "git"
            return listed
        self.index_source = "walk"
        return list(_walk_files(self.root))

    # -- resolution ----------------------------------------------------------------------

    def resolve(self, written: str, document_dir: Path | str | None) -> Resolution:
        doc_dir = "" if document_dir is None else str(document_dir)
        key = (doc_dir, written)
        cached = self._resolved.get(key)
        if cached is None:
            cached = self._resolved[key] = self._resolve(written, doc_dir)
        return cached

    def _real_doc_dir(self, doc_dir: str) -> str:
        real = self._doc_dirs.get(doc_dir)
        if real is None:
            real = self._doc_dirs[doc_dir] = os.path.realpath(doc_dir)
        return real

    def _resolve(self, written: str, doc_dir: str) -> Resolution:
        if os.path.isabs(written) or written.startswith(("~", "\\")):
            return Resolution(outside=True, why_outside="an absolute path")
        bases = [self._real_doc_dir(doc_dir)] if doc_dir else []
        bases.append(self.root)
        escapes = links_out = 0
        is_dir = False
        special = ""
        for base in dict.fromkeys(bases):
            candidate = os.path.normpath(os.path.join(base, written))
            if not inside(candidate, self.root):
                escapes += 1  # refused lexically: nothing outside is even stat'ed
                continue
            vcs = vcs_part(os.path.relpath(candidate, self.root))
            if vcs:
                return Resolution(vcs=vcs)  # refused lexically too: nothing in it is touched
            real = os.path.realpath(candidate)
            if not inside(real, self.root):
                links_out += 1
                continue
            vcs = vcs_part(os.path.relpath(real, self.root))
            if vcs:
                return Resolution(vcs=vcs)  # a symlink into the metadata
            kind = file_kind(real)
            if kind == "file":
                return Resolution(rel=os.path.relpath(candidate, self.root).replace(os.sep, "/"))
            is_dir = is_dir or kind == "dir"
            if kind not in ("file", "dir", ""):
                special = special or kind
        if links_out:
            return Resolution(outside=True, why_outside="a symlink that leads outside the root")
        if escapes == len(dict.fromkeys(bases)):
            return Resolution(outside=True, why_outside="a path that leaves the root")
        return Resolution(is_dir=is_dir, special=special)

    def inside_file(self, rel: str) -> bool:
        """A root-relative index entry that is a regular file inside the root after symlinks."""
        real = os.path.realpath(os.path.join(self.root, rel))
        return (
            inside(real, self.root)
            and not vcs_part(rel)
            and not vcs_part(os.path.relpath(real, self.root))
            and file_kind(real) == "file"
        )

    # -- file contents -------------------------------------------------------------------

    def load(self, rel: str) -> SourceFile:
        cached = self._files.get(rel)
        if cached is None:
            cached = self._files[rel] = self._read(rel)
        return cached

    def _read(self, rel: str) -> SourceFile:
        real = os.path.realpath(os.path.join(self.root, rel))
        if not inside(real, self.root):  # defence in depth: resolve() already refused it
            return SourceFile(rel, FileState.UNREADABLE)
        self.loads += 1
        try:
            data = read_regular(real, self.max_bytes)
        except NotRegularFile:
            return SourceFile(rel, FileState.UNREADABLE)
        except TooLarge as exc:
            return SourceFile(rel, FileState.TOO_LARGE, size=exc.size)
        except OSError:
            return SourceFile(rel, FileState.UNREADABLE)
        if b"\0" in data[:SNIFF_BYTES]:
            return SourceFile(rel, FileState.BINARY, size=len(data))
        text = data.decode("utf-8", errors="replace")
        if text.startswith("\ufeff"):
            text = text[1:]
        lines, starts = split_lines(text)
        return SourceFile(rel, FileState.OK, size=len(data), text=text, lines=lines, _starts=starts)


_KINDS = (
    (stat.S_ISREG, "file"),
    (stat.S_ISDIR, "dir"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def file_kind(path: str) -> str:
    """``file``, ``dir``, a special file's description, or ``""`` when nothing is there.

    ``stat`` only: a named pipe is never opened to find out what it is.
    """
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return ""
    return next((kind for test, kind in _KINDS if test(mode)), "a special file")


def vcs_part(rel: str) -> str:
    """The version-control folder (``.git``, ...) a root-relative path lies in, or ``""``."""
    parts = rel.replace(os.sep, "/").split("/")
    return next((p for p in parts if p in VCS_DIRS), "")


class TooLarge(OSError):
    def __init__(self, size: int) -> None:
        super().__init__(f"{size} bytes")
        self.size = size


def read_regular(path: str | os.PathLike[str], max_bytes: int) -> bytes:
    """The bytes of a regular file, at most ``max_bytes`` (``TooLarge`` beyond); anything
    else is ``NotRegularFile`` and never read (``pytest_vgate.regular``: checked before
    and after a non-blocking open)."""
    fd = open_regular(os.fspath(path))
    try:
        size = os.fstat(fd).st_size
        if size > max_bytes:
            raise TooLarge(size)
        chunks: list[bytes] = []
        total = 0
        while total <= max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > max_bytes:
            raise TooLarge(total)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _git_files(root: str) -> list[str] | None:
    """Tracked plus untracked-but-not-ignored files under ``root``; None when not a git tree."""
    try:
        from pytest_vgate.process import DEFAULT_CAPTURE_LIMIT, run_git

        result = run_git(
            ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=root, timeout=60.0
        )
    except (OSError, ValueError):  # git cannot be run here: "use the walk" instead
        return None
    if result.exit_code != 0 or result.stdout_bytes > DEFAULT_CAPTURE_LIMIT:
        return None  # not a work tree, git missing, or output truncated
    return sorted({p for p in result.stdout.split("\0") if p and not vcs_part(p)})


def _walk_files(root: str) -> Iterator[str]:
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(
            d
            for d in dirs
            if d not in SKIP_DIRS
            and not d.endswith(".egg-info")
            and not os.path.exists(os.path.join(folder, d, "pyvenv.cfg"))
        )
        rel_folder = os.path.relpath(folder, root)
        for name in sorted(files):
            rel = name if rel_folder == "." else os.path.join(rel_folder, name)
            yield rel.replace(os.sep, "/")
