"""Finding code citations in a document.

Accepted: ``path:line``, ``path:start-end``, ``path:line:col``, ``path#L10``,
``path#L10-L20`` and markdown links whose target is one of those, followed by an
optional em dash, en dash, hyphen or colon and a description. Not citations: URLs
(a scheme, so ``http://host:8000/x``), ``host:port`` (no file extension, or a host
suffix such as ``.com``), times, version numbers, and anything inside fenced code
blocks unless the fence says ``markdown``/``md``/``prose``. Offsets are character
offsets into the document decoded as UTF-8 with ``surrogateescape`` and no newline
translation, so that fixing can keep every other byte.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from pytest_vgate.citations.entities import HOST_SUFFIXES, extract_entities, words
from pytest_vgate.jsonable import Jsonable, StrEnum
from pytest_vgate.paths import relative


class CitationForm(StrEnum):
    """How a citation was written; fixing keeps the form."""

    COLON = "colon"  # path:line
    RANGE = "range"  # path:start-end
    COLON_COL = "colon-col"  # path:line:col
    HASH = "hash"  # path#L10
    HASH_RANGE = "hash-range"  # path#L10-L20
    MARKDOWN_LINK = "markdown-link"  # [text](one of the above)
    FORGE_LINK = "forge-link"  # https://github.com/OWNER/REPO/blob/REF/path#L10[-L20]


@dataclass(frozen=True)
class Citation(Jsonable):
    """One citation as written in a document; ``line`` is 1-based in the document."""

    __json_tail__: ClassVar[tuple[str, ...]] = ("node_name",)

    document: Path
    line: int
    offset: int  # character offset of ``raw`` in the decoded document
    raw: str
    path: str  # as written (a markdown link: its target's path)
    start_line: int
    end_line: int  # == start_line unless a range
    column: int | None = None  # path:line:col
    form: CitationForm = CitationForm.COLON
    description: str = ""
    entities: tuple[str, ...] = ()
    link_mismatch: str | None = None  # markdown link text and target disagree
    occurrence: int = 1  # > 1 when the same location is cited again on the same line
    doc_column: int = 1  # 1-based column of ``raw`` in its document line

    @property
    def location(self) -> str:
        """The cited location in a canonical ``path:line[-end][:col]`` spelling."""
        if self.end_line != self.start_line:
            return f"{self.path}:{self.start_line}-{self.end_line}"
        if self.column is not None:
            return f"{self.path}:{self.start_line}:{self.column}"
        return f"{self.path}:{self.start_line}"

    @property
    def node_name(self) -> str:
        """A short, stable name, unique within the document (for a pytest item)."""
        name = f"{self.document.name}:{self.line}:{self.location}"
        return name if self.occurrence == 1 else f"{name}~{self.occurrence}"

    def source(self, root: Path | None = None) -> str:
        """``document:line``, the document relative to ``root`` when it lies inside."""
        rel = relative(self.document, root) if root is not None else None
        return f"{rel or self.document.as_posix()}:{self.line}"


_LOC_BODY = (
    r"(?P<path>[\w.\-+@~%/]*\w)"
    r"(?:"
    r":(?P<line>\d+)(?::(?P<col>\d+)|(?P<rsep>[-–])(?P<rend>\d+))?"
    r"|#L(?P<hline>\d+)(?:-L?(?P<hend>\d+))?"
    r")"
)
_LOC_RE = re.compile(r"(?<![\w.\-+@~%/:#\\])" + _LOC_BODY + r"(?![\w]|[.:\-–]\d)")
_LOC_FULL_RE = re.compile(_LOC_BODY)
_LINK_RE = re.compile(
    r"(?<!!)\[(?P<text>[^\]\n]*)\]\(\s*<?(?P<target>[^()\s<>]+)>?"
    r"(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'))?\s*\)"
)
_URL_RE = re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s<>\]\)`]*")
# A file at a line on a forge: GitHub/Gitea ``/blob/``, GitLab ``/-/blob/``, Gitea and
# Bitbucket ``/src/``; ``rest`` is the ref and the path, told apart against the root.
_FORGE_RE = re.compile(
    r"\bhttps?://[\w.\-]+(?::\d+)?/[\w.\-~%/]+?/(?:-/)?(?:blob|src)/"
    r"(?P<rest>[\w.\-+@~%/]*\w)"
    r"(?:#L(?P<line>\d+)(?:-L?(?P<end>\d+))?|#lines-(?P<bline>\d+)(?::(?P<bend>\d+))?)"
)
_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([^\s`]*)")
_EXT_RE = re.compile(r"\.([A-Za-z][A-Za-z0-9_+\-]*)$")
_SEPARATOR_RE = re.compile(r"^[\s`*_)\]]*(?:—|–|-|:)(?=\s)\s*")
_OPENERS_RE = re.compile(r"[\s`*\[]*$")  # markup right before a citation
_CLOSERS_RE = re.compile(r"^[`*\])]*")  # markup right after it
_LIST_MARK_RE = re.compile(r"^\s*(?:[-*+]|\d+[.)]|>|#+|\|)\s*")
PROSE_FENCES = frozenset({"markdown", "md", "prose"})
BARE_NAMES = words(
    "Makefile GNUmakefile Dockerfile Containerfile Jenkinsfile Vagrantfile Gemfile Rakefile "
    "Procfile Justfile Snakefile Pipfile BUILD WORKSPACE"
)


@dataclass(frozen=True)
class Token:
    """One location token: spans are (start, end) offsets in the line."""

    span: tuple[int, int]
    path: str
    path_span: tuple[int, int]
    form: CitationForm
    start: int
    start_span: tuple[int, int]
    end: int
    end_span: tuple[int, int] | None = None
    column: int | None = None


@dataclass(frozen=True)
class LinkToken:
    """A markdown link whose target is a location; ``text`` is the location in its text."""

    span: tuple[int, int]
    target: Token
    text: Token | None
    text_body: str
    mismatch: str | None = field(default=None)


def looks_like_path(path: str) -> bool:
    """A path has a file extension or a slash, and a letter; ``host.com`` is a host."""
    if not any(ch.isalpha() for ch in path):
        return False
    last = path.rstrip("/").rsplit("/", 1)[-1]
    if last in BARE_NAMES:
        return True
    ext = _EXT_RE.search(last)
    if ext:
        return ext.group(1).lower() not in HOST_SUFFIXES or "/" in path
    return "/" in path


def _token(m: re.Match[str], base: int = 0) -> Token | None:
    path = m.group("path")
    if not looks_like_path(path):
        return None
    shift = base

    def sp(name: str) -> tuple[int, int]:
        return (m.start(name) + shift, m.end(name) + shift)

    if m.group("line") is not None:
        start = int(m.group("line"))
        if m.group("col") is not None:
            form, end, end_span, col = CitationForm.COLON_COL, start, None, int(m.group("col"))
        elif m.group("rend") is not None:
            form, end, end_span, col = CitationForm.RANGE, int(m.group("rend")), sp("rend"), None
        else:
            form, end, end_span, col = CitationForm.COLON, start, None, None
        start_span = sp("line")
    else:
        start, start_span = int(m.group("hline")), sp("hline")
        col = None
        if m.group("hend") is not None:
            form, end, end_span = CitationForm.HASH_RANGE, int(m.group("hend")), sp("hend")
        else:
            form, end, end_span = CitationForm.HASH, start, None
    return Token(
        span=(m.start() + shift, m.end() + shift),
        path=path,
        path_span=sp("path"),
        form=form,
        start=start,
        start_span=start_span,
        end=end,
        end_span=end_span,
        column=col,
    )


def _same_file(a: Token, b: Token) -> bool:
    pa = os.path.normpath(a.path).split(os.sep)
    pb = os.path.normpath(b.path).split(os.sep)
    short, long_ = (pa, pb) if len(pa) <= len(pb) else (pb, pa)
    return long_[len(long_) - len(short) :] == short  # app.py names src/app.py


def _same_place(a: Token, b: Token) -> bool:
    if a.start != b.start or (a.end != b.end and a.start != a.end):
        return False  # "a.py:3" may name the range "a.py#L3-L4" by its first line
    return _same_file(a, b)


def _link(m: re.Match[str]) -> LinkToken | None:
    target_m = _LOC_FULL_RE.fullmatch(m.group("target"))
    if target_m is None:
        return None
    target = _token(target_m, m.start("target"))
    if target is None:
        return None
    text_m = _LOC_RE.search(m.group("text"))
    text = _token(text_m, m.start("text")) if text_m else None
    if text is not None and not _same_file(text, target):
        text = None  # "[see docs/t.md:3](src/a.py#L4)": another file, not this link's place
    mismatch = None
    if text is not None and not _same_place(text, target):
        mismatch = f"the link text says {_spelled(text)} but the link target is {_spelled(target)}"
    return LinkToken((m.start(), m.end()), target, text, m.group("text"), mismatch)


def _spelled(t: Token) -> str:
    return f"{t.path}:{t.start}" if t.start == t.end else f"{t.path}:{t.start}-{t.end}"


def _forge(m: re.Match[str]) -> Token:
    line_group = "line" if m.group("line") is not None else "bline"
    end_group = "end" if m.group("line") is not None else "bend"
    start = int(m.group(line_group))
    ranged = m.group(end_group) is not None
    return Token(
        span=(m.start(), m.end()),
        path=m.group("rest"),
        path_span=(m.start("rest"), m.end("rest")),
        form=CitationForm.FORGE_LINK,
        start=start,
        start_span=(m.start(line_group), m.end(line_group)),
        end=int(m.group(end_group)) if ranged else start,
        end_span=(m.start(end_group), m.end(end_group)) if ranged else None,
    )


def scan_line(line: str) -> list[Token | LinkToken]:
    """Every citation token in one prose line, in order of position."""
    found: list[Token | LinkToken] = []
    taken: list[tuple[int, int]] = []
    if "://" in line:
        for m in _FORGE_RE.finditer(line):
            found.append(_forge(m))
            taken.append((m.start(), m.end()))
    masked = _URL_RE.sub(lambda u: " " * len(u.group()), line)
    if "](" in masked:
        for m in _LINK_RE.finditer(masked):
            link = _link(m)
            if link is not None and not any(a <= link.span[0] < b for a, b in taken):
                found.append(link)
                taken.append(link.span)
    for m in _LOC_RE.finditer(masked):
        if any(a <= m.start() < b for a, b in taken):
            continue
        tok = _token(m)
        if tok is not None:
            found.append(tok)
    found.sort(key=lambda t: t.span[0])
    return found


def _description(line: str, tokens: list[Token | LinkToken], i: int) -> str:
    """The prose a citation describes: after a separator, else around the citation."""
    end = tokens[i].span[1]
    stop = tokens[i + 1].span[0] if i + 1 < len(tokens) else len(line)
    after = line[end:stop]
    sep = _SEPARATOR_RE.match(after)
    tok = tokens[i]
    label = tok.text_body if isinstance(tok, LinkToken) and tok.text is None else ""
    if sep:
        return f"{label} {after[sep.end() :]}".strip(" \t\r|*")
    if label:
        return f"{label} {after.lstrip()}".strip(" \t\r|*.,;")
    begin = tokens[i - 1].span[1] if i > 0 else 0
    before = _LIST_MARK_RE.sub("", line[begin : tokens[i].span[0]])
    before = _OPENERS_RE.sub("", before)
    if i > 0:
        before = _CLOSERS_RE.sub("", before)
    after_text = _CLOSERS_RE.sub("", after).strip(" \t\r|*.,;")
    if before.endswith("(") or not after_text:
        return before.rstrip("( \t").strip(" \t|*,;:—–")
    return after_text


def decode_document(data: bytes) -> str:
    """Documents decode byte-exactly (surrogateescape) so fixing can re-encode them."""
    return data.decode("utf-8", errors="surrogateescape")


def _clean(text: str) -> str:
    """Lone surrogates (undecodable bytes) become U+FFFD in anything reported."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return text


def prose_lines(text: str) -> list[tuple[int, int, str]]:
    """(1-based line number, offset, line) of every line outside code fences."""
    out: list[tuple[int, int, str]] = []
    fence: str | None = None  # the open fence's marker
    prose_fence = False  # the open fence holds prose (```markdown)
    offset = 0
    for number, line in enumerate(text.split("\n"), start=1):
        m = _FENCE_RE.match(line)
        if fence is None and m:
            fence = m.group(1)
            prose_fence = m.group(2).lower() in PROSE_FENCES
        elif fence is not None and m and _closes(fence, line):
            fence = None
        elif fence is None or prose_fence:
            out.append((number, offset, line))
        offset += len(line) + 1
    return out


def _closes(fence: str, line: str) -> bool:
    body = line.strip()
    return len(body) >= len(fence) and not body.strip(fence[0])


def parse_citations(document: Path, text: str | None = None) -> list[Citation]:
    """All citations in ``document`` (read as bytes when ``text`` is None)."""
    if text is None:
        text = decode_document(document.read_bytes())
    citations: list[Citation] = []
    for number, offset, line in prose_lines(text):
        if ":" not in line and "#L" not in line:
            continue
        tokens = scan_line(line)
        seen: dict[str, int] = {}
        for i, tok in enumerate(tokens):
            desc = _clean(_description(line, tokens, i))
            target = tok.target if isinstance(tok, LinkToken) else tok
            raw = line[tok.span[0] : tok.span[1]]
            key = f"{target.path}:{target.start}-{target.end}:{target.column}"
            seen[key] = seen.get(key, 0) + 1
            citations.append(
                Citation(
                    document=document,
                    line=number,
                    offset=offset + tok.span[0],
                    raw=_clean(raw),
                    path=_clean(target.path),
                    start_line=target.start,
                    end_line=target.end,
                    column=target.column,
                    form=CitationForm.MARKDOWN_LINK if isinstance(tok, LinkToken) else target.form,
                    description=desc,
                    entities=extract_entities(desc),
                    link_mismatch=tok.mismatch if isinstance(tok, LinkToken) else None,
                    occurrence=seen[key],
                    doc_column=tok.span[0] + 1,
                )
            )
    return citations
