"""Where a run was at its deadline: the stack sample a base run takes just before its kill.

Core, no pytest. The measurement (``bootstrap``) has faulthandler's watchdog dump every
thread's stack shortly before the deadline; ``parse_dump`` reads that text into threads
of frames. What a frame means against the change is the evidence's to say
(``evidence/reach.py``: ``innermost``, ``in_change``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

# faulthandler's frame line, Python 3.8 to 3.13: '  File "PATH", line N in NAME'
FRAME_ROW = re.compile(r'^  File "(?P<path>.*)", line (?P<line>\d+) in (?P<function>.*)$')
THREAD_ROWS = ("Thread ", "Current thread ", "Stack ")
INSTALLED = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)


@dataclass(frozen=True)
class Frame:
    """One frame of a sampled stack: ``path`` as the interpreter named the file (relative
    to the base worktree once ``innermost`` placed it), the line it was at, its function."""

    path: str
    line: int
    function: str

    def shown(self) -> str:
        return f"{self.path}:{self.line} in {self.function}"

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "function": self.function}


Thread = tuple[Frame, ...]  # innermost frame first, as faulthandler writes them


def parse_dump(text: str) -> tuple[Thread, ...]:
    """The threads of one faulthandler dump (a thread without a Python frame is left out;
    a row that is not a frame, such as ``  ...`` for a deeper stack, is skipped)."""
    threads: list[list[Frame]] = []
    for row in text.splitlines():
        if row.startswith(THREAD_ROWS):
            threads.append([])
            continue
        found = FRAME_ROW.match(row)
        if found and threads:
            threads[-1].append(Frame(found["path"], int(found["line"]), found["function"].strip()))
    return tuple(tuple(frames) for frames in threads if frames)
