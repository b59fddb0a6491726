"""Whose fault a failed run is: the product's, the test's, or the environment's.

One rule for the runner and the verifier path. A pytest check that exits 2-5, whose
``python`` has no pytest, or in which unittest could not load a test it was named, never
answered about the product: ``broken_test``. An exception a verifier did not catch is its
bug (``error``, ``broken_test``), unless the innermost frame of the tree's own code is a
product file (in the root; not the verifier's module, a test file or an installed
package): the product answered by raising (``fail``, ``product``; on a base, a genuine red).
"""

from __future__ import annotations

import os
import re
import traceback
from collections.abc import Collection, Sequence
from pathlib import Path

from pytest_vgate.gatesfile import Gate
from pytest_vgate.paths import is_test_path
from pytest_vgate.verdict import Cause

_PYTEST_EXE = re.compile(r"^(pytest|py\.test)(-?\d+(\.\d+)*)?(\.exe)?$")
# pytest's own exit codes that mean "the tests did not run to an answer".
PYTEST_NOT_RED = {
    2: "pytest exit 2: interrupted (a collection error, e.g. an import error in a test module)",
    3: "pytest exit 3: internal error",
    4: "pytest exit 4: usage error (e.g. the test id does not exist)",
    5: "pytest exit 5: no tests were collected",
}
# unittest turns a name it cannot load (no such test, class or module; a module that fails
# to import) into a test that errors, and exits 1 like a real failure: the marker is the
# loader's stand-in class, in every Python's report ("(unittest.loader._FailedTest...").
UNITTEST_NOT_LOADED = re.compile(r"\(unittest\.loader\._FailedTest\b")
UNITTEST_NOT_RED = (
    "unittest could not load a test it was asked for (no such test, class or module, or "
    "its module failed to import): the test never answered"
)
SHELL_NOT_RED = {
    126: "exit 126: the command was found but could not be executed",
    127: "exit 127: command not found",
}


def runs_pytest(argv: Sequence[str]) -> bool:
    """True when the check runs pytest: ``pytest``, ``py.test``, ``python -m pytest``."""
    for i, token in enumerate(argv):
        if _PYTEST_EXE.match(os.path.basename(token)):
            return True
        if token == "-mpytest" or (token == "-m" and i + 1 < len(argv) and argv[i + 1] == "pytest"):
            return True
    return False


_NO_PYTEST = re.compile(r"No module named '?pytest'?(\s|$)")
_LIBRARY_PARTS = frozenset({"site-packages", "dist-packages", ".venv", "venv", ".tox", ".nox"})
_OURS = os.path.dirname(os.path.realpath(__file__))  # pytest-vgate's frames are never the product


def command_cause(gate: Gate, exit_code: int, stderr: str) -> tuple[Cause, str]:
    """The cause of a command check that ran to an exit code outside ``expect``.

    Returns the cause and a sentence to add to the detail ("" when there is nothing to
    explain: the product answered no).
    """
    if runs_pytest(gate.argv):
        if exit_code in PYTEST_NOT_RED:
            return Cause.BROKEN_TEST, f"{PYTEST_NOT_RED[exit_code]}: the tests never answered"
        if _NO_PYTEST.search(stderr):
            return (
                Cause.BROKEN_TEST,
                "the check's python has no pytest (No module named pytest): install it "
                "where the check runs, or name the python that has it",
            )
    if UNITTEST_NOT_LOADED.search(stderr):
        return Cause.BROKEN_TEST, UNITTEST_NOT_RED
    return Cause.PRODUCT, ""


def product_frame(exc: BaseException, root: Path, verifier_files: Collection[str]) -> str | None:
    """``path:line`` of the product code that raised ``exc``, or None when it was not.

    Frames are read from the innermost outward; frames outside the root (the standard
    library, installed packages, pytest-vgate) are passed over, so a product calling
    ``json.loads`` on bad data is still the product. The first frame inside the root
    decides: a product file gives its place; the verifier's own module or a test file
    (``test_*.py``, ``*_test.py``, ``conftest.py``, anything under ``tests/``) gives None.
    """
    try:
        return _first_own_frame(traceback.extract_tb(exc.__traceback__), root, verifier_files)
    except (ValueError, OSError, TypeError):  # odd file names (a NUL): not provably the product
        return None


def _first_own_frame(
    frames: traceback.StackSummary, root: Path, verifier_files: Collection[str]
) -> str | None:
    root_real = os.path.realpath(root)
    theirs = {os.path.realpath(f) for f in verifier_files if f}
    for frame in reversed(frames):
        filename = frame.filename
        if not filename or filename.startswith("<"):
            continue
        real = os.path.realpath(filename)
        if os.path.commonpath([real, root_real]) != root_real or real.startswith(_OURS + os.sep):
            continue
        rel = Path(os.path.relpath(real, root_real))
        if _LIBRARY_PARTS.intersection(rel.parts):
            continue
        if real in theirs or is_test_path(rel.as_posix()):
            return None
        return f"{rel.as_posix()}:{frame.lineno}"
    return None
