"""The docs match the code: every option, key and mode is documented; every example runs."""

from __future__ import annotations

import configparser
import json
import os
import re
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest
import yaml
from helpers.docs_examples import fenced_blocks, materialise, yaml_blocks

from pytest_vgate.gatesfile import (
    ALIASES,
    DEFAULT_KEYS,
    GATE_KEYS,
    TOP_LEVEL_KEYS,
    GatesFileError,
    load_gates_file,
)
from pytest_vgate.verdict import Cause, CitationStatus, Mode, Rbg

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [*sorted(DOCS.glob("*.md")), ROOT / "README.md"]
SCHEMA = "gates.schema.json"
# One-shot commands: no ini twin (docs/options.md says so).
NO_INI_TWIN = {"--vgate-init", "--vgate-init-out", "--vgate-init-force"}
OPTION_WORD = re.compile(r"(?<![\w#/-])--(?:no-)?vgate(?:-[a-z]+)*")


def as_json(data: object) -> object:
    """What an editor's schema validator sees: YAML timestamps are strings there."""
    return json.loads(json.dumps(data, default=lambda value: value.isoformat()))


def _text(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def registered() -> tuple[dict[str, str], dict[str, str]]:
    """The options and ini keys pytest-vgate really registers, with their help texts, as
    the ``--help`` of a real pytest shows them: ``({"--vgate-x": help}, {"vgate_x": help})``."""
    env = {**os.environ, "COLUMNS": "400"}
    env.pop("PYTEST_ADDOPTS", None)
    shown = subprocess.run(
        [sys.executable, "-m", "pytest", "--help", "-p", "no:randomly"],
        capture_output=True, text=True, cwd=ROOT, timeout=120, env=env,
    ).stdout  # fmt: skip
    options: dict[str, str] = {}
    inis: dict[str, str] = {}
    group = shown.split("verification gates (pytest-vgate):\n", 1)[1].split("\n\n", 1)[0]
    last = ""
    for line in group.splitlines():
        found = re.match(r"  (--[\w-]+)(?:[= ]\S+)?(?:\s{2,}(.*))?$", line)
        if found:
            last = found[1]
            options[last] = found[2] or ""
        else:
            options[last] += " " + line.strip()
    for found in re.finditer(r"^  (vgate\w*) \((\w+)\):\s*(.*)\n(?:\s{6,}(\S.*)\n)?", shown, re.M):
        inis[found[1]] = f"{found[3]} {found[4] or ''}".strip()
    return options, inis


def test_every_registered_option_has_help_an_ini_twin_and_a_docs_row(
    registered: tuple[dict[str, str], dict[str, str]],
) -> None:
    """Read from the real registry (``pytest --help``), so a new option cannot skip docs."""
    options, inis = registered
    assert "--vgate" in options and "vgate" in inis
    page = _text("options.md")
    for option, text in options.items():
        assert len(text.split()) >= 4, f"{option} has no useful --help text: {text!r}"
        assert f"`{option}" in page, f"{option} is not in docs/options.md"
        twin = option.removeprefix("--no-").removeprefix("--").replace("-", "_")
        if option in NO_INI_TWIN:
            assert twin not in inis, twin
            assert option in page.split("no ini twins")[0].rsplit("\n\n", 1)[-1], option
            continue
        assert twin in inis, f"{option} has no ini twin {twin}"
    for ini, text in inis.items():
        assert len(text.split()) >= 4, f"ini {ini} has no useful help text: {text!r}"
        assert f"`{ini}`" in page, f"ini key {ini} is not in docs/options.md"
        assert "--" + ini.replace("_", "-") in options, f"ini key {ini} has no option"


def test_every_option_the_docs_name_is_registered(
    registered: tuple[dict[str, str], dict[str, str]],
) -> None:
    """The reverse: a renamed or removed option leaves no stale mention in the docs."""
    options, _ = registered
    named = {
        (page.name, word)
        for page in [*PAGES, ROOT / "CHANGELOG.md"]
        for word in OPTION_WORD.findall(page.read_text(encoding="utf-8"))
    }
    assert not {(page, word) for page, word in named if word not in options}


INI_BLOCKS = [
    (page, line, text)
    for page in PAGES
    for line, valid, text in fenced_blocks(page, "ini")
    if valid
]


@pytest.mark.parametrize(
    ("page", "line", "text"), INI_BLOCKS, ids=[f"{b[0].name}:{b[1]}" for b in INI_BLOCKS]
)
def test_documented_ini_files_run(
    pytester: pytest.Pytester,
    registered: tuple[dict[str, str], dict[str, str]],
    page: Path,
    line: int,
    text: str,
) -> None:
    """An ini example is a real ``pytest.ini``: its vgate keys are registered, pytest takes
    it without a config warning, and a plain ``pytest`` then runs the gates it names."""
    parsed = configparser.ConfigParser()
    parsed.read_string(text)
    keys = [key for key in parsed["pytest"] if key.startswith("vgate")]
    assert keys and set(keys) <= set(registered[1]), f"{page.name}:{line}: {keys}"
    (pytester.path / "pytest.ini").write_text(text, encoding="utf-8")
    pytester.makefile(".yaml", gates="gates:\n  - id: ok\n    check: python -c pass\n")
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-rA", "-W", "error::pytest.PytestConfigWarning"
    )
    assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(["PASSED gates.yaml::ok"])
    report = parsed["pytest"].get("vgate_report")
    assert report is None or (pytester.path / report).is_file()
    plain = "PASSED test_plain.py::test_plain" in result.stdout.str()
    assert plain is not parsed["pytest"].getboolean("vgate_only", False)


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


INVALID_BLOCKS = [
    (page, line, text)
    for page in PAGES
    for line, valid, text in yaml_blocks(page)
    if not valid and " # " in text
]


@pytest.mark.parametrize(
    ("page", "line", "text"), INVALID_BLOCKS, ids=[f"{b[0].name}:{b[1]}" for b in INVALID_BLOCKS]
)
def test_documented_errors_are_the_errors_the_loader_gives(
    tmp_path: Path, page: Path, line: int, text: str
) -> None:
    """A wrong example says, in its one comment, the error the loader reports: on that
    line, with that text (the first problem only, as the page says)."""
    rows = text.splitlines()
    said = [(n, row.split(" # ", 1)[1].strip()) for n, row in enumerate(rows, 1) if " # " in row]
    assert len(said) == 1, f"{page.name}:{line}: one comment, on the line the error names"
    ((at, words),) = said
    with pytest.raises(GatesFileError) as caught:
        load_gates_file(materialise(tmp_path, text))
    error = caught.value
    assert (error.line, error.message[: len(words)]) == (at, words), f"{page.name}:{line}"


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


JSON_BLOCKS = [
    (page, line, text) for page in PAGES for line, _, text in fenced_blocks(page, "json")
]


@pytest.mark.parametrize(
    ("page", "line", "text"), JSON_BLOCKS, ids=[f"{b[0].name}:{b[1]}" for b in JSON_BLOCKS]
)
def test_documented_ledger_records_are_what_the_ledger_writes(
    page: Path, line: int, text: str
) -> None:
    """A ledger record shown in the docs has the keys a record has on disk, and decodes."""
    from pytest_vgate.evidence.record import Record

    data = json.loads(text)
    if "gate_id" not in data:
        return
    record = Record.from_dict(data)
    assert set(data) == set(record.to_dict()), f"{page.name}:{line}"
    assert set(data["tree"]) == set(record.tree.to_dict()), f"{page.name}:{line}"


def test_the_modes_table_gives_each_mode_its_default_cause() -> None:
    """docs/modes.md's table: each mode's own row (not its refinements) names the cause
    ``verdict.DEFAULT_CAUSE`` gives it, "–" for none."""
    from pytest_vgate.verdict import DEFAULT_CAUSE

    page = _text("modes.md").split("| mode | what happened | default cause |", 1)[1]
    rows = re.findall(r"^\| `(\w+)` \|.*\| ([^|]*) \|$", page.split("\n\n", 1)[0], re.M)
    shown = {
        mode: "–" if cause.startswith("–") else re.findall(r"`(\w+)`", cause)[0]
        for mode, cause in rows
    }
    assert set(shown) == {m.value for m in Mode}
    for mode, cause in DEFAULT_CAUSE.items():
        assert shown[mode.value] == (cause.value if cause else "–"), mode
