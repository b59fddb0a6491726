"""Does the cited range hold what the description names, as its own span?

A citation is verified only by an *anchor*: an entity of the description that is
defined or used on the cited lines as code, in a range that is not implausibly wide for
it. For Python the spans come from the AST (a definition from its first decorator to
``end_lineno``, a call, an assignment statement, a name or attribute use); comments,
docstrings and strings never anchor an identifier. Other files are matched on code
lines (not blank, not comment-only) with the same width rules. A description that
names no code is matched by its words against the cited lines' words.
"""

from __future__ import annotations

import ast
import functools
import keyword
import re
from dataclasses import dataclass, field

from pytest_vgate.citations.entities import is_dotted, is_identifier, words

# A class body is a container: a line deep inside a long class is not "the class".
CLASS_HEAD_LINES = 10
CLASS_SMALL_LINES = 60
PROSE_MAX_LINES = 30  # a prose description cites a passage, not a page
PLAIN_MAX_LINES = 5  # without a span (a use, or a non-Python file), a range stays short
PLAIN_BLOCK_LINES = 200  # non-Python: a range opened by a definition of the entity
WHOLE_FILE_SHARE = 0.9
WHOLE_FILE_MIN_LINES = 20

# Identifiers that name no particular thing: they never verify a citation on their own.
WEAK_NAMES = frozenset(keyword.kwlist) | words(
    "self cls None True False print len str int list dict set tuple object type args kwargs "
    "_ __init__"
)
_PROSE_STOP = words(
    """a an the this that these those it its is are was were be been being of to in on at by
    for with from as and or not no but if then else when which who whom what where why how
    method methods function functions class classes attribute attributes variable variables
    name names body level instance instances object objects definition definitions itself
    here there above below also only just each every all any some both one two call calls
    called returns return value values line lines code file files see used uses use using
    does done make makes made into than then they them their there has have had can will
    would should could may might must our your you we our via per about after before over
    under again more most less such same other new first last start end part parts"""
)
_COMMENT_PREFIXES = ("#", "//", "/*", "*", "--", ";", "<!--", "%", "REM ", "rem ")
_WORD_RE = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_CAMEL_SPLIT_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def strong(entity: str) -> bool:
    """An entity that can anchor: it holds a word character and is not a keyword."""
    if not any(ch.isalnum() for ch in entity):
        return False  # punctuation and operators alone never match
    if is_identifier(entity):
        return entity not in WEAK_NAMES
    return True


C_LIKE = (
    ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".m", ".mm", ".java", ".js", ".mjs",
    ".cjs", ".ts", ".tsx", ".jsx", ".go", ".rs", ".cs", ".kt", ".kts", ".scala", ".swift",
    ".css", ".scss", ".less", ".php", ".dart",
)  # fmt: skip


def block_comment_lines(lines: list[str]) -> set[int]:
    """C-like files: the lines that hold nothing but comment text, inside ``/* ... */``
    blocks or after ``//`` (strings are not tracked: a ``/*`` in a string may mislead)."""
    out: set[int] = set()
    inside_block = False
    for number, line in enumerate(lines, start=1):
        rest, code = line, ""
        while rest:
            if inside_block:
                end = rest.find("*/")
                if end < 0:
                    rest = ""
                else:
                    rest, inside_block = rest[end + 2 :], False
                continue
            start, slash = rest.find("/*"), rest.find("//")
            if slash >= 0 and (start < 0 or slash < start):
                code += rest[:slash]
                break
            if start < 0:
                code += rest
                break
            code, rest, inside_block = code + rest[:start], rest[start + 2 :], True
        if not code.strip() and line.strip():
            out.add(number)
    return out


def is_blank(line: str) -> bool:
    return not line.strip()


_PROSE_FILES = (".md", ".markdown", ".rst", ".txt", ".adoc")


def is_comment(line: str, rel: str = "") -> bool:
    """A comment-only line (in a prose file only an HTML comment counts: ``#`` is a heading)."""
    text = line.strip()
    if rel.endswith(_PROSE_FILES):
        return text.startswith("<!--")
    if rel.endswith(C_LIKE):
        return text.startswith(("//", "/*", "*"))  # ``#define`` is code here
    return text.startswith(_COMMENT_PREFIXES)


@dataclass(frozen=True)
class Span:
    """Where an entity stands as its own piece of code: ``kind`` is ``def``, ``call``,
    ``assign`` or ``use``; ``head`` is the ``def``/``class`` line of a definition."""

    kind: str
    start: int
    end: int
    head: int = 0
    is_class: bool = False

    @property
    def size(self) -> int:
        return self.end - self.start + 1


@dataclass
class PyIndex:
    """Every Python name and dotted name of one file, with its spans."""

    names: dict[str, list[Span]] = field(default_factory=dict)
    dotted: dict[str, list[Span]] = field(default_factory=dict)
    qualnames: dict[str, list[Span]] = field(default_factory=dict)
    defs: list[Span] = field(default_factory=list)
    text_lines: set[int] = field(default_factory=set)  # docstring lines

    def add(self, table: dict[str, list[Span]], key: str, span: Span) -> None:
        table.setdefault(key, []).append(span)

    def innermost(self, start: int, end: int) -> Span | None:
        inside = [d for d in self.defs if d.start <= start and end <= d.end]
        return max(inside, key=lambda d: (d.start, -d.end)) if inside else None


def _chain(node: ast.AST) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _lines(node: ast.AST) -> tuple[int, int]:
    start = getattr(node, "lineno", 0) or 0
    return start, getattr(node, "end_lineno", None) or start


@functools.lru_cache(maxsize=4)
def parse_python(text: str) -> ast.Module | None:
    """The file's tree (line numbers counted by ``\\n``: lone CRs blanked), or None when
    it does not parse. Shared, read-only, by the index, the definitions and the acts."""
    try:
        return ast.parse(re.sub(r"\r(?!\n)", " ", text))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def python_index(text: str) -> PyIndex | None:
    """The file's index, or None when it does not parse (then text rules apply)."""
    tree = parse_python(text)
    if tree is None:
        return None
    index = PyIndex()
    aliases = python_aliases(tree)
    stack: list[tuple[ast.AST, str]] = [(tree, "")]
    while stack:
        node, prefix = stack.pop()
        child_prefix = prefix
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            first = min([d.lineno for d in node.decorator_list] + [node.lineno])
            span = Span(
                "def",
                first,
                node.end_lineno or node.lineno,
                node.lineno,
                isinstance(node, ast.ClassDef),
            )
            index.defs.append(span)
            index.add(index.names, node.name, span)
            index.add(index.qualnames, prefix + node.name, span)
            child_prefix = f"{prefix}{node.name}."
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                a, b = _lines(body[0])
                index.text_lines.update(range(a, b + 1))
        elif isinstance(node, ast.Call):
            name = _chain(node.func)
            if name is not None:
                span = Span("call", *_lines(node))
                index.add(index.names, name.rsplit(".", 1)[-1], span)
                if "." in name:
                    index.add(index.dotted, name, span)
                elif name in aliases:  # ``PS_("x")`` calls the ``_pgettext_noop`` it names
                    index.add(index.names, aliases[name], span)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            span = Span("assign", *_lines(node))
            for target in targets:
                for sub in ast.walk(target):
                    name = _chain(sub)
                    if name is not None:
                        index.add(index.names, name.rsplit(".", 1)[-1], span)
                        if "." in name:
                            index.add(index.dotted, name, span)
        elif isinstance(node, ast.Name):
            index.add(index.names, node.id, Span("use", *_lines(node)))
        elif isinstance(node, ast.Attribute):
            end = _lines(node)[1]
            index.add(index.names, node.attr, Span("use", end, end))
            name = _chain(node)
            if name is not None:
                index.add(index.dotted, name, Span("use", *_lines(node)))
        elif isinstance(node, (ast.arg, ast.keyword)) and node.arg:
            index.add(index.names, node.arg, Span("use", *_lines(node)))
        elif isinstance(node, ast.alias):
            span = Span("use", *_lines(node))
            for name in {node.name, node.asname or node.name}:
                if name != "*":
                    index.add(index.names, name.rsplit(".", 1)[-1], span)
                    if "." in name:
                        index.add(index.dotted, name, span)
        elif isinstance(node, ast.ImportFrom) and node.module:
            a = node.lineno
            table = index.dotted if "." in node.module else index.names
            index.add(table, node.module, Span("use", a, a))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            # a name as a whole string (a dict key, an ``__all__`` entry, a registration)
            if is_identifier(node.value) or is_dotted(node.value):
                table = index.dotted if "." in node.value else index.names
                index.add(table, node.value, Span("use", *_lines(node)))
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                index.add(index.names, name, Span("use", *_lines(node)))
        elif isinstance(node, ast.ExceptHandler) and node.name:
            index.add(index.names, node.name, Span("assign", node.lineno, node.lineno))
        elif isinstance(node, ast.Module):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                a, b = _lines(body[0])
                index.text_lines.update(range(a, b + 1))
        for child in ast.iter_child_nodes(node):
            stack.append((child, child_prefix))
    index.defs.sort(key=lambda d: d.start)
    return index


def python_aliases(tree: ast.AST) -> dict[str, str]:
    """Names that stand for another: ``from x import y as z`` and ``z = y`` (or ``= x.y``)
    make ``z`` an alias of ``y``."""
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.asname and alias.asname != alias.name and alias.name != "*":
                    out[alias.asname] = alias.name
        elif isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
            chain = _chain(value) if isinstance(value, (ast.Name, ast.Attribute)) else None
            if isinstance(target, ast.Name) and chain and chain.rsplit(".", 1)[-1] != target.id:
                out[target.id] = chain.rsplit(".", 1)[-1]
    return out


def python_spans(index: PyIndex, entity: str, stem: str) -> list[Span]:
    """The spans where ``entity`` (a name or ``a.b``) stands as code."""
    if is_identifier(entity):
        return index.names.get(entity, [])
    if not is_dotted(entity):
        return []
    found = list(index.qualnames.get(entity, []))
    for qual, spans in index.qualnames.items():
        if qual.endswith("." + entity) or f"{stem}.{qual}" == entity:
            found.extend(spans)
    for chain, spans in index.dotted.items():
        if chain == entity or chain.endswith("." + entity):
            found.extend(spans)
    return found


_VERBS = {"use": "used", "call": "called", "assign": "assigned"}


def slack(size: int) -> int:
    return max(4, size // 2)


def whole_file(start: int, end: int, count: int) -> bool:
    return count >= WHOLE_FILE_MIN_LINES and end - start + 1 >= WHOLE_FILE_SHARE * count


def span_anchors(index: PyIndex, span: Span, start: int, end: int) -> str | None:
    """How ``span`` vouches for lines ``start``..``end``, or None."""
    width = end - start + 1
    if span.kind == "def":
        if span.start <= start and end <= span.end:
            if index.innermost(start, end) != span:
                return None  # the range lies inside a nested definition: that one is cited
            long_class = span.is_class and span.size > CLASS_SMALL_LINES
            if long_class and start > span.head + CLASS_HEAD_LINES:
                return None  # deep inside a long class body: not the class itself
            return f"lines {start}-{end} lie inside its definition (lines {span.start}-{span.end})"
        if start <= span.start and span.end <= end and width <= span.size + slack(span.size):
            return f"its definition (lines {span.start}-{span.end}) is the cited range"
        return None
    if span.start <= end and start <= span.end and width <= span.size + PLAIN_MAX_LINES - 1:
        where = f"line {span.start}" if span.size == 1 else f"lines {span.start}-{span.end}"
        return f"{_VERBS[span.kind]} on {where}"
    return None


def text_words(text: str) -> set[str]:
    """Lowercased words of code or prose, identifiers split at ``_`` and case changes."""
    out: set[str] = set()
    for word in _WORD_RE.findall(text):
        out.add(word.lower())
        for part in _CAMEL_SPLIT_RE.findall(word):
            out.add(part.lower())
    return out


def prose_words(description: str) -> list[str]:
    """The description's content words (three letters or more, not function words)."""
    seen: dict[str, None] = {}
    for word in _WORD_RE.findall(description):
        low = word.lower()
        if len(low) >= 3 and low not in _PROSE_STOP and low.isalpha():
            seen[low] = None
    return list(seen)


def same_word(a: str, b: str) -> bool:
    """``retries`` ~ ``retry``, ``parses`` ~ ``parser``: a shared stem of four letters or more."""
    if a == b:
        return True
    common = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        common += 1
    return common >= 4 and common >= min(len(a), len(b)) - 2
