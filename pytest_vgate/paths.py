"""``relative``: the one way a path is shown or keyed relative to a root; ``is_test_path``:
the one rule for what is test code.

Messages show a path relative to the rootdir when it lies inside; keys that must match
across checkouts (xdist workers elsewhere, merged shards) need the same text for the same
file wherever the checkout is, so they may climb out of the root (``../x``).
"""

from __future__ import annotations

import os
from typing import Literal, overload

StrPath = str | os.PathLike[str]


@overload
def relative(path: StrPath, root: StrPath, *, resolve: bool = ..., climb: Literal[True]) -> str: ...
@overload
def relative(
    path: StrPath, root: StrPath, *, resolve: bool = ..., climb: Literal[False] = ...
) -> str | None: ...
def relative(
    path: StrPath, root: StrPath, *, resolve: bool = False, climb: bool = False
) -> str | None:
    """``path`` relative to ``root`` as POSIX text; ``"."`` for the root itself.

    ``resolve`` follows symlinks on both first. Outside the root: None, or with ``climb``
    the ``../`` path to it.
    """
    p, r = os.fspath(path), os.fspath(root)
    if resolve:
        p, r = os.path.realpath(p), os.path.realpath(r)
    else:
        p, r = os.path.abspath(p), os.path.abspath(r)
    rel = os.path.relpath(p, r)
    if not climb and (rel == os.pardir or rel.startswith(os.pardir + os.sep)):
        return None
    return rel.replace(os.sep, "/")


def shown(path: StrPath, root: StrPath) -> str:
    """For a message: relative to ``root`` when inside it, else as given."""
    rel = relative(path, root)
    return rel if rel is not None else os.fspath(path)


def is_test_path(rel: str) -> bool:
    """Whether a file is test code by pytest's and unittest's naming (``test_*.py``,
    ``*_test.py``, ``conftest.py``, anything under ``test/``, ``tests/`` or ``testing/``):
    the check's own code, never the product or the feature."""
    parts = rel.replace("\\", "/").rsplit(".", 1)[0].split("/")
    stem = parts[-1] if parts else ""
    testish = stem.startswith("test_") or stem.endswith("_test") or stem == "conftest"
    return testish or any(part in ("test", "tests", "testing") for part in parts[:-1])
