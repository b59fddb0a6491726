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
from pytest_vgate.clip import clip

_RAISE_ASSERTS = frozenset({"raises", "assertRaises", "assertRaisesRegex", "assertRaisesRegexp"})
_COMPOUND = (
    ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If, ast.For, ast.AsyncFor,
    ast.While, ast.With, ast.AsyncWith, ast.Try,
)  # fmt: skip
DETAIL_CHARS = 60
# What an operator or statement says in words, so "adds one" is shown by ``x + 1``.
SYNTAX_WORDS: dict[type[ast.AST], str] = {
    ast.Add: "add plus sum increment concatenate append",
    ast.Sub: "subtract minus decrement difference",
    ast.Mult: "multiply times product repeat",
    ast.Div: "divide ratio",
    ast.FloorDiv: "divide floor",
    ast.Mod: "modulo remainder format",
    ast.Pow: "power exponent",
    ast.Compare: "compare comparison",
    ast.Not: "negate",
    ast.For: "iterate loop each every",
    ast.AsyncFor: "iterate loop each every",
    ast.comprehension: "iterate each every",
    ast.While: "loop repeat",
    ast.If: "check condition",
    ast.IfExp: "check condition",
    ast.Try: "try catch handle",
    ast.ExceptHandler: "catch handle except",
    ast.With: "context",
    ast.Lambda: "lambda function",
    ast.Subscript: "index item lookup",
    ast.Dict: "dict dictionary mapping",
    ast.List: "list",
    ast.Tuple: "tuple pair",
    ast.Set: "set",
    ast.Await: "await wait",
}
NUMBER_WORDS = (
    "zero none", "one single", "two pair", "three", "four", "five", "six", "seven", "eight",
    "nine", "ten",
)  # fmt: skip


@dataclass(frozen=True)
class Act:
    """One thing a line does: ``detail`` reads as "line N <detail>"."""

    verb: Verb
    line: int
    detail: str


@dataclass
class Facts:
    """The acts of one file, and the extents that widen a cited range."""

    acts: list[Act] = field(default_factory=list)
    said: list[tuple[int, str]] = field(default_factory=list)  # (line, word) of SYNTAX_WORDS
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

    def words_in(self, start: int, end: int) -> set[str]:
        """The words the syntax of the covered lines says (``+`` says "add", ...)."""
        lo, hi = self.extent(start, end)
        return {w for line, w in self.said if lo <= line <= hi}

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
        said = SYNTAX_WORDS.get(type(node), "")
        if isinstance(node, ast.BinOp | ast.UnaryOp | ast.AugAssign):
            said = SYNTAX_WORDS.get(type(node.op), "")
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            said = NUMBER_WORDS[node.value] if 0 <= node.value < len(NUMBER_WORDS) else ""
        facts.said.extend((line, word) for word in said.split())
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
    return verb in seen


_SALIENT = (
    Verb.ASSERTS_RAISES, Verb.RAISES, Verb.RETURNS, Verb.YIELDS, Verb.ASSERTS_EQUAL,
    Verb.ASSERTS, Verb.DELETES, Verb.IMPORTS, Verb.ASSIGNS, Verb.CALLS,
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
