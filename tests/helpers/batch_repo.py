"""A change that fixes several bugs at once, with one pytest-node gate per test.

Commit 1 (``bug_sha``): ``pkg/calc.py`` whose ``add`` subtracts and whose ``halve`` never
returns (an infinite loop), and a passing ``tests/test_basic.py``. Commit 2 (HEAD): both
fixed, and tests for them in two files. ``GATES`` holds a gate per case with the same
interpreter, cwd, environment and options, so they form one batch; ``extra`` files and
gates add the faults a batch must survive (a segfault, a hang, a collection error).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helpers.gated_repo import PY_DIR, SESSION_BOUND
from helpers.git_repo import git

PY = shlex.quote(sys.executable)
BUGGY = (
    "def add(a, b):\n    return a - b\n\n\n"
    "def halve(n):\n    while n:\n        n = n\n    return n // 2\n\n\n"
    "def neg(a):\n    return -a\n"
)
FIXED = (
    "def add(a, b):\n    return a + b\n\n\n"
    "def halve(n):\n    return n // 2 if n else 0\n\n\n"
    "def neg(a):\n    return -a\n"
)
TEST_BASIC = "from pkg.calc import neg\n\n\ndef test_neg():\n    assert neg(2) == -2\n"
TEST_ADD = (
    "import pytest\n\nfrom pkg.calc import add\n\n\n"
    "def test_add():\n    assert add(2, 3) == 5\n\n\n"
    "@pytest.mark.parametrize('a', [1, 2])\ndef test_add_zero(a):\n    assert add(a, 0) == a\n\n\n"
    "@pytest.mark.skip(reason='not today')\ndef test_skipped():\n    assert False\n\n\n"
    "def test_wrong():\n    assert add(2, 2) == 5\n"
)
TEST_HALVE = (
    "from pkg.calc import add, halve\n\n\n"
    "def test_halve():\n    assert halve(4) == 2\n\n\n"
    "def test_add_halves():\n    assert add(halve(2), halve(2)) == 2\n\n\n"
    "def test_halve_zero():\n    assert halve(0) == 0\n"
)
PYTEST = f"{PY} -m pytest -q -p no:cacheprovider"
LEAN_ENV = '{set: {PYTEST_DISABLE_PLUGIN_AUTOLOAD: "1"}}'


def pytest_gate(gate_id: str, *nodes: str, timeout: float | None = None) -> str:
    """One gate running pytest on ``nodes``, with the batch's shared options."""
    extra = f"\n    timeout: {timeout:g}" if timeout is not None else ""
    return (
        f"  - id: {gate_id}\n    check: {PYTEST} {' '.join(nodes)}\n"
        f"    env: {LEAN_ENV}\n    overlay: [tests/]{extra}\n"
    )


GATES = "".join(
    [
        pytest_gate("add", "tests/test_add.py::test_add"),
        pytest_gate("add-zero", "tests/test_add.py::test_add_zero"),
        pytest_gate(
            "two-files", "tests/test_halve.py::test_halve_zero", "tests/test_add.py::test_add"
        ),
        pytest_gate("basic-file", "tests/test_basic.py"),
        pytest_gate("never-red", "tests/test_basic.py::test_neg"),
        pytest_gate("only-skipped", "tests/test_add.py::test_skipped"),
        pytest_gate("fails-now", "tests/test_add.py::test_wrong"),
    ]
)
HANGS = pytest_gate("halve", "tests/test_halve.py::test_halve")  # loops forever on the base
CRASH = (
    "import os\nimport signal\n\n\ndef test_crash():\n    os.kill(os.getpid(), signal.SIGSEGV)\n"
)
BROKEN = "import no_such_module\n\n\ndef test_never():\n    assert no_such_module\n"


@dataclass(frozen=True)
class BatchRepo:
    root: Path
    bug_sha: str
    fix_sha: str


def make_batch_repo(
    base: Path,
    gates: str = GATES,
    extra: Mapping[str, str] | None = None,
    name: str = "repo",
) -> BatchRepo:
    """The two-commit repository under ``base / name`` with ``gates.yaml`` (not committed)
    holding ``gates``; ``extra`` files (path -> text) join the head commit."""
    root = Path(base) / name
    (root / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    git(root, "init", "-q")
    (root / ".gitignore").write_text("__pycache__/\n.pytest_cache/\n.vgate/\ngates.yaml\n")
    (root / "pytest.ini").write_text("[pytest]\n")
    (root / "conftest.py").write_text("")
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "calc.py").write_text(BUGGY)
    (root / "tests" / "test_basic.py").write_text(TEST_BASIC)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "calc: add subtracts, halve never returns")
    bug_sha = git(root, "rev-parse", "HEAD")
    (root / "pkg" / "calc.py").write_text(FIXED)
    (root / "tests" / "test_add.py").write_text(TEST_ADD)
    (root / "tests" / "test_halve.py").write_text(TEST_HALVE)
    for rel, text in (extra or {}).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "calc: fix add and halve, and test them")
    fix_sha = git(root, "rev-parse", "HEAD")
    (root / "gates.yaml").write_text("gates:\n" + gates)
    return BatchRepo(root=root, bug_sha=bug_sha, fix_sha=fix_sha)


def session(
    root: Path, base: str, name: str, *args: str
) -> tuple[int, dict[str, dict[str, Any]], str]:
    """A real session with ``--vgate-base``; the JSON report's gates by id."""
    report = root.parent / f"{name}-report.json"
    ledger = root.parent / f"{name}-ledger"
    argv = [
        sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly",
        "--vgate=gates.yaml", f"--vgate-base={base}", f"--vgate-report={report}",
        f"--vgate-ledger={ledger}", "--vgate-only", "-m", "vgate", *args,
    ]  # fmt: skip
    proc = subprocess.run(
        argv,
        cwd=root,
        capture_output=True,
        text=True,
        timeout=SESSION_BOUND,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "PATH": os.pathsep.join([PY_DIR, os.environ.get("PATH", "")])},
    )
    text = proc.stdout + proc.stderr
    assert "INTERNALERROR" not in text, text
    gates = {g["id"]: g for g in json.loads(report.read_text())["gates"]}
    return proc.returncode, gates, text
