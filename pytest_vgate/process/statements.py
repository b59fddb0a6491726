"""Which lines of a Python source are statements, and where each line's statement starts:
coverage.py's answers (``PythonParser`` without exclusions), from the AST and the bytecode.

coverage.py tokenizes the whole source in Python to find its logical lines, which was most
of a session's start on a large changed file before 3.12. Here the statements' own spans
give them, and only a compound statement's header is read as text, from its last part to
its colon. A source with a carriage return, a backslash ending a comment's line or a
header this scan does not read goes to coverage.py's parser. ``tests/test_statements.py``
holds both answers equal, line for line, over real files.
"""

from __future__ import annotations

import ast
import functools
import warnings
from collections.abc import Mapping
from types import CodeType
from typing import Protocol

# (statements, line -> first line of its statement for the lines of multi-line
# statements; any other line is its own first line)
Lines = tuple[frozenset[int], Mapping[int, int]]
_DOC_OWNERS = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")
# Compound statements: a header up to a colon, then bodies.
_HEADED = tuple(
    getattr(ast, name)
    for name in (
        *("FunctionDef", "AsyncFunctionDef", "ClassDef", "If", "While", "For", "AsyncFor"),
        *("With", "AsyncWith", "Try", "TryStar", "Match"),
    )
    if hasattr(ast, name)
)
_NOT_HEADER = frozenset({*_BODIES, "decorator_list"})
_BETWEEN = frozenset(" \t\f()[],/*\\")  # what may stand between a header's last part and ':'


class _Located(Protocol):
    """An AST node with a place in the source (statements, expressions, patterns...)."""

    lineno: int
    col_offset: int
    end_lineno: int | None
    end_col_offset: int | None


class _Unknown(Exception):
    """A header this scan does not read: coverage.py's parser answers instead."""


@functools.lru_cache(maxsize=4)  # the two sides of the file being compared
def parse(text: str) -> ast.Module:
    """The AST of a source, parsed once per text (shared: read it, never change it)."""
    return ast.parse(text)


@functools.lru_cache(maxsize=64)
def executable_lines(text: str) -> Lines | None:
    """coverage.py's statements of a Python source and its multi-line map; None when the
    text does not parse (the caller then counts raw lines, failing closed). Remembered per
    text: a session asks about each side of a changed file for the change and each run."""
    with warnings.catch_warnings():  # a SyntaxWarning is the check's run's to say
        warnings.simplefilter("ignore")
        try:  # any text at all: whatever fails to parse or compile is "not Python"
            if not text:
                return None
            tree = parse(text)
            code = compile(tree, "<vgate>", "exec", dont_inherit=True)
            multiline = None if "\r" in text else _multiline(tree, text)
        except _Unknown:
            multiline = None
        except Exception:  # noqa: BLE001
            return None
        if multiline is None:
            return _by_coverage(text)
    raw: set[int] = set()
    codes = [code]
    while codes:
        each = codes.pop()
        codes.extend(c for c in each.co_consts if isinstance(c, CodeType))
        if each.co_name != "__annotate__":  # deferred annotations (3.14), never run
            raw.update(line for _, _, line in each.co_lines() if line)
    docs = _docstrings(tree)
    return frozenset(multiline.get(n, n) for n in raw - docs) - docs, multiline


def _by_coverage(text: str) -> Lines | None:
    from coverage.parser import PythonParser

    try:
        parser = PythonParser(text=text)
        parser.parse_source()
    # coverage raises NotPython, and tokenize/ast errors surface as others.
    except Exception:  # noqa: BLE001
        return None
    return frozenset(parser.statements), dict(parser.multiline_map)


def _docstrings(tree: ast.Module) -> set[int]:
    found: set[int] = set()
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        body = getattr(node, "body", None)
        if isinstance(node, _DOC_OWNERS) and body:
            first = body[0]
            value = first.value if isinstance(first, ast.Expr) else None
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                found.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
        for name in _BODIES:
            todo.extend(getattr(node, name, ()))
    return found


def _multiline(tree: ast.Module, text: str) -> dict[int, int]:
    """Every line of a multi-line logical line, mapped to that line's first line."""
    lines = text.split("\n")
    spans: list[tuple[int, int]] = []  # (first, last) of the multi-line logical lines

    def span(first: int, last: int) -> None:
        if last > first:
            spans.append((first, last))

    def block(body: list[ast.stmt]) -> None:
        first = last = 0  # simple statements joined by ";" share a logical line
        for stmt in body:
            if isinstance(stmt, _HEADED):
                span(first, last)
                first = last = 0
                compound(stmt)
            elif first and stmt.lineno <= last:
                last = max(last, stmt.end_lineno or stmt.lineno)
            else:
                span(first, last)
                first, last = stmt.lineno, stmt.end_lineno or stmt.lineno
        span(first, last)

    def clause(start: int, colon: int, body: list[ast.stmt]) -> None:
        span(start, colon)  # a body on the header's line overlaps it: one logical line
        block(body)

    def compound(stmt: ast.stmt) -> None:
        for deco in getattr(stmt, "decorator_list", ()):
            if not _before(lines, deco).endswith("@"):  # @(...) across lines
                raise _Unknown
            span(deco.lineno, deco.end_lineno or deco.lineno)
        colon = _colon(lines, stmt, _last_part(stmt))
        clause(stmt.lineno, colon, getattr(stmt, "body", []))  # a match has cases instead
        for case in getattr(stmt, "cases", ()):
            if _before(lines, case.pattern).strip() != "case":
                raise _Unknown
            colon = _colon(lines, case.pattern, _last_part(case))
            clause(case.pattern.lineno, colon, case.body)
        for handler in getattr(stmt, "handlers", ()):
            clause(handler.lineno, _colon(lines, handler, _last_part(handler)), handler.body)
        block(getattr(stmt, "orelse", []))
        block(getattr(stmt, "finalbody", []))

    block(tree.body)
    if "\\\n" in text:  # a backslash continues its line onto the next one
        for number, line in enumerate(lines[:-1], 1):
            if line.endswith("\\"):
                if "#" in line:  # in a comment it continues nothing: not read here
                    raise _Unknown
                spans.append((number, number + 1))
    out: dict[int, int] = {}
    first = last = 0
    for start, end in sorted(spans):
        if start > last:  # overlapping spans are one logical line
            first = start
        last = max(last, end)
        out.update(dict.fromkeys(range(start, end + 1), first))
    return out


def _last_part(node: ast.AST) -> _Located | None:
    """The header's last node (the colon follows it), or None: read from the keyword."""
    found: list[_Located] = []
    todo: list[object] = [v for k, v in ast.iter_fields(node) if k not in _NOT_HEADER]
    while todo:
        value = todo.pop()
        if isinstance(value, list):
            todo.extend(value)
        elif getattr(value, "end_lineno", None) is not None:
            found.append(value)  # type: ignore[arg-type]
        elif isinstance(value, ast.AST):  # arguments, a with item: no place of their own
            todo.extend(v for _, v in ast.iter_fields(value))
    return max(found, key=lambda p: (p.end_lineno or 0, p.end_col_offset or 0)) if found else None


def _colon(lines: list[str], node: _Located, last: _Located | None) -> int:
    """The line of the header's colon: after ``last`` (closers, commas, comments and an
    except's ``as name`` between), or after the keyword and name when nothing else."""
    words = last is None or isinstance(node, ast.ExceptHandler)
    number = (last.end_lineno or 0) if last is not None else node.lineno
    line = lines[number - 1]
    offset = (last.end_col_offset or 0) if last is not None else node.col_offset
    at = len(line.encode()[:offset].decode())
    while number <= len(lines):
        line = lines[number - 1]
        for ch in line[at:]:
            if ch == ":":
                return number
            if ch == "#":
                break
            if ch not in _BETWEEN and not (words and (ch.isalnum() or ch == "_")):
                raise _Unknown
        number, at = number + 1, 0
    raise _Unknown


def _before(lines: list[str], node: _Located) -> str:
    """The text on a node's first line before it."""
    line = lines[node.lineno - 1]
    return line.encode()[: node.col_offset].decode().rstrip()
