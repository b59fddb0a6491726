"""docs/quickstart.md runs as written: its commands, on examples/quickstart/, give the
output the page shows (a written gates file, then a proven gate)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.docs_examples import fenced_blocks

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "quickstart.md"
MARK = "<!-- quickstart: run -->"


def quickstart_commands() -> list[str]:
    lines = PAGE.read_text(encoding="utf-8").splitlines()
    for line, _, text in fenced_blocks(PAGE, "bash"):
        if lines[line - 2].strip() == MARK:
            return [c for c in text.splitlines() if c.strip()]
    raise AssertionError(f"{PAGE.name} has no bash block marked {MARK}")


def shown_block(after: str) -> str:
    """The first plain fenced block (no language) of the page that starts with ``after``."""
    blocks: list[tuple[str, list[str]]] = []
    current: list[str] | None = None
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        if current is None and line.startswith("```"):
            current = []
            blocks.append((line[3:].strip(), current))
        elif current is not None and line.strip() == "```":
            current = None
        elif current is not None:
            current.append(line)
    for language, body in blocks:
        if not language and body and body[0].startswith(after):
            return "\n".join(body) + "\n"
    raise AssertionError(f"no block starting {after!r}")


def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "100"}  # the width of the page's output blocks
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=600, env=env)


def test_the_quickstart_runs_as_written_and_proves_the_gate(tmp_path: Path) -> None:
    commands = quickstart_commands()
    assert commands[0] == "pip install -e ."  # this checkout is installed already
    pytest_commands = [c for c in commands if c.startswith("pytest")]
    assert len(pytest_commands) == 2, "the quickstart is two pytest commands"
    target = tmp_path / "tinyslug"
    cwd = ROOT
    outputs = []
    for command in commands[1:]:
        words = [w.replace("/tmp/tinyslug", str(target)) for w in shlex.split(command)]
        if words[0] == "cd":
            cwd = Path(words[1])
            continue
        if words[0] == "pytest":
            words = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *words[1:]]
        result = run(words, cwd)
        outputs.append(result.stdout)
        assert result.returncode == 0, f"{command}\n{result.stdout}\n{result.stderr}"
    init_out, prove_out = outputs[-2:]
    # The gates file the page prints is the one written (the sha line aside).
    shown = shown_block("vgate-init: wrote gates.yaml")
    written = (target / "gates.yaml").read_text()
    assert written.split("gates:", 1)[1] == shown.split("gates:", 1)[1].split("next:")[0]
    assert shown.splitlines()[0] in init_out
    assert "red-before-green: 1 proven" in prove_out
    row = shown_block("=====").splitlines()[-1].split()
    assert row[0] in prove_out and "proven" in row
    assert re.search(
        r"test_collapses_repeated_separators\s+base HEAD~1 exit 1\s+exit 0\s+covers\s+proven",
        prove_out,
    )


def test_the_quickstarts_why_block_is_what_a_missing_overlay_shows(tmp_path: Path) -> None:
    target = tmp_path / "tinyslug"
    made = run(["sh", str(ROOT / "examples/quickstart/make-repo.sh"), str(target)], ROOT)
    assert made.returncode == 0, made.stderr
    assert run([sys.executable, "-m", "pytest", "--vgate-init", "HEAD~1"], target).returncode == 0
    gates = (target / "gates.yaml").read_text()
    (target / "gates.yaml").write_text(
        "".join(row for row in gates.splitlines(True) if "overlay" not in row)
    )
    result = run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--vgate", "gates.yaml",
         "--vgate-base", "HEAD~1", "-m", "vgate"],
        target,
    )  # fmt: skip
    assert result.returncode == 1
    shown = shown_block("--- on the base: mode fail, exit 4 ---").splitlines()
    for line in shown:
        if "…" in line or "tests ran in" in line:
            continue
        assert line in result.stdout, line


@pytest.mark.parametrize("page", ["README.md", "docs/index.md"])
def test_the_quickstart_is_linked(page: str) -> None:
    assert "quickstart.md" in (ROOT / page).read_text(encoding="utf-8")
