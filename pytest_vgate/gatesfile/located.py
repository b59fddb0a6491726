"""YAML data that remembers where it was read: the line of a mapping, its keys and values,
a list and its items (what every gates-file error names). Made by ``yamlnodes``."""

from __future__ import annotations

from typing import Any


class LocatedMap(dict[str, Any]):
    """A mapping read from a file: its own line and, per key, the key's and value's line."""

    def __init__(self, line: int) -> None:  # empty already: no dict.__init__ to call
        self.line = line
        self.key_lines: dict[str, int] = {}
        self.value_lines: dict[str, int] = {}


class LocatedList(list[Any]):
    """A sequence read from a file: its own line and the line of each item."""

    def __init__(self, line: int) -> None:  # empty already: no list.__init__ to call
        self.line = line
        self.item_lines: list[int] = []
