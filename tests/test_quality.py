"""House rules that a reviewer would otherwise have to remember: lint, types, layering."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "pytest_vgate"


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_no_private_pytest_imports_anywhere() -> None:
    offenders = [
        str(p.relative_to(ROOT)) for p in PACKAGE.rglob("*.py") if "_pytest" in _imports(p)
    ]
    assert not offenders


def test_only_the_process_module_starts_or_kills_processes() -> None:
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if path.parent.name == "process":  # the package pytest_vgate/process/
            continue
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        if "subprocess" in _imports(path):
            offenders.append(f"{path.name}: imports subprocess")
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "os"
                and node.attr in {"kill", "killpg", "system", "popen", "fork"}
            ):
                offenders.append(f"{path.name}:{node.lineno}: os.{node.attr}")
    assert not offenders, offenders


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff is a test extra")
def test_ruff_is_clean() -> None:
    result = subprocess.run(
        ["ruff", "check", "pytest_vgate", "tests", "bench", "examples"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_mypy_strict_is_clean() -> None:
    pytest.importorskip("mypy")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "pytest_vgate"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_package_is_typed() -> None:
    assert (PACKAGE / "py.typed").exists()


def test_public_api_is_exactly_all() -> None:
    import pytest_vgate

    for name in pytest_vgate.__all__:
        assert hasattr(pytest_vgate, name), name
    assert set(pytest_vgate._HOME) == set(pytest_vgate.__all__)
    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    defined = [
        n.name
        for n in tree.body
        if isinstance(n, (ast.FunctionDef, ast.ClassDef))
        and n.name not in ("__getattr__", "__dir__")
    ]
    assert not defined, "__init__.py re-exports only"


# Words a user of the project cannot follow: files outside it, tracker numbers, our own
# names for past rounds of work. Built from pieces so that this file does not match.
OUTSIDE_WORDS = re.compile(
    "|".join(
        [
            "DESIGN" + r"\.md",
            r"\bissue" + r" #?[0-9]+",
            r"\b(?:second|third|fourth) " + "(?:release|round)",
            "quiet" + " hour",
            r"\bshared" + "/",
        ]
    ),
    re.IGNORECASE,
)


def test_the_project_speaks_for_itself() -> None:
    """Code, tests, docs and changelog name nothing a user of the project does not have."""
    paths = [ROOT / "README.md", ROOT / "CHANGELOG.md"]
    for folder in ("pytest_vgate", "tests", "docs", "bench", "examples"):
        paths += [
            p
            for p in (ROOT / folder).rglob("*")
            if p.suffix in (".py", ".md", ".yaml", ".toml", ".js", ".css", ".txt")
            and "__pycache__" not in p.parts
        ]
    found = [
        f"{p.relative_to(ROOT)}:{n}: {line.strip()[:80]}"
        for p in paths
        for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
        if OUTSIDE_WORDS.search(line)
    ]
    assert not found, "\n".join(found)
