"""pytest-vgate: fail-closed verification gates, red-before-green evidence, citation checks.

The public API: the ``verifier`` decorator and ``Outcome`` for Python verifiers,
``run_oracle_check`` to re-execute one gate as a library call, and the verdict
vocabulary. Everything else is an implementation module.
"""

from __future__ import annotations

from pytest_vgate.runner import run_oracle_check
from pytest_vgate.spec import Gate, GatesFileError, load_gates_file
from pytest_vgate.verdict import Cause, CitationStatus, Mode, Rbg, Verdict
from pytest_vgate.verifiers import Outcome, verifier

__all__ = [
    "Cause",
    "CitationStatus",
    "Gate",
    "GatesFileError",
    "Mode",
    "Outcome",
    "Rbg",
    "Verdict",
    "load_gates_file",
    "run_oracle_check",
    "verifier",
]
