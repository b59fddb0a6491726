"""End to end: what a newcomer reads in the first hour, in real sessions on real repos.

The header warns when checks would import another copy of the package; a failed gate's
report says why the base run was no red and what to do; the vgate section fits COLUMNS,
keeps gates-file order under xdist and names its columns for what they show.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
from helpers.git_repo import BugFixRepo, git

LEAN = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest")


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


# -- the right copy of the code ------------------------------------------------------------


@pytest.fixture
def src_layout(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A src-layout project in git, and an older copy of its package "installed" in a site
    folder that the checks see through PYTHONPATH (allowlisted by the gate)."""
    root = pytester.path / "proj"
    write(root / "src" / "shapes" / "__init__.py", "def area(w, h):\n    return w * h\n")
    write(
        root / "tests" / "test_area.py",
        "from shapes import area\n\n\ndef test_area():\n    assert area(2, 3) == 6\n",
    )
    write(root / "pytest.ini", "[pytest]\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "shapes")
    site = pytester.path / "site"
    write(site / "shapes" / "__init__.py", "def area(w, h):\n    return w + h  # 0.1, old\n")
    monkeypatch.setenv("PYTHONPATH", str(site))
    monkeypatch.chdir(root)
    write(
        root / "gates.yaml",
        """\
        gates:
          - id: area
            check: python -m pytest -q tests/test_area.py
            env: [PYTHONPATH]
            red: not-required
        """,
    )
    return root


def test_header_warns_when_checks_import_an_installed_copy(
    pytester: pytest.Pytester, src_layout: Path
) -> None:
    result = pytester.runpytest_subprocess(*LEAN, "--vgate", "gates.yaml", "-m", "vgate")
    header = result.stdout.str().split("collected")[0]
    site = str(pytester.path / "site" / "shapes" / "__init__.py")
    assert f"vgate: WARNING: checks import shapes from {site}, outside this tree" in header
    assert "pythonpath = src" in header
    # The recipe: the tree's own copy first, for the checks' pytest too.
    write(src_layout / "pytest.ini", "[pytest]\npythonpath = src\n")
    result = pytester.runpytest_subprocess(*LEAN, "--vgate", "gates.yaml", "-m", "vgate")
    assert "WARNING" not in result.stdout.str().split("collected")[0]
    assert result.ret == 0


def test_header_warns_separately_for_the_base_worktree(
    pytester: pytest.Pytester, src_layout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The checks find the current tree's src through PYTHONPATH: right here, wrong on the
    # base, where the red run would test the new code.
    monkeypatch.setenv("PYTHONPATH", str(src_layout / "src"))
    git(src_layout, "add", "-A")
    git(src_layout, "commit", "-qm", "gates")
    result = pytester.runpytest_subprocess(
        *LEAN, "--vgate", "gates.yaml", "--vgate-base", "HEAD", "-m", "vgate"
    )
    header = result.stdout.str().split("collected")[0]
    assert "vgate: WARNING: checks import" not in header
    assert re.search(
        r"vgate: WARNING: red runs on base HEAD import shapes from .*proj/src/shapes/"
        r"__init__.py, the current tree \(an editable install or a path pointing there\)",
        header,
    ), header


def test_python_in_a_check_is_the_sessions_interpreter(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `python` earlier on PATH (another interpreter) is not what checks run."""
    import sys

    decoy = tmp_path / "bin" / "python"
    write(decoy, "#!/bin/sh\necho decoy; exit 3\n").chmod(0o755)
    monkeypatch.setenv("PATH", f"{decoy.parent}:{Path(sys.executable).parent}:/usr/bin:/bin")
    pytester.makefile(
        ".yaml",
        gates="""\
        gates:
          - id: which
            check: python -c "import sys; print(sys.executable)"
            red: not-required
        """,
    )
    report = pytester.path / "r.json"
    result = pytester.runpytest_subprocess(
        *LEAN, "--vgate", "gates.yaml", f"--vgate-report={report}"
    )
    assert result.ret == 0, result.stdout.str()
    (gate,) = json.loads(report.read_text())["gates"]
    assert gate["stdout"].strip() == sys.executable
    assert gate["tools"][0]["path"] == sys.executable


# -- say why ---------------------------------------------------------------------------


WHY_GATES = """\
gates:
  - id: no-overlay
    check: python -m pytest -q tests/test_mul.py::test_mul
  - id: passes-on-base
    check: python -m pytest -q tests/test_basic.py
  - id: verifier-new-module
    type: python
    verifiers: [checks_new:adds]
"""


def test_failure_reports_say_why_the_base_was_no_red(
    pytester: pytest.Pytester, bugfix_on_path: BugFixRepo, dist_args: list[str]
) -> None:
    # The verifier module is in the base commit; the function it checks and the table it
    # reads are new (uncommitted). On the base it raises for want of the table: a file, no
    # name the change defines (a missing `mul` alone would be a genuine red).
    write(
        bugfix_on_path.root / "checks_new.py",
        """\
        from pathlib import Path

        from pytest_vgate import Outcome


        def adds(ctx):
            expected = int((Path(ctx.root) / "mul-table.txt").read_text())
            from pkg.mathx import mul

            return Outcome.passed() if mul(2, 3) == expected else Outcome.failed("mul is wrong")
        """,
    )
    git(bugfix_on_path.repo, "add", "-A")
    git(bugfix_on_path.repo, "commit", "-qm", "checks")
    write(bugfix_on_path.root / "mul-table.txt", "6\n")
    bugfix_on_path.mathx.write_text(
        bugfix_on_path.mathx.read_text() + "\n\ndef mul(a, b):\n    return a * b\n"
    )
    write(
        bugfix_on_path.root / "tests" / "test_mul.py",
        "from pkg.mathx import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n",
    )
    write(bugfix_on_path.root / "gates.yaml", WHY_GATES)
    report = pytester.path / "r.json"
    result = pytester.runpytest_subprocess(
        *LEAN, "--vgate", "gates.yaml", "--vgate-base", "HEAD", "-m", "vgate",
        f"--vgate-report={report}", *dist_args,
    )  # fmt: skip
    assert result.ret == 1
    gates = {g["id"]: g for g in json.loads(report.read_text())["gates"]}
    assert {k: g["rbg"] for k, g in gates.items()} == {
        "no-overlay": "weak-red",
        "passes-on-base": "never-red",
        "verifier-new-module": "weak-red",
    }
    out = result.stdout.str()
    weak = out.split("vgate: no-overlay")[1]
    assert "--- on the base: mode fail, exit 4 ---" in weak
    assert "base command: python -m pytest -q tests/test_mul.py::test_mul" in weak
    assert "ERROR: file or directory not found: tests/test_mul.py::test_mul" in weak
    assert (
        "what to do: The test does not exist on the base: add its file to the gate's `overlay`"
        in weak
    )
    never = out.split("vgate: passes-on-base")[1]
    assert "--- on the base: mode pass, exit 0 ---" in never
    assert "what to do: The check passes on the base too" in never
    verifier = out.split("vgate: verifier-new-module")[1]
    assert "--- on the base: mode error" in verifier
    assert "checks_new" in verifier.split("what to do")[0]  # the base's own words
    assert "what to do:" in verifier


# -- output that fits -------------------------------------------------------------------


MANY_GATES = "gates:\n" + "".join(
    f"""  - id: {name}
    claim: gate number {i} with a claim long enough to matter for any table
    check: python -c "import sys; sys.exit({code})"
    red: not-required
"""
    for i, (name, code) in enumerate(
        [
            ("z-first-in-file-with-a-rather-long-identifier-to-wrap", 0),
            ("a-second", 3),
            ("m-third", 0),
            ("b-fourth-gate-in-the-file", 0),
        ]
    )
)


@pytest.mark.parametrize("columns", [80, 200])
def test_the_vgate_section_fits_the_terminal_and_keeps_file_order(
    pytester: pytest.Pytester, columns: int, dist_args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", str(columns))
    pytester.makefile(".yaml", gates=MANY_GATES)
    pytester.makepyfile(
        test_verifiers="""
        from pytest_vgate import Outcome, verifier

        @verifier(id="module-verifier")
        def check(ctx):
            return Outcome.passed()
        """
    )
    result = pytester.runpytest_subprocess(*LEAN, "--vgate", "gates.yaml", "-v", *dist_args)
    out = result.stdout.str()
    header = out.split("collected")[0]
    assert "vgate: gates.yaml (4 gates)" in header
    section = out.split("= vgate =")[1].split("short test summary")[0]
    lines = section.splitlines()
    too_wide = [line for line in lines if len(line) > columns]
    assert not too_wide, too_wide
    table_head = next(line for line in lines if line.lstrip().startswith("gate "))
    assert re.search(r"\bnow\b", table_head) and "green" not in table_head
    rows = [
        line.split()[0]
        for line in lines[lines.index(table_head) + 1 :]
        if line.startswith("  ") and not line.startswith("      ") and line.split()
    ]
    order = ["z-first", "a-second", "m-third", "b-fourth", "module-verifier"]
    firsts = [next(i for i, r in enumerate(rows) if r.startswith(o[:7])) for o in order]
    assert firsts == sorted(firsts), rows
    failed_row = next(line for line in lines if line.lstrip().startswith("a-second"))
    assert "exit 3" in failed_row
    # The failure hint is whole sentences: the summary never ends one mid-word.
    hint = section.split("failed gates:")[1].split("red-before-green")[0]
    assert "…" not in hint
    assert "1 gates" not in out


def test_one_gate_is_one_gate(pytester: pytest.Pytester) -> None:
    pytester.makefile(
        ".yaml",
        gates="""\
        gates:
          - id: only
            check: python -c "pass"
            red: not-required
        """,
    )
    result = pytester.runpytest_subprocess(*LEAN, "--vgate", "gates.yaml")
    assert "vgate: gates.yaml (1 gate)" in result.stdout.str()
