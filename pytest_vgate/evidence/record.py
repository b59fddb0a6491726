"""One ledger record per gate run, and what a run's output says (``output_of``,
``skipped_only``) as the verdict's rules read it."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, ClassVar

from pytest_vgate.clip import clip
from pytest_vgate.evidence.identity import TreeState, claim_hash, fingerprint
from pytest_vgate.gatesfile import Gate
from pytest_vgate.jsonable import Jsonable, StrEnum, rounded
from pytest_vgate.verdict import Cause, Mode, Verdict

RECORD_VERSION = 1
OUTPUT_TAIL = 4096  # characters of stdout/stderr a record keeps (the tail: where errors are)


class Where(StrEnum):
    """Which tree a run was on: the session's own, or the base worktree (the red run)."""

    CURRENT = "current"
    BASE = "base"


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


def output_of(stdout: str, stderr: str) -> str:
    """What a run printed, as the genuine-red heuristic reads it."""
    return f"{stdout}\n{stderr}"


# pytest's last line ("1 skipped in 0.01s", "2 skipped, 1 deselected in ...") and a reason
# it printed (``-rs``: "SKIPPED [1] tests/test_x.py:3: needs the feature"); unittest's
# "OK (skipped=1)" after "Ran 1 test".
_PYTEST_TALLY = re.compile(r"^=*\s*((?:\d+ \w+(?:, )?)+) in [\d.]+s", re.MULTILINE)
_PYTEST_REASON = re.compile(r"^SKIPPED \[\d+\] ([^\n]+)", re.MULTILINE)
_UNITTEST_RAN = re.compile(r"^Ran (\d+) tests?\b", re.MULTILINE)
_UNITTEST_SKIPPED = re.compile(r"^OK \(skipped=(\d+)\)", re.MULTILINE)
_UNITTEST_REASON = re.compile(r"\bskipped '([^'\n]*)'")


def skipped_only(output: str) -> str | None:
    """When a run that passed only skipped its tests: pytest's (or unittest's) reason, or
    "" when it printed none; None when some test really ran."""
    tallies = _PYTEST_TALLY.findall(output)
    if tallies:
        pairs = (part.split(" ", 1) for part in tallies[-1].split(", "))
        counts = {word: int(n) for n, word in pairs}
        if counts.get("skipped") and not counts.get("passed") and not counts.get("xpassed"):
            reasons = _PYTEST_REASON.findall(output)
            return "; ".join(r.strip() for r in reasons[:3])
        return None
    ran, skipped = _UNITTEST_RAN.findall(output), _UNITTEST_SKIPPED.findall(output)
    if ran and skipped and int(ran[-1]) == int(skipped[-1]) > 0:
        return "; ".join(_UNITTEST_REASON.findall(output)[:3])
    return None


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
    judged: tuple[bool, str],
) -> Record:
    """The record of one observed run: identity from the gate, facts from the verdict,
    ``judged`` (genuine red or not, and why) from the verdict's rules
    (``gate/decide.py::is_genuine_red``, which reads the whole output: the record keeps
    only its tail)."""
    genuine, reason = judged
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
