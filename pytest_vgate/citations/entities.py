"""What a citation's description names: the entities the cited line must contain.

A description is prose; only what reads as code counts, so that ordinary words never
decide a verdict: backticked spans, ``def``/``class`` names, dotted names, calls
(``name(``), and identifiers in snake_case or CamelCase. Order is priority order:
the search for a drifted line tries the first entity that occurs in the file.
"""

from __future__ import annotations

import re

MAX_ENTITIES = 8


def words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# File extensions and host suffixes: a dotted word ending in one is a file or host
# name (``app.py``, ``example.com``), not a code entity.
FILE_EXTENSIONS = words(
    "py pyi pyx pxd js mjs cjs ts tsx jsx md rst txt json yaml yml toml cfg ini conf c h cc "
    "cpp cxx hpp hh go rs java kt kts scala rb php pl pm sh bash zsh fish ps1 bat html htm "
    "css scss less sql lock xml csv tsv ipynb swift m mm cs fs vb r jl lua dart ex exs erl "
    "hrl clj cljs el vim tf hcl proto graphql gql vue svelte lean nix gradle cmake mk in "
    "log env properties png jpg jpeg gif svg pdf bin so dll exe whl gz tgz zip tar"
)
HOST_SUFFIXES = words(
    "com org net edu gov mil int io co uk de fr us local localhost localdomain internal lan "
    "home arpa"
)
# CamelCase brand and prose words that are not code entities (compared lowercased).
_NOT_CODE = words(
    "github gitlab javascript typescript coffeescript powershell macos ios ipados iphone "
    "ipad youtube linkedin pypi openai postgresql mysql sqlite mongodb numpy scipy pytorch "
    "tensorflow devops phd mcdonald oauth nosql webassembly dynamodb bigquery hashicorp "
    "vscode intellij pycharm latex ebay wifi"
)
# Words that follow "class"/"function" in English prose ("a class that ...").
_STOPWORDS = words(
    """a an the this that these those it its is are was were be been being of to in on at by
    for with from as and or not no but if then else when which who whom what where why how
    method methods function functions class classes attribute attributes variable variables
    name names body level hierarchy instance instances object objects definition definitions
    itself here there above below also only just each every all any some both one two
    call calls called returns return value values"""
)

_BACKTICK_RE = re.compile(r"(`+)(.+?)\1")
_URL_RE = re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]*://\S*")
_PATHLIKE_RE = re.compile(r"[\w.\-+@~%]*/[\w.\-+@~%/]*|[\w\-+@~%]+\.[A-Za-z]\w*(?::\d+\S*)?")
_DEF_RE = re.compile(r"\b(?:async\s+def|def|class|function|func|fn)\s+([A-Za-z_]\w*)")
_DOTTED_RE = re.compile(r"(?<![\w.])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?![\w])")
_CALL_RE = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\(")
_WORD_RE = re.compile(r"(?<![\w.])([A-Za-z_][A-Za-z0-9_]*)(?![\w.])")
_IDENT_RE = re.compile(r"[A-Za-z_]\w*")
_DOTTED_FULL_RE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_DECL_SPAN_RE = re.compile(r"^(?:async\s+def|def|class|function|func|fn)\s+([A-Za-z_]\w*)")
_CALL_SPAN_RE = re.compile(r"^([A-Za-z_][\w.]*)\s*\(.*\)$")
_CAMEL_RE = re.compile(r"[a-z][A-Z]|[A-Z]{2,}[a-z]")
_PLURAL_ACRONYM_RE = re.compile(r"[A-Z]+s")


def is_dotted(entity: str) -> bool:
    """A ``Class.method`` style entity (searched as written and by its last part's definition)."""
    return _DOTTED_FULL_RE.fullmatch(entity) is not None


def is_identifier(entity: str) -> bool:
    return _IDENT_RE.fullmatch(entity) is not None


def _is_file_or_host(dotted: str) -> bool:
    parts = dotted.split(".")
    if parts[-1].lower() in FILE_EXTENSIONS or parts[-1].lower() in HOST_SUFFIXES:
        return True
    return all(len(p) <= 2 for p in parts)  # e.g., i.e., a.k.a., U.S.


def is_code_word(word: str) -> bool:
    """snake_case, _private, dunder or CamelCase/mixedCase; never a plain English word."""
    if word.lower() in _NOT_CODE:
        return False
    core = word.strip("_")
    if not core or not any(ch.isalpha() for ch in core):
        return False
    if "_" in core:
        return True
    if word.startswith("_") and not word.endswith("_"):
        return True  # _private
    if word.startswith("__") and word.endswith("__"):
        return False  # markdown bold (__word__), as it renders
    return _CAMEL_RE.search(word) is not None and not _PLURAL_ACRONYM_RE.fullmatch(word)


def _from_backticks(span: str) -> str | None:
    """The entity a backticked span names, or None for a path or citation."""
    s = span.strip()
    if not s:
        return None
    if s.startswith("@"):
        s = s[1:]  # a decorator names its dotted callable
    decl = _DECL_SPAN_RE.match(s)
    if decl:
        return decl.group(1)
    if s.endswith("()") and len(s) > 2:
        s = s[:-2]
    if is_identifier(s):
        return s
    if is_dotted(s):
        return None if _is_file_or_host(s) else s
    if " " not in s and _PATHLIKE_RE.fullmatch(s):
        return None  # a file name or path, not something on the line
    call = _CALL_SPAN_RE.match(s)
    if call and (is_identifier(call.group(1)) or is_dotted(call.group(1))):
        return call.group(1)
    return s  # a code snippet, matched literally


def extract_entities(description: str) -> tuple[str, ...]:
    """Entities named in ``description``, in priority order, without duplicates."""
    found: list[str] = []

    def add(entity: str | None) -> None:
        if entity and entity not in found and len(found) < MAX_ENTITIES:
            found.append(entity)

    text = _URL_RE.sub(" ", description)
    for m in _BACKTICK_RE.finditer(text):
        add(_from_backticks(m.group(2)))
    text = _BACKTICK_RE.sub(" ", text)
    for m in _DEF_RE.finditer(text):
        if m.group(1).lower() not in _STOPWORDS:
            add(m.group(1))
    text = _PATHLIKE_RE.sub(
        lambda m: " " if "/" in m.group() or _is_path(m.group()) else m.group(), text
    )
    for m in _DOTTED_RE.finditer(text):
        if not _is_file_or_host(m.group(1)):
            add(m.group(1))
    for m in _CALL_RE.finditer(text):
        if m.group(1).lower() not in _STOPWORDS:
            add(m.group(1))
    for m in _WORD_RE.finditer(text):
        if is_code_word(m.group(1)):
            add(m.group(1))
    return tuple(found)


def _is_path(token: str) -> bool:
    name = token.split(":", 1)[0]
    return "." in name and name.rsplit(".", 1)[1].lower() in FILE_EXTENSIONS
