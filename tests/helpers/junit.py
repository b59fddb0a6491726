"""Read what a real session wrote to --junitxml."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path


def junit_cases(path: Path) -> dict[str, dict[str, object]]:
    """Map each junit testcase name to its outcome and vgate properties."""
    cases: dict[str, dict[str, object]] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        props = {str(p.get("name")): p.get("value") for p in case.iter("property")}
        outcome = "passed"
        for tag in ("failure", "error", "skipped"):
            if case.find(tag) is not None:
                outcome = tag
        cases[str(case.get("name"))] = {"outcome": outcome, **props}
    return cases
