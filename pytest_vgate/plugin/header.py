"""The report header's warnings about which copy of the code the checks would test.

Pytest layer (it reads the ``pythonpath`` ini); the probing is ``origin``'s. Once per gates
root on the controller, for the current tree and for the base worktree of the red runs.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from pytest_vgate.causes import runs_pytest
from pytest_vgate.gatesfile import Gate, GatesFile
from pytest_vgate.gatesfile.kinds import kind_of
from pytest_vgate.plugin.session import Resources
from pytest_vgate.process.cell import build_env, check_cell
from pytest_vgate.process.origin import import_warnings


def _python_gate(gates_file: GatesFile) -> Gate | None:
    """The first gate whose check runs Python (``python ...`` or pytest)."""
    for gate in gates_file.gates:
        if kind_of(gate.type).runs_argv and gate.argv:
            program = os.path.basename(gate.argv[0])
            if program.startswith("python") or runs_pytest(gate.argv):
                return gate
    return None


def origin_lines(config: pytest.Config, res: Resources) -> list[str]:
    """``vgate: WARNING: ...`` lines for packages imported from outside the tree checked."""
    lines: list[str] = []
    seen: set[str] = set()
    for loaded in res.gates_files.values():
        if not isinstance(loaded, GatesFile) or str(loaded.root) in seen:
            continue
        seen.add(str(loaded.root))
        gate = _python_gate(loaded)
        if gate is None:
            continue
        inventory = res.inventory_for(gate.root)
        entry = inventory.get(gate.argv[0]) if inventory is not None else None
        python = entry.path if entry is not None and entry.found and entry.path else None
        if python is None or not os.path.basename(gate.argv[0]).startswith("python"):
            python = sys.executable
        ini_paths = [Path(p) for p in config.getini("pythonpath")] if runs_pytest(gate.argv) else []
        with check_cell("vgate-probe-") as cell:
            env = build_env(
                cell,
                pass_names=gate.env.pass_names,
                set_values=dict(gate.env.set_values),
                caller_env=os.environ,
            )
            found = import_warnings(
                python=python, tree=gate.root, env=env, extra_paths=[str(p) for p in ini_paths]
            )
            base_root = res.base_root_for(gate)
            if base_root is not None:
                ref = res.settings.base or "base"
                mapped = [str(base_root / os.path.relpath(p, gate.root)) for p in ini_paths]
                found += import_warnings(
                    python=python,
                    tree=base_root,
                    env=env,
                    extra_paths=mapped,
                    label=f"red runs on base {ref}",
                    current_tree=gate.root,
                )
        lines.extend(f"vgate: WARNING: {text}" for text in found)
    return lines
