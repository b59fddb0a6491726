"""``StrEnum``: every closed vocabulary prints and compares as its public name."""

from __future__ import annotations

import json

import pytest

from pytest_vgate.citations.parse import CitationForm
from pytest_vgate.citations.source import FileState
from pytest_vgate.evidence.reach import CoverageStatus
from pytest_vgate.gatesfile import GateType, RedPolicy
from pytest_vgate.jsonable import StrEnum
from pytest_vgate.process.tools import ToolSource, ToolStatus
from pytest_vgate.verdict import Cause, CitationStatus, Mode, Rbg
from pytest_vgate.verifiers import Isolation

VOCABULARIES = [
    Mode,
    Cause,
    Rbg,
    CitationStatus,
    GateType,
    RedPolicy,
    CitationForm,
    FileState,
    ToolSource,
    ToolStatus,
    Isolation,
    CoverageStatus,
]


@pytest.mark.parametrize("vocabulary", VOCABULARIES, ids=lambda v: v.__name__)
def test_each_member_is_its_value(vocabulary: type[StrEnum]) -> None:
    assert issubclass(vocabulary, StrEnum)
    for member in vocabulary:
        assert member == member.value
        assert str(member) == f"{member}" == member.value
        assert json.dumps(member) == json.dumps(member.value)
        assert vocabulary(member.value) is member


def test_no_string_enumeration_bypasses_the_base() -> None:
    from pathlib import Path

    package = Path(__file__).resolve().parents[1] / "pytest_vgate"
    found = [p.name for p in package.rglob("*.py") if "(str, enum.Enum)" in p.read_text()]
    assert found == ["jsonable.py"]
