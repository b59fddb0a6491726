"""Value rules for gates-file keys: one function per kind of value, normalising or refusing.

Each function raises ``BadValue`` with an instruction-like message (and, for list items,
the item's line); ``spec`` turns that into a ``GatesFileError`` naming FILE:LINE and key.
"""

from __future__ import annotations

import keyword
import math
import posixpath
import re
import shlex
from collections.abc import Callable, Mapping
from datetime import date, datetime, timedelta, timezone
from typing import Any

from pytest_vgate.defaults import MAX_TIMEOUT

ID_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ISO_RE = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})"
    r"(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,6})\d*)?)?)?"
    r"\s*(Z|z|[+-]\d{2}(?::?\d{2})?)?"
)


class BadValue(Exception):
    """A value that breaks its key's rule; ``line`` points at a list item when known."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


def describe(value: Any) -> str:
    """A short, bounded description of a value for messages (never a full repr)."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        text = repr(value)
        return f"the number {text if len(text) <= 20 else text[:20] + '...'}"
    if isinstance(value, str):
        return f"the text {value[:40]!r}{'...' if len(value) > 40 else ''}"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    return f"a value of type {type(value).__name__}"


def _item_line(items: Any, index: int) -> int | None:
    lines = getattr(items, "item_lines", None)
    return lines[index] if lines is not None and index < len(lines) else None


def text(key: str, value: Any, *, nullable: bool = False) -> str:
    if value is None and nullable:
        return ""
    if not isinstance(value, str):
        raise BadValue(f"`{key}` must be text, got {describe(value)}; quote it")
    return value


def gate_id(key: str, value: Any) -> str:
    if not isinstance(value, str):
        raise BadValue(f"the gate id must be text, got {describe(value)}; e.g. `id: parser-empty`")
    if not ID_RE.fullmatch(value):
        raise BadValue(
            f"the gate id {value[:60]!r} is not allowed: use 1-128 ASCII letters, digits, "
            "`.`, `_` and `-`, starting with a letter, digit or `_` (it becomes part of a "
            "pytest node id)"
        )
    return value


# ``shlex.split`` costs ~30 us per check; these give the same words for the common checks
# (tests/test_spec.py proves it against shlex with Hypothesis). shlex splits only at
# " \t\r\n" (``str.split`` at every Unicode space) and treats `#` as a plain character
# (``shlex.split`` turns comments off); without a backslash, a quoted part is literal.
_NOT_PLAIN = re.compile(r"['\"\\]|[^\S \t\r\n]")  # a quote, a backslash or another space
_WORD = re.compile(r"""(?:[^ \t\r\n'"\\]|'[^']*'|"[^"\\]*")+""")
_QUOTED_WORDS = re.compile(rf"[ \t\r\n]*(?:{_WORD.pattern}(?:[ \t\r\n]+|\Z))*")
_QUOTED_PART = re.compile(r"'([^']*)'" + r'|"([^"]*)"')


def _unquote(word: str) -> str:
    if "'" not in word and '"' not in word:
        return word
    if word[0] in "'\"" and word[-1] == word[0] and word.count(word[0]) == 2:  # 'one part'
        return word[1:-1]
    return _QUOTED_PART.sub(r"\1\2", word)  # the group that did not take part gives ""


# A shell reads these, outside quotes, as operators (a pipe, a list, a redirection). A check
# runs without one, so they would reach the program as plain words and change nothing:
# `python -c "print(1)" | grep -q 2` would pass. Quoted or escaped, they are arguments.
# So would a second line (a shell runs it as the next command) and a `\` that continues a
# line (a shell joins the lines; shlex keeps the line break as an argument).
# A check never holds NUL (``argv`` refuses it first): in what ``_unquoted_rest`` leaves,
# NUL stands for a `\` before a line break.
_ESCAPED_BREAK = "\0"
_SHELL_OPERATOR = re.compile(r"\|\||&&|>>|[|&;<>\r\n\0]")
_QUOTED_OR_ESCAPED = re.compile(r"\\.|'[^']*'|" + r'"(?:[^"\\]|\\.)*"', re.DOTALL)
NEXT_LINE = "\n"  # what shell_operator returns for a second line outside quotes
CONTINUED_LINE = "\\\n"  # ... and for a line continued with a backslash


def shell_operator(check: str) -> str | None:
    """The first shell operator outside quotes in ``check`` (``|``, ``&&``, ``>`` ...), or
    ``NEXT_LINE`` / ``CONTINUED_LINE`` for a line break that a shell would act on (blank
    lines before and after the words, such as a block's last line break, are none)."""
    if _SHELL_OPERATOR.search(check) is None:
        return None
    bare = _QUOTED_OR_ESCAPED.sub(_unquoted_rest, check).strip(" \t\r\n")
    found = _SHELL_OPERATOR.search(bare)
    if found is None:
        return None
    if found.group() == _ESCAPED_BREAK:
        return CONTINUED_LINE
    return NEXT_LINE if found.group() in "\r\n" else found.group()


def _unquoted_rest(match: re.Match[str]) -> str:
    """A quoted part or an escaped character as a plain letter (part of a word, never an
    operator); a ``\\`` before a line break as ``_ESCAPED_BREAK``, to be told apart."""
    return _ESCAPED_BREAK if match.group() in ("\\\n", "\\\r") else "w"


def argv(key: str, check: str) -> tuple[str, ...]:
    """Split a check like a POSIX shell would (no expansion); blank gives ().

    Blank is also what a shell would run nothing for: only empty words (``''``) or a
    first word that starts a comment (``# TODO``). A shell operator outside quotes is
    refused: no shell runs it, so it would silently become an argument.
    """
    if "\x00" in check:
        raise BadValue(f"`{key}` contains a NUL character, which no argument can carry; remove it")
    if not check.strip():
        return ()
    if _NOT_PLAIN.search(check) is None:
        words = tuple(check.split())
    elif _QUOTED_WORDS.fullmatch(check):
        words = tuple(map(_unquote, _WORD.findall(check)))
    else:
        try:
            words = tuple(shlex.split(check, posix=True))
        except ValueError as exc:
            raise BadValue(
                f"`{key}` cannot be split into arguments ({exc}); close the quote or escape "
                "it with a backslash"
            ) from None
    if check.lstrip(" \t\r\n").startswith("#") or not any(words):
        return ()
    operator = shell_operator(check)
    if operator == NEXT_LINE:
        raise BadValue(
            f"`{key}` has more than one line, but a check is one command run without a "
            "shell, so the next line would reach the program as more arguments; to run "
            "several commands write `sh -c '...'` or a gate for each, to wrap a long "
            f"command use a folded block (`{key}: >-`)"
        )
    if operator == CONTINUED_LINE:
        raise BadValue(
            f"`{key}` continues a line with `\\`, which only a shell reads (without one the "
            "line break reaches the program as an argument); write the command on one "
            f"line, or wrap it with a folded block (`{key}: >-`)"
        )
    if operator is not None:
        comment = " (`#` starts no comment here)" if "#" in check else ""
        raise BadValue(
            f"`{key}` has the shell operator `{operator}` outside quotes, but a check runs "
            f"without a shell, so it would reach the program as a plain argument{comment}; "
            f"to use a shell write `sh -c '...'`, to pass `{operator}` as an argument quote it"
        )
    return words


def exit_codes(key: str, value: Any) -> tuple[int, ...]:
    """An exit code 0-255 or a non-empty list of them; duplicates dropped, order kept."""
    example = f"e.g. `{key}: 0` or `{key}: [0, 1]`"
    items = value if isinstance(value, list) else [value]
    if isinstance(value, list) and not value:
        raise BadValue(f"`{key}` is an empty list, so no exit code could match; {example}")
    codes: list[int] = []
    for index, item in enumerate(items):
        if isinstance(item, bool) or not isinstance(item, int) or not 0 <= item <= 255:
            raise BadValue(
                f"`{key}` must be an exit code from 0 to 255 or a list of them, got "
                f"{describe(item)}; {example}",
                _item_line(value, index),
            )
        if item not in codes:
            codes.append(item)
    return tuple(codes)


def timeout(key: str, value: Any) -> float:
    bad = isinstance(value, bool) or not isinstance(value, (int, float))
    if not bad:
        try:
            seconds = float(value)
        except OverflowError:
            seconds = math.inf
        bad = not (math.isfinite(seconds) and 0 < seconds <= MAX_TIMEOUT)
    if bad:
        raise BadValue(
            f"`{key}` must be a number of seconds above 0 and at most {MAX_TIMEOUT:g}, got "
            f"{describe(value)}; e.g. `{key}: 30`"
        )
    return seconds


def names(key: str, value: Any, *, what: str, example: str) -> tuple[str, ...]:
    """A list of non-empty words without whitespace (tool names); duplicates dropped."""
    if not isinstance(value, list):
        raise BadValue(f"`{key}` must be a list of {what}, got {describe(value)}; e.g. {example}")
    result: list[str] = []
    for index, item in enumerate(value):
        if not isinstance(item, str) or not item or any(c.isspace() or c == "\x00" for c in item):
            raise BadValue(
                f"each entry of `{key}` must be one of {what} (text without spaces), got "
                f"{describe(item)}; e.g. {example}",
                _item_line(value, index),
            )
        if item not in result:
            result.append(item)
    return tuple(result)


def rel_path(key: str, value: Any, line: int | None = None) -> str:
    """A path inside the root: relative, no `..`, no `~`; normalised with `/`."""
    if not isinstance(value, str) or not value.strip():
        raise BadValue(f"`{key}` must be a non-empty relative path, got {describe(value)}", line)
    parts = re.split(r"[\\/]+", value)
    hostile = (
        "\x00" in value
        or value.startswith(("/", "\\", "~"))
        or re.match(r"[A-Za-z]:", value) is not None
        or ".." in parts
    )
    if hostile:
        raise BadValue(
            f"`{key}` path {value[:60]!r} leaves the root; write a path relative to the root "
            "without a leading `/` or `~` and without `..`",
            line,
        )
    return posixpath.normpath(value.replace("\\", "/"))


def rel_paths(key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise BadValue(
            f"`{key}` must be a list of paths relative to the root, got {describe(value)}; "
            f'e.g. `{key}: ["tests/"]`'
        )
    return _unique_items(key, value, rel_path)


def env(key: str, value: Any) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """A list of names to pass, or a mapping ``{pass: [...], set: {NAME: "text"}}``."""
    if isinstance(value, list):
        return _env_names(key, value), ()
    if not isinstance(value, Mapping):
        raise BadValue(
            f"`{key}` must be a list of variable names or a mapping with `pass` and `set`, got "
            f"{describe(value)}; e.g. `{key}: [HOME]` or `{key}: {{set: {{LANG: C}}}}`"
        )
    for name in value:
        if name not in ("pass", "set"):
            raise BadValue(
                f"`{key}` takes only `pass` (a list of names) and `set` (a mapping), not "
                f"{describe(name)}",
                getattr(value, "key_lines", {}).get(name),
            )
    passed = _env_names(f"{key}.pass", value.get("pass", []))
    raw = value.get("set", {})
    if not isinstance(raw, Mapping):
        raise BadValue(
            f"`{key}.set` must be a mapping of NAME: text, got {describe(raw)}; "
            f'e.g. `set: {{PYTHONHASHSEED: "0"}}`',
            getattr(value, "value_lines", {}).get("set"),
        )
    settings: dict[str, str] = {}
    for name, text_value in raw.items():
        line = getattr(raw, "key_lines", {}).get(name)
        _env_name(f"{key}.set", name, line)
        if not isinstance(text_value, str) or "\x00" in text_value:
            raise BadValue(
                f"`{key}.set` value of {name} must be text without NUL, got "
                f'{describe(text_value)}; quote it, e.g. `{name}: "1"`',
                line,
            )
        settings[name] = text_value
    return passed, tuple(settings.items())


def _env_names(key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise BadValue(f"`{key}` must be a list of variable names, got {describe(value)}")
    return _unique_items(key, value, _env_name)


def _env_name(key: str, name: Any, line: int | None) -> str:
    if not isinstance(name, str) or not ENV_NAME_RE.fullmatch(name):
        raise BadValue(
            f"`{key}` entry {describe(name)} is not a variable name; use letters, digits and "
            "`_`, not starting with a digit (e.g. HOME, LANG)",
            line,
        )
    return name


def stale_at(key: str, value: Any) -> str | None:
    """ISO 8601 date or date-time (no zone means UTC), normalised to UTC ``...Z``."""
    if value is None:
        return None
    moment: datetime | None = None
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, date):
        moment = datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        moment = _parse_iso(value.strip())
    if moment is None:
        raise BadValue(
            f"`{key}` must be an ISO 8601 date or date-time, got {describe(value)}; "
            f"e.g. `{key}: 2026-11-20T10:00:00Z`"
        )
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    try:
        moment = moment.astimezone(timezone.utc)
    except (OverflowError, ValueError):
        raise BadValue(f"`{key}` is out of the representable range; use a real date") from None
    spec = "seconds" if moment.microsecond == 0 else "microseconds"
    return moment.replace(tzinfo=None).isoformat(timespec=spec) + "Z"


def _parse_iso(value: str) -> datetime | None:
    match = _ISO_RE.fullmatch(value)
    if match is None:
        return None
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    tz: timezone | None = None
    if zone and zone in "Zz":
        tz = timezone.utc
    elif zone:
        digits = zone[1:].replace(":", "")
        offset = timedelta(hours=int(digits[:2]), minutes=int(digits[2:] or 0))
        tz = timezone(-offset if zone[0] == "-" else offset) if offset < timedelta(1) else None
        if tz is None:
            return None
    try:
        return datetime(
            int(year),
            int(month),
            int(day),
            int(hour or 0),
            int(minute or 0),
            int(second or 0),
            int((fraction or "0").ljust(6, "0")),
            tzinfo=tz,
        )
    except ValueError:
        return None


def verifier_ref(key: str, value: Any, line: int | None = None) -> str:
    """``module:function``: a dotted module path and a function name, both identifiers."""
    module, sep, function = value.partition(":") if isinstance(value, str) else ("", "", "")
    parts = [*module.split("."), function]
    if not sep or not all(p.isidentifier() and not keyword.iskeyword(p) for p in parts):
        raise BadValue(
            f"`{key}` entry {describe(value)} is not `module:function`; e.g. "
            "`checks:parser_rejects_empty` (the module is imported with the root on sys.path)",
            line,
        )
    return str(value)


def verifier_refs(key: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str) and key == "verifier":
        return (verifier_ref(key, value),)
    if not isinstance(value, list) or not value:
        raise BadValue(
            f"`{key}` must be a non-empty list of `module:function` entries, got "
            f"{describe(value)}; e.g. `{key}: [checks:first, checks:second]`"
        )
    return _unique_items(key, value, verifier_ref)


def _unique_items(
    key: str, value: list[Any], parse: Callable[[str, Any, int | None], str]
) -> tuple[str, ...]:
    """Each list item parsed (errors name the item's own line), duplicates dropped."""
    result: dict[str, None] = {}
    for index, item in enumerate(value):
        result[parse(key, item, _item_line(value, index))] = None
    return tuple(result)
