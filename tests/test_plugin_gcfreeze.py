"""End to end: a gates-only session runs with its long-lived objects frozen for the GC,
a session with ordinary tests runs them under the GC exactly as without the plugin, and a
freeze of the user's is never undone (``plugin/gcfreeze.py``)."""

from __future__ import annotations

import json
import shlex
import sys

import pytest

PY = shlex.quote(sys.executable)
GATES = "".join(f"  - id: g{i}\n    check: {PY} -c pass\n" for i in range(3))
OBSERVER = """
import gc, json, os

SEEN = {"run": [], "end": None}

def pytest_runtest_logreport(report):
    if report.when == "call":
        SEEN["run"].append(gc.get_freeze_count())

def pytest_unconfigure(config):
    SEEN["end"] = gc.get_freeze_count()
    with open(os.path.join(str(config.rootpath), "seen.json"), "w") as f:
        json.dump(SEEN, f)
"""


def _seen(pytester: pytest.Pytester) -> dict[str, object]:
    data = json.loads((pytester.path / "seen.json").read_text())
    assert isinstance(data, dict)
    return data


def test_a_gates_only_session_runs_frozen_and_ends_thawed(pytester: pytest.Pytester) -> None:
    (pytester.path / "gates.yaml").write_text(f"gates:\n{GATES}")
    pytester.makeconftest(OBSERVER)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--vgate", "gates.yaml")
    result.assert_outcomes(passed=3)
    seen = _seen(pytester)
    run = seen["run"]
    assert isinstance(run, list) and len(run) == 3
    assert all(count > 0 for count in run), seen
    assert seen["end"] == 0, seen


def test_ordinary_tests_in_the_session_run_unfrozen(
    pytester: pytest.Pytester, dist_args: list[str]
) -> None:
    (pytester.path / "gates.yaml").write_text(f"gates:\n{GATES}")
    pytester.makepyfile(
        test_plain="import gc\n\ndef test_unfrozen():\n    assert gc.get_freeze_count() == 0\n"
    )
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--vgate", "gates.yaml", *dist_args
    )
    result.assert_outcomes(passed=4)


def test_a_freeze_of_the_users_is_left_as_it_was(pytester: pytest.Pytester) -> None:
    (pytester.path / "gates.yaml").write_text(f"gates:\n{GATES}")
    pytester.makeconftest("import gc\ngc.freeze()\n" + OBSERVER)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--vgate", "gates.yaml")
    result.assert_outcomes(passed=3)
    seen = _seen(pytester)
    assert isinstance(seen["end"], int) and seen["end"] > 0, seen
