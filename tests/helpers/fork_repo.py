"""A change whose mutants take every road a batch's forks can: swapped functions, a
method calling ``super()``, module code imported from its mutated text, and a mutant that
makes the changed code itself raise.

Commit 1: ``pkg/calc.py`` whose ``total`` drops the first price. Commit 2 (HEAD): ``total``
fixed, and new ``RATE``, ``scaled``, ``inverse`` and ``Box.size``, each with a test, plus a
test that runs the change and asserts nothing. ``gates_text`` makes one pytest-node gate
per test (one group: the same interpreter, options and environment).
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from helpers.git_repo import git

PY = shlex.quote(sys.executable)
BUGGY = "def total(prices):\n    return sum(prices[1:])\n"
FIXED = """\
RATE = 2


def total(prices):
    return sum(prices)


def scaled(x):
    return x * RATE


def inverse(x):
    return 1 / (x - 1)


class Base:
    def size(self):
        return 1


class Box(Base):
    def size(self):
        return super().size() + 1
"""
TESTS = """\
import pkg.calc as calc


def test_total():
    assert calc.total([1, 2]) == 3


def test_scaled():
    assert calc.scaled(3) == 6


def test_inverse():
    assert calc.inverse(2) == 1.0


def test_box():
    assert calc.Box().size() == 2


def test_runs_only():
    calc.total([1, 2])
    calc.scaled(3)
"""
LEAN_ENV = '{set: {PYTEST_DISABLE_PLUGIN_AUTOLOAD: "1"}}'
TESTS_PATH = "tests/test_calc.py"


def pytest_gate(gate_id: str, node: str, extra: str = "") -> str:
    return (
        f"  - id: {gate_id}\n"
        f"    check: {PY} -m pytest -q -p no:cacheprovider {node}\n"
        f"    env: {LEAN_ENV}\n"
        "    overlay: [tests/]\n" + extra
    )


def gates_text(names: tuple[str, ...] = ("total", "scaled", "inverse", "box", "runs_only")) -> str:
    return "gates:\n" + "".join(
        pytest_gate(name.replace("_", "-"), f"{TESTS_PATH}::test_{name}") for name in names
    )


def make_calc_repo(base: Path, tests: str = TESTS, name: str = "calc") -> Path:
    """The two-commit repository under ``base / name`` (the gates file is not committed)."""
    root = Path(base) / name
    (root / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    git(root, "init", "-q")
    (root / ".gitignore").write_text("__pycache__/\n.pytest_cache/\n.vgate/\ngates.yaml\n")
    (root / "pytest.ini").write_text("[pytest]\n")
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "calc.py").write_text(BUGGY)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "calc: total drops the first price")
    (root / "pkg" / "calc.py").write_text(FIXED)
    (root / TESTS_PATH).write_text(tests)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "calc: fix total, add scaled, inverse and Box, test them")
    return root
