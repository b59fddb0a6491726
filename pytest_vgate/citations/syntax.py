"""What Python lines do, by their AST: the acts a description's verbs are compared with.

Each statement or expression that does something a description can name is an ``Act``
on its first line (a ``return``, a ``raise``, a call, ``pytest.raises``, ...). A citation
covers its lines, widened to whole statements, and to a whole definition when it cites
the definition's ``def``/``class`` line: a function cited at its head does what its body
does.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from pytest_vgate.citations.anchor import parse_python
from pytest_vgate.citations.claims import Verb
from pytest_vgate.citations.entities import words
from pytest_vgate.clip import clip

_RAISE_ASSERTS = frozenset({"raises", "assertRaises", "assertRaisesRegex", "assertRaisesRegexp"})
_COMPOUND = (
    ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If, ast.For, ast.AsyncFor,
    ast.While, ast.With, ast.AsyncWith, ast.Try,
)  # fmt: skip
DETAIL_CHARS = 60


_DELETERS = words("remove unlink rmtree rmdir delete discard pop popitem clear")
_IMPORTERS = frozenset({"import_module", "__import__"})


@dataclass(frozen=True)
class Act:
    """One thing a line does: ``detail`` reads as "line N <detail>"."""

    verb: Verb
    line: int
    detail: str


@dataclass(frozen=True)
class Value:
    """A value a line shows: ``kind`` is ``assign`` (``key`` = ``value``; a keyword argument
    too), ``map`` (a dict entry ``key: value``), ``return``, ``raise`` (the class raised) or
    ``compare`` (an operand). ``value`` is None where the syntax does not show it."""

    kind: str
    line: int
    key: str | None
    value: str | None
    literal: bool = False  # a literal, not a name


def _value(kind: str, line: int, key: str | None, node: ast.AST | None) -> Value:
    return Value(kind, line, key, *shown(node)) if node else Value(kind, line, key, "None", True)


def shown(node: ast.AST | None) -> tuple[str | None, bool]:
    """(a literal as text: a string as itself, else its ``repr``; or a dotted name, None
    for anything else), and whether it is a literal."""
    if isinstance(node, (ast.Name, ast.Attribute)):
        return _name(node) or None, False
    try:
        value = ast.literal_eval(node) if node is not None else None
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None, False
    return (value if isinstance(value, str) else repr(value)), True


def _values(node: ast.AST) -> list[Value]:
    line = getattr(node, "lineno", 0)
    if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return [_value("assign", line, _name(t).rsplit(".", 1)[-1], node.value) for t in targets]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):  # a parameter's default
        a = node.args
        pairs = [
            *zip(a.args[::-1], a.defaults[::-1], strict=False),
            *zip(a.kwonlyargs, a.kw_defaults, strict=True),
        ]
        return [_value("assign", d.lineno, p.arg, d) for p, d in pairs if d is not None]
    if isinstance(node, ast.Call):
        return [_value("assign", k.value.lineno, k.arg, k.value) for k in node.keywords if k.arg]
    if isinstance(node, ast.Dict):
        return [
            _value("map", k.lineno, k.value, v)
            for k, v in zip(node.keys, node.values, strict=True)
            if isinstance(k, ast.Constant) and isinstance(k.value, str)
        ]
    if isinstance(node, ast.Return):
        return [_value("return", line, None, node.value)]
    if isinstance(node, ast.Raise):
        return [Value("raise", line, None, _name(node.exc) or None if node.exc else None)]
    if isinstance(node, ast.Compare):
        return [_value("compare", line, None, x) for x in (node.left, *node.comparators)]
    return []


@dataclass
class Facts:
    """The acts of one file, and the extents that widen a cited range."""

    acts: list[Act] = field(default_factory=list)
    values: list[Value] = field(default_factory=list)
    bases: dict[str, tuple[str, ...]] = field(default_factory=dict)  # class -> its bases
    imported: set[str] = field(default_factory=set)  # names an import binds
    statements: list[tuple[int, int]] = field(default_factory=list)  # simple statements
    definitions: list[tuple[int, int, int]] = field(default_factory=list)  # first, head, end

    def extent(self, start: int, end: int) -> tuple[int, int]:
        """The lines a citation of ``start``..``end`` covers."""
        lo, hi = start, end
        for first, head, last in self.definitions:
            if start <= head <= end:
                lo, hi = min(lo, first), max(hi, last)
        for a, b in self.statements:
            if a <= end and start <= b:
                lo, hi = min(lo, a), max(hi, b)
        return lo, hi

    def values_in(self, start: int, end: int) -> list[Value]:
        lo, hi = self.extent(start, end)
        return [v for v in self.values if lo <= v.line <= hi]

    def acts_in(self, start: int, end: int) -> list[Act]:
        lo, hi = self.extent(start, end)
        return [a for a in self.acts if lo <= a.line <= hi]


def _name(node: ast.AST) -> str:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    elif isinstance(node, ast.Call):
        return _name(node.func)
    return ".".join(reversed(parts))


def _text(node: ast.AST | None) -> str:
    if node is None:
        return "None"
    try:
        return clip(" ".join(ast.unparse(node).split()), DETAIL_CHARS)
    except Exception:  # noqa: BLE001 - a detail for a message; the act stands without it
        return "..."


def _call_acts(node: ast.Call) -> list[tuple[Verb, str]]:
    name = _name(node.func)
    last = name.rsplit(".", 1)[-1]
    out = [(Verb.CALLS, f"calls {name or _text(node.func)}")]
    if last in _RAISE_ASSERTS:
        what = _text(node.args[0]) if node.args else "an exception"
        out.append((Verb.ASSERTS_RAISES, f"asserts a raise ({name}({what}))"))
    elif last.startswith("assert") and "Equal" in last and "Not" not in last:
        out.append((Verb.ASSERTS_EQUAL, f"asserts equality ({name})"))
    elif last.startswith("assert"):
        out.append((Verb.ASSERTS, f"asserts ({name})"))
    return out


def _acts(node: ast.AST) -> list[tuple[Verb, str]]:
    if isinstance(node, ast.Return):
        return [(Verb.RETURNS, f"returns {_text(node.value)}")]
    if isinstance(node, ast.Raise):
        if node.exc is None:
            return [(Verb.RAISES, "raises (re-raises the exception being handled)")]
        return [(Verb.RAISES, f"raises {_name(node.exc) or _text(node.exc)}")]
    if isinstance(node, (ast.Yield, ast.YieldFrom)):
        return [(Verb.YIELDS, f"yields {_text(node.value)}")]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(Verb.IMPORTS, f"imports {', '.join(a.name for a in node.names)}")]
    if isinstance(node, ast.Call):
        return _call_acts(node)
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
        if isinstance(node, ast.AnnAssign) and node.value is None:
            return []
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return [(Verb.ASSIGNS, f"assigns {', '.join(_text(t) for t in targets)}")]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [(Verb.DEFINES, f"defines {node.name}")]
    if isinstance(node, ast.Await):
        return [(Verb.AWAITS, f"awaits {_text(node.value)}")]
    if isinstance(node, ast.Delete):
        return [(Verb.DELETES, f"deletes {', '.join(_text(t) for t in node.targets)}")]
    if isinstance(node, ast.Assert):
        test = node.test
        if isinstance(test, ast.Compare) and any(isinstance(op, ast.Eq) for op in test.ops):
            return [(Verb.ASSERTS_EQUAL, f"asserts equality ({_text(test)})")]
        return [(Verb.ASSERTS, f"asserts {_text(test)}")]
    return []


def python_facts(text: str) -> Facts | None:
    """The file's acts, or None when it does not parse as Python."""
    tree = parse_python(text)
    if tree is None:
        return None
    facts = Facts()
    for node in ast.walk(tree):
        line = getattr(node, "lineno", None)
        if line is None:
            continue
        end = getattr(node, "end_lineno", None) or line
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            first = min([d.lineno for d in node.decorator_list] + [line])
            facts.definitions.append((first, line, end))
        elif isinstance(node, ast.stmt) and not isinstance(node, _COMPOUND):
            facts.statements.append((line, end))
        facts.acts.extend(Act(verb, line, detail) for verb, detail in _acts(node))
        facts.values.extend(_values(node))
        if isinstance(node, ast.ClassDef):
            facts.bases[node.name] = tuple(_name(b) for b in node.bases)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            facts.imported.update((a.asname or a.name).split(".")[0] for a in node.names)
    facts.acts.sort(key=lambda a: (a.line, list(Verb).index(a.verb)))
    return facts


def holds(verb: Verb, acts: list[Act]) -> bool:
    """Whether ``acts`` show ``verb`` (the table in ``docs/citations.md``)."""
    seen = {a.verb for a in acts}
    if verb is Verb.RAISES:
        return bool(seen & {Verb.RAISES, Verb.ASSERTS_RAISES})
    if verb is Verb.ASSERTS:
        return bool(seen & {Verb.ASSERTS, Verb.ASSERTS_EQUAL, Verb.ASSERTS_RAISES})
    if verb is Verb.ASSERTS_NO_RAISE:
        return not seen & {Verb.RAISES, Verb.ASSERTS_RAISES}
    if verb in (Verb.DELETES, Verb.IMPORTS):  # also by a call: os.remove, import_module
        names = _DELETERS if verb is Verb.DELETES else _IMPORTERS
        called = {a.detail.rsplit(".", 1)[-1] for a in acts if a.verb is Verb.CALLS}
        return verb in seen or bool(called & names)
    return verb in seen


_SALIENT = (
    Verb.ASSERTS_RAISES, Verb.RAISES, Verb.RETURNS, Verb.YIELDS, Verb.ASSERTS_EQUAL,
    Verb.ASSERTS, Verb.DELETES, Verb.IMPORTS, Verb.AWAITS, Verb.ASSIGNS, Verb.CALLS,
    Verb.DEFINES,
)  # fmt: skip


def what_it_does(acts: list[Act], start: int, end: int) -> str:
    """ "line 868 raises TypeError": the most telling act of a cited range, for a reason."""
    where = f"line {start}" if start == end else f"lines {start}-{end}"
    for verb in _SALIENT:
        for act in acts:
            if act.verb is verb:
                at = f"line {act.line}" if start != end else where
                return f"{at} {act.detail}"
    return f"{where} hold no statement that does it"
