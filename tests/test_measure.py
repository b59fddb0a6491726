"""Measuring what a check executed: real checks, real Python processes, real data files."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.measure import include_for

from pytest_vgate.context import RunContext
from pytest_vgate.gate.runner import run_check
from pytest_vgate.gatesfile import gate_from_mapping
from pytest_vgate.process.measure import MEASURED_KEY, Measured, _read

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


def test_a_process_killed_keeps_what_it_executed(project: Path) -> None:
    kill = "import os, signal, pkg.m; pkg.m.g(); os.kill(os.getpid(), signal.SIGKILL)"
    measured, _ = measured_run(project, f"{PY} -c {shlex.quote(kill)}")
    assert measured.measured, measured.reason
    assert measured.files[str(project / "pkg" / "m.py")] == {1, 5, 6}


def test_the_checks_own_coverage_variables_reach_it_unchanged(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A check that runs coverage.py itself gets the variables it declares, and no
    coverage variable of ours."""
    for name in ("COVERAGE_FILE", "COV_CORE_SOURCE"):
        monkeypatch.setenv(name, "from-the-user")
    show = "import os; print(sorted((k, v) for k, v in os.environ.items() if k.startswith('COV')))"
    measured, stdout = measured_run(
        project,
        f"{PY} -c {shlex.quote(show + '; import pkg.m')}",
        env=["COVERAGE_FILE", "COV_CORE_SOURCE"],
    )
    assert measured.measured and str(project / "pkg" / "m.py") in measured.files
    assert stdout.strip() == str(
        [("COVERAGE_FILE", "from-the-user"), ("COV_CORE_SOURCE", "from-the-user")]
    )


def test_unreadable_data_is_unmeasured_not_empty(tmp_path: Path) -> None:
    (tmp_path / "lines.1.ab").write_text("s settrace 70\nthis is not a record\n")
    measured = _read(tmp_path)
    assert not measured.measured
    assert "unreadable measurement data" in measured.reason


def test_a_process_started_in_a_clean_environment_leaves_the_run_unmeasured(
    project: Path,
) -> None:
    """tox and nox start tests with ``env={}``: that process cannot be measured, so the
    run says so and names it instead of reporting what the wrapper alone executed."""
    for env in ("{}", "{'PATH': os.environ['PATH']}"):
        inner = "import pkg.m; pkg.m.f(1)"
        spawn = f"subprocess.run([sys.executable, '-c', {inner!r}], env={env})"
        outer = f"import os, subprocess, sys; {spawn}"
        measured, _ = measured_run(project, f"{PY} -c {shlex.quote(outer)}")
        assert not measured.measured, env
        assert "environment that drops the measurement" in measured.reason
        assert "import pkg.m" in measured.reason  # the process, named
    flags = "import subprocess, sys; subprocess.run([sys.executable, '-I', '-c', 'import pkg.m'])"
    measured, _ = measured_run(project, f"{PY} -c {shlex.quote(flags)}")
    assert not measured.measured and "started with -I" in measured.reason


def test_a_child_that_is_not_python_in_a_clean_environment_is_no_loss(project: Path) -> None:
    outer = "import subprocess; subprocess.run(['sh', '-c', 'true'], env={}); import pkg.m"
    measured, _ = measured_run(project, f"{PY} -c {shlex.quote(outer)}")
    assert measured.measured, measured.reason


def test_the_c_tracer_is_found_where_its_import_finds_it_without_importing_coverage() -> None:
    """The session copies coverage.py's C tracer for its checks; finding it must not cost
    the pytest process coverage.py's import."""
    code = (
        "import sys\n"
        "from pytest_vgate.process import measure\n"
        "found = list(measure._c_tracer())\n"
        "imported = 'coverage' in sys.modules\n"
        "from coverage import tracer\n"
        "print(found, imported, tracer.__file__.rsplit('/', 1)[-1])\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    found, imported, name = r.stdout.rsplit(" ", 2)
    assert (found, imported) == (f"[{name.strip()!r}]", "False")
