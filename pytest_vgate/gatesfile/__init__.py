"""The gates file: load, validate and normalise ``gates.yaml`` into typed gates.

Pure data; never imports pytest. ``model`` holds the types and the key vocabulary (the
single source of truth; ``gates.schema.json`` is tested against it), ``load`` the loader,
``values`` one rule per kind of value, ``yamlnodes`` YAML reading with line numbers
(``located`` the data it gives).
"""

from __future__ import annotations

from pytest_vgate.gatesfile.load import gate_from_mapping, load_gates_file
from pytest_vgate.gatesfile.model import (
    ALIASES,
    DEFAULT_KEYS,
    ENV_KEYS,
    GATE_KEYS,
    TOP_LEVEL_KEYS,
    EnvSpec,
    Gate,
    GatesFile,
    GatesFileError,
    GateType,
    RedPolicy,
)

__all__ = [
    "ALIASES",
    "DEFAULT_KEYS",
    "ENV_KEYS",
    "GATE_KEYS",
    "TOP_LEVEL_KEYS",
    "EnvSpec",
    "Gate",
    "GateType",
    "GatesFile",
    "GatesFileError",
    "RedPolicy",
    "gate_from_mapping",
    "load_gates_file",
]
