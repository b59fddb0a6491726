"""Python verifiers: declared with ``@verifier``, called only through the fail-closed runner.

``call_verifier`` runs one in a fresh process of its own (forked from its module's
zygote) under a deadline; ``run_verifiers`` fans several out and joins them into a
Verdict. See docs/verifiers.md.
"""

from __future__ import annotations

from pytest_vgate.process.tools import (
    ToolMovedError,
    ToolUnavailableError,
    ToolUseError,
    UndeclaredToolError,
)
from pytest_vgate.verifiers.api import (
    Isolation,
    Outcome,
    VerifierDefinitionError,
    VerifierSpec,
    find_verifier_spec,
    verifier,
)
from pytest_vgate.verifiers.context import ToolRun, ToolUse, VerifierContext
from pytest_vgate.verifiers.fanout import join_results, run_verifier_refs, run_verifiers
from pytest_vgate.verifiers.isolation import Cancel, VerifierCall, call_verifier
from pytest_vgate.verifiers.result import VerifierResult
from pytest_vgate.verifiers.target import VerifierImportError, VerifierTarget, load_target

__all__ = [
    "Cancel",
    "Isolation",
    "Outcome",
    "ToolMovedError",
    "ToolRun",
    "ToolUnavailableError",
    "ToolUse",
    "ToolUseError",
    "UndeclaredToolError",
    "VerifierCall",
    "VerifierContext",
    "VerifierDefinitionError",
    "VerifierImportError",
    "VerifierResult",
    "VerifierSpec",
    "VerifierTarget",
    "call_verifier",
    "find_verifier_spec",
    "join_results",
    "load_target",
    "run_verifier_refs",
    "run_verifiers",
    "verifier",
]
