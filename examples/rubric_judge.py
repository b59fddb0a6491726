"""An example judge plugin: a rubric of required phrases, checked against a file.

A ``semantic`` or ``self_review`` gate whose ``check`` names a ``*.rubric.yaml`` file is
judged here; every other gate is left to other judges (``None``). The rubric names a
file (relative to the tree being judged, so under ``--vgate-base`` the base's copy is
judged for the red run) and the phrases it must contain. No network, no model: a
deterministic stand-in for a real judge. Loaded by ``conftest.py`` (or ``-p rubric_judge``).

    # docstrings.rubric.yaml
    file: src/textstats.py
    require: ["whitespace-separated words", "first one wins a tie"]
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from pytest_vgate import Outcome


def pytest_vgate_judge(gate, context):
    name = gate.check.strip()
    if not name.endswith(".rubric.yaml"):
        return None
    root = os.path.realpath(context.root)
    rubric_path = Path(os.path.realpath(os.path.join(root, name)))
    if os.path.commonpath([root, rubric_path]) != root or not rubric_path.is_file():
        return Outcome.failed(f"rubric {name} not found in {context.root}")
    rubric = yaml.safe_load(rubric_path.read_text(encoding="utf-8")) or {}
    target = Path(os.path.realpath(os.path.join(root, str(rubric.get("file", "")))))
    if os.path.commonpath([root, target]) != root or not target.is_file():
        return Outcome.failed(f"{name}: the file {rubric.get('file')!r} to judge is missing")
    text = " ".join(target.read_text(encoding="utf-8").split()).lower()
    required = [str(phrase) for phrase in rubric.get("require") or ()]
    if not required:
        return Outcome.failed(f"{name} requires nothing: a rubric that cannot fail proves nothing")
    missing = [p for p in required if " ".join(p.split()).lower() not in text]
    if missing:
        return Outcome.failed(f"{target.name} lacks {len(missing)} required phrase(s): {missing}")
    return Outcome.passed(f"{target.name} has all {len(required)} required phrases of {name}")
