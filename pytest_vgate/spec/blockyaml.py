"""The common shape of a gates file read line by line, without composing YAML nodes.

Most gates files are block mappings and sequences of one-line scalars (``- id: x`` /
``check: "..."``). For those, composing libyaml's node tree (a Python node and two marks
per scalar) and walking it was most of the load time. ``read`` reads exactly that subset
and gives what ``yamlnodes.load_yaml`` gives for it -- the same ``LocatedMap`` and
``LocatedList`` data with the same line of every mapping, key, value and list item --
and declines (``DECLINED``) anything else: flow collections, anchors, tags, block or
multi-line scalars, escapes, tabs, a duplicate key, an empty value, anything that would be
an error. A declined file goes through the full loader, which reads or refuses it as
before. Plain scalars are resolved by PyYAML's own resolver and constructors (``yes`` is
a boolean, ``1e3`` a float, as ever). tests/test_spec.py compares both readers.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from pytest_vgate.spec.located import LocatedList, LocatedMap

DECLINED: Any = object()  # not this subset: use the full loader
_UNSEEN: Any = object()

_STR_TAG = "tag:yaml.org,2002:str"
_BUILT = frozenset(  # the implicit tags whose constructors need nothing but the text
    f"tag:yaml.org,2002:{name}" for name in ("bool", "int", "float", "null", "timestamp")
)
# indent, "- " of a sequence entry, a plain ASCII key and its colon, the rest of the line
_LINE = re.compile(r"( *)(- +)?(?:([A-Za-z_][A-Za-z0-9_]*):(?: +|$))?(.*)")
_OTHER_BREAKS = re.compile("[\r\t\x85\u2028\u2029\ufeff]")  # line breaks, tabs, a BOM
_QUOTED_END = re.compile(r"(?: +#.*)? *")  # what may follow a quoted scalar on its line
_SINGLE = re.compile(r"'((?:[^']|'')*)'")
_NOT_PLAIN_START = frozenset("-?:,[]{}#&*!|>'\"%@`")
Resolvers = dict[Any, list[tuple[str, "re.Pattern[str]"]]]  # first character -> (tag, regexp)


def read(text: str, resolvers: Resolvers) -> Any:
    """The document's data, or ``DECLINED`` when it is not in the subset (or is empty).

    ``resolvers``: the ``yaml_implicit_resolvers`` of the loader that reads what is
    declined, so that a plain scalar means here what it means there.
    """
    if _OTHER_BREAKS.search(text) is not None:
        return DECLINED
    scalars = _Scalars(resolvers)
    keys: dict[str, bool] = {}  # key text -> whether it reads as text
    # Open containers, innermost last: (indent, container); ``top``/``top_indent`` is the
    # innermost. ``pending`` is the key of ``top`` whose value is a block still to come.
    stack: list[tuple[int, Any]] = []
    top: Any = None
    top_indent = -1
    pending: str | None = None
    root: Any = DECLINED
    match = _LINE.fullmatch
    for number, line in enumerate(text.split("\n"), 1):
        indent_s, dash, key, rest = match(line).groups()  # type: ignore[union-attr]
        if dash is None:
            if key is None:
                if not rest or rest[0] == "#":
                    continue  # blank or comment line
                return DECLINED  # a bare scalar: a continuation line, a top-level scalar
            if pending is None and len(indent_s) == top_indent and type(top) is LocatedMap:
                # The usual line: one more key of the mapping being read.
                if (keys.get(key) is not True or key in top) and not _key_ok(
                    key, top, keys, resolvers
                ):
                    return DECLINED
                pending = _put(top, key, rest, number, scalars)
                if pending is DECLINED:
                    return DECLINED
                continue
        indent = len(indent_s)
        if top is None:  # the first entry: the root
            if dash is not None:
                return DECLINED  # a top-level list: the full loader says what is wrong
            root = LocatedMap(number)
            stack.append((indent, root))
        elif pending is not None:  # the value of the key above starts here
            if indent > top_indent:
                block: Any = LocatedList(number) if dash is not None else LocatedMap(number)
            elif indent == top_indent and dash is not None:  # a sequence not indented
                block = LocatedList(number)
            else:
                return DECLINED  # an empty value (null)
            top[pending] = block
            top.value_lines[pending] = number
            stack.append((indent, block))
            pending = None
        else:
            while stack and (
                stack[-1][0] > indent
                or (stack[-1][0] == indent and dash is None and type(stack[-1][1]) is LocatedList)
            ):
                stack.pop()
            if not stack or stack[-1][0] != indent:
                return DECLINED  # indentation that matches no open block
        top_indent, top = stack[-1]
        if dash is not None:
            if type(top) is not LocatedList:
                return DECLINED
            top.item_lines.append(number)
            if key is None:  # a scalar item
                value = scalars.get(rest) if rest else DECLINED  # empty: null or a block
                if value is DECLINED:
                    return DECLINED
                top.append(value)
                continue
            item = LocatedMap(number)  # a mapping item; its keys align with this one
            top.append(item)
            top_indent, top = indent + len(dash), item
            stack.append((top_indent, top))
        elif type(top) is not LocatedMap:
            return DECLINED
        if not _key_ok(key, top, keys, resolvers):
            return DECLINED
        pending = _put(top, key, rest, number, scalars)
        if pending is DECLINED:
            return DECLINED
    if pending is not None:
        return DECLINED  # the last key has no value (null)
    return root


def _put(top: LocatedMap, key: str, rest: str, number: int, scalars: _Scalars) -> Any:
    """Store ``key: rest`` of line ``number`` in ``top``. Gives the key when its value is
    a block still to come (nothing after the colon), ``DECLINED`` when the value is not in
    the subset, else None."""
    top.key_lines[key] = number
    if not rest or rest[0] == "#":
        top[key] = None  # taken by the block below (or declined as null)
        return key
    value = scalars.get(rest)
    if value is DECLINED:
        return DECLINED
    top[key] = value
    top.value_lines[key] = number
    return None


def _key_ok(key: str, mapping: LocatedMap, keys: dict[str, bool], resolvers: Resolvers) -> bool:
    """A key YAML reads as text (not ``yes`` or ``null``), not yet in the mapping."""
    readable = keys.get(key)
    if readable is None:
        readable = keys[key] = _tag(key, resolvers) == _STR_TAG
    return readable and key not in mapping


class _Scalars:
    """One-line scalars, each distinct text read once: its value, or ``DECLINED``."""

    def __init__(self, resolvers: Resolvers) -> None:
        self.resolvers = resolvers
        self.seen: dict[str, Any] = {}
        self.constructor: Any = None

    def get(self, rest: str) -> Any:
        value = self.seen.get(rest, _UNSEEN)
        if value is _UNSEEN:
            value = self.seen[rest] = self._read(rest)
        return value

    def _read(self, rest: str) -> Any:
        first = rest[0]
        if first == '"':
            end = rest.find('"', 1)
            if end < 0 or "\\" in rest[1:end] or not _QUOTED_END.fullmatch(rest, end + 1):
                return DECLINED
            return rest[1:end]
        if first == "'":
            match = _SINGLE.match(rest)
            if match is None or not _QUOTED_END.fullmatch(rest, match.end()):
                return DECLINED
            return match.group(1).replace("''", "'")
        if first in _NOT_PLAIN_START:
            return DECLINED
        cut = rest.find(" #")
        value = (rest if cut < 0 else rest[:cut]).rstrip(" ")
        if ": " in value or value[-1] == ":":
            return DECLINED  # a mapping value where none is allowed
        tag = _tag(value, self.resolvers)
        if tag == _STR_TAG:
            return value
        if tag not in _BUILT:
            return DECLINED  # `=` or `<<`: the full loader knows what to make of them
        if self.constructor is None:
            self.constructor = yaml.constructor.SafeConstructor()
        try:
            return self.constructor.construct_object(yaml.ScalarNode(tag, value))
        except (ValueError, TypeError, OverflowError, yaml.YAMLError):
            return DECLINED  # e.g. 2026-13-45: the full loader reports it, with its line


def _tag(value: str, resolvers: Resolvers) -> str:
    """The tag PyYAML's resolver gives a plain scalar (``BaseResolver.resolve``)."""
    for tag, regexp in (*resolvers.get(value[0], ()), *resolvers.get(None, ())):
        if regexp.match(value):
            return str(tag)
    return _STR_TAG
