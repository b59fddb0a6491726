"""Cited documents: expanding ``citations:`` globs, and reading a document safely.

Expansion walks the folder without following directory symlinks (``glob.glob`` with
``**`` follows them, and a link back up the tree makes it run for ever) and never enters
version-control metadata. What it matches that is not a regular file (a named pipe, a
socket, a device) is kept: the session reports why it is not read.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from pytest_vgate.citations.files import VCS_DIRS, file_kind, read_regular

MAX_DOCUMENT_BYTES = 16 * 1024 * 1024
_MAGIC = re.compile(r"[*?\[]")


def _segment_regex(segment: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(segment):
        ch = segment[i]
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            close = segment.find("]", i + 2 if segment[i + 1 : i + 2] in ("!", "]") else i + 1)
            if close < 0:
                out.append(re.escape(ch))
            else:
                body = segment[i + 1 : close]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = close
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


def pattern_regex(pattern: str) -> re.Pattern[str]:
    """A glob (``*``, ``?``, ``[...]``, ``**`` for any folders) as a regex over posix paths;
    like ``glob``, a wildcard does not match a leading dot."""
    parts: list[str] = []
    segments = [s for s in pattern.replace(os.sep, "/").split("/") if s not in ("", ".")]
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            parts.append(r"(?:[^/.][^/]*/)*" if not last else r"(?:[^/.][^/]*(?:/|$))*")
            continue
        body = _segment_regex(segment)
        if not segment.startswith(".") and _MAGIC.match(segment):
            body = r"(?!\.)" + body
        parts.append(body + ("" if last else "/"))
    return re.compile("".join(parts) + r"\Z")


def _static_prefix(pattern: str) -> str:
    segments = [s for s in pattern.replace(os.sep, "/").split("/") if s not in ("", ".")]
    fixed: list[str] = []
    for segment in segments[:-1]:
        if _MAGIC.search(segment):
            break
        fixed.append(segment)
    return "/".join(fixed)


def expand(pattern: str, folder: Path) -> list[Path]:
    """The real paths of what ``pattern`` matches under ``folder``, sorted; terminates on any
    tree: directory symlinks are not followed and ``.git``/``.hg``/``.svn`` never entered.
    A match that is not a regular file is kept: reading it says why it is not read."""
    regex = pattern_regex(pattern)
    prefix = _static_prefix(pattern)
    base = folder / prefix if prefix and ".." not in Path(pattern).parts else folder
    magic = _MAGIC.search(pattern)
    if not magic:
        candidates = [folder / pattern] if os.path.lexists(folder / pattern) else []
    else:
        candidates = _walk(base)
    found: set[Path] = set()
    for path in candidates:
        rel = os.path.relpath(path, folder).replace(os.sep, "/")
        if magic and not regex.match(rel):
            continue
        real = os.path.realpath(path)
        if file_kind(real) in ("dir", "") or any(part in VCS_DIRS for part in Path(rel).parts):
            continue
        found.add(Path(real))
    return sorted(found)


def _walk(base: Path) -> list[Path]:
    if not os.path.isdir(base) or os.path.islink(base):
        return []
    out: list[Path] = []
    for folder, dirs, files in os.walk(base, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in VCS_DIRS)
        out.extend(Path(folder) / name for name in sorted(files))
        # a symlink to a folder is listed in ``dirs`` and not entered; a symlink to a
        # file is listed in ``files`` and checked like any file
    return out


def read_document(path: Path) -> bytes:
    """A document's bytes; ``OSError`` (``NotRegularFile``, ``TooLarge``) when it cannot
    or must not be read (a named pipe is never opened in blocking mode)."""
    return read_regular(path, MAX_DOCUMENT_BYTES)
