"""A check runs the source as it is now: stale bytecode reproduced deterministically.

The hazard, for real: a module is compiled, edited to the same size, and its mtime set
back with ``os.utime`` -- exactly what an edit within the same second looks like to
Python (recorded mtime in whole seconds and size both match). Plain Python then runs the
old bytecode; a gate must see the new code, whether the old bytecode sits in the tree's
``__pycache__``, in pytest's assertion-rewrite cache, or in pytest-vgate's own cache.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

import pytest
from helpers.git_repo import make_bugfix_repo

from pytest_vgate.context import RunContext
from pytest_vgate.gate.runner import run_check
from pytest_vgate.gatesfile import gate_from_mapping
from pytest_vgate.process import bytecode, run_process
from pytest_vgate.verdict import Mode

PY = shlex.quote(sys.executable)
OLD = 'VALUE = "-"\n'
NEW = 'VALUE = "+"\n'  # the same size: only mtime-in-seconds and size guard the pyc
TEST_OLD = "def test_value():\n    assert 1 == 1\n"
TEST_NEW = "def test_value():\n    assert 1 == 2\n"
ENV = {"PATH": os.environ.get("PATH", os.defpath)}  # writes bytecode (no DONTWRITE)


def same_size_edit(path: Path, text: str) -> None:
    """Rewrite ``path`` with ``text`` (same size) and set its mtime back: a same-second edit."""
    before = path.stat()
    assert len(text.encode()) == before.st_size
    path.write_text(text)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "m.py").write_text(OLD)
    (root / "tests").mkdir()
    (root / "tests" / "test_v.py").write_text(TEST_OLD)
    (root / "pytest.ini").write_text("[pytest]\n")
    return root


def plain_python_value(root: Path) -> str:
    result = run_process(
        [sys.executable, "-c", "import pkg.m; print(pkg.m.VALUE)"], cwd=root, env=ENV, timeout=60
    )
    assert result.exit_code == 0, result.stderr
    return result.stdout.strip()


def gate_sees(root: Path, value: str) -> Mode:
    check = f"{PY} -c \"import pkg.m, sys; sys.exit(pkg.m.VALUE != '{value}')\""
    gate = gate_from_mapping({"id": "g", "check": check}, root=root)
    return run_check(gate, RunContext(root=root, default_timeout=60, caller_env=ENV)).mode


def test_plain_python_runs_stale_bytecode_but_a_gate_does_not(tree: Path) -> None:
    assert plain_python_value(tree) == "-"  # compiled into the tree's __pycache__
    same_size_edit(tree / "pkg" / "m.py", NEW)
    assert plain_python_value(tree) == "-"  # the hazard is real: old bytecode runs
    assert gate_sees(tree, "+") is Mode.PASS
    assert gate_sees(tree, "-") is Mode.FAIL


def test_the_gates_own_cache_never_serves_old_bytecode(tree: Path) -> None:
    for _ in range(2):  # the cache warms up, then is trusted only while fresh
        assert gate_sees(tree, "-") is Mode.PASS
    same_size_edit(tree / "pkg" / "m.py", NEW)
    assert gate_sees(tree, "+") is Mode.PASS
    same_size_edit(tree / "pkg" / "m.py", OLD)
    assert gate_sees(tree, "-") is Mode.PASS


def test_pytests_rewrite_cache_never_serves_an_old_test(tree: Path) -> None:
    check = f"{PY} -m pytest -q -p no:cacheprovider tests/test_v.py"
    gate = gate_from_mapping(
        {"id": "t", "check": check, "env": {"set": {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}}},
        root=tree,
    )
    ctx = RunContext(root=tree, default_timeout=120, caller_env=ENV)
    assert run_check(gate, ctx).mode is Mode.PASS
    same_size_edit(tree / "tests" / "test_v.py", TEST_NEW)
    verdict = run_check(gate, ctx)
    assert (verdict.mode, verdict.exit_code) == (Mode.FAIL, 1), verdict.stdout
    assert "assert 1 == 2" in verdict.stdout


def test_the_tree_keeps_its_own_pycache_untouched(tree: Path) -> None:
    assert gate_sees(tree, "-") is Mode.PASS
    assert not list(tree.rglob("__pycache__"))  # the check wrote bytecode elsewhere


def test_invalidate_keeps_fresh_entries_and_drops_stale_and_orphans(tree: Path) -> None:
    prefix = bytecode.cache_prefix()
    assert prefix is not None
    assert gate_sees(tree, "-") is Mode.PASS
    (mirror,) = {m for m in bytecode.mirror_of(prefix, tree) if m.is_dir()}
    entries = sorted(p.relative_to(mirror).as_posix() for p in mirror.rglob("*.pyc"))
    assert entries == [
        f"pkg/__init__.{sys.implementation.cache_tag}.pyc",
        f"pkg/m.{sys.implementation.cache_tag}.pyc",
    ]
    stamps = {p: p.stat().st_mtime_ns for p in mirror.rglob("*.pyc")}
    assert bytecode.invalidate(prefix, tree) == 0  # fresh: nothing is compiled again
    assert gate_sees(tree, "-") is Mode.PASS
    assert {p: p.stat().st_mtime_ns for p in mirror.rglob("*.pyc")} == stamps
    (tree / "pkg" / "__init__.py").chmod(0o644)  # metadata only: ctime moves, entry goes
    (tree / "pkg" / "m.py").unlink()  # an orphan
    assert bytecode.invalidate(prefix, tree) == 2
    assert not list(mirror.rglob("*.pyc"))


def test_a_gate_may_choose_its_own_prefix(tree: Path, tmp_path: Path) -> None:
    own = tmp_path / "own-prefix"
    check = f'{PY} -c "import sys; sys.exit(sys.pycache_prefix != {str(own)!r})"'
    gate = gate_from_mapping(
        {"id": "g", "check": check, "env": {"set": {"PYTHONPYCACHEPREFIX": str(own)}}}, root=tree
    )
    assert run_check(gate, RunContext(root=tree, default_timeout=60, caller_env=ENV)).ok


def test_a_python_verifier_imports_the_source_as_it_is_now(tree: Path) -> None:
    (tree / "checks.py").write_text(
        "def value_is_plus(ctx):\n    import pkg.m\n    return pkg.m.VALUE == '+'\n"
    )
    gate = gate_from_mapping(
        {"id": "v", "type": "python", "verifiers": ["checks:value_is_plus"]}, root=tree
    )
    ctx = RunContext(root=tree, default_timeout=60, caller_env=ENV)
    assert plain_python_value(tree) == "-"  # compiled into the tree's __pycache__
    assert run_check(gate, ctx).mode is Mode.FAIL
    same_size_edit(tree / "pkg" / "m.py", NEW)
    assert plain_python_value(tree) == "-"  # stale for plain Python
    verdict = run_check(gate, ctx)
    assert verdict.ok, verdict.detail


def test_the_suites_repository_fixture_leaves_no_stale_bytecode(tmp_path: Path) -> None:
    """``BugFixRepo.reintroduce_bug`` is a same-size edit: it must drop the tree's pyc."""
    repo = make_bugfix_repo(tmp_path)
    add = [sys.executable, "-c", "from pkg.mathx import add; print(add(2, 3))"]
    assert run_process(add, cwd=repo.root, env=ENV, timeout=60).stdout == "5\n"
    assert list((repo.root / "pkg" / "__pycache__").glob("mathx.*.pyc"))
    before = repo.mathx.stat()
    repo.reintroduce_bug()
    os.utime(repo.mathx, ns=(before.st_atime_ns, before.st_mtime_ns))  # the same second
    assert run_process(add, cwd=repo.root, env=ENV, timeout=60).stdout == "-1\n"
