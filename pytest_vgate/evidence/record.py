"""One ledger record per gate run, and the genuine-red heuristic that judges a red run."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from pytest_vgate.clip import clip
from pytest_vgate.evidence.identity import TreeState, claim_hash, fingerprint
from pytest_vgate.spec import Gate
from pytest_vgate.spec.kinds import kind_of
from pytest_vgate.verdict import Cause, Mode, Verdict

RECORD_VERSION = 1
OUTPUT_TAIL = 4096  # characters of stdout/stderr a record keeps (the tail: where errors are)
WHERE = ("current", "base")

_PYTEST_EXE = re.compile(r"^(pytest|py\.test)(-?\d+(\.\d+)*)?(\.exe)?$")
# pytest's own exit codes that mean "the tests did not run to an answer".
PYTEST_NOT_RED = {
    2: "pytest exit 2: interrupted (a collection error, e.g. an import error in a test module)",
    3: "pytest exit 3: internal error",
    4: "pytest exit 4: usage error (e.g. the test id does not exist)",
    5: "pytest exit 5: no tests were collected",
}
SHELL_NOT_RED = {
    126: "exit 126: the command was found but could not be executed",
    127: "exit 127: command not found",
}
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


def runs_pytest(argv: Sequence[str]) -> bool:
    """True when the check runs pytest: ``pytest``, ``py.test``, ``python -m pytest``."""
    for i, token in enumerate(argv):
        if _PYTEST_EXE.match(os.path.basename(token)):
            return True
        if token == "-mpytest" or (token == "-m" and i + 1 < len(argv) and argv[i + 1] == "pytest"):
            return True
    return False


def judge_red(mode: Mode, exit_code: int | None, gate: Gate) -> tuple[bool, str]:
    """The genuine-red heuristic on the bare facts of a run (see ``is_genuine_red``)."""
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
    sandbox, ungrounded); exit 126/127; a signal; for pytest checks exits 2-5; with
    ``red_exit`` given, any code outside it (``red_exit`` replaces the pytest rule).
    """
    return judge_red(verdict.mode, verdict.exit_code, gate)


def _tail(text: str, limit: int = OUTPUT_TAIL) -> str:
    return clip(text, limit, keep="tail", mark="[... {cut} characters cut ...]\n")


@dataclass(frozen=True)
class Record:
    """One run of one gate on one tree, as the ledger keeps it (JSON-able, one line)."""

    gate_id: str
    fingerprint: str
    claim_hash: str
    tree: TreeState
    inputs_digest: str
    where: str  # "current" | "base"
    base_ref: str | None
    mode: Mode
    cause: Cause | None
    exit_code: int | None
    duration: float
    stdout: str
    stderr: str
    time: str  # UTC ISO 8601
    genuine_red: bool
    red_reason: str
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.mode is Mode.PASS

    def to_dict(self) -> dict[str, Any]:
        return {
            "v": RECORD_VERSION,
            "gate_id": self.gate_id,
            "fingerprint": self.fingerprint,
            "claim_hash": self.claim_hash,
            "tree": self.tree.to_dict(),
            "inputs_digest": self.inputs_digest,
            "where": self.where,
            "base_ref": self.base_ref,
            "mode": self.mode.value,
            "cause": self.cause.value if self.cause else None,
            "exit_code": self.exit_code,
            "duration": round(self.duration, 6),
            "stdout": self.stdout,
            "stderr": self.stderr,
            "time": self.time,
            "genuine_red": self.genuine_red,
            "red_reason": self.red_reason,
            "extra": dict(self.extra),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Record:
        """Rebuild a record; raises KeyError/ValueError/TypeError on a malformed one."""
        if not isinstance(data, Mapping):
            raise TypeError("a record is a JSON object")
        where = str(data["where"])
        if where not in WHERE:
            raise ValueError(f"where must be one of {WHERE}, not {where!r}")
        exit_code = data.get("exit_code")
        if exit_code is not None and (
            isinstance(exit_code, bool) or not isinstance(exit_code, int)
        ):
            raise TypeError("exit_code must be an integer or null")
        cause = data.get("cause")
        base_ref = data.get("base_ref")
        tree = data["tree"]
        if not isinstance(tree, Mapping):
            raise TypeError("tree must be an object")
        extra = data.get("extra") or {}
        return cls(
            gate_id=str(data["gate_id"]),
            fingerprint=str(data["fingerprint"]),
            claim_hash=str(data["claim_hash"]),
            tree=TreeState.from_dict(tree),
            inputs_digest=str(data.get("inputs_digest", "")),
            where=where,
            base_ref=str(base_ref) if base_ref is not None else None,
            mode=Mode(data["mode"]),
            cause=Cause(cause) if cause else None,
            exit_code=exit_code,
            duration=float(data.get("duration", 0.0)),
            stdout=str(data.get("stdout", "")),
            stderr=str(data.get("stderr", "")),
            time=str(data["time"]),
            genuine_red=bool(data.get("genuine_red", False)),
            red_reason=str(data.get("red_reason", "")),
            extra=dict(extra) if isinstance(extra, Mapping) else {},
        )


def make_record(
    gate: Gate,
    verdict: Verdict,
    *,
    tree: TreeState,
    inputs_digest: str,
    where: str = "current",
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
        where=where,
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
    )
