"""The gates file's data model: gate types, gates, the file, its errors and key vocabulary.

Pure data; never imports pytest.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pytest_vgate.errors import VgateError
from pytest_vgate.jsonable import Jsonable, StrEnum


class GateType(StrEnum):
    COMMAND = "command"
    CODE = "code"
    PYTHON = "python"
    SEMANTIC = "semantic"
    SELF_REVIEW = "self_review"


class RedPolicy(StrEnum):
    REQUIRED = "required"
    NOT_REQUIRED = "not-required"


@dataclass(frozen=True)
class EnvSpec:
    """Which caller variables reach a check (``pass``) and which are set (``set``)."""

    pass_names: tuple[str, ...] = ()
    set_values: tuple[tuple[str, str], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"pass": list(self.pass_names), "set": dict(self.set_values)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EnvSpec:
        return cls(tuple(data.get("pass", ())), tuple(dict(data.get("set", {})).items()))


@dataclass(frozen=True)
class Gate(Jsonable):
    """One validated gate. ``argv`` is the check split with shlex (empty when blank)."""

    id: str
    type: GateType = GateType.COMMAND
    claim: str = ""
    check: str = ""
    argv: tuple[str, ...] = ()
    expect: tuple[int, ...] = (0,)
    timeout: float | None = None
    cwd: str = "."
    env: EnvSpec = field(default_factory=EnvSpec)
    tools: tuple[str, ...] = ()
    red: RedPolicy = RedPolicy.REQUIRED
    red_exit: tuple[int, ...] | None = None
    overlay: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()
    stale_at: str | None = None  # ISO 8601, UTC
    verifiers: tuple[str, ...] = ()  # "module:function" references
    root: Path = field(default_factory=Path.cwd)
    source: Path | None = None  # the gates file
    line: int = 0  # line of the gate in the gates file


@dataclass(frozen=True)
class GatesFile(Jsonable):
    """A loaded gates file: its gates in file order and the citation documents it names."""

    path: Path
    root: Path
    gates: tuple[Gate, ...]
    citations: tuple[Path, ...] = ()  # resolved document paths (globs expanded)
    default_tools: tuple[str, ...] = ()


class GatesFileError(VgateError):
    """A problem in a gates file that the user can fix; names FILE:LINE and the key."""

    def __init__(self, path: Path | str, line: int | None, key: str | None, message: str):
        self.path = Path(path)
        self.line = line
        self.key = key
        self.message = message
        where = f"{self.path}:{line}" if line else str(self.path)
        what = f" [{key}]" if key else ""
        super().__init__(f"{where}:{what} {message}")

    def __reduce__(self) -> tuple[Any, ...]:  # picklable despite the 4-argument __init__
        return (type(self), (str(self.path), self.line, self.key, self.message))


# -- the key vocabulary (gates.schema.json is tested against these) -----------------------

TOP_LEVEL_KEYS = frozenset({"root", "defaults", "gates", "citations"})
DEFAULT_KEYS = frozenset({"timeout", "env", "tools", "expect", "cwd", "red"})
# The keys no `defaults` gives, and those it may give a gate.
_OWN_KEYS = ("id", "type", "claim", "check", "red_exit", "overlay", "inputs", "stale_at")
GATE_KEYS = DEFAULT_KEYS | frozenset((*_OWN_KEYS, "verifier", "verifiers"))
ALIASES: Mapping[str, str] = MappingProxyType(
    {
        "verification_type": "type",
        "evidence_type": "claim",
        "evidence_shape": "check",
        "command": "check",
    }
)
ENV_KEYS = frozenset({"pass", "set"})
