"""The junit properties: every one a real session writes is in docs/modes.md's table, with
values from its vocabulary; the table's vocabularies are the enums' (plain and ``-n 2``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_vgate.evidence.reach import CoverageStatus
from pytest_vgate.verdict import Cause, CitationStatus, Mode, Rbg

ROOT = Path(__file__).resolve().parents[1]
VOCABULARIES = {
    "vgate_mode": Mode,
    "vgate_cause": Cause,
    "vgate_rbg": Rbg,
    "vgate_coverage": CoverageStatus,
    "vgate_citation": CitationStatus,
}

GATES = """\
gates:
  - id: passes
    check: python -c pass
  - id: fails
    check: python -c "raise SystemExit(3)"
  - id: verifies
    type: python
    verifiers: [checks:first]
  - id: judged
    type: semantic
    check: the docs are friendly
citations: [answer.md]
"""
TESTS = """\
import pytest
from pytest_vgate import verifier


@verifier(id="verifier-passes")
def check(ctx):
    return True


@pytest.mark.vgate
def test_marked_and_raises():
    raise RuntimeError("no")
"""
CITED = "def f():\n    pass\n\n\ndef g():\n    pass\n"
ANSWER = "See `mod.py:1` for f.\nThe function `g` is at `mod.py:1`.\nAnd `mod.py:40`.\n"


def documented() -> dict[str, set[str]]:
    """docs/modes.md's junit table: {property: the backquoted values of its row}."""
    page = (ROOT / "docs" / "modes.md").read_text(encoding="utf-8")
    section = page.split("## junit properties", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(vgate_\w+)` \|[^|]*\|(.*)\|$", section, re.M)
    return {name: set(re.findall(r"`([^`]+)`", values)) for name, values in rows}


def test_the_table_has_every_property_of_the_readme_and_every_value_of_each_vocabulary() -> None:
    table = documented()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert set(re.findall(r"^\| `(vgate_\w+)`", readme, re.M)) <= set(table)
    for name, vocabulary in VOCABULARIES.items():
        assert table[name] == {member.value for member in vocabulary}, name


def test_every_property_a_session_writes_is_documented(
    pytester: pytest.Pytester, run_vgate, dist_args: list[str]
) -> None:
    pytester.makefile(".yaml", gates=GATES)
    pytester.makefile(".md", answer=ANSWER)
    pytester.makepyfile(checks="def first(ctx):\n    return True\n", mod=CITED, test_v=TESTS)
    _, cases = run_vgate("--vgate", "gates.yaml", "-p", "no:randomly")
    _, fixed = run_vgate("--vgate", "gates.yaml", "-p", "no:randomly", "--vgate-fix")
    written: dict[str, set[str]] = {}
    for case in [*cases.values(), *fixed.values()]:
        for name, value in case.items():
            if name != "outcome":
                written.setdefault(name, set()).add(str(value))
    table = documented()
    assert set(written) <= set(table), sorted(set(written) - set(table))
    # What this project makes: every property but those that need a base.
    needs_a_base = {"vgate_coverage", "vgate_mutants", "vgate_discrimination"}
    assert set(table) - set(written) == needs_a_base, sorted(written)
    for name in VOCABULARIES:
        assert written.get(name, set()) <= table[name], name
