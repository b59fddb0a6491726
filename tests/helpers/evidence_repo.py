"""A real bug, its fix, and a gate for every way red-before-green evidence can mislead.

Commit 1 (``bug_sha``): ``pkg/mathx.py`` whose ``add`` subtracts, a root ``conftest.py``,
``data/version.txt`` = 1. Commit 2 (``fix_sha``, HEAD): ``add`` fixed, new tests that
exercise it (pytest, unittest, a script, a verifier module), ``data/version.txt`` = 2 (an
unrelated flip for the disconnected gate). ``gates_text`` holds one gate per case; each
gate's expected status is in ``EXPECTED``.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from helpers.git_repo import git

PY = shlex.quote(sys.executable)
BUGGY = "def add(a, b):\n    return a - b\n\n\ndef neg(a):\n    return -a\n"
FIXED = "def add(a, b):\n    return a + b\n\n\ndef neg(a):\n    return -a\n"
TEST_FIX = "from pkg.mathx import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
TEST_UNITTEST = (
    "import unittest\n\nfrom pkg.mathx import add\n\n\n"
    "class AddTest(unittest.TestCase):\n    def test_add(self):\n"
    "        self.assertEqual(add(2, 3), 5)\n"
)
CHECK_SCRIPT = (
    "import sys\n\nsys.path.insert(0, '.')\nfrom pkg.mathx import add\n\n"
    "sys.exit(0 if add(2, 3) == 5 else 1)\n"
)
VERIFIERS = "def add_works(ctx):\n    from pkg.mathx import add\n\n    return add(2, 3) == 5\n"
CONFTEST = "# the project's root conftest: pytest puts this folder on sys.path\n"
LEAN_ENV = '{set: {PYTEST_DISABLE_PLUGIN_AUTOLOAD: "1"}}'


def gates_text(current_root: Path) -> str:
    """The acceptance gates: id, check, and what each must come out as (``EXPECTED``)."""
    pytest_main = shlex.quote(
        "import sys, pytest; sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', "
        "'tests/test_fix.py']))"
    )
    leak = shlex.quote(
        f"import sys; sys.path.insert(0, {str(current_root)!r}); "
        "from pkg.mathx import add; assert add(2, 3) == 5"
    )
    return f"""
gates:
  - id: genuine
    check: {PY} -m pytest -q -p no:cacheprovider tests/test_fix.py::test_add
    env: {LEAN_ENV}
    overlay: [tests/]
  - id: via-sh
    check: sh -c "{PY} -m pytest -q -p no:cacheprovider tests/test_fix.py"
    env: {LEAN_ENV}
  - id: via-pytest-main
    check: {PY} -c {pytest_main}
    env: {LEAN_ENV}
  - id: via-unittest
    check: {PY} -m unittest -q tests.test_fix_unittest
  - id: missing-script
    check: {PY} tests/check_add.py
  - id: passes-on-both
    check: {PY} -c "from pkg.mathx import neg; assert neg(2) == -2"
  - id: unrelated-flip
    check: {PY} -c "import pkg.mathx; assert open('data/version.txt').read().strip() == '2'"
  - id: verifier
    type: python
    verifiers: ["checks:add_works"]
    overlay: [checks.py]
  - id: root-conftest
    check: {PY} -m pytest -q -p no:cacheprovider tests/test_fix.py
    env: {LEAN_ENV}
    overlay: [tests/]
  - id: leaks-current-tree
    check: {PY} -c {leak}
  - id: shell-only
    check: grep -q "a + b" pkg/mathx.py
  - id: shell-names-new-file
    check: test -f tests/check_add.py
"""


# gate id -> (junit outcome, vgate_rbg, vgate_coverage)
EXPECTED = {
    "genuine": ("passed", "proven", "covers"),
    "via-sh": ("failure", "weak-red", "partial"),
    "via-pytest-main": ("failure", "weak-red", "partial"),
    "via-unittest": ("failure", "weak-red", "partial"),
    "missing-script": ("failure", "weak-red", "partial"),
    "passes-on-both": ("failure", "never-red", "misses"),
    "unrelated-flip": ("failure", "disconnected", "misses"),
    "verifier": ("passed", "proven", "covers"),  # measured in its own process
    "root-conftest": ("passed", "proven", "covers"),
    "leaks-current-tree": ("failure", "weak-red", "partial"),
    "shell-only": ("passed", "proven", "unmeasured"),
    "shell-names-new-file": ("failure", "weak-red", "unmeasured"),
}


@dataclass(frozen=True)
class EvidenceRepo:
    root: Path
    bug_sha: str
    fix_sha: str

    @property
    def mathx(self) -> Path:
        return self.root / "pkg" / "mathx.py"


def make_evidence_repo(base: Path, name: str = "repo") -> EvidenceRepo:
    """The two-commit repository under ``base / name``; the gates file is not committed."""
    root = Path(base) / name
    (root / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "data").mkdir()
    git(root, "init", "-q")
    (root / ".gitignore").write_text("__pycache__/\n.pytest_cache/\n")
    (root / "pytest.ini").write_text("[pytest]\n")
    (root / "conftest.py").write_text(CONFTEST)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "mathx.py").write_text(BUGGY)
    (root / "data" / "version.txt").write_text("1\n")
    (root / "tests" / "test_basic.py").write_text(
        "from pkg.mathx import neg\n\n\ndef test_neg():\n    assert neg(2) == -2\n"
    )
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", f"{name}: add mathx (add has a bug)")
    bug_sha = git(root, "rev-parse", "HEAD")
    (root / "pkg" / "mathx.py").write_text(FIXED)
    (root / "data" / "version.txt").write_text("2\n")
    (root / "tests" / "test_fix.py").write_text(TEST_FIX)
    (root / "tests" / "test_fix_unittest.py").write_text(TEST_UNITTEST)
    (root / "tests" / "check_add.py").write_text(CHECK_SCRIPT)
    (root / "checks.py").write_text(VERIFIERS)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", f"{name}: fix add and test it")
    fix_sha = git(root, "rev-parse", "HEAD")
    return EvidenceRepo(root=root, bug_sha=bug_sha, fix_sha=fix_sha)
