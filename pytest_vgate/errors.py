"""``VgateError``: the base of pytest-vgate's own errors that a user can act on.

Its subclasses keep their own names and messages (``GatesFileError``, ``BaselineError``,
``InitError``, ...); each message says what is wrong, where, and what would be right.
Internal signals (a broken pipe to a child, a value rule's ``BadValue``) are not
``VgateError``s: they never reach a user as they are.
"""

from __future__ import annotations


class VgateError(Exception):
    """An error of pytest-vgate's own, for a user to fix; catch this to catch them all."""
