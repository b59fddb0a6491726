"""``ctx``: what a verifier sees, and ``ctx.run``, its only way to run a tool.

``ctx`` lives in the verifier's process, but ``ctx.run`` only *asks*: the pytest process
runs the tool (``toolhost``: the command oracle, the tool inventory) and keeps the record
of every run -- tool, bytes, exit code, the exit codes the verifier said it expects. The
verifier gets a copy of the result; nothing it does to ``ctx`` or to its own process
changes the record a pass is judged against.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pytest_vgate.jsonable import Jsonable, rounded
from pytest_vgate.process.tools import (
    ToolMovedError,
    ToolUnavailableError,
    ToolUseError,
    UndeclaredToolError,
)
from pytest_vgate.verdict import ToolRecord
from pytest_vgate.verifiers.messages import Op, RunMessage

ERRORS: dict[str, type[ToolUseError]] = {
    "undeclared": UndeclaredToolError,
    "unavailable": ToolUnavailableError,
    "moved": ToolMovedError,
    "error": ToolUseError,
}


def expected_codes(expect: int | Sequence[int]) -> tuple[int, ...]:
    """``expect=`` of ``ctx.run`` as a tuple of exit codes; TypeError for anything else."""
    codes = (expect,) if isinstance(expect, int) else tuple(expect)
    if not codes or any(isinstance(c, bool) or not isinstance(c, int) for c in codes):
        raise TypeError(
            f"ctx.run(..., expect=...) takes an exit code or a list of them, not {expect!r}"
        )
    return codes


@dataclass(frozen=True)
class ToolUse(Jsonable):
    """The pytest process's record of one completed ``ctx.run`` (the process ran to exit)."""

    id: str
    path: str
    sha256: str
    exit_code: int
    expect: tuple[int, ...] = (0,)
    duration: float = field(default=0.0, metadata=rounded(6))
    argv: tuple[str, ...] = ()  # what ran: the tool's path, then the verifier's arguments
    # An interpreter running code the verifier wrote (``python -c``, a script in its own
    # folder or its cell): the verifier's own computation, no tool's answer.
    authored: bool = False

    @property
    def as_expected(self) -> bool:
        return self.exit_code in self.expect

    def record(self) -> ToolRecord:
        return ToolRecord(id=self.id, path=self.path, sha256=self.sha256)


@dataclass(frozen=True)
class ToolRun(Jsonable):
    """What ``ctx.run`` returns: the tool that ran and what its process did."""

    tool: str
    path: str
    sha256: str
    argv: tuple[str, ...]
    exit_code: int | None  # None when it timed out or could not start
    stdout: str
    stderr: str
    duration: float
    timed_out: bool = False
    spawn_error: str | None = None
    expect: tuple[int, ...] = (0,)

    @property
    def ok(self) -> bool:
        """Exited with an expected status (``expect=``, default 0)."""
        return self.exit_code is not None and self.exit_code in self.expect

    @property
    def completed(self) -> bool:
        return self.exit_code is not None and not self.timed_out and self.spawn_error is None


class Requester(Protocol):
    """How ``ctx.run`` reaches the pytest process (``child.Link``)."""

    def request(self, message: Mapping[str, object]) -> dict[str, Any]: ...


class VerifierContext:
    """What a verifier gets as ``ctx``.

    ``root``: the tree under check (cwd of ``run``); ``cell``: a private scratch folder,
    removed after the call; ``deadline``: absolute ``time.time()`` seconds by which the
    verifier must have returned; ``gate``: the gate's data (a dict) or None; ``tools``:
    the declared tool ids.
    """

    def __init__(
        self,
        *,
        root: Path,
        cell: Path,
        deadline: float,
        gate: Mapping[str, Any] | None,
        declared_tools: Sequence[str],
        link: Requester,
    ) -> None:
        self.root = root
        self.cell = cell
        self.deadline = deadline
        self.gate = dict(gate) if gate is not None else None
        self.tools = tuple(declared_tools)
        self._link = link

    def remaining(self) -> float:
        """Seconds left until the deadline (never negative)."""
        return max(0.0, self.deadline - time.time())

    def run(
        self,
        tool: str,
        *args: str,
        cwd: Path | str | None = None,
        expect: int | Sequence[int] = 0,
    ) -> ToolRun:
        """Have the pytest process run a declared tool with ``args`` (no shell) in ``cwd``
        (default: root) within the remaining time, and return what happened.

        ``expect``: the exit code (or codes) this run should end with; a verifier that
        passes after a run ended otherwise is ``ungrounded``. Raises only ToolUseError
        subclasses (and TypeError for a bad ``expect``).
        """
        codes = expected_codes(expect)
        where = os.path.abspath(os.fspath(cwd)) if cwd is not None else None
        answer = self._link.request(
            RunMessage(
                op=Op.RUN,
                tool=str(tool),
                args=[str(a) for a in args],
                cwd=where,
                expect=list(codes),
            )
        )
        if answer.get("run") is not None:
            return ToolRun.from_dict(answer["run"])
        error = ERRORS.get(str(answer.get("error")), ToolUseError)
        message = str(answer.get("message", "ctx.run failed"))
        if error is UndeclaredToolError:
            raise UndeclaredToolError(str(tool), (), message)
        raise error(message)
