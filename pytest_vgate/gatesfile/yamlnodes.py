"""Safe YAML loading that remembers the line of every key, value and list item.

Why not ``yaml.safe_load``: it forgets positions (a gates-file error must name FILE:LINE),
silently keeps the last of two duplicate keys, and expands merge keys and aliases in a way
that lets a small hostile file grow without bound. Here the composed node tree is walked
once, each node converted at most once, so aliases cost nothing and cycles are refused.
The tree is composed by libyaml (``_loader_class``; docs/performance.md) or PyYAML's
pure-Python loader: both give the same data, lines and errors (``load_yaml``).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import re
import sys
from collections.abc import Iterator
from typing import Any

import yaml

from pytest_vgate.gatesfile.located import LocatedList, LocatedMap

_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_MERGE_TAG = "tag:yaml.org,2002:merge"


class YamlError(Exception):
    """A document that cannot become data. ``line`` is 1-based (None when unknown)."""

    def __init__(self, message: str, line: int | None, key: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.key = key


class _PureLoader(yaml.SafeLoader):
    """The pure-Python safe loader; only its parser, composer and scalar constructors are used."""


_C_LOADER: type[Any] | None = getattr(yaml, "CSafeLoader", None)  # libyaml, ~4x faster
_NON_PRINTABLE = yaml.reader.Reader.NON_PRINTABLE  # the characters the pure reader refuses
_STR_TAG = "tag:yaml.org,2002:str"
_TOO_DEEP = "the YAML is nested too deeply to read; flatten the structure"
_ESCAPE = re.compile(r"\\(u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|.)", re.DOTALL)
_LIBYAML_BAD_ESCAPE = "invalid Unicode character escape code"


@functools.cache
def _loader_class() -> type[Any]:
    """libyaml when it bounds nesting itself (0.2.6+), else the pure loader.

    An older libyaml composes any depth with C recursion, so a hostile file could
    overflow the C stack (a crash, not an error); probe the limit instead of trusting a
    version number.
    """
    if _C_LOADER is None or not _libyaml_in_step():
        return _PureLoader
    probe = _C_LOADER("[" * 1100 + "]" * 1100)
    try:
        probe.get_single_node()
    except yaml.MarkedYAMLError as exc:
        if "nesting depth" in str(exc.problem):
            return type("_CLoader", (_C_LOADER,), {"__doc__": "libyaml's safe loader."})
    finally:
        probe.dispose()
    return _PureLoader


def _libyaml_in_step() -> bool:
    """Whether libyaml raises and builds the classes of the ``yaml`` imported here.

    An extension module is loaded once per process: when the ``yaml`` package is imported
    again (pytester's in-process runs drop the modules a session imported), libyaml keeps
    the first copy's error and node classes, which this copy would not recognise.
    """
    extension = sys.modules.get("yaml._yaml")
    return getattr(extension, "YAMLError", None) is yaml.YAMLError


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while a file becomes gates (restored as it was, even on error).

    Loading allocates ~30 long-lived objects per gate and no garbage cycles, so the
    collections those allocations trigger find nothing, yet rescan the growing tree: they
    were about half the load time of 10,000 gates.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _line(node: yaml.Node) -> int:
    line: int = node.start_mark.line
    return line + 1


def _check_tag(node: yaml.Node, tag: str) -> None:
    if node.tag != tag:
        raise YamlError(f"the YAML tag {node.tag!r} is not allowed here; remove it", _line(node))


def load_yaml(text: str, *, pure: bool = False) -> Any:
    """Parse one YAML document into plain data (LocatedMap/LocatedList); None when empty.

    ``pure`` forces PyYAML's pure-Python loader (the tests compare it with libyaml's).
    """
    bad = _NON_PRINTABLE.search(text)
    if bad is not None:  # checked here so that both loaders report it alike, by character
        raise YamlError(
            f"the file contains a character YAML does not allow (U+{ord(bad.group()):04X}); "
            "remove it or write it as an escape inside a double-quoted string",
            text.count("\n", 0, bad.start()) + 1,
        )
    loader: Any = None
    try:
        loader = (_PureLoader if pure else _loader_class())(text)
        node = loader.get_single_node()
        if node is not None and ("\\u" in text or "\\U" in text):
            _refuse_bad_escapes(node, text)
        return None if node is None else _Walker(loader).value(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = int(mark.line) + 1 if mark is not None else None
        if "nesting depth" in str(exc.problem):  # libyaml's own limit (1,000 levels)
            raise YamlError(_TOO_DEEP, line) from None
        if _LIBYAML_BAD_ESCAPE in str(exc.problem) and not pure:
            load_yaml(text, pure=True)  # raises the pure loader's located error, with its key
        context = str(exc.context or "")
        if exc.context_mark is not None and exc.context_mark.line + 1 != line:
            context += f" (from line {exc.context_mark.line + 1})"
        detail = "; ".join(part for part in (context, str(exc.problem or "")) if part)
        raise YamlError(f"YAML syntax error: {detail}; fix the YAML at this line", line) from None
    except yaml.YAMLError as exc:  # incl. a ReaderError the check above did not foresee
        raise YamlError(f"YAML error: {exc}; fix the YAML", None) from None
    except ValueError:  # the pure scanner's chr() of an escape above U+10FFFF
        mark = loader.get_mark() if loader is not None else None
        line = int(mark.line) + 1 if mark is not None else None
        raise YamlError(_escape_message("", "an escape on this line"), line) from None
    except RecursionError:
        raise YamlError(_TOO_DEEP, None) from None
    finally:
        if loader is not None:
            loader.dispose()


def _escape_message(key: str | None, escape: str) -> str:
    where = f"`{key}`" if key else "a double-quoted string"
    return (
        f"{where} holds {escape}, which names no character (a lone surrogate, or beyond "
        "U+10FFFF), so the text is not valid Unicode; write the character itself or its "
        "proper escape"
    )


def _refuse_bad_escapes(root: yaml.Node, text: str) -> None:
    """Raise YamlError at the first double-quoted scalar whose escapes name no character
    (a lone surrogate, or above U+10FFFF: the pure loader keeps or crashes on what libyaml
    refuses), naming the mapping key it belongs to as any other gates-file error does."""
    seen: set[int] = set()
    pending: list[tuple[yaml.Node, str | None]] = [(root, None)]
    while pending:
        node, key = pending.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.ScalarNode):
            if node.style == '"':
                _check_escapes(node, text, key)
        elif isinstance(node, yaml.SequenceNode):
            pending.extend((item, key) for item in reversed(node.value))
        elif isinstance(node, yaml.MappingNode):
            for key_node, value_node in reversed(node.value):
                name = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
                pending.append((value_node, name if isinstance(name, str) else key))
                pending.append((key_node, None))


def _check_escapes(node: yaml.ScalarNode, text: str, key: str | None) -> None:
    start, end = node.start_mark.index, node.end_mark.index
    source = text[start:end] if 0 <= start < end <= len(text) else ""
    for match in _ESCAPE.finditer(source):
        escape = match.group(1)
        if escape[0] not in "uU" or len(escape) == 1:
            continue
        code = int(escape[1:], 16)
        if 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:
            line = node.start_mark.line + 1 + source.count("\n", 0, match.start())
            raise YamlError(_escape_message(key, f"the escape \\{escape}"), line, key)
    if any(0xD800 <= ord(c) <= 0xDFFF for c in node.value):  # not reached: escapes only
        raise YamlError(_escape_message(key, "an escape"), _line(node), key)


class _Walker:
    """Converts nodes to data once each (memoised by identity); refuses cycles."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader
        self._done: dict[int, Any] = {}
        self._active: set[int] = set()

    def value(self, node: yaml.Node) -> Any:
        if isinstance(node, yaml.ScalarNode):  # immutable results: no memo, no cycles
            return node.value if node.tag == _STR_TAG else self._scalar(node)
        key = id(node)
        if key in self._done:
            return self._done[key]
        if key in self._active:
            raise YamlError(
                "the anchor here is used by an alias inside itself (a cycle); "
                "a gates file must be a tree: remove that alias",
                _line(node),
            )
        self._active.add(key)
        try:
            if isinstance(node, yaml.MappingNode):
                result: Any = self._mapping(node)
            elif isinstance(node, yaml.SequenceNode):
                result = self._sequence(node)
            else:  # not reached: scalars return above
                result = self._scalar(node)
        finally:
            self._active.discard(key)
        self._done[key] = result
        return result

    def _scalar(self, node: yaml.Node) -> Any:
        try:
            return self._loader.construct_object(node)
        except (ValueError, TypeError, OverflowError) as exc:
            # The timestamp and number constructors raise these for e.g. 2026-13-45.
            raise YamlError(
                f"YAML cannot read the value {node.value!r} ({exc}); quote it or correct it",
                _line(node),
            ) from None

    def _sequence(self, node: yaml.SequenceNode) -> LocatedList:
        _check_tag(node, _SEQ_TAG)
        result = LocatedList(_line(node))
        lines = result.item_lines
        for item in node.value:
            result.append(self.value(item))
            lines.append(item.start_mark.line + 1)
        return result

    def _mapping(self, node: yaml.MappingNode) -> LocatedMap:
        _check_tag(node, _MAP_TAG)
        result = LocatedMap(_line(node))
        key_lines, value_lines = result.key_lines, result.value_lines
        merged: list[LocatedMap] = []
        for key_node, value_node in node.value:  # the hot loop: plain text keys inlined
            if key_node.tag == _STR_TAG and isinstance(key_node, yaml.ScalarNode):
                key = key_node.value
            elif key_node.tag == _MERGE_TAG:
                merged.extend(self._merge_sources(value_node))
                continue
            else:
                key = self._key(key_node)
            if key in result:
                raise YamlError(
                    f"duplicate key `{key}` (first given on line {key_lines[key]}); "
                    "a key may appear once per mapping: remove one",
                    _line(key_node),
                    key,
                )
            result[key] = self.value(value_node)
            key_lines[key] = key_node.start_mark.line + 1
            value_lines[key] = value_node.start_mark.line + 1
        # Explicit keys win over merged ones; earlier merge sources win over later ones.
        for source in merged:
            for key, value in source.items():
                if key not in result:
                    result[key] = value
                    key_lines[key] = source.key_lines.get(key, source.line)
                    value_lines[key] = source.value_lines.get(key, source.line)
        return result

    def _key(self, node: yaml.Node) -> str:
        if not isinstance(node, yaml.ScalarNode):
            raise YamlError("a key must be plain text, not a list or a mapping", _line(node))
        key = self.value(node)
        if not isinstance(key, str):
            raise YamlError(
                f"the key {node.value!r} is read by YAML as {type(key).__name__}, not text; "
                "quote it or use a known key",
                _line(node),
            )
        return key

    def _merge_sources(self, node: yaml.Node) -> list[LocatedMap]:
        nodes = node.value if isinstance(node, yaml.SequenceNode) else [node]
        sources: list[LocatedMap] = []
        for item in nodes:
            value = self.value(item) if isinstance(item, yaml.MappingNode) else None
            if not isinstance(value, LocatedMap):
                raise YamlError(
                    "`<<` merges a mapping: write `<<: *name` or `<<: [*a, *b]` "
                    "with anchors on mappings",
                    _line(item),
                    "<<",
                )
            sources.append(value)
        return sources
