# ruff: noqa  (corpus source: written in the style of the library it models)
"""String and date helpers, in the manner of boltons' strutils and timeutils."""

import re
import unicodedata
from datetime import timedelta

_punct_ws_str = r"[\W_]+"
_punct_re = re.compile(_punct_ws_str)
_camel2under_re = re.compile("((?<=[a-z0-9])[A-Z]|(?!^)[A-Z](?=[a-z]))")


def camel2under(camel_string):
    """Converts a camelcased string to underscores."""
    return _camel2under_re.sub(r"_\1", camel_string).lower()


def under2camel(under_string):
    """Converts an underscored string to camelcased."""
    return "".join(w.capitalize() or "_" for w in under_string.split("_"))


def slugify(text, delim="_", lower=True, ascii=False):
    """A basic function that turns text full of scary characters into a slug."""
    ret = delim.join(split_punct_ws(text)) or delim if text else ""
    if ascii:
        ret = asciify(ret)
    if lower:
        ret = ret.lower()
    return ret


def split_punct_ws(text):
    """Splits text by whitespace and punctuation."""
    return [w for w in _punct_re.split(text) if w]


def asciify(text, ignore=False):
    """Converts a unicode or bytestring into a bytestring with just ascii characters."""
    try:
        try:
            return text.encode("ascii")
        except UnicodeDecodeError:
            return text.decode("ascii").encode("ascii")
    except UnicodeDecodeError:
        mode = "ignore" if ignore else "replace"
        return unicodedata.normalize("NFKD", text).encode("ascii", mode)


def strip_ansi(text):
    """Strips ANSI escape codes from text."""
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def ellipsize(text, max_len=160, *, ellipsis="..."):
    """Truncate *text* to at most *max_len* characters, ending in *ellipsis*."""
    if max_len < 0:
        raise ValueError("max_len must be non-negative")
    if len(text) <= max_len:
        return text
    if max_len <= len(ellipsis):
        return ellipsis[:max_len]
    return text[: max_len - len(ellipsis)] + ellipsis


def iter_splitlines(text):
    """Like str.splitlines, but returns an iterator of lines instead of a list."""
    prev_end, len_text = 0, len(text)
    for match in re.finditer(r"\n", text):
        yield text[prev_end : match.start()]
        prev_end = match.end()
    tail = text[prev_end:]
    if prev_end and tail:
        yield tail
    if not prev_end and len_text:
        yield text


def daterange(start, stop, step=1, inclusive=False):
    """In the spirit of range, yields a sequence of dates."""
    if not isinstance(step, int):
        raise TypeError("step must be an int, not %r" % (step,))
    if step == 0:
        raise ValueError("step does not advance: %r" % (step,))
    if stop is not None and (stop - start).days * step < 0:
        return
    current = start
    while stop is None or current < stop or (inclusive and current == stop):
        yield current
        current += timedelta(days=step)


def relative_time(d, other=None, ndigits=0):
    """Get a string representation of the difference between two datetimes."""
    if other is None:
        raise TypeError("other is required")
    diff = other - d
    seconds = diff.total_seconds()
    phrase = "ago" if seconds >= 0 else "from now"
    del diff
    return "%s %s" % (round(abs(seconds), ndigits), phrase)
