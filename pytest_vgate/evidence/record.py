"""One ledger record per gate run, and the genuine-red heuristic that judges a red run."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, ClassVar

from pytest_vgate.causes import (
    PYTEST_NOT_RED,
    SHELL_NOT_RED,
    UNITTEST_NOT_LOADED,
    UNITTEST_NOT_RED,
    runs_pytest,
)
from pytest_vgate.clip import clip
from pytest_vgate.evidence.identity import TreeState, claim_hash, fingerprint
from pytest_vgate.gatesfile import Gate
from pytest_vgate.gatesfile.kinds import kind_of
from pytest_vgate.jsonable import Jsonable, StrEnum, rounded
from pytest_vgate.verdict import Cause, Mode, Verdict

RECORD_VERSION = 1
OUTPUT_TAIL = 4096  # characters of stdout/stderr a record keeps (the tail: where errors are)


class Where(StrEnum):
    """Which tree a run was on: the session's own, or the base worktree (the red run)."""

    CURRENT = "current"
    BASE = "base"


WHERE = tuple(w.value for w in Where)

_MODE_NOT_RED = {
    Mode.UNAVAILABLE: "the tool was not found, so the check never ran",
    Mode.TIMEOUT: "the check timed out: a non-result, not an answer",
    Mode.CRASH: "the check died without a result (crash or spawn failure)",
    Mode.BLANK: "the check is blank: there was nothing to run",
    Mode.ERROR: "the check raised an error instead of answering",
    Mode.PANIC: "the check panicked (SystemExit or similar) instead of answering",
    Mode.SANDBOX: "the sandbox refused the run (tool bytes moved or isolation missing)",
    Mode.UNGROUNDED: "the verifier passed or failed without running its tools",
    Mode.JUDGMENT: "a judgment gate is not executed",
    Mode.PASS: "the check passed",
}


def utc_now() -> str:
    """The current time as the ledger writes it: UTC ISO 8601 with a ``Z``."""
    now = datetime.now(timezone.utc).replace(tzinfo=None)  # isoformat: strftime's text, faster
    return now.isoformat(timespec="microseconds") + "Z"


def parse_time(text: str) -> datetime | None:
    """Parse an ISO 8601 time (``Z`` accepted on 3.10); naive times are UTC. None if bad."""
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except (ValueError, AttributeError):
        return None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def judge_red(mode: Mode, exit_code: int | None, gate: Gate, output: str = "") -> tuple[bool, str]:
    """The genuine-red heuristic on the facts of a run (see ``is_genuine_red``); ``output``
    is what the run printed (stdout and stderr), read only for unittest's loader errors."""
    if mode is not Mode.FAIL:
        return False, _MODE_NOT_RED.get(mode, f"mode {mode.value} is not an answer")
    if exit_code is None:
        if gate.red_exit is not None and kind_of(gate.type).red_exit:
            return False, f"no exit code to match red_exit {list(gate.red_exit)}"
        return True, "the check ran and answered no"
    if exit_code < 0:
        return False, f"killed by signal {-exit_code}"
    if exit_code in SHELL_NOT_RED:
        return False, SHELL_NOT_RED[exit_code]
    if UNITTEST_NOT_LOADED.search(output):
        return False, UNITTEST_NOT_RED
    if gate.red_exit is not None:
        if exit_code in gate.red_exit:
            return True, f"exit {exit_code} is in red_exit {list(gate.red_exit)}"
        return False, f"exit {exit_code} is not in red_exit {list(gate.red_exit)}"
    if exit_code in PYTEST_NOT_RED and runs_pytest(gate.argv):
        return False, PYTEST_NOT_RED[exit_code]
    return True, f"exit {exit_code}: the check ran and answered no"


def is_genuine_red(verdict: Verdict, gate: Gate) -> tuple[bool, str]:
    """Was this a red for the right reason? A check that ran to exit with a failing code.

    Not genuine: any mode but ``fail`` (unavailable, timeout, crash, blank, error, panic,
    sandbox, ungrounded); exit 126/127; a signal; a run in which unittest could not load a
    test it was named (whatever ``red_exit`` says); for pytest checks exits 2-5; with
    ``red_exit`` given, any code outside it (``red_exit`` replaces the pytest rule).
    """
    return judge_red(
        verdict.mode, verdict.exit_code, gate, output_of(verdict.stdout, verdict.stderr)
    )


def output_of(stdout: str, stderr: str) -> str:
    """What a run printed, as the genuine-red heuristic reads it."""
    return f"{stdout}\n{stderr}"


def _tail(text: str, limit: int = OUTPUT_TAIL) -> str:
    return clip(text, limit, keep="tail", mark="[... {cut} characters cut ...]\n")


@dataclass(frozen=True)
class Record(Jsonable):
    """One run of one gate on one tree, as the ledger keeps it (JSON-able, one line).

    Its JSON carries ``"v"`` (the record format) first; reading ignores it.
    """

    __json_head__: ClassVar[tuple[str, ...]] = ("v",)
    v: ClassVar[int] = RECORD_VERSION

    gate_id: str
    fingerprint: str
    claim_hash: str
    tree: TreeState
    inputs_digest: str
    where: Where
    base_ref: str | None
    mode: Mode
    cause: Cause | None
    exit_code: int | None
    duration: float = field(metadata=rounded(6))
    stdout: str
    stderr: str
    time: str  # UTC ISO 8601
    genuine_red: bool
    red_reason: str
    extra: Mapping[str, Any] = field(default_factory=dict)
    # What the check said of its run (a verifier's answer or exception, the exit code
    # against the expected): the why of a Python check's red, which has no output.
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.mode is Mode.PASS


def make_record(
    gate: Gate,
    verdict: Verdict,
    *,
    tree: TreeState,
    inputs_digest: str,
    where: Where | str = Where.CURRENT,
    base_ref: str | None = None,
    time: str | None = None,
    content: str = "",
    extra: Mapping[str, Any] | None = None,
) -> Record:
    """The record of one observed run: identity from the gate, facts from the verdict."""
    if where not in WHERE:
        raise ValueError(f"where must be one of {WHERE}, not {where!r}")
    genuine, reason = is_genuine_red(verdict, gate)
    return Record(
        gate_id=gate.id,
        fingerprint=fingerprint(gate, verdict.tools, content),
        claim_hash=claim_hash(gate.claim),
        tree=tree,
        inputs_digest=inputs_digest,
        where=Where(where),
        base_ref=base_ref,
        mode=verdict.mode,
        cause=verdict.cause,
        exit_code=verdict.exit_code,
        duration=verdict.duration,
        stdout=_tail(verdict.stdout),
        stderr=_tail(verdict.stderr),
        time=time or utc_now(),
        genuine_red=genuine,
        red_reason=reason,
        extra=dict(extra or {}),
        detail=_tail(verdict.detail),
    )
