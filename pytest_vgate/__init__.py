"""pytest-vgate: fail-closed verification gates, red-before-green evidence, citation checks.

The public API: the ``verifier`` decorator and ``Outcome`` for Python verifiers,
``run_oracle_check`` to re-execute one gate as a library call, and the verdict
vocabulary. Everything else is an implementation module.

The names load on first use (PEP 562): pytest imports this package with the plugin in
every session, vgate or not, and that import must cost nothing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_vgate.gate.runner import run_oracle_check
    from pytest_vgate.gatesfile import Gate, GatesFileError, load_gates_file
    from pytest_vgate.verdict import Cause, CitationStatus, Mode, Rbg, Verdict
    from pytest_vgate.verifiers import Outcome, verifier

_HOME = {
    "Cause": "pytest_vgate.verdict",
    "CitationStatus": "pytest_vgate.verdict",
    "Gate": "pytest_vgate.gatesfile",
    "GatesFileError": "pytest_vgate.gatesfile",
    "Mode": "pytest_vgate.verdict",
    "Outcome": "pytest_vgate.verifiers",
    "Rbg": "pytest_vgate.verdict",
    "Verdict": "pytest_vgate.verdict",
    "load_gates_file": "pytest_vgate.gatesfile",
    "run_oracle_check": "pytest_vgate.gate.runner",
    "verifier": "pytest_vgate.verifiers",
}

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


def __getattr__(name: str) -> object:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'pytest_vgate' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # once: later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
