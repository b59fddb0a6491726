"""Cited documents: expanding ``citations:`` globs, and reading a document safely.

Expansion walks the folder without following directory symlinks (``glob.glob`` with
``**`` follows them, and a link back up the tree makes it run for ever), never enters
version-control metadata, and keeps only what lies inside the allowed folders after
symlinks. Whatever it matches that is not a regular file (a named pipe, a socket, a
device) is kept with the reason it will not be read, so the session can report it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from pytest_vgate.citations.files import VCS_DIRS, file_kind, inside, read_regular

MAX_DOCUMENT_BYTES = 16 * 1024 * 1024
_MAGIC = re.compile(r"[*?\[]")


@dataclass(frozen=True)
class Match:
    """One path a pattern matched: ``unreadable`` says why it will not be read."""

    path: Path
    unreadable: str = ""


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


def expand(pattern: str, folder: Path, allowed: tuple[Path, ...] | None = None) -> list[Match]:
    """Files matching ``pattern`` under ``folder``, sorted; terminates on any tree.

    Directory symlinks are not followed, ``.git``/``.hg``/``.svn`` are never entered, and
    a match whose real path lies outside every folder of ``allowed`` (when given) is left
    out.
    """
    regex = pattern_regex(pattern)
    base = folder / _static_prefix(pattern) if _static_prefix(pattern) else folder
    if ".." in Path(pattern).parts:
        base = folder  # resolved below; matches must still lie inside ``allowed``
    real_allowed = None if allowed is None else [os.path.realpath(a) for a in allowed]
    found: list[Match] = []
    if not _MAGIC.search(pattern):
        candidates = [folder / pattern] if os.path.lexists(folder / pattern) else []
    else:
        candidates = list(_walk(base))
    for path in candidates:
        rel = os.path.relpath(path, folder).replace(os.sep, "/")
        if _MAGIC.search(pattern) and not regex.match(rel):
            continue
        real = os.path.realpath(path)
        if real_allowed is not None and not any(inside(real, a) for a in real_allowed):
            continue
        kind = file_kind(real)
        if kind == "dir" or kind == "":
            continue
        if any(part in VCS_DIRS for part in Path(rel).parts):
            continue
        found.append(
            Match(Path(real), "" if kind == "file" else f"it is {kind}, not a regular file")
        )
    unique = {m.path: m for m in found}
    return [unique[p] for p in sorted(unique)]


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
