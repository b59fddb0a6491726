"""A real repository and an answer document that cover every citation outcome and form.

``build_citation_repo(tmp_path)`` returns ``(root, answer, expected)`` where ``expected``
maps each citation's node name (``answer.md:LINE:LOCATION``) to ``(status,
corrected_to)``. ``make_citation_repo`` returns the full :class:`CitationRepo` with the
byte-exact document expected after ``--vgate-fix`` and the secret that lives outside the
root (it must never appear in any output). Line numbers are computed while the files
are generated, so the cases stay right when the fixture grows.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

VERIFIED, CORRECTED, DROPPED, FABRICATED = "verified", "corrected", "dropped", "fabricated"
UNSUPPORTED = "unsupported"


@dataclass(frozen=True)
class Case:
    """One citation in the answer: how it is written and what checking it must say."""

    label: str
    location: str  # canonical location as written (the node name's tail)
    status: str
    corrected_to: str | None = None
    fixed_location: str | None = None  # its location after --vgate-fix (corrected only)
    beyond_end: bool = False
    outside_root: bool = False


@dataclass
class CitationRepo:
    root: Path
    answer: Path
    outside: Path  # a folder next to the root, holding the secret
    secret: str
    cases: dict[str, Case] = field(default_factory=dict)  # node name -> case
    fixed_cases: dict[str, Case] = field(default_factory=dict)  # after --vgate-fix
    answer_bytes: bytes = b""
    fixed_bytes: bytes = b""  # the answer byte-for-byte after --vgate-fix

    @property
    def expected(self) -> dict[str, tuple[str, str | None]]:
        return {name: (c.status, c.corrected_to) for name, c in self.cases.items()}


class _Source:
    """Builds a file line by line and remembers where its landmarks are."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.at: dict[str, int] = {}

    def add(self, *lines: str, mark: str | None = None) -> None:
        if mark is not None:
            self.at[mark] = len(self.lines) + 1
        self.lines.extend(lines)

    def filler(self, count: int) -> None:
        self.lines.extend(f"# filler {len(self.lines) + 1}" for _ in range(count))

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def _app() -> _Source:
    s = _Source()
    s.add(
        '"""Fixture module: every landmark the answer cites."""',
        "from __future__ import annotations",
    )
    s.add("import functools", mark="imports")
    s.add("", "from helpers import shared_name", "", "")
    s.add("def retry(times):", "    def wrap(fn):", "        return fn", "    return wrap")
    s.filler(3)
    s.add("def exact_target(value):", "    total = value + 1", "    return total", mark="exact")
    s.filler(3)
    s.add("@retry(times=3)", mark="decorator")
    s.add("def decorated_fetch():", '    return "fetched"')
    s.filler(2)
    s.add("def long_body():", mark="long_body")
    s.add(*(f"    step_{i} = {i}" for i in range(8)), "    return step_0")
    s.filler(12)
    s.add("def drift_five():", "    return 5", mark="drift_five")
    s.filler(5)
    s.add("first = shared_name(1)", mark="tie_before")
    s.filler(2)
    s.add("middle = 0", mark="tie_middle")
    s.filler(2)
    s.add("last = shared_name(2)", mark="tie_after")
    s.filler(8)
    s.add("def ranged_block():", "    a = 1", "    b = 2", "    return a + b", mark="ranged")
    s.filler(3)
    s.add("def func_30():", "    return 30", mark="func_30")
    s.filler(30)
    s.add("class First:", "    def dup_handler(self):", "        return 1")
    s.filler(30)
    s.add("class Second:", "    def dup_handler(self):", "        return 2")
    s.filler(30)
    s.add("def func_3():", "    return 3", mark="func_3")
    s.filler(40)
    s.add("# nothing here", mark="far_away")
    s.filler(160)
    s.add("def drift_far():", '    return "far"', mark="drift_far")
    s.filler(5)
    s.add("def late_binding():", "    return None", mark="late_binding")
    return s


def _write(path: Path, data: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)


def _build_tree(root: Path, outside: Path, secret: str) -> dict[str, int]:
    """Writes the repository and the outside folder; returns landmark line numbers."""
    app = _app()
    _write(root / "src/app.py", app.text())
    at = {f"app.{k}": v for k, v in app.at.items()}
    at["app.lines"] = len(app.lines)
    _write(root / "src/util/helpers.py", '"""Helpers."""\n\n\ndef unique_helper():\n    return 1\n')
    at["helpers.unique_helper"] = 4
    for folder in ("a", "b", "c"):
        body = (
            "def load_settings():\n    return {}\n" if folder == "b" else "def other():\n    pass\n"
        )
        _write(root / f"src/{folder}/config.py", f'"""{folder} config."""\n\n\n{body}')
    at["config.load_settings"] = 4
    for folder in ("x", "y", "z"):
        _write(root / f"{folder}/models.py", f"class Model:\n    name = {folder!r}\n")
    # CRLF line ends and a BOM
    win = [
        "# windows file",
        "",
        "def crlf_func():",
        "    return 1",
        "",
        "",
        "",
        "",
        "def crlf_second():",
        "    return 2",
    ]
    _write(root / "src/win.py", b"\xef\xbb\xbf" + "\r\n".join(win).encode() + b"\r\n")
    at["win.crlf_func"], at["win.crlf_second"] = 3, 9
    # form feeds and other characters str.splitlines() would split on
    ff = "x = 1\n\x0c\n# a \x1c b \x1d c \x1e d \u2028 e \x85 f\n\x0c\n"
    ff += "\x0cdef after_formfeed():\n    return 1\n"
    _write(root / "src/ff.py", ff)
    at["ff.after_formfeed"] = 5
    _write(root / "assets/blob.dat", b"header\n" + b"\x00\x01\x02" * 100 + b"\nmore\n")
    # outside the root: a secret the checker must never read or print
    _write(outside / "secret.py", f'SECRET_VALUE = "{secret}"\n')
    _write(outside.parent / "etc/passwd", f"root:x:0:0:{secret}:/root:/bin/sh\n")
    (root / "src/linked.py").symlink_to(outside / "secret.py")
    (root / "vendor").symlink_to(outside, target_is_directory=True)
    (root / "pkg").mkdir()
    (root / "pkg/secret.py").symlink_to(outside / "secret.py")
    return at


def make_citation_repo(tmp_path: Path, *, git: bool = False) -> CitationRepo:
    """The fixture repository under ``tmp_path/repo``; ``git=True`` also makes it a work tree."""
    root = tmp_path / "repo"
    outside = tmp_path / "outside"
    secret = f"VGATE-SECRET-{os.getpid()}-{abs(hash(str(tmp_path))) % 10**8}"
    at = _build_tree(root, outside, secret)
    e, d5, rb = at["app.exact"], at["app.drift_five"], at["app.ranged"]
    df, lb, n = at["app.drift_far"], at["app.late_binding"], at["app.lines"]
    w2, h = at["win.crlf_second"], at["helpers.unique_helper"]
    far = at["app.far_away"]
    app = "src/app.py"
    # (text as written, text after --vgate-fix, cases on that line, line ending)
    rows: list[tuple[str, str | None, list[Case], str]] = []

    def row(text: str, *cases: Case, fixed: str | None = None, end: str = "\n") -> None:
        rows.append((text, fixed, list(cases), end))

    def ok(label: str, loc: str) -> Case:
        return Case(label, loc, VERIFIED)

    def moved(
        label: str, loc: str, to: str, *, fixed_loc: str | None = None, beyond: bool = False
    ) -> Case:
        return Case(label, loc, CORRECTED, to, fixed_loc or to, beyond_end=beyond)

    row("# Answer: where things are")
    row("")
    row(
        "Prose with no citations: the server listens on localhost:8000 (http://localhost:8000/health),",
        end="\r\n",
    )
    row(
        "the nightly job starts at 12:30, we need Python 3.11 and lib v1.2.3:4, "
        "see example.com:8080."
    )
    row("Bytes that are not UTF-8 stay as they are: \udcff\udcfe.")
    row("```python")
    row(f"{app}:{e} — inside a code fence, not a citation")
    row("```")
    row("")
    row("## Every form, verified")
    row(f"- {app}:{e} — `exact_target` adds one", ok("colon, em dash", f"{app}:{e}"))
    row(
        f"- {app}:{e}-{e + 2} – `exact_target` whole",
        ok("range, en dash", f"{app}:{e}-{e + 2}"),
        end="\r\n",
    )
    row(f"- {app}:{e}:5 - `exact_target` name", ok("colon-col, hyphen", f"{app}:{e}:5"))
    row(f"- {app}#L{e}: `exact_target` again", ok("hash, colon separator", f"{app}:{e}"))
    row(f"- {app}#L{e}-L{e + 2} — `exact_target` body", ok("hash range", f"{app}:{e}-{e + 2}"))
    row(f"- [exact_target]({app}#L{e}) is the entry point", ok("markdown link", f"{app}:{e}"))
    row(f"- `{app}:{e}` — `exact_target` in backticks", ok("backticked", f"{app}:{e}"))
    row(f"The `exact_target` function ({app}:{e}) adds one.", ok("parenthesized", f"{app}:{e}"))
    row(
        f"- ../{app}:{e} — `exact_target`, relative to the document",
        ok("document-relative", f"../{app}:{e}"),
    )
    row(
        f"- {app}:{at['app.imports']} — the module imports",
        ok("no entity, line exists", f"{app}:{at['app.imports']}"),
    )
    row(
        f"- {app}:{at['app.decorator']} — `decorated_fetch` is retried",
        ok("decorator line", f"{app}:{at['app.decorator']}"),
    )
    row(
        f"- {app}:{at['app.long_body'] + 4} — inside `long_body`",
        ok("line inside a function", f"{app}:{at['app.long_body'] + 4}"),
    )
    row(
        f"- src/win.py:{at['win.crlf_func']} — `crlf_func` in a CRLF file with a BOM",
        ok("CRLF + BOM", f"src/win.py:{at['win.crlf_func']}"),
    )
    row(
        f"- src/ff.py:{at['ff.after_formfeed']} — `after_formfeed` after form feeds",
        ok("form feed", f"src/ff.py:{at['ff.after_formfeed']}"),
    )
    row(
        f"- Twice: {app}:3 and {app}:3 — the imports",
        ok("same place", f"{app}:3"),
        ok("same place again", f"{app}:3"),
    )
    row("")
    row("## Drifted")
    # fmt: off

    def drifted(
        label: str, template: str, was: str, now: str, loc: str, to: str,
        *, fixed_loc: str | None = None, beyond: bool = False, end: str = "\n",
    ) -> None:
        """A corrected citation: ``template`` holds ``{}`` where the citation is written."""
        case = moved(label, loc, to, fixed_loc=fixed_loc, beyond=beyond)
        row(template.format(was), case, fixed=template.format(now), end=end)

    f3, f30 = at["app.func_3"], at["app.func_30"]
    drifted("drift by 5", "- {} — `drift_five` returns five", f"{app}:{d5 - 5}", f"{app}:{d5}",
            f"{app}:{d5 - 5}", f"{app}:{d5}")
    drifted("colon-col drift", "- {} — `drift_five` column", f"{app}:{d5 - 5}:9", f"{app}:{d5}:9",
            f"{app}:{d5 - 5}:9", f"{app}:{d5}", fixed_loc=f"{app}:{d5}:9", end="\r\n")
    drifted("hash drift", "- {} — `drift_five` hash", f"{app}#L{d5 - 5}", f"{app}#L{d5}",
            f"{app}:{d5 - 5}", f"{app}:{d5}")
    drifted("link drift", "- [the `drift_five` function]({})", f"{app}#L{d5 - 5}", f"{app}#L{d5}",
            f"{app}:{d5 - 5}", f"{app}:{d5}")
    drifted("drift by 150", "- {} — `drift_far` moved far", f"{app}:{df - 150}", f"{app}:{df}",
            f"{app}:{df - 150}", f"{app}:{df}")
    drifted("range drift", "- {} — `ranged_block` sums", f"{app}:{rb - 5}-{rb - 2}",
            f"{app}:{rb}-{rb + 3}", f"{app}:{rb - 5}-{rb - 2}", f"{app}:{rb}-{rb + 3}")
    drifted("hash range drift", "- {} — `ranged_block` sums", f"{app}#L{rb - 5}-L{rb - 2}",
            f"{app}#L{rb}-L{rb + 3}", f"{app}:{rb - 5}-{rb - 2}", f"{app}:{rb}-{rb + 3}")
    drifted("word boundary", "- {} — `func_3` returns three", f"{app}:{f30}", f"{app}:{f3}",
            f"{app}:{f30}", f"{app}:{f3}")
    drifted("CRLF drift", "- {} — `crlf_second` drifted in CRLF", f"src/win.py:{w2 - 3}",
            f"src/win.py:{w2}", f"src/win.py:{w2 - 3}", f"src/win.py:{w2}")
    drifted("beyond end, found", "- {} — `late_binding` beyond the end", f"{app}:999",
            f"{app}:{lb}", f"{app}:999", f"{app}:{lb}", beyond=True)
    drifted("unique basename", "- {} — `unique_helper` lives elsewhere", f"lib/helpers.py:{h}",
            f"src/util/helpers.py:{h}", f"lib/helpers.py:{h}", f"src/util/helpers.py:{h}")
    drifted("three candidates, one holder", "- {} — `load_settings` loads them", "conf/config.py:4",
            "src/b/config.py:4", "conf/config.py:4", "src/b/config.py:4")
    drifted("link text disagrees", "- {} — `exact_target` link text is wrong",
            f"[{app}:{e + 1}]({app}#L{e})", f"[{app}:{e}]({app}#L{e})", f"{app}:{e}", f"{app}:{e}")
    drifted("link target disagrees", "- {} — `drift_five` link target is wrong",
            f"[{app}:{d5}]({app}#L{d5 - 5})", f"[{app}:{d5}]({app}#L{d5})", f"{app}:{d5 - 5}",
            f"{app}:{d5}")
    # fmt: on
    row("")
    row("## Dropped")
    row(f"- {app}:{e} — `vanished_function` does it", Case("entity nowhere", f"{app}:{e}", DROPPED))
    row(
        f"- {app}:{at['app.tie_middle']} — calls `shared_name`",
        Case("two equal candidates", f"{app}:{at['app.tie_middle']}", DROPPED),
    )
    row(
        f"- {app}:{far} — `dup_handler` handles it",
        Case("two definitions", f"{app}:{far}", DROPPED),
    )
    row(
        "- models.py:1 — `Model` is the base",
        Case("three candidates, all holders", "models.py:1", DROPPED),
    )
    row(
        "- ../../etc/passwd:1 — the `root` entry",
        Case("dot-dot escape", "../../etc/passwd:1", DROPPED, outside_root=True),
    )
    row(
        f"- {outside}/secret.py:1 — `SECRET_VALUE`",
        Case("absolute path", f"{outside}/secret.py:1", DROPPED, outside_root=True),
    )
    row(
        "- src/linked.py:1 — `SECRET_VALUE`",
        Case("symlink out", "src/linked.py:1", DROPPED, outside_root=True),
    )
    row(
        "- vendor/secret.py:1 — `SECRET_VALUE`",
        Case("symlinked folder out", "vendor/secret.py:1", DROPPED, outside_root=True),
    )
    row("- assets/blob.dat:2 — the `header`", Case("binary", "assets/blob.dat:2", DROPPED))
    row("- src/util:3 — a folder", Case("directory", "src/util:3", DROPPED))
    row("")
    row("## Fabricated")
    row("- src/ghost.py:10 — `phantom` haunts", Case("file nowhere", "src/ghost.py:10", FABRICATED))
    row(
        f"- {app}:998 — `never_written` is here",
        Case("beyond end, not found", f"{app}:998", FABRICATED, beyond_end=True),
    )
    row(
        "- lost/secret.py:1 — `SECRET_VALUE`",
        Case("basename only via a symlink out", "lost/secret.py:1", FABRICATED),
    )
    assert n < 998

    answer = root / "docs/answer.md"
    repo = CitationRepo(root=root, answer=answer, outside=outside, secret=secret)
    before = [b"\xef\xbb\xbf"]
    after = [b"\xef\xbb\xbf"]
    for number, (text, fixed, cases, ending) in enumerate(rows, start=1):
        before.append(text.encode("utf-8", "surrogateescape") + ending.encode())
        after.append((fixed or text).encode("utf-8", "surrogateescape") + ending.encode())
        seen: dict[str, int] = {}
        for case in cases:
            seen[case.location] = seen.get(case.location, 0) + 1
            suffix = "" if seen[case.location] == 1 else f"~{seen[case.location]}"
            repo.cases[f"answer.md:{number}:{case.location}{suffix}"] = case
            if case.status == CORRECTED:
                after_loc = case.fixed_location or case.location
                repo.fixed_cases[f"answer.md:{number}:{after_loc}{suffix}"] = Case(
                    case.label, after_loc, VERIFIED
                )
            else:
                repo.fixed_cases[f"answer.md:{number}:{case.location}{suffix}"] = case
    repo.answer_bytes = b"".join(before)
    repo.fixed_bytes = b"".join(after)
    _write(answer, repo.answer_bytes)
    if git:
        _git_init(root)
    return repo


def _git_init(root: Path) -> None:
    from pytest_vgate.process import run_git

    for args in (["init", "-q"], ["add", "-A"]):
        result = run_git(args, cwd=root, timeout=30.0)
        assert result.exit_code == 0, (args, result.stderr)


def build_citation_repo(
    tmp_path: Path, *, git: bool = False
) -> tuple[Path, Path, dict[str, tuple[str, str | None]]]:
    """(root, answer document, {node name: (status, corrected_to)})."""
    repo = make_citation_repo(tmp_path, git=git)
    return repo.root, repo.answer, repo.expected
