"""The gate-kind table (``spec.kinds``): one row per gate type, read by every layer.

Each test reads a fact from the table and checks that the loader, the runner, the
evidence rules or the pytest layer acts on it; change a row and the matching test fails.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_vgate.context import RunContext
from pytest_vgate.gate.decide import genuine_red
from pytest_vgate.gate.runner import run_check, run_function
from pytest_vgate.gatesfile import Gate, GatesFile, GatesFileError, GateType, gate_from_mapping
from pytest_vgate.gatesfile.kinds import KINDS, kind_of
from pytest_vgate.plugin.hooks import tool_ids
from pytest_vgate.verdict import Mode

ALL = sorted(GateType, key=lambda t: t.value)


def _mapping(gate_type: GateType, **extra: object) -> dict[str, object]:
    data: dict[str, object] = {"id": "g", "type": gate_type.value, **extra}
    for key in kind_of(gate_type).required:  # the keys the row says it needs
        data[key] = ["checks:first"]
    if "check" not in kind_of(gate_type).refused:
        data.setdefault("check", "tool --flag 'two words'")
    return data


def test_every_gate_type_has_exactly_one_row() -> None:
    assert set(KINDS) == set(GateType)
    assert all(kind.type is gate_type for gate_type, kind in KINDS.items())


def test_the_rows_say_what_the_gate_types_do() -> None:
    """command/code run a command line; semantic/self_review are judgments; python runs
    verifiers, whose runs have no exit code for ``red_exit``."""
    rows = {t.value: kind_of(t) for t in GateType}
    assert {name for name, k in rows.items() if k.runs_argv} == {"command", "code"}
    assert {name for name, k in rows.items() if k.judgment} == {"semantic", "self_review"}
    assert {name for name, k in rows.items() if not k.red_exit} == {"python"}
    assert {k.run for k in rows.values()} == {
        "pytest_vgate.gate.runner:run_command",
        "pytest_vgate.gate.runner:run_judgment",
        "pytest_vgate.verifiers:run_verifier_refs",
    }


@pytest.mark.parametrize("gate_type", ALL, ids=str)
def test_each_run_reference_resolves_to_a_function(gate_type: GateType) -> None:
    assert callable(run_function(kind_of(gate_type).run))


@pytest.mark.parametrize("gate_type", ALL, ids=str)
def test_the_loader_splits_the_check_exactly_for_kinds_that_run_argv(
    gate_type: GateType, tmp_path: Path
) -> None:
    gate = gate_from_mapping(_mapping(gate_type), root=tmp_path)
    expected = ("tool", "--flag", "two words") if kind_of(gate_type).runs_argv else ()
    assert gate.argv == expected


@pytest.mark.parametrize("gate_type", ALL, ids=str)
def test_the_loader_refuses_what_the_row_refuses(gate_type: GateType, tmp_path: Path) -> None:
    kind = kind_of(gate_type)
    for key, message in kind.refused.items():
        data = _mapping(gate_type, **{key: ["checks:first"] if key == "verifiers" else "x y"})
        with pytest.raises(GatesFileError) as caught:
            gate_from_mapping(data, root=tmp_path)
        assert caught.value.key == key
        assert caught.value.message == message
    for key, message in kind.required.items():
        data = _mapping(gate_type)
        del data[key]
        with pytest.raises(GatesFileError) as caught:
            gate_from_mapping(data, root=tmp_path)
        assert (caught.value.key, caught.value.message) == (key, message)


def test_the_python_row_refuses_the_check_and_needs_verifiers(tmp_path: Path) -> None:
    """The one kind with rules of its own: the row, not the loader, says so."""
    python = kind_of(GateType.PYTHON)
    assert set(python.refused) == {"check"} and set(python.required) == {"verifiers"}
    with pytest.raises(GatesFileError, match="needs `verifiers"):
        gate_from_mapping({"id": "g", "type": "python"}, root=tmp_path)
    with pytest.raises(GatesFileError, match="verifiers run only in a `type: python` gate"):
        gate_from_mapping({"id": "g", "check": "true", "verifier": "m:f"}, root=tmp_path)


@pytest.mark.parametrize("gate_type", ALL, ids=str)
def test_judgment_kinds_are_never_executed(gate_type: GateType, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    gate = Gate(
        id="g", type=gate_type, check=f"touch {marker}", argv=("touch", str(marker)), root=tmp_path
    )
    if gate_type is GateType.PYTHON:
        pytest.skip("a python gate runs verifiers, not its argv")
    verdict = run_check(gate, RunContext(root=tmp_path))
    if kind_of(gate_type).judgment:
        assert verdict.mode is Mode.JUDGMENT and not marker.exists()
    else:
        assert verdict.mode is Mode.PASS and marker.exists()


@pytest.mark.parametrize("gate_type", ALL, ids=str)
def test_red_exit_applies_as_the_row_says(gate_type: GateType, tmp_path: Path) -> None:
    gate = Gate(id="g", type=gate_type, red_exit=(1,), root=tmp_path)
    genuine, _why = genuine_red(Mode.FAIL, None, gate)
    assert genuine is not kind_of(gate_type).red_exit


@pytest.mark.parametrize("gate_type", ALL, ids=str)
def test_the_session_inventory_takes_programs_from_argv_kinds_only(
    gate_type: GateType, tmp_path: Path
) -> None:
    gate = Gate(id="g", type=gate_type, argv=("sometool", "x"), root=tmp_path)
    loaded = GatesFile(tmp_path / "gates.yaml", tmp_path, (gate,))
    assert ("sometool" in tool_ids([loaded])) is kind_of(gate_type).runs_argv
