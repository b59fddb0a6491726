"""One file of the root, read once: its text and lines, where a term occurs, and what it
defines (Python through its AST, other languages by their definition words).

Lines count by ``"\\n"`` only: form feeds, ``\\x1c``-``\\x1e`` and ``\\u2028`` are not line
breaks here, as they are not for ``grep -n``, editors or GitHub anchors.
"""

from __future__ import annotations

import ast
import bisect
import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from pytest_vgate.citations.anchor import (
    C_LIKE,
    PLAIN_BLOCK_LINES,
    PLAIN_MAX_LINES,
    PROSE_MAX_LINES,
    PyIndex,
    block_comment_lines,
    is_blank,
    is_comment,
    parse_python,
    python_index,
    python_spans,
    same_word,
    span_anchors,
    text_words,
    whole_file,
)
from pytest_vgate.citations.entities import is_code_word, is_dotted, is_identifier
from pytest_vgate.citations.syntax import Facts, python_facts
from pytest_vgate.jsonable import StrEnum

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
class EntityHits:
    """Where one entity occurs in one file (1-based lines, sorted)."""

    matches: tuple[int, ...]  # lines containing it (word-bounded), plus its definition lines
    defs: tuple[int, ...]  # lines that define it
    spans: tuple[tuple[int, int], ...]  # Python: first decorator .. end_lineno of each def
    text_only: bool = False  # never code in this file: ``matches`` are its mentions

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
    _seen: dict[str, tuple[int, ...]] = field(default_factory=dict)
    _hits: dict[str, EntityHits] = field(default_factory=dict)

    @property
    def line_count(self) -> int:
        return len(self.lines)

    def line(self, number: int) -> str | None:
        return self.lines[number - 1] if 1 <= number <= len(self.lines) else None

    @property
    def is_python(self) -> bool:
        return self.rel.endswith((".py", ".pyi", ".pyw"))

    @functools.cached_property
    def _defs(self) -> dict[str, list[_PyDef]]:
        defs: dict[str, list[_PyDef]] = {}
        for d in _python_defs(self.text) if self.is_python else []:
            defs.setdefault(d.name, []).append(d)
        return defs

    def python_defs(self, name: str) -> list[_PyDef]:
        """Definitions whose last name is ``name`` (the AST is parsed on first use)."""
        return self._defs.get(name, [])

    @property
    def stem(self) -> str:
        return self.rel.rsplit("/", 1)[-1].split(".", 1)[0]

    @functools.cached_property
    def py_index(self) -> PyIndex | None:
        """The AST index of a Python file (None for other files and unparseable ones)."""
        return python_index(self.text) if self.is_python else None

    @functools.cached_property
    def facts(self) -> Facts | None:
        """What each line does by its AST (None for other files and unparseable ones)."""
        return python_facts(self.text) if self.is_python else None

    @functools.cached_property
    def _comments(self) -> set[int]:
        """C-like files: the comment-only lines."""
        return block_comment_lines(self.lines)

    def code_line(self, number: int) -> bool:
        """Not blank, not comment-only, not a docstring line: a line that holds code."""
        text = self.line(number)
        if text is None or is_blank(text) or is_comment(text, self.rel):
            return False
        if self.rel.endswith(C_LIKE):
            return number not in self._comments
        index = self.py_index
        return index is None or number not in index.text_lines

    def anchor(self, entity: str, start: int, end: int) -> str | None:
        """How ``entity`` stands as its own code on lines ``start``..``end``, or None."""
        if not any(self.code_line(k) for k in range(start, end + 1)):
            return None  # blank and comment lines never verify a description that names code
        index = self.py_index
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
        index = self.py_index
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
        index = self.py_index
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
            py = [d for d in self.python_defs(name) if _names(d, entity, self.stem)]
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
        if not matches and is_code_word(entity):  # a name held only in comments and strings
            return EntityHits(self.occurrences(entity), (), (), text_only=True)
        return EntityHits(tuple(sorted(matches)), tuple(sorted(defs)), tuple(sorted(spans)))


def _names(d: _PyDef, entity: str, stem: str) -> bool:
    if d.name == entity:
        return True
    return any(
        q == entity or q.endswith("." + entity) for q in (d.qualname, f"{stem}.{d.qualname}")
    )


_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")


def _accessor(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """``@name.setter`` / ``.deleter`` / ``.getter`` on ``def name``: one entity with the
    property it extends."""
    return any(
        isinstance(d, ast.Attribute)
        and d.attr in ("setter", "deleter", "getter")
        and isinstance(d.value, ast.Name)
        and d.value.id == node.name
        for d in node.decorator_list
    )


def _python_defs(text: str) -> list[_PyDef]:
    """Definitions with spans; line numbers agree with ``\\n`` counting (lone CRs blanked)."""
    tree = parse_python(text)
    if tree is None:
        return []  # not parseable Python: no spans, the text search still works
    out: list[_PyDef] = []
    # (statements, qualname prefix, assignments there are definitions: module/class level)
    stack: list[tuple[list[ast.AST], str, bool]] = [(list(tree.body), "", True)]
    while stack:
        body, prefix, top = stack.pop()
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _accessor(node):
                continue  # a property's setter or deleter: the getter is the entity
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
