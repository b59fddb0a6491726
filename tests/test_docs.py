"""The docs match the code: every option, key and mode is documented; every example runs."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest
import yaml
from helpers.docs_examples import fenced_blocks, materialise, yaml_blocks

from pytest_vgate.spec import ALIASES, DEFAULT_KEYS, GATE_KEYS, TOP_LEVEL_KEYS, load_gates_file
from pytest_vgate.verdict import Cause, CitationStatus, Mode, Rbg

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [*sorted(DOCS.glob("*.md")), ROOT / "README.md"]
SCHEMA = "gates.schema.json"
OPTIONS = [
    "--vgate",
    "--vgate-base",
    "--vgate-require-red",
    "--vgate-strict",
    "--vgate-timeout",
    "--vgate-ledger",
    "--vgate-report",
    "--vgate-fix",
    "--vgate-cite",
    "--vgate-sarif",
    "--vgate-github",
    "--vgate-only",
]


def as_json(data: object) -> object:
    """What an editor's schema validator sees: YAML timestamps are strings there."""
    return json.loads(json.dumps(data, default=lambda value: value.isoformat()))


def _text(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def test_every_option_and_ini_twin_is_documented_and_in_help() -> None:
    page = _text("options.md")
    help_text = subprocess.run(
        [sys.executable, "-m", "pytest", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    ).stdout
    for option in OPTIONS:
        ini = option.lstrip("-").replace("-", "_")
        assert f"`{option}" in page, option
        assert f"`{ini}`" in page, ini
        assert option in help_text, option
        assert f"{ini} " in help_text, ini


def test_every_gates_file_key_is_documented() -> None:
    page = _text("gates-file.md")
    for key in (*TOP_LEVEL_KEYS, *DEFAULT_KEYS, *GATE_KEYS, *ALIASES):
        assert f"`{key}`" in page, key


@pytest.mark.parametrize("vocabulary", [Mode, Cause, Rbg, CitationStatus])
def test_every_public_value_is_documented(vocabulary: type) -> None:
    text = "\n".join(p.read_text(encoding="utf-8") for p in PAGES)
    for member in vocabulary:  # type: ignore[attr-defined]
        assert f"`{member.value}`" in text, member


def test_every_doc_link_points_to_a_page() -> None:
    import re

    for page in PAGES:
        for target in re.findall(r"\]\(([\w./-]+\.md)\)", page.read_text(encoding="utf-8")):
            assert (page.parent / target).exists(), f"{page.name} -> {target}"


GATES_BLOCKS = [
    (page, line, valid, text)
    for page in PAGES
    for line, valid, text in yaml_blocks(page)
    if isinstance(yaml.safe_load(text), dict) and {"gates", "citations"} & set(yaml.safe_load(text))
]


@pytest.mark.parametrize(
    ("page", "line", "valid", "text"),
    GATES_BLOCKS,
    ids=[f"{b[0].name}:{b[1]}" for b in GATES_BLOCKS],
)
def test_documented_gates_files_load_and_match_the_schema(
    tmp_path: Path, page: Path, line: int, valid: bool, text: str
) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    path = materialise(tmp_path, text)
    schema = json.loads(resources.files("pytest_vgate").joinpath(SCHEMA).read_text())
    errors = list(
        jsonschema.Draft202012Validator(schema).iter_errors(as_json(yaml.safe_load(text)))
    )
    if valid:
        assert not errors, errors
        load_gates_file(path)


@pytest.mark.parametrize("name", ["gates.yaml", "failure-modes.yaml"])
def test_shipped_examples_match_the_schema(name: str) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(resources.files("pytest_vgate").joinpath(SCHEMA).read_text())
    data = yaml.safe_load((ROOT / "examples" / name).read_text(encoding="utf-8"))
    assert not list(jsonschema.Draft202012Validator(schema).iter_errors(as_json(data)))
    load_gates_file(ROOT / "examples" / name)


PYTHON_BLOCKS = [
    (page, line, text)
    for page in PAGES
    for line, valid, text in fenced_blocks(page, "python")
    if valid and "<!-- not-run -->" not in page.read_text(encoding="utf-8").splitlines()[line - 2]
]


@pytest.mark.parametrize(
    ("page", "line", "text"), PYTHON_BLOCKS, ids=[f"{b[0].name}:{b[1]}" for b in PYTHON_BLOCKS]
)
def test_documented_python_runs(tmp_path: Path, page: Path, line: int, text: str) -> None:
    """Python examples run as written (in a scratch folder); definitions-only blocks import."""
    script = tmp_path / "example.py"
    script.write_text(text, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, f"{page.name}:{line}\n{result.stdout}\n{result.stderr}"
