"""Read what a real session wrote (--vgate-report, --vgate-sarif), checked against the
shipped schemas: every report the suite produces is validated on the way in."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1] / "data"


@cache
def report_schema() -> dict[str, Any]:
    text = resources.files("pytest_vgate").joinpath("report.schema.json").read_text("utf-8")
    return json.loads(text)  # type: ignore[no-any-return]


@cache
def sarif_schema() -> dict[str, Any]:
    """The published SARIF 2.1.0 schema (OASIS errata 01), see tests/data/README.md."""
    return json.loads((DATA / "sarif-schema-2.1.0.json").read_text("utf-8"))  # type: ignore[no-any-return]


def report_errors(data: object) -> list[str]:
    import jsonschema

    validator = jsonschema.Draft202012Validator(report_schema())
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(data)]


def sarif_errors(data: object) -> list[str]:
    import jsonschema

    validator = jsonschema.Draft4Validator(sarif_schema())
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(data)]


def read_report(path: Path) -> dict[str, Any]:
    """A JSON report, after checking it against report.schema.json."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    errors = report_errors(data)
    assert not errors, f"{path} does not match report.schema.json: {errors[:5]}"
    return data  # type: ignore[no-any-return]


def read_sarif(path: Path) -> dict[str, Any]:
    """A SARIF log, after checking it against the SARIF 2.1.0 schema."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    errors = sarif_errors(data)
    assert not errors, f"{path} is not valid SARIF 2.1.0: {errors[:5]}"
    return data  # type: ignore[no-any-return]


def looks_like_report(data: object) -> bool:
    return isinstance(data, dict) and {"gates", "citations"} <= set(data)


def unchecked_reports(folder: Path, limit: int = 20_000_000) -> list[str]:
    """Problems of every vgate report (JSON with ``gates`` and ``citations``) and every
    ``*.sarif`` file under ``folder``: the conftest safety net runs this after each test."""
    problems = []
    for path in sorted(folder.rglob("*")):
        if path.suffix not in (".json", ".sarif") or not path.is_file():
            continue
        if path.stat().st_size > limit:
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if path.suffix == ".sarif":
            errors = sarif_errors(data)
        elif looks_like_report(data):
            errors = report_errors(data)
        else:
            continue
        if errors:
            problems.append(f"{path}: {errors[:3]}")
    return problems
