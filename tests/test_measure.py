"""Measuring what a check executed: real checks, real Python processes, real data files."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

from pytest_vgate.evidence.measure import MEASURED_KEY, Measured, _read, include_for, strip_foreign
from pytest_vgate.run_context import RunContext
from pytest_vgate.runner import run_check
from pytest_vgate.spec import gate_from_mapping

PY = shlex.quote(sys.executable)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "m.py").write_text(
        "def f(x):\n    return x + 1\n\n\ndef g():\n    return 0\n"
    )
    return tmp_path


def measured_run(root: Path, check: str, **gate: object) -> tuple[Measured, str]:
    spec = gate_from_mapping({"id": "g", "check": check, **gate}, root=root)
    verdict = run_check(spec, RunContext(root=root, measure=include_for([root])))
    measured = verdict.extra[MEASURED_KEY]
    assert isinstance(measured, Measured)
    return measured, verdict.stdout


def test_a_python_check_is_measured_line_by_line(project: Path) -> None:
    measured, _ = measured_run(project, f'{PY} -c "import pkg.m; pkg.m.f(1)"')
    assert measured.measured and measured.processes == 1
    assert measured.files[str(project / "pkg" / "m.py")] == {1, 2, 5}  # g() never ran


def test_python_processes_the_check_starts_are_measured_too(project: Path) -> None:
    inner = "import pkg.m; pkg.m.g()"
    outer = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {inner!r}])"
    measured, _ = measured_run(
        project, f"sh -c {shlex.quote(f'{sys.executable} -c {shlex.quote(outer)}')}"
    )
    assert measured.processes == 2
    assert measured.files[str(project / "pkg" / "m.py")] == {1, 5, 6}


def test_a_python_process_that_runs_nothing_of_the_tree_is_measured_as_empty(
    project: Path,
) -> None:
    measured, _ = measured_run(project, f"{PY} no_such_script.py")
    assert measured.measured and measured.files == {}


def test_a_check_without_python_is_unmeasured(project: Path) -> None:
    measured, _ = measured_run(project, "sh -c 'echo hello'")
    assert not measured.measured
    assert "no Python process" in measured.reason


def test_a_process_killed_before_saving_leaves_the_run_unmeasured(project: Path) -> None:
    kill = "import os, signal, pkg.m; os.kill(os.getpid(), signal.SIGKILL)"
    measured, _ = measured_run(project, f"{PY} -c {shlex.quote(kill)}")
    assert not measured.measured
    assert "without saving" in measured.reason


def test_coverage_variables_of_the_caller_never_reach_a_measured_check(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("COVERAGE_FILE", "COVERAGE_PROCESS_CONFIG", "COV_CORE_SOURCE"):
        monkeypatch.setenv(name, "from-the-user")
    show = "import os; print(sorted(k for k in os.environ if k.startswith(('COV',))))"
    measured, stdout = measured_run(
        project,
        f"{PY} -c {shlex.quote(show + '; import pkg.m')}",
        env=["COVERAGE_FILE", "COVERAGE_PROCESS_CONFIG", "COV_CORE_SOURCE"],
    )
    assert measured.measured and str(project / "pkg" / "m.py") in measured.files
    assert stdout.strip() == "['COVERAGE_PROCESS_START']"
    assert strip_foreign({"COVERAGE_X": "1", "COV_CORE_Y": "2", "PATH": "/bin"}) == {"PATH": "/bin"}


def test_unreadable_coverage_data_is_unmeasured_not_empty(tmp_path: Path) -> None:
    (tmp_path / "started.1.ab").write_text("python")
    (tmp_path / "finished.1.ab").write_text("")
    (tmp_path / ".coverage.host.1.ab").write_bytes(b"this is not a database" * 100)
    measured = _read(tmp_path)
    assert not measured.measured
    assert "unreadable coverage data" in measured.reason
