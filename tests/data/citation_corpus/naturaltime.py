# ruff: noqa  (corpus source: written in the style of the library it models)
"""Human-readable time deltas, in the manner of humanize."""

from __future__ import annotations

import datetime as dt
import math
from enum import Enum

from .i18n import _gettext as _
from .i18n import _ngettext
from .i18n import _pgettext_noop as PS_

__all__ = ["naturaldelta", "naturaltime", "ordinal"]


class Unit(Enum):
    MICROSECONDS = 0
    MILLISECONDS = 1
    SECONDS = 2
    MINUTES = 3
    HOURS = 4
    DAYS = 5

    def __lt__(self, other):
        if self.__class__ is other.__class__:
            return self.value < other.value
        return NotImplemented


def _now() -> dt.datetime:
    return dt.datetime.now()


def _abs_timedelta(delta: dt.timedelta) -> dt.timedelta:
    """Return an "absolute" value for a timedelta, always representing a time distance."""
    if delta.days < 0:
        now = _now()
        return now - (now + delta)
    return delta


def naturaldelta(value, months: bool = True) -> str:
    """Return a natural representation of a timedelta or number of seconds."""
    if not isinstance(value, dt.timedelta):
        try:
            value = float(value)
            delta = dt.timedelta(seconds=value)
        except (ValueError, TypeError):
            return str(value)
        except OverflowError:
            if not math.isfinite(value):
                return str(value)
            raise
    else:
        delta = value
    delta = _abs_timedelta(delta)
    seconds = abs(delta.seconds)
    days = abs(delta.days)
    if not days:
        if seconds < 1:
            return _("a moment")
        if seconds < 60:
            return _ngettext("%d second", "%d seconds", seconds) % seconds
        minutes = seconds // 60
        return _ngettext("%d minute", "%d minutes", minutes) % minutes
    if days == 1:
        return _("a day")
    return _ngettext("%d day", "%d days", days) % days


def naturaltime(value, future: bool = False) -> str:
    """Return a natural representation of a time in a resolution that makes sense."""
    now = _now()
    if isinstance(value, dt.datetime):
        delta = now - value
    else:
        delta = value
    ago = _("%s from now") if future else _("%s ago")
    delta = naturaldelta(delta)
    if delta == _("a moment"):
        return _("now")
    return str(ago % delta)


def ordinal(value, gender: str = "male") -> str:
    """Convert an integer to its ordinal as a string."""
    try:
        value = int(value)
    except (TypeError, ValueError):
        return str(value)
    if gender == "male":
        t = (
            PS_("0 (male)", "th"),
            PS_("1 (male)", "st"),
            PS_("2 (male)", "nd"),
            PS_("3 (male)", "rd"),
        )
    else:
        t = (
            PS_("0 (female)", "th"),
            PS_("1 (female)", "st"),
        )
    if value % 100 in (11, 12, 13):
        return f"{value}{t[0]}"
    return f"{value}{t[value % 10 if value % 10 < len(t) else 0]}"
