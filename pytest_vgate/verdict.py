"""The verdict vocabulary: modes, causes, red-before-green statuses, citation outcomes.

Every value here is public (DESIGN.md): the enum string values are what junit
properties, the JSON report and the ledger carry. Verdicts are immutable and turn
into JSON-able dicts, because that is what survives the trip from an xdist worker.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_vgate.strenum import StrEnum


class Mode(StrEnum):
    """How a check ended. Only ``PASS`` is a pass; everything else fails (or skips)."""

    PASS = "pass"
    FAIL = "fail"  # the check ran and answered no
    ERROR = "error"  # an Exception (ours or the verifier's)
    PANIC = "panic"  # a BaseException that is not an Exception (SystemExit, ...)
    TIMEOUT = "timeout"
    CRASH = "crash"  # died without a result; spawn failure
    UNAVAILABLE = "unavailable"  # tool not found
    SANDBOX = "sandbox"  # tool bytes moved, isolation missing
    UNGROUNDED = "ungrounded"  # declared tools, passed without running one
    BLANK = "blank"  # empty check
    JUDGMENT = "judgment"  # semantic/self_review: needs a rubric, not re-execution


class Cause(StrEnum):
    """What has to move for a failed check to pass."""

    PRODUCT = "product"
    ENVIRONMENT = "environment"
    BROKEN_TEST = "broken_test"
    REQUIREMENT_CHANGED = "requirement_changed"


class Rbg(StrEnum):
    """Red-before-green status of a gate."""

    PROVEN = "proven"
    NEVER_RED = "never-red"
    WEAK_RED = "weak-red"
    UNPROVEN = "unproven"
    REGRESSION = "regression"
    REQUIREMENT_CHANGED = "requirement-changed"
    DISCONNECTED = "disconnected"  # red and green, but neither run executed the change
    FLAKY = "flaky"  # repeated runs disagreed


class CitationStatus(StrEnum):
    """Outcome of checking one code citation against the real files."""

    VERIFIED = "verified"
    CORRECTED = "corrected"
    DROPPED = "dropped"
    FABRICATED = "fabricated"


DEFAULT_CAUSE: Mapping[Mode, Cause | None] = {
    Mode.PASS: None,
    Mode.JUDGMENT: None,
    Mode.FAIL: Cause.PRODUCT,
    Mode.TIMEOUT: Cause.ENVIRONMENT,
    Mode.CRASH: Cause.ENVIRONMENT,
    Mode.UNAVAILABLE: Cause.ENVIRONMENT,
    Mode.SANDBOX: Cause.ENVIRONMENT,
    Mode.ERROR: Cause.BROKEN_TEST,
    Mode.PANIC: Cause.BROKEN_TEST,
    Mode.BLANK: Cause.BROKEN_TEST,
    Mode.UNGROUNDED: Cause.BROKEN_TEST,
}

# Fail-closed ordering used when several checks of one gate are joined: the
# gate takes the mode of its "worst" failed check, environment problems before
# product answers so that a missing tool is never reported as a wrong product.
SEVERITY: tuple[Mode, ...] = (
    Mode.SANDBOX,
    Mode.UNAVAILABLE,
    Mode.CRASH,
    Mode.TIMEOUT,
    Mode.PANIC,
    Mode.ERROR,
    Mode.UNGROUNDED,
    Mode.BLANK,
    Mode.FAIL,
    Mode.JUDGMENT,
    Mode.PASS,
)


@dataclass(frozen=True)
class ToolRecord:
    """The identity of a tool that a check ran: where it was and what its bytes hashed to."""

    id: str
    path: str
    sha256: str

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "path": self.path, "sha256": self.sha256}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolRecord:
        return cls(id=str(data["id"]), path=str(data["path"]), sha256=str(data["sha256"]))


@dataclass(frozen=True)
class CheckVerdict:
    """The result of one verifier inside a fan-out gate."""

    name: str
    mode: Mode
    detail: str = ""
    duration: float = 0.0

    @property
    def ok(self) -> bool:
        return self.mode is Mode.PASS

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "mode": self.mode.value,
            "detail": self.detail,
            "duration": round(self.duration, 6),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CheckVerdict:
        return cls(
            name=str(data["name"]),
            mode=Mode(data["mode"]),
            detail=str(data.get("detail", "")),
            duration=float(data.get("duration", 0.0)),
        )


@dataclass(frozen=True)
class Verdict:
    """What one run of one check observed. ``ok`` is true only for mode ``pass``."""

    mode: Mode
    cause: Cause | None = None
    detail: str = ""
    command: tuple[str, ...] = ()
    exit_code: int | None = None
    stdout: str = ""
    stderr: str = ""
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    duration: float = 0.0
    errors: tuple[str, ...] = ()
    checks: tuple[CheckVerdict, ...] = ()
    tools: tuple[ToolRecord, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.mode is Mode.PASS

    @classmethod
    def failed(
        cls,
        mode: Mode,
        detail: str,
        *,
        cause: Cause | None = None,
        **fields: Any,
    ) -> Verdict:
        """A non-pass verdict whose cause defaults to the mode's documented cause."""
        if mode is Mode.PASS:
            raise ValueError("Verdict.failed() needs a failing mode")
        chosen = cause if cause is not None else DEFAULT_CAUSE[mode]
        errors = tuple(fields.pop("errors", ())) or ((detail,) if detail else ())
        return cls(mode=mode, cause=chosen, detail=detail, errors=errors, **fields)

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode.value,
            "cause": self.cause.value if self.cause else None,
            "detail": self.detail,
            "command": list(self.command),
            "exit_code": self.exit_code,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "stdout_bytes": self.stdout_bytes,
            "stderr_bytes": self.stderr_bytes,
            "duration": round(self.duration, 6),
            "errors": list(self.errors),
            "checks": [c.to_dict() for c in self.checks],
            "tools": [t.to_dict() for t in self.tools],
            "extra": dict(self.extra),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Verdict:
        cause = data.get("cause")
        return cls(
            mode=Mode(data["mode"]),
            cause=Cause(cause) if cause else None,
            detail=str(data.get("detail", "")),
            command=tuple(data.get("command", ())),
            exit_code=data.get("exit_code"),
            stdout=str(data.get("stdout", "")),
            stderr=str(data.get("stderr", "")),
            stdout_bytes=int(data.get("stdout_bytes", 0)),
            stderr_bytes=int(data.get("stderr_bytes", 0)),
            duration=float(data.get("duration", 0.0)),
            errors=tuple(data.get("errors", ())),
            checks=tuple(CheckVerdict.from_dict(c) for c in data.get("checks", ())),
            tools=tuple(ToolRecord.from_dict(t) for t in data.get("tools", ())),
            extra=dict(data.get("extra", {})),
        )


def worst_mode(modes: list[Mode] | tuple[Mode, ...]) -> Mode:
    """The mode a joined gate takes: the most severe of its checks (PASS only if all pass)."""
    if not modes:
        return Mode.BLANK
    return min(modes, key=SEVERITY.index)
