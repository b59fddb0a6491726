"""End to end: a base run killed at its deadline while it was in the changed code (its
stack sample says so) is a genuine red (the change removed a hang); one killed before it
reached the change, or in the test's own wait after the changed code returned, stays a
non-result of the environment. Real sessions, plain and under ``-n 2``."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from helpers.git_repo import git
from helpers.junit import junit_cases

LOOPING = """\
def label(n):
    return "n=%d" % n


def first_even(numbers):
    i = 0
    while numbers[i] % 2:
        i = i  # the bug: i never moves on
    return numbers[i]
"""

FIXED = """\
FIXED = True


def label(n):
    return f"n={n}"


def first_even(numbers):
    i = 0
    while numbers[i] % 2:
        i += 1
    return numbers[i]
"""

# Hangs in the changed code on the base.
TEST_LOOP = """\
from pkg.loop import first_even


def test_first_even():
    assert first_even([1, 3, 4, 5]) == 4
"""

# Hangs on the base in its own code, before it calls anything the change touched.
TEST_WAITS = """\
import time

from pkg import loop


def test_waits_for_the_fix():
    if not getattr(loop, "FIXED", False):
        time.sleep(120)
    assert loop.first_even([2]) == 2
"""

# Runs changed code that returns (``label``), then hangs on the base in its own sleep: the
# changed lines ran, but the stack sample shows the test's wait, not the change.
TEST_SLEEPS = """\
import time

from pkg import loop


def test_labels_then_waits():
    assert loop.label(2) == "n=2"
    if not getattr(loop, "FIXED", False):
        time.sleep(120)
"""

GATES = f"""\
gates:
  - id: loops
    check: {sys.executable} -m pytest -q -p no:cacheprovider tests/test_loop.py
    timeout: 6
    overlay: [tests/]
  - id: waits
    check: {sys.executable} -m pytest -q -p no:cacheprovider tests/test_waits.py
    timeout: 6
    overlay: [tests/]
  - id: sleeps
    check: {sys.executable} -m pytest -q -p no:cacheprovider tests/test_sleeps.py
    timeout: 6
    overlay: [tests/]
"""


@pytest.fixture
def hang_repo(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = pytester.path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    git(root, "init", "-q")
    (root / ".gitignore").write_text("__pycache__/\n.vgate/\n")
    (root / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "loop.py").write_text(LOOPING)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "first_even (loops forever on an odd start)")
    (root / "pkg" / "loop.py").write_text(FIXED)
    (root / "tests" / "test_loop.py").write_text(TEST_LOOP)
    (root / "tests" / "test_waits.py").write_text(TEST_WAITS)
    (root / "tests" / "test_sleeps.py").write_text(TEST_SLEEPS)
    (root / "gates.yaml").write_text(GATES)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "fix the loop and test it")
    monkeypatch.chdir(root)
    return root


@pytest.mark.slow
@pytest.mark.parametrize("dist", [(), ("-n", "2")], ids=["plain", "xdist"])
def test_a_hang_the_change_removed_is_red_and_one_elsewhere_is_not(
    hang_repo: Path, pytester: pytest.Pytester, dist: tuple[str, ...]
) -> None:
    junit, report = pytester.path / "junit.xml", pytester.path / "report.json"
    result = pytester.runpytest_subprocess(
        "--vgate", "gates.yaml", "--vgate-only", "--vgate-base", "HEAD~1",
        "--vgate-mutate", "off", f"--junitxml={junit}", f"--vgate-report={report}",
        "-p", "no:cacheprovider", *dist,
    )  # fmt: skip
    out = result.stdout.str()
    cases = junit_cases(junit)
    loops, waits, sleeps = cases["loops"], cases["waits"], cases["sleeps"]
    assert (loops["outcome"], loops["vgate_rbg"]) == ("passed", "proven"), out
    # Killed in the test's own sleep, the change never ran: no answer about the change.
    assert (waits["outcome"], waits["vgate_rbg"], waits["vgate_cause"]) == (
        "failure",
        "weak-red",
        "environment",
    ), out
    # The changed code ran and returned; the sample shows the test's own sleep.
    assert (sleeps["outcome"], sleeps["vgate_rbg"], sleeps["vgate_cause"]) == (
        "failure",
        "weak-red",
        "environment",
    ), out
    gates = {g["id"]: g for g in json.loads(report.read_text())["gates"]}
    reason = gates["loops"]["rbg_reason"]
    # The loop's frame, from the stack sample: its `while` (7) or its body (8).
    assert "removed a hang" in reason, reason
    assert re.search(r"pkg/loop\.py:[78] in first_even, from the stack sample", reason), reason
    sample = gates["loops"]["coverage"]["red"]["sample"]
    assert sample["taken"] and sample["in_change"]["function"] == "first_even", sample
    assert (sample["in_change"]["path"], sample["in_change"]["line"] in (7, 8)) == (
        "pkg/loop.py",
        True,
    ), sample
    assert gates["loops"]["base"]["mode"] == "timeout"
    asleep = gates["sleeps"]
    assert asleep["coverage"]["red"]["executed"] == {"pkg/loop.py": [2]}, asleep["coverage"]
    assert asleep["coverage"]["red"]["sample"]["in_change"] is None
    assert "tests/test_sleeps.py:9 in test_labels_then_waits" in asleep["rbg_reason"]
    # The failure report shows where the base run was.
    assert "tests/test_sleeps.py:9 in test_labels_then_waits" in out, out
    assert result.ret == 1
