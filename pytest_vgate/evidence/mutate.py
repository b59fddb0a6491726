"""Mutants of the change: small edits of the changed Python code a check must notice.

Pure core, no I/O: ``plant`` reads one file's current text, the lines the change added
or changed there and the lines a green run executed of them, and returns mutated copies
of the text (docs/discrimination.md). Two kinds, extreme first:

- **extreme** (PIT/Descartes): the body of each changed function the run executed becomes
  ``return None``, and a cheap default of its returned type (``0``, ``""``, ``False``, an
  empty container) where the annotation or the returned expressions say which;
- **value**: one operator of the documented set applied to one node of an executed
  changed line (comparison, boolean, ``not``, arithmetic, constants, the returned value).

Edits are spliced into the text in place, so every other line keeps its number (a
traceback of a mutant points where the user's file does). A mutant whose only effect can
be to force a ``raise`` (the test of a guard whose body raises) is never planted.
"""

from __future__ import annotations

import ast
import copy
import functools
import hashlib
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

_Function = ast.FunctionDef | ast.AsyncFunctionDef

EXTREME = "extreme"
VALUE = "value"

_COMPARE_FLIPS: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
_ARITH_SWAPS: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
    ast.FloorDiv: ast.Mult,
    ast.Mod: ast.FloorDiv,
}
# Annotation names whose default is cheap to write, and that default.
_DEFAULTS = {
    "int": "0",
    "float": "0.0",
    "complex": "0j",
    "str": '""',
    "bytes": 'b""',
    "bool": "False",
    "list": "[]",
    "List": "[]",
    "Sequence": "[]",
    "dict": "{}",
    "Dict": "{}",
    "Mapping": "{}",
    "set": "set()",
    "Set": "set()",
    "frozenset": "frozenset()",
    "tuple": "()",
    "Tuple": "()",
}


@dataclass(frozen=True)
class Mutant:
    """One planted edit: where (``path`` relative to the repository, ``line``), what
    (``kind``, ``operator``, ``before`` → ``after``), and the whole mutated ``text``.

    ``function``: the qualified name of the changed function it belongs to ("" at module
    level). ``span``: the lines the edit covers, inclusive (a failure raised there is the
    mutated code raising, not the check noticing)."""

    path: str
    line: int
    kind: str
    operator: str
    before: str
    after: str
    function: str
    span: tuple[int, int]
    text: str

    @property
    def shown(self) -> str:
        """``path:line  before → after``, as failure reports and the summary print it."""
        return f"{self.path}:{self.line}  {self.before} → {self.after}"


@dataclass(frozen=True)
class FileChange:
    """One changed file as ``plant`` needs it: its text now, the executable lines the
    change added or changed there, and those a green run executed."""

    path: str
    text: str
    changed: frozenset[int]
    executed: frozenset[int]


def seed_of(gate_id: str) -> int:
    """The same gate always gets the same mutants (``random`` is seeded by its id)."""
    return int.from_bytes(hashlib.sha256(gate_id.encode("utf-8")).digest()[:8], "big")


def plant(files: Sequence[FileChange], *, seed: int, limit: int) -> list[Mutant]:
    """Up to ``limit`` mutants of the executed changed code: extreme mutants first (by
    file and line), then value mutants spread over the changed lines in seeded order.
    (Remembered: a batch plans them and each gate's result asks again.)"""
    return list(_plant(tuple(files), seed, limit))


@functools.lru_cache(maxsize=64)
def _plant(files: tuple[FileChange, ...], seed: int, limit: int) -> tuple[Mutant, ...]:
    if limit <= 0:
        return ()
    extremes: list[Mutant] = []
    by_line: dict[tuple[str, int], list[Mutant]] = {}
    for change in sorted(files, key=lambda f: f.path):
        parsed = _parsed(change.text)
        if parsed is None:
            continue  # a file that does not parse has no mutants (said by the caller)
        extremes.extend(_extremes(change, parsed))
        for mutant in _values(change, parsed):
            by_line.setdefault((mutant.path, mutant.line), []).append(mutant)
    rng = random.Random(seed)
    lines = sorted(by_line)
    rng.shuffle(lines)
    for key in lines:
        rng.shuffle(by_line[key])
    values: list[Mutant] = []
    while any(by_line.values()):  # round robin: one per line before a second on any
        for key in lines:
            if by_line[key]:
                values.append(by_line[key].pop(0))
    out: list[Mutant] = []
    seen: set[str] = set()
    for mutant in [*extremes, *values]:
        text_key = f"{mutant.path}\0{mutant.text}"
        if text_key in seen:
            continue
        seen.add(text_key)
        out.append(mutant)
        if len(out) >= limit:
            break
    return tuple(out)


@dataclass(frozen=True)
class _Parsed:
    """A file's tree, read once for every gate that mutates it: its functions, and the
    nodes a value mutant may touch, by line, in ``ast.walk`` order, with their owners."""

    functions: tuple[tuple[str, _Function], ...]
    nodes: dict[int, list[ast.AST]]
    owners: dict[int, str]


@functools.lru_cache(maxsize=8)
def _parsed(text: str) -> _Parsed | None:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None
    skip = _guarded(tree)
    owners: dict[int, str] = {}
    found = tuple(functions(tree))
    for name, fn in found:
        for node in _own_nodes(fn):
            owners[id(node)] = name
    skip.update(
        id(n.body[0].value)  # docstrings
        for n in ast.walk(tree)
        if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and n.body
        and isinstance(n.body[0], ast.Expr)
        and isinstance(n.body[0].value, ast.Constant)
    )
    skip.update(id(c) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for c in ast.walk(n))
    nodes: dict[int, list[ast.AST]] = {}
    for node in ast.walk(tree):
        line = getattr(node, "lineno", None)
        if line is not None and id(node) not in skip:
            nodes.setdefault(line, []).append(node)
    return _Parsed(found, nodes, owners)


def definition_lines(text: str) -> frozenset[int]:
    """The lines of every ``def`` / ``class`` header and its decorators: running them is
    defining a name (an import does it), not executing the code of the change."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return frozenset()
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            lines.update(range(first, max(node.body[0].lineno, node.lineno + 1)))
    return frozenset(lines)


def functions(tree: ast.AST) -> Iterator[tuple[str, _Function]]:
    """Every function of a module with its qualified name (``Class.method``)."""

    def walk(node: ast.AST, prefix: str) -> Iterator[tuple[str, _Function]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}{child.name}"
                yield name, child
                yield from walk(child, f"{name}.<locals>.")
            elif isinstance(child, ast.ClassDef):
                yield from walk(child, f"{prefix}{child.name}.")
            else:
                yield from walk(child, prefix)

    yield from walk(tree, "")


def _body(node: _Function) -> list[ast.stmt]:
    """The statements of a function after its docstring."""
    body = list(node.body)
    first = body[0] if body else None
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        body = body[1:]
    return body


def _own_nodes(node: _Function) -> Iterator[ast.AST]:
    """The nodes of a function's body, not those of functions or lambdas inside it."""
    stack: list[ast.AST] = list(node.body)
    while stack:
        current = stack.pop()
        yield current
        for child in ast.iter_child_nodes(current):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                stack.append(child)


def _extremes(change: FileChange, parsed: _Parsed) -> Iterator[Mutant]:
    lines = change.text.split("\n")
    for name, node in parsed.functions:
        body = _body(node)
        if not body or body[0].lineno == node.lineno:
            continue  # only a docstring, or a one-line def: nothing to cut cleanly
        start, end = body[0].lineno, node.end_lineno or body[-1].lineno
        span = range(start, end + 1)
        if not any(n in change.changed for n in range(node.lineno, end + 1)):
            continue
        if not any(n in change.executed for n in span):
            continue  # the run did not enter the body (a def run at import is not it)
        own = list(_own_nodes(node))
        generator = any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in own)
        if generator and isinstance(node, ast.AsyncFunctionDef):
            continue
        indent = " " * body[0].col_offset
        replacements = [("return None", "return None")]
        if generator:
            replacements = [("yield from ()", "yield nothing")]
        elif node.name != "__init__":
            default = _default_of(node, own)
            if default is not None:
                replacements.append((f"return {default}", f"return {default}"))
        for code, after in replacements:
            new = [*lines[: start - 1], indent + code, *([""] * (end - start)), *lines[end:]]
            text = "\n".join(new)
            if not _parses(text):
                continue
            yield Mutant(
                path=change.path,
                line=start,
                kind=EXTREME,
                operator="body-none" if code == "return None" else "body-default",
                before=f"body of {name}",
                after=after,
                function=name,
                span=(start, end),
                text=text,
            )


def _default_of(node: _Function, own: Sequence[ast.AST]) -> str | None:
    """A cheap default of what the function returns: from its annotation, else from the
    first returned expression whose type shows (a literal, a display, a comparison)."""
    returns = node.returns
    if isinstance(returns, ast.Subscript):
        returns = returns.value
    if isinstance(returns, ast.Attribute):
        returns = ast.Name(id=returns.attr)
    if isinstance(returns, ast.Name) and returns.id in _DEFAULTS:
        return _DEFAULTS[returns.id]
    if isinstance(returns, ast.Constant) and isinstance(returns.value, str):
        return _DEFAULTS.get(returns.value)
    for item in own:
        if isinstance(item, ast.Return) and item.value is not None:
            guess = _default_of_value(item.value)
            if guess is not None:
                return guess
    return None


def _default_of_value(value: ast.expr) -> str | None:
    if isinstance(value, ast.Constant):
        if isinstance(value.value, bool):
            return "False"
        if isinstance(value.value, (int, float, str, bytes)):
            return {int: "0", float: "0.0", str: '""', bytes: 'b""'}[type(value.value)]
        return None
    if isinstance(value, (ast.List, ast.ListComp)):
        return "[]"
    if isinstance(value, (ast.Dict, ast.DictComp)):
        return "{}"
    if isinstance(value, (ast.Set, ast.SetComp)):
        return "set()"
    if isinstance(value, ast.Tuple):
        return "()"
    if isinstance(value, ast.JoinedStr):
        return '""'
    if isinstance(value, ast.Compare) or (
        isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not)
    ):
        return "False"
    return None


def _guarded(tree: ast.Module) -> set[int]:
    """Ids of the nodes in the test of a guard (``if``/``assert`` whose effect is to
    raise): mutating them can only force a raise, which any check that runs it fails.
    And arid code, which no test is meant to pin: what a ``raise`` raises (its message),
    and module metadata such as ``__version__``."""
    found: set[int] = set()
    for node in ast.walk(tree):
        test: ast.expr | None = None
        guard = isinstance(node, ast.If) and bool(node.body) and isinstance(node.body[0], ast.Raise)
        if guard or isinstance(node, ast.Assert):
            test = getattr(node, "test", None)
        if test is not None:
            found.update(id(n) for n in ast.walk(test))
        if isinstance(node, ast.Raise):  # what is raised (its message): arid, as logging
            found.update(id(n) for n in ast.walk(node))
    for statement in tree.body:  # module metadata (``__version__ = "1.2"``): arid too
        targets = getattr(statement, "targets", None) or [getattr(statement, "target", None)]
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        if names and all(n.startswith("__") and n.endswith("__") for n in names):
            found.update(id(n) for n in ast.walk(statement))
    return found


def _values(change: FileChange, parsed: _Parsed) -> Iterator[Mutant]:
    for line in sorted(change.executed & change.changed):
        for node in parsed.nodes.get(line, ()):
            for operator, mutated in _operators(node):
                owner = parsed.owners.get(id(node), "")
                mutant = _splice(change, node, mutated, operator, owner)
                if mutant is not None:
                    yield mutant


def _operators(node: ast.AST) -> Iterator[tuple[str, ast.AST]]:
    """(operator name, the mutated copy of ``node``) for each documented operator."""
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            flip = _COMPARE_FLIPS.get(type(op))
            if flip is not None:
                new = copy.deepcopy(node)
                new.ops[i] = flip()
                yield "compare", new
    elif isinstance(node, ast.BoolOp):
        boolean = copy.deepcopy(node)
        boolean.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        yield "boolean", boolean
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        yield "not", copy.deepcopy(node.operand)
    elif isinstance(node, (ast.BinOp, ast.AugAssign)):
        swap = _ARITH_SWAPS.get(type(node.op))
        if swap is not None:
            arithmetic = copy.deepcopy(node)
            arithmetic.op = swap()
            yield "arithmetic", arithmetic
    elif isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool):
            yield "boolean-constant", ast.Constant(value=not value)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            yield "number", ast.Constant(value=value + 1)
        elif isinstance(value, str) and value:
            yield "string", ast.Constant(value="")
    elif (
        isinstance(node, ast.Return)
        and node.value is not None
        and not (isinstance(node.value, ast.Constant) and node.value.value is None)
    ):
        yield "return-none", ast.Return(value=ast.Constant(value=None))


def _splice(
    change: FileChange, node: ast.AST, mutated: ast.AST, operator: str, function: str
) -> Mutant | None:
    """The text with ``node``'s source replaced by ``mutated``'s, line numbers kept."""
    start, end = getattr(node, "lineno", None), getattr(node, "end_lineno", None)
    col, end_col = getattr(node, "col_offset", None), getattr(node, "end_col_offset", None)
    if start is None or end is None or col is None or end_col is None:
        return None
    lines = change.text.split("\n")
    raw = [line.encode("utf-8", "surrogateescape") for line in lines]
    try:
        before = ast.unparse(node)
        after = ast.unparse(mutated)
    except (ValueError, RecursionError):
        return None
    statement = isinstance(node, ast.stmt)
    code = after if statement else f"({after}{chr(10) * (end - start)})"
    if statement and end > start:
        code = after + "\n" * (end - start)
    head = raw[start - 1][:col].decode("utf-8", "surrogateescape")
    tail = raw[end - 1][end_col:].decode("utf-8", "surrogateescape")
    text = "\n".join([*lines[: start - 1], head + code + tail, *lines[end:]])
    if text == change.text or not _parses(text):
        return None
    return Mutant(
        path=change.path,
        line=start,
        kind=VALUE,
        operator=operator,
        before=_short(before),
        after=_short(after),
        function=function,
        span=(start, end),
        text=text,
    )


def _short(code: str, limit: int = 60) -> str:
    flat = " ".join(code.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@functools.lru_cache(maxsize=64)
def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return False
    return True
