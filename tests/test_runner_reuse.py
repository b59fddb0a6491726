"""runner: what is reused between gates (cells, resolved folders) never leaks between them."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from types import MappingProxyType

import pytest

from pytest_vgate.context import RunContext
from pytest_vgate.gate.runner import run_check
from pytest_vgate.gatesfile import Gate, gate_from_mapping
from pytest_vgate.process.cell import CellPool
from pytest_vgate.verdict import Mode

PY = sys.executable

SHOW_AND_LEAVE = """
import os, sys
home, tmp = os.environ["HOME"], os.environ["TMPDIR"]
seen = sorted(os.listdir(home)) + sorted(os.listdir(tmp))
print(home)
if sys.argv[1] == "leave":
    open(os.path.join(home, ".token"), "w").write("secret")
    os.mkdir(os.path.join(tmp, "cache"))
sys.exit(3 if seen else 0)
"""


def gate(root: Path, gate_id: str, *args: str, cwd: str = ".") -> Gate:
    check = shlex.join([PY, "-c", SHOW_AND_LEAVE, *args])
    return gate_from_mapping({"id": gate_id, "check": check, "cwd": cwd}, root=root)


@pytest.fixture
def cells() -> Iterator[CellPool]:
    """A session's cell pool (SessionState.cells), closed at the end of the test."""
    pool = CellPool()
    yield pool
    pool.close()


def context(root: Path, cells: CellPool) -> RunContext:
    return RunContext(root=root, caller_env=MappingProxyType(dict(os.environ)), cells=cells)


def test_checks_in_a_row_never_see_each_others_files(tmp_path: Path, cells: CellPool) -> None:
    ctx = context(tmp_path, cells)
    runs = [
        run_check(gate(tmp_path, "clean-1", "keep"), ctx),
        run_check(gate(tmp_path, "clean-2", "keep"), ctx),
        run_check(gate(tmp_path, "dirty", "leave"), ctx),
        run_check(gate(tmp_path, "after-dirty", "keep"), ctx),
    ]
    assert [r.exit_code for r in runs] == [0, 0, 0, 0], [r.stderr for r in runs]
    homes = [r.stdout.strip() for r in runs]
    assert homes[0] == homes[1] == homes[2], "a clean cell is reused"
    assert homes[3] != homes[2], "the cell the dirty check left was handed on"
    assert not Path(homes[2]).exists(), "the dirty cell was not removed"


def test_a_cwd_removed_between_runs_is_noticed(tmp_path: Path, cells: CellPool) -> None:
    (tmp_path / "sub").mkdir()
    g = gate(tmp_path, "in-sub", "keep", cwd="sub")
    ctx = context(tmp_path, cells)
    assert run_check(g, ctx).mode is Mode.PASS
    (tmp_path / "sub").rmdir()
    again = run_check(g, ctx)
    assert again.mode is Mode.CRASH
    assert "does not exist" in again.detail
