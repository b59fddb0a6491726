"""The result of one verifier call, as plain data that survives processes and xdist."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pytest_vgate.jsonable import Jsonable, rounded
from pytest_vgate.verdict import (
    DEFAULT_CAUSE,
    ISOLATION_KEY,
    Cause,
    CheckVerdict,
    Mode,
    ToolRecord,
    Verdict,
)
from pytest_vgate.verifiers.context import ToolUse


@dataclass(frozen=True)
class VerifierResult(Jsonable):
    """What one verifier call observed. ``ok`` only for mode ``pass``.

    ``runs`` are the completed ``ctx.run`` calls, as the pytest process recorded them (the
    grounding evidence); ``output`` is what the verifier's process printed (stdout and
    stderr together), head + tail within the capture limit; ``output_bytes`` how many
    bytes it printed in all. ``isolation``: what contained the call, the weakest of the
    verifier's process and its tool runs (``namespace``, ``contained``, ``group``; None
    when no verifier process ran).
    """

    name: str
    mode: Mode
    cause: Cause | None = None
    detail: str = ""
    duration: float = field(default=0.0, metadata=rounded(6))
    runs: tuple[ToolUse, ...] = ()
    declared_tools: tuple[str, ...] = ()
    output: str = ""
    output_bytes: int = 0
    isolation: str | None = None

    @property
    def ok(self) -> bool:
        return self.mode is Mode.PASS

    @classmethod
    def failure(cls, name: str, mode: Mode, detail: str, **fields: Any) -> VerifierResult:
        """A non-pass result whose cause defaults to the mode's documented cause."""
        if mode is Mode.PASS:
            raise ValueError("VerifierResult.failure() needs a failing mode")
        cause = fields.pop("cause", None) or DEFAULT_CAUSE[mode]
        return cls(name=name, mode=mode, cause=cause, detail=detail, **fields)

    def tool_records(self) -> tuple[ToolRecord, ...]:
        """Distinct tools that completed a run, in first-use order."""
        return tuple(dict.fromkeys(r.record() for r in self.runs))

    def to_check_verdict(self) -> CheckVerdict:
        return CheckVerdict(self.name, self.mode, self.detail, self.duration)

    def to_verdict(self) -> Verdict:
        """The verdict of a one-verifier item (its single check included)."""
        extra: dict[str, Any] = {"verifiers": [self.to_dict()]}
        if self.isolation is not None:
            extra[ISOLATION_KEY] = self.isolation
        if self.ok:
            return Verdict(
                mode=Mode.PASS,
                detail=self.detail,
                duration=self.duration,
                checks=(self.to_check_verdict(),),
                tools=self.tool_records(),
                extra=extra,
            )
        return Verdict.failed(
            self.mode,
            self.detail,
            cause=self.cause,
            duration=self.duration,
            checks=(self.to_check_verdict(),),
            tools=self.tool_records(),
            extra=extra,
        )
