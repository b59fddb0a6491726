"""Say why a gate is not proven: the base run's command, exit code, decisive output lines,
and one sentence on what to do. Pure core; generic over red-before-green statuses, so a
status added later (``disconnected``, ``flaky``) gets the base run's facts too."""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence
from pathlib import Path

from pytest_vgate.clip import clip
from pytest_vgate.gatesfile import Gate
from pytest_vgate.gatesfile.kinds import kind_of
from pytest_vgate.verdict import Mode, Verdict

DECISIVE_LIMIT = 6
# Lines that say why a run ended: pytest's `E   ` lines, errors, "no tests ran", missing
# files or node ids, and interpreter tracebacks' last words.
_DECISIVE = re.compile(
    r"^E\s{2,}\S"
    r"|\b\w*(Error|Exception)\b:?"
    r"|no tests ran|not found|No such file|no match|cannot import|Interrupted"
    r"|^ERROR\b|^FAILED\b|\bfailed\b.*\bin \d",
)
_IMPORT = re.compile(r"(ModuleNotFoundError|ImportError)\b.*?(?:named|name)\s+'([^']+)'")
_QUIET = {"proven", "regression", "unproven"}  # statuses that need no base explanation
# How a never-red reason says the base ran an older version of the check's test file.
BASE_RAN_ITS_OWN = "the base ran its own version of"


# Terminal control sequences (colours of `--color=yes`, cursor moves): never shown.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")


def decisive_lines(stdout: str, stderr: str, limit: int = DECISIVE_LIMIT) -> list[str]:
    """The lines of a run's output that say how it ended; the last lines when none match.
    Colour codes are stripped (a project's ``--color=yes``): they are read, not rendered."""
    text = _ANSI.sub("", stderr + "\n" + stdout)
    rows = [r.rstrip() for r in text.splitlines() if r.strip()]
    picked: list[str] = []
    for row in rows:
        if _DECISIVE.search(row) and row not in picked:
            picked.append(row)
    if not picked:
        picked = rows[-3:]
    return [clip(r, 299) for r in picked[-limit:]]


def advice(status: str, gate: Gate, base: Verdict, lines: Sequence[str], reason: str = "") -> str:
    """One sentence: what to change so the gate can be proven (``reason``: the status's)."""
    text = "\n".join(lines)
    pytest_like = any("pytest" in part for part in gate.argv[:3])
    if status == "never-red" and BASE_RAN_ITS_OWN in reason:
        return (
            "The base ran the old version of the test file the check names: carry the test "
            "files onto the base with `overlay` so the red run runs the new test."
        )
    if status == "never-red":
        return (
            "The check passes on the base too: make it test what the change fixed or added "
            "(assert the new behaviour); if it only guards behaviour the change keeps, "
            f"add the line `red: not-required` to the gate `{gate.id}`."
        )
    if status == "disconnected":
        return (
            "Neither run executed the changed lines: point the check at the code the change "
            "touched, or drop the gate."
        )
    if status == "flaky":
        return (
            "The runs disagree with each other: make the check deterministic (seeds, time, "
            "order) before it can prove anything."
        )
    if base.mode is Mode.TIMEOUT:
        return "The base run timed out: give the gate a longer `timeout` or a faster check."
    if base.mode in (Mode.UNAVAILABLE, Mode.CRASH) or base.exit_code in (126, 127):
        return (
            "The check could not start on the base: pin the tool it needs in `tools` or "
            ".toolchain/bin, or run it through `python -m`."
        )
    missing = _IMPORT.search(text)
    if missing:
        return import_advice(gate, missing.group(2))
    if pytest_like and (base.exit_code in (4, 5) or "not found" in text or "no tests ran" in text):
        named = _named_test_file(gate)
        if named and not _carried(gate, named):
            return (
                "The test does not exist on the base: add its file to the gate's `overlay` "
                f"so the base run has it: `overlay: [{', '.join([*gate.overlay, named])}]`."
            )
        if not gate.overlay:
            return (
                "The test does not exist on the base: add its file to the gate's `overlay` "
                "(e.g. `overlay: [tests/]`) so the base run has it."
            )
        return (
            "pytest found no such test on the base although the overlay carries "
            f"{', '.join(gate.overlay)}: the check's node id names no test there; check it "
            "with `python -m pytest --collect-only -q` and fix the check."
        )
    if "unittest.loader._FailedTest" in text:
        where = (
            f"the overlay carries {', '.join(gate.overlay)}: fix the test's name in the check, "
            "or add the file that defines it to `overlay`"
            if gate.overlay
            else "add its file to the gate's `overlay` (e.g. `overlay: [tests/]`) so the base "
            "run has it"
        )
        return f"unittest found no such test on the base: {where}."
    if kind_of(gate.type).base_hint:
        return kind_of(gate.type).base_hint
    if pytest_like and base.exit_code == 2:
        return (
            "pytest was interrupted on the base (a collection error): make the test module "
            "import cleanly there, or carry what it needs in `overlay`."
        )
    return "See the base run's output above: it failed, but not as an answer to the change."


def _named_test_file(gate: Gate) -> str:
    """The test file a pytest check names (``tests/test_x.py::test_y``), relative to the
    gates root, when it exists in the current tree; "" otherwise."""
    for word in gate.argv[1:]:
        path = word.split("::", 1)[0]
        if path.endswith(".py") and not path.startswith("-"):
            where = os.path.normpath(os.path.join(gate.cwd, path))
            if os.path.isfile(gate.root / where):
                return Path(where).as_posix()
    return ""


def _carried(gate: Gate, rel: str) -> bool:
    """Whether the gate's overlay already carries ``rel`` (itself or a folder above it)."""
    target = Path(os.path.normpath(rel))
    for entry in gate.overlay:
        carried = Path(os.path.normpath(entry.rstrip("/") or "."))
        if carried == target or carried in target.parents:
            return True
    return False


def _module_file(root: Path, folder: str, dotted: str) -> str:
    """Where ``dotted`` lies below ``root/folder`` (a module or a package), or ""."""
    base = root / folder / Path(*dotted.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py", base):
        if candidate.exists():
            return candidate.relative_to(root).as_posix()
    return ""


_TEST_FOLDERS = frozenset({"tests", "test", "testing"})


def import_advice(gate: Gate, name: str) -> str:
    """What is missing when the base run cannot import ``name``, and the one change that
    fixes it: the folder the project is imported from (``PYTHONPATH``), the test helper
    to carry (``overlay``), or an install; never an overlay the gate already has."""
    root = gate.root
    try:
        folders = ["", *sorted(d.name for d in root.iterdir() if d.is_dir() and d.name[0] != ".")]
    except OSError:
        folders = [""]
    folders.sort(key=lambda f: (f not in ("", "src"), f != "", f))
    top = name.split(".", 1)[0]
    for folder in folders:
        found = _module_file(root, folder, name) or _module_file(root, folder, top)
        if not found:
            continue
        parts = Path(found).parts
        test_side = (
            bool(_TEST_FOLDERS.intersection(parts[:-1])) or Path(found).name == "conftest.py"
        )
        if test_side and not _carried(gate, found):
            overlay = ", ".join([*gate.overlay, found])
            return (
                f"The base run could not import {name!r}: this tree has it in {found}, a test "
                f"file the base lacks; carry it there, add `overlay: [{overlay}]` to the gate."
            )
        set_path = dict(gate.env.set_values).get("PYTHONPATH", "")
        if folder and folder not in set_path.split(os.pathsep) and not test_side:
            return (
                f"The base run could not import {name!r}: this tree has it in {found}, but "
                f"{folder}/ is not on the check's import path (no install is used); add "
                f"`env: {{set: {{PYTHONPATH: {folder}}}}}` to the gate (or `defaults:`), so each "
                "run imports the tree it runs in."
            )
        return (
            f"The base run could not import {name!r}: {found} is new in this change (the "
            "overlay carries the tests, not the code), so the test fails at import; import "
            "the new name inside the test, so the base run fails in the test itself."
        )
    return (
        f"The base run could not import {name!r}, which is not in this tree: install it in "
        "the interpreter that runs pytest (checks run `python` as the session's "
        "interpreter), or pin one that has it in .toolchain/bin/python."
    )


def explain(status: str | None, gate: Gate, base: Verdict | None, reason: str = "") -> list[str]:
    """The lines a failure report shows about the base run; none for a proven gate."""
    if base is None:
        return []
    head = f"--- on the base: mode {base.mode.value}, exit {base.exit_code} ---"
    lines = [head]
    command = base.command or gate.argv
    if command:
        lines.append(f"base command: {shlex.join(command)}")
    if base.detail and base.detail not in (base.stdout, base.stderr):
        lines.append(f"base detail:  {base.detail}")
    for check in base.checks:
        lines.append(
            f"  base check {check.name}: {check.mode.value}"
            + (f" - {check.detail}" if check.detail else "")
        )
    decisive = decisive_lines(base.stdout, base.stderr)
    if decisive:
        lines.append("base output (decisive lines):")
        lines.extend(f"  {row}" for row in decisive)
    if status and status not in _QUIET:
        lines.append(f"what to do: {advice(status, gate, base, decisive, reason)}")
    return lines
