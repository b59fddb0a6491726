"""The typed messages between the pytest process and a verifier's process.

A message on the wire is a JSON object whose ``"op"`` names it (:class:`Op`). The two that
carry data are typed here: the job the pytest process sends (:class:`VerifierJob`) and the
answer the verifier's process sends back (:class:`ChildAnswer`). Both decode strictly
(:func:`pytest_vgate.jsonable.from_json`): a message that does not fit is refused, never
half-read. Core module: never imports pytest.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal, TypedDict

from pytest_vgate.jsonable import Jsonable, JsonShapeError, StrEnum
from pytest_vgate.verdict import Cause, Mode
from pytest_vgate.verifiers.target import VerifierTarget


class Op(StrEnum):
    """The ``"op"`` of a message: what it is and who sends it."""

    JOB = "job"  # pytest -> verifier: the call to make (a VerifierJob)
    RESULT = "result"  # verifier -> pytest: the answer (a ChildAnswer)
    INTERNAL = "internal"  # verifier -> pytest: our own code failed in the child
    DECLARE = "declare"  # verifier -> pytest: the tools the verifier declares
    RUN = "run"  # verifier -> pytest: ``ctx.run`` of a tool
    CALL = "call"  # pytest -> zygote: fork a child for one call
    MORE = "more"  # pytest -> zygote: fork the next child
    REAP = "reap"  # reaper -> pytest: a child's exit status
    ZYGOTE = "zygote"  # pytest -> spawner: start a module's zygote


# The messages whose wire format is fixed and small: a TypedDict each, as sent.


class CallMessage(TypedDict):
    """pytest -> zygote: fork a child for one call (answered with its pid and sockets)."""

    op: Literal[Op.CALL]


class _More(TypedDict):
    op: Literal[Op.MORE]


class MoreMessage(_More, total=False):
    """pytest -> zygote: fork the next spare; ``reap``: spares dismissed since."""

    reap: list[int]


class ReapMessage(TypedDict):
    """reaper -> pytest: a child's exit status (``os.waitpid``'s)."""

    op: Literal[Op.REAP]
    pid: int
    status: int


class DeclareMessage(TypedDict):
    """verifier -> pytest: the tools the verifier declares, before its first ``ctx.run``."""

    op: Literal[Op.DECLARE]
    tools: list[str]


class InternalMessage(TypedDict):
    """verifier -> pytest: our own code failed in the child (never the verifier's)."""

    op: Literal[Op.INTERNAL]
    detail: str


class RunMessage(TypedDict):
    """verifier -> pytest: ``ctx.run(tool, *args, cwd=..., expect=...)``."""

    op: Literal[Op.RUN]
    tool: str
    args: list[str]
    cwd: str | None
    expect: list[int]


class ZygoteMessage(TypedDict):
    """pytest -> spawner: start the zygote of a module (imported once, then forked)."""

    op: Literal[Op.ZYGOTE]
    module: str
    file: str | None
    sys_path: list[str]
    cwd: str
    root: str
    pycache: str | None
    oneshot: bool
    deadline: float  # time.time() by which the import must be done
    measure: list[str] | None  # [data folder, bootstrap folder]: measured from the import on


@dataclass(frozen=True)
class VerifierJob(Jsonable):
    """One verifier call, as the verifier's process receives it.

    ``env`` is the whole environment of the call; ``cwd`` its folder ("" keeps the
    zygote's); ``deadline`` the wall-clock time (``time.time()``) by which it must answer,
    set when it is sent (the zygote's start-up is not the verifier's time);
    ``bytecode_checked``: the pytest process checked the bytecode cache for the tree just
    before sending (else the child does).
    """

    target: VerifierTarget
    root: str
    cell: str
    gate: Mapping[str, Any] | None
    cwd: str
    env: Mapping[str, str] = field(default_factory=dict)
    deadline: float = 0.0
    bytecode_checked: bool = False

    def message(self) -> dict[str, Any]:
        return {"op": Op.JOB.value, **self.to_dict()}

    @classmethod
    def from_message(cls, message: Mapping[str, Any]) -> VerifierJob:
        if message.get("op") != Op.JOB.value:
            raise JsonShapeError(cls.__name__, f"not a job message: op {message.get('op')!r}")
        return cls.from_dict({k: v for k, v in message.items() if k != "op"})


@dataclass(frozen=True)
class ChildAnswer(Jsonable):
    """What the verifier's process says the verifier answered (before the pytest process
    judges it against its own record of the tool runs)."""

    mode: Mode
    cause: Cause | None = None
    detail: str = ""
    declared_tools: tuple[str, ...] = ()

    def message(self) -> dict[str, Any]:
        return {"op": Op.RESULT.value, "result": self.to_dict()}

    @classmethod
    def read(cls, raw: object) -> ChildAnswer:
        """The answer in a ``result`` message; keys it does not have are dropped unread
        (a verifier may craft the message: what it adds, e.g. ``runs``, is never evidence),
        the ones it has must fit (:class:`JsonShapeError`)."""
        if isinstance(raw, Mapping):
            raw = {k: v for k, v in raw.items() if k in _ANSWER_KEYS}
        return cls.from_dict(raw)


_ANSWER_KEYS = frozenset(f.name for f in fields(ChildAnswer))
