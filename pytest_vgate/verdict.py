"""The verdict vocabulary: modes, causes, red-before-green statuses, citation outcomes.

Every enum value is public (docs/modes.md): what junit properties, the JSON report and the
ledger carry. Verdicts are immutable and JSON-able, to survive the trip from a worker.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_vgate.jsonable import Jsonable, StrEnum, rounded


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
    UNSUPPORTED = "unsupported"  # the entity is there; the lines' syntax contradicts it
    NOT_AUDITED = "not-audited"  # a forge link to a file that is not in this repository


class CitationDescription(StrEnum):
    """What became of a citation's description (junit ``vgate_description``)."""

    SHOWN = "shown"  # the covered lines' syntax supports its checkable part
    CONTRADICTED = "contradicted"  # their syntax shows otherwise: the status is unsupported
    NOT_JUDGED = "not-judged"  # nothing in it the syntax can decide; it passes
    JUDGED = "judged"  # a pytest_vgate_judge implementation decided it


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
class ToolRecord(Jsonable):
    """The identity of a tool that a check ran: where it was and what its bytes hashed to."""

    id: str
    path: str
    sha256: str


@dataclass(frozen=True)
class CheckVerdict(Jsonable):
    """The result of one verifier inside a fan-out gate."""

    name: str
    mode: Mode
    detail: str = ""
    duration: float = field(default=0.0, metadata=rounded(6))

    @property
    def ok(self) -> bool:
        return self.mode is Mode.PASS


ISOLATION_KEY = "isolation"  # extra: what contained the run (ProcessResult.isolation)


@dataclass(frozen=True)
class Verdict(Jsonable):
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
    duration: float = field(default=0.0, metadata=rounded(6))
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


def worst_mode(modes: list[Mode] | tuple[Mode, ...]) -> Mode:
    """The mode a joined gate takes: the most severe of its checks (PASS only if all pass)."""
    if not modes:
        return Mode.BLANK
    return min(modes, key=SEVERITY.index)
