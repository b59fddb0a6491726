"""A labelled corpus of citations over real code that ships on this machine.

``build_corpus(root)`` copies a fixed list of installed source files (pytest, pluggy and
the standard library) and the sources of ``tests/data/citation_corpus`` (what lines
do: ``helpers/verb_corpus.py``) under ``root``, writes ``root/answer.md`` with one
citation per line, and returns the cases with their true labels. The generator is deterministic
(``SEED``): it reads each file with its own ``ast`` walk and plain text searches, and
chooses only situations whose true outcome it can state independently of the checker
(unique definitions, no other mention of the name nearby, and so on).

``python tests/helpers/citation_corpus.py --write-docs`` recomputes the figures and
rewrites the table in ``docs/citations.md`` (``tests/test_citation_corpus.py`` checks it).
"""

from __future__ import annotations

import ast
import hashlib
import random
import re
import shutil
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

SEED = 13
STATUSES = ("verified", "corrected", "dropped", "fabricated", "unsupported")
TABLE_START = "<!-- corpus-table:start -->"
TABLE_END = "<!-- corpus-table:end -->"
DOCS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "citations.md"

# (installed package, files inside it); missing files are skipped.
SOURCES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("_pytest", ("python.py", "fixtures.py", "runner.py", "reports.py", "nodes.py")),
    ("pluggy", ("_hooks.py", "_manager.py", "_callers.py")),
    ("json", ("decoder.py", "encoder.py")),
    ("argparse", ()),
    ("textwrap", ()),
    ("shlex", ()),
    ("fnmatch", ()),
    ("dataclasses", ()),
    ("functools", ()),
)
_WEAK = frozenset({"self", "cls", "None", "True", "False", "args", "kwargs", "print"})


@dataclass(frozen=True)
class Case:
    kind: str  # the situation the generator built
    line: int  # the answer.md line the citation stands on
    text: str  # the answer line
    status: str  # the true label
    corrected_to: str | None = None


@dataclass(frozen=True)
class Def:
    name: str
    qualname: str
    first: int  # first decorator
    head: int  # the def/class line
    end: int
    is_class: bool

    @property
    def size(self) -> int:
        return self.end - self.first + 1


def installed_sources() -> list[tuple[str, Path]]:
    """(root-relative path, installed file) for every source that exists here."""
    import importlib

    found: list[tuple[str, Path]] = []
    for package, files in SOURCES:
        module = importlib.import_module(package)
        origin = Path(str(module.__file__))
        if not files:
            found.append((f"stdlib/{origin.name}", origin))
            continue
        area = "stdlib" if package == "json" else "site"
        for name in files:
            path = origin.parent / name
            if path.is_file():
                found.append((f"{area}/{package}/{name}", path))
    return found


C_HEADERS = (Path("/usr/include/zlib.h"), Path("/usr/include/stdio.h"))  # when installed
_C_WORDS = frozenset(
    re.findall(
        r"\w+",
        "extern const char void unsigned signed long short struct union typedef define "
        "include ifdef ifndef endif else elif return static inline restrict sizeof enum "
        "register volatile defined undef pragma error warning while break continue switch "
        "case default float double",
    )
)


def c_code_parts(text: str) -> list[str]:
    """Each line of a C file with its comments (and string contents) blanked out: the
    generator's own reading, a character state machine that also knows strings."""
    out: list[str] = []
    state = "code"
    for line in text.split("\n"):
        kept: list[str] = []
        i = 0
        while i < len(line):
            two = line[i : i + 2]
            ch = line[i]
            if state == "block":
                if two == "*/":
                    state, i = "code", i + 2
                    continue
                kept.append(" ")
            elif state == "string":
                if ch == "\\":
                    i += 2
                    continue
                if ch == '"':
                    state = "code"
                kept.append(" ")
            elif two == "/*":
                state, i = "block", i + 2
                continue
            elif two == "//":
                break
            elif ch == '"':
                state = "string"
                kept.append(" ")
            else:
                kept.append(ch)
            i += 1
        if state == "string":
            state = "code"
        out.append("".join(kept))
    if out and out[-1] == "":
        out.pop()
    return out


def _c_rows(rel: str, text: str, rng: random.Random) -> list[tuple[str, str, str, str | None]]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    code = c_code_parts(text)
    idents = re.compile(r"(?<![\w])[A-Za-z_]\w{4,}(?![\w])")
    in_code: Counter[str] = Counter(m for part in code for m in idents.findall(part))
    rows: list[tuple[str, str, str, str | None]] = []
    code_lines = [
        k for k, part in enumerate(code, start=1) if part.strip() and (";" in part or "(" in part)
    ]
    picked = 0
    for k in sorted(rng.sample(code_lines, min(len(code_lines), 40))):
        names = [n for n in idents.findall(code[k - 1]) if n not in _C_WORDS]
        if names and picked < 8:
            picked += 1
            rows.append(("C code line", f"- {rel}:{k} — `{rng.choice(names)}`", "verified", None))
    comment_only = [
        k for k, part in enumerate(code, start=1) if not part.strip() and lines[k - 1].strip()
    ]
    picked = 0
    for k in sorted(rng.sample(comment_only, min(len(comment_only), 200))):
        names = [
            n
            for n in idents.findall(lines[k - 1])
            if n not in _C_WORDS
            and in_code[n] == 0
            and not any(_mentions(lines[j], n) for j, p in enumerate(code) if p.strip())
        ]
        if names and picked < 8:
            picked += 1
            rows.append(("C comment line", f"- {rel}:{k} — `{rng.choice(names)}`", "dropped", None))
    blanks = [k for k, line in enumerate(lines, start=1) if not line.strip()]
    for k in sorted(rng.sample(blanks, min(len(blanks), 3))):
        rows.append(("C blank line, prose", f"- {rel}:{k} — the stream buffer", "dropped", None))
    rows.append(("C whole file, prose", f"- {rel}:1-{len(lines)} — the header", "dropped", None))
    return rows


def _mentions(line: str, name: str) -> bool:
    return re.search(rf"(?<![\w]){re.escape(name)}(?![\w])", line) is not None


class SourceInfo:
    """One file as the generator sees it: lines, definitions, calls."""

    def __init__(self, rel: str, text: str) -> None:
        self.rel = rel
        self.lines = text.split("\n")
        if self.lines and self.lines[-1] == "":
            self.lines.pop()
        self.n = len(self.lines)
        tree = ast.parse(text)
        self.defs: list[Def] = []
        self.assigned: Counter[str] = Counter()
        self.calls: list[tuple[str, int]] = []  # (name, line) of one-line calls
        self.call_lines: set[int] = set()  # lines where any call starts
        stack: list[tuple[ast.AST, str]] = [(tree, "")]
        while stack:
            node, prefix = stack.pop()
            inner = prefix
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                first = min([d.lineno for d in node.decorator_list] + [node.lineno])
                end = node.end_lineno or node.lineno
                self.defs.append(
                    Def(
                        node.name,
                        prefix + node.name,
                        first,
                        node.lineno,
                        end,
                        isinstance(node, ast.ClassDef),
                    )
                )
                inner = f"{prefix}{node.name}."
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    if isinstance(t, ast.Name):
                        self.assigned[t.id] += 1
            if isinstance(node, ast.Call):
                self.call_lines.add(node.lineno)
            if isinstance(node, ast.Call) and node.lineno == node.end_lineno:
                func = node.func
                name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
                if isinstance(name, str):
                    self.calls.append((name, node.lineno))
            for child in ast.iter_child_nodes(node):
                stack.append((child, inner))
        self.defs.sort(key=lambda d: d.head)
        counts = Counter(d.name for d in self.defs)
        self.unique = [
            d
            for d in self.defs
            if counts[d.name] == 1
            and self.assigned[d.name] == 0
            and len(d.name) >= 4
            and d.name not in _WEAK
            and not d.name.startswith("__")
        ]

    def line(self, number: int) -> str:
        return self.lines[number - 1]

    def blank(self, number: int) -> bool:
        return not self.line(number).strip()

    def code(self, number: int) -> bool:
        text = self.line(number).strip()
        return bool(text) and not text.startswith("#") and not text.startswith(("'", '"'))

    def mentioned(self, name: str, lines: Iterable[int]) -> bool:
        return any(1 <= k <= self.n and _mentions(self.line(k), name) for k in lines)

    def anywhere(self, name: str) -> bool:
        return self.mentioned(name, range(1, self.n + 1))

    def window_clear(self, name: str, line: int, but: Iterable[int] = ()) -> bool:
        """No mention of ``name`` within 20 lines of ``line`` (except lines ``but``)."""
        skip = set(but)
        return not self.mentioned(name, (k for k in range(line - 20, line + 21) if k not in skip))


def _prose(name: str) -> str | None:
    """``parse_known_args`` -> ``the parse known args code``; None for one-word names."""
    parts = [p.lower() for p in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])", name)]
    parts = [p for p in parts if len(p) >= 4 and p not in {"function", "class", "method"}]
    return f"the {' '.join(parts)} code" if len(parts) >= 2 else None


class _Builder:
    def __init__(self, files: list[SourceInfo], rng: random.Random) -> None:
        self.files = files
        self.rng = rng
        self.rows: list[tuple[str, str, str, str | None]] = []  # kind, text, status, to

    def add(self, kind: str, loc: str, desc: str, status: str, to: str | None = None) -> None:
        self.rows.append((kind, f"- {loc} — {desc}", status, to))

    def pick(self, items: list, count: int) -> list:  # type: ignore[type-arg]
        items = list(items)
        self.rng.shuffle(items)
        return items[:count]


def _generate(
    files: list[SourceInfo], rng: random.Random
) -> list[tuple[str, str, str, str | None]]:
    b = _Builder(files, rng)
    for f in files:
        r = f.rel
        uniq = f.unique
        # correct: the definition line, the definition span, a call line, a method by its
        # dotted name, prose made of the definition's own words
        for d in b.pick(uniq, 4):
            b.add("correct def line", f"{r}:{d.head}", f"`{d.name}` is defined here", "verified")
        for d in b.pick([d for d in uniq if d.size <= 80], 2):
            b.add("correct def range", f"{r}:{d.first}-{d.end}", f"`{d.name}` in full", "verified")
        calls = [(n, ln) for n, ln in f.calls if len(n) >= 4 and n not in _WEAK]
        for name, ln in b.pick(sorted(set(calls)), 2):
            b.add("correct call line", f"{r}:{ln}", f"calls `{name}`", "verified")
        methods = [d for d in uniq if "." in d.qualname and d.qualname.count(".") == 1]
        for d in b.pick(methods, 1):
            b.add("correct dotted method", f"{r}:{d.head}", f"`{d.qualname}`", "verified")
        for d in b.pick([d for d in uniq if _prose(d.name)], 2):
            b.add("correct prose", f"{r}:{d.head}", str(_prose(d.name)), "verified")
        # drifted single lines (1-30 lines) and drifted ranges (1-20 lines)
        drifts = 0
        for d in b.pick(uniq, 40):
            if drifts >= 4:
                break
            k = rng.randint(1, 30) * rng.choice((-1, 1))
            target = d.head + k
            if not 1 <= target <= f.n or d.first <= target <= d.end:
                continue
            if _mentions(f.line(target), d.name):
                continue
            if abs(k) > 20 and not f.window_clear(d.name, target):
                continue
            drifts += 1
            b.add(
                f"drift {abs(k)}",
                f"{r}:{target}",
                f"`{d.name}` does it",
                "corrected",
                f"{r}:{d.head}",
            )
        ranges = 0
        for d in b.pick([d for d in uniq if 3 <= d.size <= 40], 40):
            if ranges >= 2:
                break
            k = rng.randint(1, 20) * rng.choice((-1, 1))
            s, e = d.first + k, d.end + k
            if s < 1 or e > f.n:
                continue
            if f.mentioned(d.name, (x for x in range(s, e + 1) if x != d.head)):
                continue
            ranges += 1
            b.add(
                f"range drift {abs(k)}",
                f"{r}:{s}-{e}",
                f"`{d.name}` body",
                "corrected",
                f"{r}:{d.first}-{d.end}",
            )
        # a nearby definition of another entity
        near = 0
        for d in b.pick(uniq, 40):
            if near >= 2:
                break
            others = [
                o
                for o in f.defs
                if o.name != d.name
                and 1 <= abs(o.head - d.head) <= 20
                and not _mentions(f.line(o.head), d.name)
                and not (d.first <= o.head <= d.end and o.head == d.head)
            ]
            if not others:
                continue
            o = rng.choice(others)
            near += 1
            b.add(
                "wrong entity nearby",
                f"{r}:{o.head}",
                f"`{d.name}` here",
                "corrected",
                f"{r}:{d.head}",
            )
        # blank lines: naming code (corrected to the definition nearby) and prose (dropped)
        blanks = [k for k in range(1, f.n + 1) if f.blank(k)]
        done = 0
        for k in b.pick(blanks, 60):
            if done >= 2:
                break
            near_defs = [d for d in uniq if 1 <= abs(d.head - k) <= 20]
            if not near_defs:
                continue
            distances = Counter(abs(d.head - k) for d in near_defs)
            d = min(near_defs, key=lambda d: abs(d.head - k))
            if distances[abs(d.head - k)] > 1:
                continue
            done += 1
            b.add(
                "blank line, code",
                f"{r}:{k}",
                f"`{d.name}` starts here",
                "corrected",
                f"{r}:{d.head}",
            )
        for k in b.pick(blanks, 1):
            b.add("blank line, prose", f"{r}:{k}", "the main loop", "dropped")
        # comment lines that mention a defined name
        comments = 0
        for k in b.pick([k for k in range(1, f.n + 1) if f.line(k).strip().startswith("#")], 80):
            if comments >= 1:
                break
            named = [d for d in uniq if _mentions(f.line(k), d.name)]
            if not named:
                continue
            d = named[0]
            if not (abs(d.head - k) <= 20 or f.window_clear(d.name, k, but=(k,))):
                continue
            if abs(d.head - k) <= 20 and [
                o for o in f.defs if o.name == d.name and o.head != d.head
            ]:
                continue
            comments += 1
            b.add("comment line", f"{r}:{k}", f"`{d.name}`", "corrected", f"{r}:{d.head}")
        # the whole file: naming code (corrected to its span) and prose (dropped)
        for d in b.pick([d for d in uniq if d.size * 2 + 8 < f.n], 1):
            b.add(
                "whole file, code",
                f"{r}:1-{f.n}",
                f"`{d.name}`",
                "corrected",
                f"{r}:{d.first}-{d.end}",
            )
        b.add("whole file, prose", f"{r}:1-{f.n}", "the whole module", "dropped")
        # beyond the end: found (corrected, listed as a fabrication) or not (fabricated)
        for d in b.pick(uniq, 1):
            past = f.n + rng.randint(1, 500)
            b.add("past EOF, found", f"{r}:{past}", f"`{d.name}`", "corrected", f"{r}:{d.head}")
        past = f.n + rng.randint(1, 500)
        b.add("past EOF, nowhere", f"{r}:{past}", "`vgate_never_defined_here`", "fabricated")
        # a long class named for a line deep inside one of its methods
        for c in b.pick([d for d in uniq if d.is_class and d.size > 60], 3):
            inner = [
                m
                for m in f.defs
                if c.first < m.first and m.end <= c.end and m.size > 3 and m.head - c.head > 20
            ]
            lines = [
                k
                for m in inner
                for k in range(m.head + 1, m.end + 1)
                if f.code(k) and f.window_clear(c.name, k)
            ]
            if lines:
                k = rng.choice(lines)
                b.add(
                    "deep inside a long class",
                    f"{r}:{k}",
                    f"`{c.name}` here",
                    "corrected",
                    f"{r}:{c.head}",
                )
                break
        # the line holds a secondary identifier of the description, not its subject
        second = 0
        for name, ln in b.pick(sorted(set(calls)), 60):
            if second >= 2:
                break
            subjects = [
                d
                for d in uniq
                if d.name != name
                and not d.first <= ln <= d.end
                and any(d.first <= k <= d.end for k in f.call_lines)  # "calls": it does
                and not _mentions(f.line(ln), d.name)
                and (abs(d.head - ln) <= 20 or f.window_clear(d.name, ln))
            ]
            if not subjects:
                continue
            d = rng.choice(subjects)
            second += 1
            b.add(
                "secondary identifier",
                f"{r}:{ln}",
                f"`{d.name}` calls `{name}`",
                "corrected",
                f"{r}:{d.head}",
            )
        # prose whose words are not on the (code) line
        unrelated = [
            k
            for k in range(1, f.n + 1)
            if f.code(k) and not re.search(r"gram|spoo|toke", f.line(k), re.I)
        ]
        for k in b.pick(unrelated, 2):
            b.add("prose, unrelated line", f"{r}:{k}", "the grammar spooler tokenizer", "dropped")
        # an operator alone, on a line that holds it
        ops = [
            k
            for k in range(1, f.n + 1)
            if f.code(k)
            and ">" in f.line(k)
            and not re.search(r"compar|grammar|tokens", f.line(k), re.I)
        ]
        for k in b.pick(ops, 1):
            b.add("operator alone", f"{r}:{k}", "`>` compares grammar tokens", "dropped")
    # across files: another file's entity, and files that exist nowhere
    for i, f in enumerate(files):
        other = files[(i + 1) % len(files)]
        absent = [d for d in other.unique if not f.anywhere(d.name)]
        lines = [k for k in range(1, f.n + 1) if f.code(k)]
        for d in b.pick(absent, 2):
            k = rng.choice(lines)
            b.add("wrong file", f"{f.rel}:{k}", f"`{d.name}`", "dropped")
        folder = f.rel.rsplit("/", 1)[0]
        b.add(
            "missing file",
            f"{folder}/vgate_missing_{i}.py:{rng.randint(1, 300)}",
            "`run`",
            "fabricated",
        )
    return b.rows


def build_corpus(root: Path, seed: int = SEED) -> tuple[Path, list[Case], str]:
    """Copies the sources under ``root``, writes ``root/answer.md``; returns it, the
    cases and a fingerprint of everything the figures depend on."""
    digest = hashlib.sha256(f"seed={seed}".encode())
    infos: list[SourceInfo] = []
    for rel, path in installed_sources():
        data = path.read_bytes()
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        digest.update(rel.encode() + b"\0" + data)
        infos.append(SourceInfo(rel, data.decode("utf-8")))
    rng = random.Random(seed)
    rows = _generate(infos, rng)
    for header in C_HEADERS:
        if header.is_file():
            data = header.read_bytes()
            rel = f"include/{header.name}"
            (root / "include").mkdir(exist_ok=True)
            shutil.copyfile(header, root / rel)
            digest.update(rel.encode() + b"\0" + data)
            rows += _c_rows(rel, data.decode("utf-8", "replace"), rng)
    from helpers.verb_corpus import verb_rows

    verbs, verb_files = verb_rows(root, seed)
    for rel, data in verb_files:
        digest.update(rel.encode() + b"\0" + data)
    rows += verbs
    lines = ["# A labelled corpus of citations", ""]
    cases: list[Case] = []
    for kind, text, status, to in rows:
        lines.append(text)
        cases.append(Case(kind, len(lines), text, status, to))
    answer = root / "answer.md"
    answer.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return answer, cases, digest.hexdigest()[:16]


@dataclass(frozen=True)
class Figures:
    total: int
    confusion: dict[tuple[str, str], int]  # (true, predicted) -> count
    wrong_target: int  # predicted corrected with the right status but another location
    kinds: dict[str, int]
    fingerprint: str

    def false(self, status: str) -> int:
        """Citations given ``status`` whose true label is something else."""
        return sum(n for (t, p), n in self.confusion.items() if p == status and t != status)

    def precision(self, status: str) -> float | None:
        predicted = sum(n for (_t, p), n in self.confusion.items() if p == status)
        hit = self.confusion.get((status, status), 0) - (
            self.wrong_target if status == "corrected" else 0
        )
        return hit / predicted if predicted else None

    def recall(self, status: str) -> float | None:
        true = sum(n for (t, _p), n in self.confusion.items() if t == status)
        hit = self.confusion.get((status, status), 0) - (
            self.wrong_target if status == "corrected" else 0
        )
        return hit / true if true else None


def measure(root: Path, seed: int = SEED) -> tuple[Figures, list[tuple[Case, str, str | None]]]:
    """Build the corpus under ``root`` and check it; returns the figures and each
    (case, predicted status, predicted correction)."""
    from pytest_vgate.citations import CitationChecker, parse_citations

    answer, cases, fingerprint = build_corpus(root, seed)
    citations = {c.line: c for c in parse_citations(answer)}
    checker = CitationChecker(root)
    confusion: Counter[tuple[str, str]] = Counter()
    wrong_target = 0
    outcomes: list[tuple[Case, str, str | None]] = []
    for case in cases:
        result = checker.check(citations[case.line])
        predicted = result.status.value
        confusion[(case.status, predicted)] += 1
        if predicted == case.status == "corrected" and result.corrected_to != case.corrected_to:
            wrong_target += 1
        outcomes.append((case, predicted, result.corrected_to))
    kinds = Counter(
        c.kind.split(" ")[0] if c.kind.startswith(("drift", "range")) else c.kind for c in cases
    )
    return (
        Figures(
            len(cases), dict(confusion), wrong_target, dict(sorted(kinds.items())), fingerprint
        ),
        outcomes,
    )


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def render_table(figures: Figures) -> str:
    """The Markdown block that ``docs/citations.md`` holds between the markers."""
    rows = [
        TABLE_START,
        f"Corpus: {figures.total} citations, seed {SEED}, fingerprint `{figures.fingerprint}`.",
        "",
        "| status | true | predicted | precision | recall | false positives |",
        "|---|---|---|---|---|---|",
    ]
    for status in STATUSES:
        true = sum(n for (t, _p), n in figures.confusion.items() if t == status)
        predicted = sum(n for (_t, p), n in figures.confusion.items() if p == status)
        rows.append(
            f"| `{status}` | {true} | {predicted} | {_pct(figures.precision(status))} | "
            f"{_pct(figures.recall(status))} | {figures.false(status)} |"
        )
    rows += [
        "",
        "Confusion (rows: the true label; columns: the status given):",
        "",
        "| true \\ given | " + " | ".join(f"`{s}`" for s in STATUSES) + " |",
        "|---|" + "---|" * len(STATUSES),
    ]
    for true in STATUSES:
        cells = [str(figures.confusion.get((true, given), 0)) for given in STATUSES]
        rows.append(f"| `{true}` | " + " | ".join(cells) + " |")
    rows += [
        "",
        "Situations: " + ", ".join(f"{kind} ({n})" for kind, n in figures.kinds.items()) + ".",
        TABLE_END,
    ]
    return "\n".join(rows)


def docs_table(page: Path = DOCS_PAGE) -> str | None:
    text = page.read_text(encoding="utf-8")
    if TABLE_START not in text:
        return None
    return text[text.index(TABLE_START) : text.index(TABLE_END) + len(TABLE_END)]


def write_docs(figures: Figures, page: Path = DOCS_PAGE) -> None:
    text = page.read_text(encoding="utf-8")
    old = docs_table(page)
    if old is None:
        raise SystemExit(f"{page} has no {TABLE_START} marker")
    page.write_text(text.replace(old, render_table(figures)), encoding="utf-8")


def main(argv: list[str]) -> int:
    import tempfile

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    with tempfile.TemporaryDirectory() as tmp:
        figures, outcomes = measure(Path(tmp))
    for case, predicted, to in outcomes:
        if predicted != case.status or (predicted == "corrected" and to != case.corrected_to):
            print(
                f"MISS {case.kind}: {case.text} -> {predicted} {to} "
                f"(true {case.status} {case.corrected_to})"
            )
    print(render_table(figures))
    if "--write-docs" in argv:
        write_docs(figures)
        print(f"wrote {DOCS_PAGE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
