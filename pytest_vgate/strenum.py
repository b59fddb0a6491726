"""``StrEnum``: the base of every closed vocabulary (modes, causes, gate types, ...).

A member is its string value: it compares equal to it, ``str()`` and f-strings give it,
and its value is the public name users read in junit and the JSON report.
(``enum.StrEnum`` is Python 3.11+.)
"""

from __future__ import annotations

import enum


class StrEnum(str, enum.Enum):
    """A string enumeration whose members print as their values."""

    def __str__(self) -> str:
        return str(self.value)
