"""The gate-kind table: every fact that depends on a gate's ``type``, in one row per type.

Read by the loader (which keys a kind allows or needs, whether ``check`` is a command
line), the runner (the run function, judgment), the evidence rules (``red_exit``,
coverage) and the pytest layer (which programs are tools). Adding a gate type is one
``GateType`` member, one row here and its run function (docs/architecture.md).

Pure data; never imports pytest. ``run`` names its function as ``module:function``
(resolved by the runner), so this bottom layer imports nothing above it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from pytest_vgate.gatesfile.model import GateType

_NO_KEYS: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True)
class GateKind:
    """What one gate type is: how it runs and which rules apply to it."""

    type: GateType
    run: str  # "module:function" taking (Gate, RunContext) and returning a Verdict
    runs_argv: bool = False  # `check` is a command line: split with shlex, argv[0] a tool
    judgment: bool = False  # answered by a judge, never re-executed
    red_exit: bool = True  # its runs end in an exit code that `red_exit` can match
    # gate key -> the message when it is missing (required) or given (refused)
    required: Mapping[str, str] = field(default_factory=lambda: _NO_KEYS)
    refused: Mapping[str, str] = field(default_factory=lambda: _NO_KEYS)
    base_hint: str = ""  # what to do when its base run did not answer (why.py)


_RUNNER = "pytest_vgate.gate.runner"
_NO_VERIFIERS = MappingProxyType(
    {"verifiers": "verifiers run only in a `type: python` gate; set `type: python` or remove them"}
)

KINDS: Mapping[GateType, GateKind] = MappingProxyType(
    {
        **{
            t: GateKind(t, run=f"{_RUNNER}:run_command", runs_argv=True, refused=_NO_VERIFIERS)
            for t in (GateType.COMMAND, GateType.CODE)
        },
        GateType.PYTHON: GateKind(
            GateType.PYTHON,
            run="pytest_vgate.verifiers:run_verifier_refs",
            red_exit=False,
            required=MappingProxyType(
                {
                    "verifiers": "a `type: python` gate needs `verifiers: [module:function, ...]` "
                    "(or `verifier: module:function`)"
                }
            ),
            refused=MappingProxyType(
                {
                    "check": "a `type: python` gate runs its verifiers, not a check; "
                    "remove it or use `type: command`"
                }
            ),
            base_hint=(
                "The verifier did not answer on the base (see its checks above): make it fail "
                "with `Outcome.failed(...)` when the change is missing, not raise."
            ),
        ),
        **{
            t: GateKind(t, run=f"{_RUNNER}:run_judgment", judgment=True, refused=_NO_VERIFIERS)
            for t in (GateType.SEMANTIC, GateType.SELF_REVIEW)
        },
    }
)


def kind_of(gate_type: GateType) -> GateKind:
    """The row for a gate type (every ``GateType`` member has one; a test checks it)."""
    return KINDS[gate_type]
