"""``VgateError``: one base for the plugin's own user-facing errors; names, other bases and
messages unchanged."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from pytest_vgate.baseline import BaselineError
from pytest_vgate.errors import VgateError
from pytest_vgate.evidence.init import InitError
from pytest_vgate.gatesfile import GatesFileError, load_gates_file
from pytest_vgate.plugin.citation_items import DocumentError
from pytest_vgate.plugin.merge import MergeError
from pytest_vgate.process.contain import ShepherdError
from pytest_vgate.process.tools import ToolUseError, UndeclaredToolError, UnknownToolError
from pytest_vgate.verifiers import VerifierDefinitionError, VerifierImportError, verifier

USER_ERRORS = [
    (GatesFileError, Exception),
    (BaselineError, Exception),
    (InitError, Exception),
    (ShepherdError, Exception),
    (VerifierDefinitionError, ValueError),
    (VerifierImportError, Exception),
    (MergeError, Exception),
    (DocumentError, Exception),
    (UnknownToolError, LookupError),
    (ToolUseError, Exception),
    (UndeclaredToolError, ValueError),
]


@pytest.mark.parametrize(("error", "other"), USER_ERRORS, ids=lambda e: e.__name__)
def test_each_user_error_is_a_vgate_error_and_keeps_its_base(
    error: type[Exception], other: type[Exception]
) -> None:
    assert issubclass(error, VgateError) and issubclass(error, other)


def test_a_gates_file_error_is_caught_as_a_vgate_error_with_its_message(tmp_path: Path) -> None:
    path = tmp_path / "gates.yaml"
    path.write_text("gates:\n  - id: a\n    chek: true\n", encoding="utf-8")
    with pytest.raises(VgateError) as caught:
        load_gates_file(path)
    assert isinstance(caught.value, GatesFileError)
    assert str(caught.value).startswith(f"{path}:3: [chek] unknown key `chek` in a gate;")
    again = pickle.loads(pickle.dumps(caught.value))
    assert str(again) == str(caught.value)


def test_a_bad_verifier_declaration_is_a_vgate_error() -> None:
    with pytest.raises(VgateError, match="timeout"):
        verifier(timeout=-1)
