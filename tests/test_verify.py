"""``python -m pytest_vgate verify``: a report is trusted only when the session that wrote
it reached its end, every selected gate is in it and every verdict is ok.

In-process code ends pytest with exit 0 over a failing gate (``os._exit(0)`` in a
``pytest_vgate_report`` or ``pytest_vgate_adjust_verdict`` hook, or in a conftest); the
report it leaves is not sealed, and ``verify`` is red on it.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_vgate.exporters.report import sealed

PY = shlex.quote(sys.executable)
GATES = (
    f'gates:\n  - id: answers-no\n    check: {PY} -c "raise SystemExit(3)"\n'
    f"  - id: passes\n    check: {PY} -c pass\n"
)
PASSING = (
    f"gates:\n  - id: passes\n    check: {PY} -c pass\n  - id: also\n    check: {PY} -c pass\n"
)
EXITING = {
    "report-hook": "def pytest_vgate_report(report):\n    os._exit(0)\n",
    "adjust-hook": "def pytest_vgate_adjust_verdict(gate, verdict):\n    os._exit(0)\n",
    "sessionfinish": (
        "import pytest\n\n@pytest.hookimpl(tryfirst=True)\n"
        "def pytest_sessionfinish(session):\n    os._exit(0)\n"
    ),
}


def verify(report: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_vgate", "verify", str(report)],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def session(pytester: pytest.Pytester, gates: str, *args: str) -> tuple[int, Path]:
    (pytester.path / "gates.yaml").write_text(gates, encoding="utf-8")
    report = pytester.path / "report.json"
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--vgate", "gates.yaml", f"--vgate-report={report}", *args
    )
    return int(result.ret), report


def test_a_complete_passing_report_verifies(
    pytester: pytest.Pytester, dist_args: list[str]
) -> None:
    status, report = session(pytester, PASSING, *dist_args)
    assert status == 0
    result = verify(report)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "verified (2 gates, all ok)" in result.stdout


def test_a_failing_gate_is_named(pytester: pytest.Pytester, dist_args: list[str]) -> None:
    status, report = session(pytester, GATES, *dist_args)
    assert status == 1
    result = verify(report)
    assert result.returncode == 1
    assert "gates.yaml::answers-no: mode fail, cause product" in result.stdout


@pytest.mark.parametrize("how", list(EXITING))
def test_a_session_ended_by_os_exit_is_not_verified(
    pytester: pytest.Pytester, dist_args: list[str], how: str
) -> None:
    pytester.makeconftest("import os\n\n" + EXITING[how])
    report = pytester.path / "report.json"
    report.write_text(json.dumps(sealed({"version": 2, "gates": [], "citations": []})))
    status, report = session(pytester, GATES, *dist_args)
    if how != "adjust-hook" or not dist_args:  # under xdist that kills a worker: a crash
        assert status == 0  # what no plugin can prevent from inside
    result = verify(report)
    assert result.returncode == 1, result.stdout + result.stderr
    if how != "adjust-hook" or not dist_args:
        assert "incomplete: the session did not reach its end" in result.stdout, result.stdout


def test_a_report_missing_a_gate_is_not_verified(
    pytester: pytest.Pytester, dist_args: list[str]
) -> None:
    status, report = session(pytester, PASSING, *dist_args)
    assert status == 0
    data = json.loads(report.read_text())
    data["gates"] = [g for g in data["gates"] if g["id"] != "also"]
    edited = pytester.path / "edited.json"
    edited.write_text(json.dumps(data))
    result = verify(edited)
    assert result.returncode == 1
    assert "changed after the session sealed it" in result.stdout
    # Resealed (the seal is no signature): the selection still names the gate.
    edited.write_text(json.dumps(sealed(data)))
    result = verify(edited)
    assert result.returncode == 1
    assert "gates.yaml::also: selected, but not in the report" in result.stdout
    # Its selection edited too: the gates file still declares it.
    data["selection"]["selected"].remove("gates.yaml::also")
    edited.write_text(json.dumps(sealed(data)))
    result = verify(edited)
    assert result.returncode == 1
    assert "gates.yaml::also: declared in gates.yaml, but neither run nor deselected" in (
        result.stdout
    )


def test_a_missing_report_is_a_session_that_did_not_end(tmp_path: Path) -> None:
    """A session removes an earlier report when it starts and writes its own at its end:
    no file means it never got there."""
    result = verify(tmp_path / "r.json")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "incomplete: the session did not reach its end" in result.stdout


@pytest.mark.parametrize("what", ["fifo", "folder", "deep", "not-json"])
def test_what_is_not_a_report_is_a_usage_error(
    tmp_path_factory: pytest.TempPathFactory, what: str
) -> None:
    path = tmp_path_factory.mktemp("odd") / "r.json"
    if what == "fifo":
        os.mkfifo(path)
    elif what == "folder":
        path.mkdir()
    elif what == "deep":
        path.write_text("[" * 100_000 + "]" * 100_000)
    elif what == "not-json":
        path.write_text("{nope")
    result = verify(path)
    assert result.returncode == 4, result.stdout + result.stderr
    assert result.stderr.startswith(f"pytest-vgate verify: {path}")
    assert "Traceback" not in result.stderr
