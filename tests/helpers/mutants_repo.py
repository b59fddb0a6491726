"""A change that fixes a bug and adds a function, and a gate for each kind of check.

Commit 1 (``bug_sha``): ``pkg/shop.py`` whose ``total`` drops the first price. Commit 2
(HEAD): ``total`` fixed and a new ``discount``, with tests that exercise them in every way
a reviewer meets: some assert nothing about the result, some assert the values.
``EXPECTED`` holds each gate's junit outcome, ``vgate_rbg`` and ``vgate_discrimination``
under ``--vgate-base`` with the default settings.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from helpers.git_repo import git

PY = shlex.quote(sys.executable)
BUGGY = "def total(prices):\n    return sum(prices[1:])\n"
FIXED = (
    "def total(prices):\n"
    "    return sum(prices)\n"
    "\n\n"
    "def discount(amount, rate):\n"
    "    if rate < 0 or rate > 1:\n"
    '        raise ValueError("rate must be between 0 and 1")\n'
    "    return round(amount * (1 - rate), 2)\n"
)
TESTS = """\
import pkg.shop as shop


def test_runs_only():
    shop.total([1, 2])
    shop.discount(100, 0.1)


def test_print_true():
    print(shop.total([1, 2]), shop.discount(100, 0.1))
    assert True


def test_tautology():
    value = shop.discount(100, 0.1)
    assert shop.total([1, 2]) == shop.total([1, 2])
    assert value == value


def test_values():
    assert shop.total([1, 2]) == 3
    assert shop.discount(100, 0.1) == 90.0
"""
TESTS_TOP_IMPORT = """\
from pkg.shop import discount


def test_discount():
    assert discount(200, 0.25) == 150.0
"""
LEAN_ENV = '{set: {PYTEST_DISABLE_PLUGIN_AUTOLOAD: "1"}}'


def pytest_gate(gate_id: str, node: str) -> str:
    return (
        f"  - id: {gate_id}\n"
        f"    check: {PY} -m pytest -q -p no:cacheprovider {node}\n"
        f"    env: {LEAN_ENV}\n"
        "    overlay: [tests/]\n"
    )


def gates_text() -> str:
    """One gate per kind of check (``EXPECTED`` says what each must come out as)."""
    call = shlex.quote("import pkg.shop as s; s.discount(100, 0.1); s.total([1, 2])")
    return (
        "gates:\n"
        + pytest_gate("runs-only", "tests/test_shop.py::test_runs_only")
        + pytest_gate("print-true", "tests/test_shop.py::test_print_true")
        + pytest_gate("tautology", "tests/test_shop.py::test_tautology")
        + f"  - id: python-c\n    check: {PY} -c {call}\n"
        + f'  - id: import-only\n    check: {PY} -c "from pkg.shop import discount"\n'
        + pytest_gate("values", "tests/test_shop.py::test_values")
        + pytest_gate("top-import", "tests/test_top_import.py")
    )


# gate id -> (junit outcome, vgate_rbg, vgate_discrimination or None when not measured)
EXPECTED = {
    "runs-only": ("failure", "proven", "undiscriminating"),
    "print-true": ("failure", "proven", "undiscriminating"),
    "tautology": ("failure", "proven", "undiscriminating"),
    "python-c": ("failure", "proven", "undiscriminating"),
    "import-only": ("failure", "disconnected", None),
    "values": ("passed", "proven", "discriminating"),
    "top-import": ("passed", "proven", "discriminating"),
}


VERIFIERS = """\
from pytest_vgate import Outcome, verifier

import pkg.shop as shop


@verifier
def runs_only(ctx):
    shop.total([1, 2])
    shop.discount(100, 0.1)
    return True


@verifier
def values(ctx):
    return shop.total([1, 2]) == 3 and shop.discount(100, 0.1) == 90.0


@verifier(tools=["python"])
def through_pytest(ctx):
    run = ctx.run("python", "-m", "pytest", "-q", "-p", "no:cacheprovider",
                  "tests/test_shop.py::test_values", expect=(0, 1))
    return Outcome.passed() if run.exit_code == 0 else Outcome.failed(run.stdout[-300:])
"""


def verifier_gates_text() -> str:
    """``type: python`` gates of ``VERIFIERS`` (kept in ``verify_shop.py``, new in the
    change: the check, asked of the base's code)."""
    return "gates:\n" + "".join(
        f"  - id: v-{name.replace('_', '-')}\n    type: python\n"
        f"    verifiers: [verify_shop:{name}]\n"
        + (f"    env: {LEAN_ENV}\n    overlay: [tests/]\n" if name == "through_pytest" else "")
        for name in ("runs_only", "values", "through_pytest")
    )


# gate id -> (junit outcome, vgate_rbg, vgate_discrimination) of ``verifier_gates_text``
VERIFIER_EXPECTED = {
    "v-runs-only": ("failure", "proven", "undiscriminating"),
    "v-values": ("passed", "proven", "discriminating"),
    "v-through-pytest": ("passed", "proven", "discriminating"),
}


@dataclass(frozen=True)
class ShopRepo:
    root: Path
    bug_sha: str

    @property
    def shop(self) -> Path:
        return self.root / "pkg" / "shop.py"


def make_shop_repo(base: Path, name: str = "shop") -> ShopRepo:
    """The two-commit repository under ``base / name``; the gates file is not committed."""
    root = Path(base) / name
    (root / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    git(root, "init", "-q")
    (root / ".gitignore").write_text("__pycache__/\n.pytest_cache/\n")
    (root / "pytest.ini").write_text("[pytest]\n")
    (root / "conftest.py").write_text("")
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "shop.py").write_text(BUGGY)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "shop: total (drops the first price)")
    bug_sha = git(root, "rev-parse", "HEAD")
    (root / "pkg" / "shop.py").write_text(FIXED)
    (root / "tests" / "test_shop.py").write_text(TESTS)
    (root / "tests" / "test_top_import.py").write_text(TESTS_TOP_IMPORT)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "shop: fix total, add discount, test them")
    return ShopRepo(root=root, bug_sha=bug_sha)
