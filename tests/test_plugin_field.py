"""End to end: what the field trial on more-itertools found, on repositories modelled on it.

more-itertools 958990e ("Raise for negative slice sizes in sliced()") adds a guard to
``sliced()`` and a method ``test_negative`` to the existing ``SlicedTests`` class of a
test module that starts with ``from __future__ import annotations``. Each test here builds
that shape in a two-commit git repository of its own and runs real sessions on it.
"""

from __future__ import annotations

import shlex
import sys
import textwrap
from pathlib import Path

import pytest
from helpers.git_repo import git
from helpers.report import read_report

PY = shlex.quote(sys.executable)
LEAN = ("-p", "no:hypothesispytest")

BUGGY = '''\
"""Slicing helpers."""
from itertools import count, takewhile


def sliced(seq, n):
    """Yield slices of length n from seq."""
    return takewhile(len, (seq[i : i + n] for i in count(0, n)))
'''
FIXED = BUGGY.replace(
    '    """Yield slices of length n from seq."""\n',
    '    """Yield slices of length n from seq."""\n'
    "    if n < 0:\n"
    "        raise ValueError('n must be at least 0')\n\n",
)
TESTS_BASE = '''\
"""Tests of pkg.slicing."""
from __future__ import annotations

from unittest import TestCase

from pkg.slicing import sliced


class SlicedTests(TestCase):
    def test_even(self):
        self.assertEqual(list(sliced("ABCD", 2)), ["AB", "CD"])
'''
TESTS_FIX = (
    TESTS_BASE
    + '''
    def test_negative(self):
        """Negative slice sizes raise instead of yielding a wrong result."""
        self.assertRaises(ValueError, lambda: list(sliced("ABCDEFG", -1)))
'''
)


@pytest.fixture
def sliced_fix(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository with the bug at HEAD~1 and the fix with its new test at HEAD."""
    root = pytester.path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    git(root, "init", "-q")
    (root / ".gitignore").write_text("__pycache__/\n")
    (root / "pytest.ini").write_text("[pytest]\n")
    (root / "pkg" / "__init__.py").write_text("")
    (root / "tests" / "__init__.py").write_text("")
    (root / "pkg" / "slicing.py").write_text(BUGGY)
    (root / "tests" / "test_slicing.py").write_text(TESTS_BASE)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "sliced")
    (root / "pkg" / "slicing.py").write_text(FIXED)
    (root / "tests" / "test_slicing.py").write_text(TESTS_FIX)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "Raise for negative slice sizes in sliced()")
    monkeypatch.chdir(root)
    return root


UNITTEST = f"{PY} -m unittest -q tests.test_slicing.SlicedTests.test_negative"


def test_a_unittest_test_missing_on_the_base_is_not_a_red(
    run_vgate, sliced_fix: Path, pytester: pytest.Pytester
) -> None:
    """unittest exits 1 for a name it cannot load, as for a failing test: without the
    overlay the new method does not exist on the base, and that red proves nothing."""
    (sliced_fix / "gates.yaml").write_text(
        textwrap.dedent(f"""\
            gates:
              - id: negative-unittest
                check: {UNITTEST}
                overlay: [tests/]
              - id: negative-unittest-no-overlay
                check: {UNITTEST}
            """)
    )
    report = pytester.path / "report.json"
    result, cases = run_vgate(
        "--vgate", "gates.yaml", "--vgate-base", "HEAD~1", "--vgate-only",
        "--vgate-report", str(report), *LEAN,
    )  # fmt: skip
    assert result.ret == 1, result.stdout.str()
    assert cases["negative-unittest"]["vgate_rbg"] == "proven", cases
    missing = cases["negative-unittest-no-overlay"]
    assert (missing["outcome"], missing["vgate_rbg"], missing["vgate_cause"]) == (
        "failure",
        "weak-red",
        "broken_test",
    ), missing
    gate = {g["id"]: g for g in read_report(report)["gates"]}["negative-unittest-no-overlay"]
    assert "unittest could not load a test" in gate["rbg_reason"]
    assert "overlay: [tests/]" in gate["rbg_reason"]
    out = result.stdout.str()
    assert "what to do: unittest found no such test on the base: add its file" in out


def test_a_unittest_test_missing_now_is_a_broken_test(
    run_vgate, sliced_fix: Path, pytester: pytest.Pytester
) -> None:
    """A name unittest cannot load in the current tree is the test's fault, not the
    product's."""
    (sliced_fix / "gates.yaml").write_text(
        f"gates:\n  - id: typo\n    check: {UNITTEST.replace('test_negative', 'test_negatve')}\n"
    )
    result, cases = run_vgate("--vgate", "gates.yaml", "--vgate-only", *LEAN)
    assert result.ret == 1, result.stdout.str()
    assert (cases["typo"]["vgate_mode"], cases["typo"]["vgate_cause"]) == (
        "fail",
        "broken_test",
    ), cases
    assert "unittest could not load a test" in result.stdout.str()


NEGATIVE = "tests/test_slicing.py::SlicedTests::test_negative"
READS_SOURCE = (
    f'{PY} -c "import inspect, sys, pkg.slicing as s; '
    "sys.exit(0 if 'must be at least 0' in inspect.getsource(s.sliced) else 1)\""
)


def test_a_red_that_never_ran_the_function_a_guard_went_into_is_not_proven(
    run_vgate, sliced_fix: Path, pytester: pytest.Pytester
) -> None:
    """The fix inserts a guard into sliced(). A check that reads sliced()'s source is red
    on the base and green now without running it: importing the module used to count as
    reaching a pure insertion, and the gate was proven (coverage partial)."""
    (sliced_fix / "gates.yaml").write_text(
        textwrap.dedent(f"""\
            gates:
              - id: negative
                check: {PY} -m pytest -q -p no:cacheprovider {NEGATIVE}
                overlay: [tests/]
              - id: reads-source
                check: {READS_SOURCE}
            """)
    )
    report = pytester.path / "report.json"
    result, cases = run_vgate(
        "--vgate", "gates.yaml", "--vgate-base", "HEAD~1", "--vgate-only",
        "--vgate-report", str(report), *LEAN,
    )  # fmt: skip
    assert result.ret == 1, result.stdout.str()
    assert (cases["negative"]["vgate_rbg"], cases["negative"]["vgate_coverage"]) == (
        "proven",
        "covers",
    ), cases
    assert (cases["reads-source"]["vgate_rbg"], cases["reads-source"]["vgate_coverage"]) == (
        "disconnected",
        "misses",
    ), cases
    gates = {g["id"]: g for g in read_report(report)["gates"]}
    assert gates["negative"]["coverage"]["red"]["reached"] is True
    assert gates["reads-source"]["coverage"]["red"]["reached"] is False


def test_coverage_on_without_a_base_says_it_measures_nothing(
    sliced_fix: Path, pytester: pytest.Pytester
) -> None:
    """Asked for by name, coverage that cannot run is said so, not silently left out."""
    (sliced_fix / "gates.yaml").write_text(
        f"gates:\n  - id: negative\n    check: {PY} -m pytest -q -p no:cacheprovider {NEGATIVE}\n"
    )
    alone = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--vgate", "gates.yaml", "--vgate-only",
        "--vgate-coverage", "on", *LEAN,
    )  # fmt: skip
    assert alone.ret == 0, alone.stdout.str()
    said = "vgate: --vgate-coverage on measures nothing without --vgate-base"
    assert said in alone.stdout.str()
    based = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--vgate", "gates.yaml", "--vgate-only",
        "--vgate-coverage", "on", "--vgate-base", "HEAD~1", *LEAN,
    )  # fmt: skip
    assert said not in based.stdout.str()


def test_never_red_because_the_base_ran_the_old_test_file_says_so(
    run_vgate, sliced_fix: Path, pytester: pytest.Pytester
) -> None:
    """`-k SlicedTests` without overlay: 1 test passed on the base, 2 here. The advice to
    "make it test what the change fixed" was wrong: it does; the base ran the old file."""
    (sliced_fix / "gates.yaml").write_text(
        textwrap.dedent(f"""\
            gates:
              - id: class
                check: {PY} -m pytest -q -p no:cacheprovider tests/test_slicing.py -k SlicedTests
            """)
    )
    report = pytester.path / "report.json"
    result, cases = run_vgate(
        "--vgate", "gates.yaml", "--vgate-base", "HEAD~1", "--vgate-only",
        "--vgate-report", str(report), *LEAN,
    )  # fmt: skip
    assert result.ret == 1, result.stdout.str()
    assert cases["class"]["vgate_rbg"] == "never-red", cases
    (gate,) = read_report(report)["gates"]
    assert "the base ran its own version of tests/test_slicing.py" in gate["rbg_reason"]
    assert "`overlay: [tests/test_slicing.py]`" in gate["rbg_reason"]
    assert "what to do: The base ran the old version of the test file" in result.stdout.str()
