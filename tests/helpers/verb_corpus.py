"""Labelled citations about what lines *do*: verbs, starts and words, over small sources.

The sources in ``tests/data/citation_corpus`` are written in the manner of cachetools,
humanize, boltons and packaging (and a test module in the manner of cachetools' tests).
``verb_rows(root)`` copies them under ``root/lib`` and states, from its own reading of
each file's AST and text, the true outcome of citations that say a line returns,
raises, yields, assigns or deletes; that an entity is defined at a line; that a test
asserts a raise, equality or no raise; and that a line does something its words never
show. A row is only made when its label follows from that reading alone (unique names,
no other mention of the name near the line).
"""

from __future__ import annotations

import ast
import random
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data" / "citation_corpus"
WINDOW = 20
Row = tuple[str, str, str, str | None]  # kind, answer line, status, corrected_to

_VERBS: dict[str, tuple[type[ast.AST], ...]] = {
    "returns": (ast.Return,),
    "raises": (ast.Raise,),
    "yields": (ast.Yield, ast.YieldFrom),
    "assigns": (ast.Assign, ast.AugAssign, ast.AnnAssign),
    "deletes": (ast.Delete,),
}
_NESTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_ODD_WORDS = ("throttled", "quota", "broker")  # in no corpus source, in any form
_RAISE_CALLS = {"raises", "assertRaises"}
_DELETERS = {"remove", "unlink", "rmtree", "rmdir", "delete", "discard", "pop", "popitem", "clear"}


def _called(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


@dataclass(frozen=True)
class Fn:
    name: str
    head: int
    first: int
    end: int
    node: ast.FunctionDef | ast.AsyncFunctionDef


def _own(node: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function's own body: nested definitions are not descended into."""
    stack = list(ast.iter_child_nodes(node))
    while stack:
        child = stack.pop()
        yield child
        if not isinstance(child, _NESTED):
            stack.extend(ast.iter_child_nodes(child))


def _mentions(line: str, name: str) -> bool:
    return re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", line) is not None


class Source:
    def __init__(self, rel: str, text: str) -> None:
        self.rel = rel
        self.lines = text.split("\n")
        if self.lines and not self.lines[-1]:
            self.lines.pop()
        tree = ast.parse(text)
        defs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
        counts: dict[str, int] = {}
        for d in defs:
            counts[d.name] = counts.get(d.name, 0) + 1
        mentioned = {name: sum(_mentions(line, name) for line in self.lines) for name in counts}
        self.fns = [
            Fn(d.name, d.lineno, min([x.lineno for x in d.decorator_list] + [d.lineno]),
               d.end_lineno or d.lineno, d)
            for d in defs
            if isinstance(d, ast.FunctionDef)
            and counts[d.name] == 1
            and not d.name.startswith("__")
            and len(d.name) >= 4
            and mentioned[d.name] >= 1
        ]  # fmt: skip
        self.fns.sort(key=lambda f: f.head)
        starts: dict[int, int] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.stmt):
                starts[node.lineno] = starts.get(node.lineno, 0) + 1
        self.single = {k for k, n in starts.items() if n == 1}  # one statement starts here

    def own_lines(self, fn: Fn, kinds: tuple[type[ast.AST], ...]) -> list[int]:
        """Lines of ``fn`` that do it; a call that removes (``d.pop(k)``) deletes too."""
        removes = ast.Delete in kinds
        return sorted(
            {
                n.lineno
                for n in _own(fn.node)
                if isinstance(n, kinds)
                or (removes and isinstance(n, ast.Call) and _called(n) in _DELETERS)
            }
        )

    def simple_lines(self, fn: Fn) -> list[int]:
        """First lines of ``fn``'s own simple statements (one statement on the line)."""
        compound = (*_NESTED, ast.If, ast.For, ast.While, ast.With, ast.Try)
        return sorted(
            {
                n.lineno
                for n in _own(fn.node)
                if isinstance(n, ast.stmt)
                and not isinstance(n, compound)
                and n.lineno in self.single
                and n.lineno == (n.end_lineno or n.lineno)
                and not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))
            }
        )

    def region(self, fn: Fn) -> set[int]:
        """``fn``'s lines outside the definitions nested in it."""
        lines = set(range(fn.head, fn.end + 1))
        for n in ast.walk(fn.node):
            if isinstance(n, _NESTED) and n is not fn.node:
                first = min([d.lineno for d in getattr(n, "decorator_list", [])] + [n.lineno])
                lines -= set(range(first, (n.end_lineno or n.lineno) + 1))
        return lines

    def clear_outside(self, fn: Fn, line: int) -> bool:
        """No mention of ``fn`` in the window around ``line`` outside its own region."""
        region = self.region(fn)
        return not any(
            _mentions(self.lines[k - 1], fn.name)
            for k in range(max(1, line - WINDOW), min(len(self.lines), line + WINDOW) + 1)
            if k not in region
        )

    def words_anywhere(self, words: tuple[str, ...]) -> bool:
        text = "\n".join(self.lines).lower()
        return any(w[:5] in text for w in words)


def _nearest(lines: list[int], line: int) -> tuple[str, str | None]:
    """A line said to do what it does not: corrected to the one line nearest that does,
    else its description is contradicted (``unsupported``)."""
    near = [k for k in lines if k != line and abs(k - line) <= WINDOW]
    if not near:
        return "unsupported", None
    best = min(abs(k - line) for k in near)
    hit = [k for k in near if abs(k - line) == best]
    return ("corrected", str(hit[0])) if len(hit) == 1 else ("unsupported", None)


def _rows(src: Source, rng: random.Random) -> Iterator[Row]:
    r = src.rel
    tests = src.rel.rsplit("/", 1)[-1].endswith("_tests.py")
    for fn in src.fns:
        body = src.simple_lines(fn)
        region = src.region(fn)
        body = [k for k in body if k in region and src.clear_outside(fn, k)]
        if not body:
            continue
        for verb, kinds in _VERBS.items():
            doing = src.own_lines(fn, kinds)
            if verb in ("returns", "raises") and tests:
                continue  # a test "raises" through pytest.raises: its own rows below
            for k in doing:
                if k in body:
                    yield (f"{verb}, right line", f"- {r}:{k} — `{fn.name}` {verb} here",
                           "verified", None)  # fmt: skip
            others = [k for k in body if k not in doing]
            for k in rng.sample(others, min(len(others), 2 if doing else 1)):
                status, to = _nearest(doing, k)
                kind = f"{verb}, wrong line" + (", none near" if status == "unsupported" else "")
                yield (kind, f"- {r}:{k} — `{fn.name}` {verb} here", status,
                       f"{r}:{to}" if to else None)  # fmt: skip
        if any(isinstance(n, ast.Return) for n in ast.walk(fn.node)) and not tests:
            yield ("returns, at the def line", f"- {r}:{fn.head} — `{fn.name}` returns",
                   "verified", None)  # fmt: skip
        # where it starts
        for k in rng.sample(body, min(len(body), 2)):
            desc = rng.choice(("is defined here", "starts here"))
            yield ("starts, body line", f"- {r}:{k} — `{fn.name}` {desc}", "corrected",
                   f"{r}:{fn.head}")  # fmt: skip
        yield ("starts, def line", f"- {r}:{fn.head} — the signature of `{fn.name}`",
               "verified", None)  # fmt: skip
        # behaviour words: what the syntax cannot decide never fails a citation
        if not src.words_anywhere(_ODD_WORDS):
            for k in rng.sample(body, min(len(body), 2)):
                yield ("behaviour words, not shown",
                       f"- {r}:{k} — `{fn.name}` is throttled by the quota broker",
                       "verified", None)  # fmt: skip
        for k in rng.sample(body, min(len(body), 2)):
            shown = [
                w.lower()
                for w in re.findall(r"[A-Za-z]{5,}", src.lines[k - 1])
                if not _mentions(w, fn.name) and w.lower() not in fn.name.lower()
            ]
            if len(shown) >= 1:
                w = rng.choice(shown)
                yield ("behaviour words, shown",
                       f"- {r}:{k} — `{fn.name}` works with the {w} value",
                       "verified", None)  # fmt: skip
        if tests and fn.name.startswith("test_"):
            yield from _test_rows(src, fn, body, rng)


def _test_rows(src: Source, fn: Fn, body: list[int], rng: random.Random) -> Iterator[Row]:
    r = src.rel
    raising = sorted(
        {
            n.lineno
            for n in _own(fn.node)
            if isinstance(n, ast.Call)
            and (getattr(n.func, "attr", None) or getattr(n.func, "id", "")) in _RAISE_CALLS
        }
    )
    equal = sorted(
        {
            n.lineno
            for n in _own(fn.node)
            if (
                isinstance(n, ast.Assert)
                and isinstance(n.test, ast.Compare)
                and any(isinstance(op, ast.Eq) for op in n.test.ops)
            )
            or (isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "assertEqual")
        }
    )
    head = fn.head
    says_raise = f"`{fn.name}` checks that it raises"
    says_none = f"`{fn.name}` checks that it does not raise"
    if raising:
        yield ("test asserts a raise", f"- {r}:{head} — {says_raise}", "verified", None)
        yield ("test asserts the opposite", f"- {r}:{head} — {says_none}", "unsupported", None)
        for k in rng.sample([k for k in body if k not in raising], 1):
            # about the test, not the line: the test around it does assert the raise
            yield ("test raise, another line of it", f"- {r}:{k} — {says_raise}", "verified",
                   None)  # fmt: skip
            status, to = _nearest(raising, k)
            yield ("test raise, wrong line", f"- {r}:{k} — {says_raise} here", status,
                   f"{r}:{to}" if to else None)  # fmt: skip
    else:
        yield ("test asserts no raise", f"- {r}:{head} — {says_none}", "verified", None)
        yield ("test asserts the opposite", f"- {r}:{head} — {says_raise}", "unsupported", None)
    says_equal = f"`{fn.name}` asserts equality"
    if equal:
        yield ("test asserts equality", f"- {r}:{head} — {says_equal}", "verified", None)


# The issue's own cases, in the corpus sources: (kind, citation, status, corrected_to).
HAND: tuple[Row, ...] = (
    ("named case", "- lib/lrucache.py:131 — `cached` returns the function when the cache is "
     "None", "unsupported", None),
    ("named case", "- lib/naturaltime.py:54 — `naturaldelta` returns the value unchanged on "
     "overflow", "unsupported", None),
    ("named case", "- lib/textutils.py:84 — `daterange` returns an empty range for a "
     "stationary step", "unsupported", None),
    ("named case", "- lib/lrucache_tests.py:36 — `test_iterating_while_inserting_is_safe` "
     "checks that iterating raises `RuntimeError`", "unsupported", None),
    ("named case", "- lib/textutils.py:999 — `ellipsize` truncates text", "corrected",
     "lib/textutils.py:55"),
    ("named case", "- lib/naturaltime.py:94 — calls `_pgettext_noop` for the suffixes",
     "verified", None),
    ("named case", "- lib/naturaltime.py:101 — `_pgettext_noop` is called for the female "
     "suffix", "verified", None),
    ("named case", "- lib/naturaltime.py:101 — `_pgettext_noop` marks the suffix",
     "verified", None),
    ("named case", "- lib/versionspec.py:61 — `Specifier.prereleases` setter", "verified",
     None),
    ("named case", "- lib/versionspec.py:40 — `Specifier.prereleases` is the property",
     "corrected", "lib/versionspec.py:51"),
    ("named case", "- lib/lrucache.py:135 — `key` is validated against the allow-list here",
     "verified", None),
    ("named case", "- lib/lrucache.py:128 — `cached` starts here", "verified", None),
    ("named case", "- lib/lrucache.py:131 — `cached` starts here", "corrected",
     "lib/lrucache.py:128"),
    ("named case", "- lib/lrucache.py:137 — `cached` is defined here", "corrected",
     "lib/lrucache.py:128"),
)  # fmt: skip


def verb_rows(root: Path, seed: int) -> tuple[list[Row], list[tuple[str, bytes]]]:
    """Copies the sources under ``root/lib``; returns the rows and (rel, bytes) of each."""
    rng = random.Random(seed)
    rows: list[Row] = []
    files: list[tuple[str, bytes]] = []
    (root / "lib").mkdir(parents=True, exist_ok=True)
    for path in sorted(DATA.glob("*.py")):
        rel = f"lib/{path.name}"
        shutil.copyfile(path, root / rel)
        data = path.read_bytes()
        files.append((rel, data))
        rows.extend(_rows(Source(rel, data.decode("utf-8")), rng))
    rows.extend(HAND)
    return rows, files
