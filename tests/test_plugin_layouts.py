"""End to end: the first hour on real project shapes, in real sessions on real repos.

A check may be a long inline program; a src-layout project works in the two documented
commands without an install; the advice a failed gate gives, followed, proves it.
"""

from __future__ import annotations

import json
import shlex

import pytest
from helpers.git_repo import BugFixRepo, make_bugfix_repo

LEAN = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest")


@pytest.fixture
def bugfix(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> BugFixRepo:
    repo = make_bugfix_repo(pytester.path)
    monkeypatch.chdir(repo.root)
    return repo


def prove(
    pytester: pytest.Pytester, gates: str, base: str, *extra: str
) -> tuple[pytest.RunResult, dict[str, dict[str, object]]]:
    report = pytester.path / "report.json"
    result = pytester.runpytest_subprocess(
        *LEAN, "--vgate", gates, "--vgate-base", base, f"--vgate-report={report}",
        "-m", "vgate", *extra,
    )  # fmt: skip
    gates = json.loads(report.read_text())["gates"] if report.exists() else []
    return result, {str(g["id"]): g for g in gates}


# -- argv words of any length --------------------------------------------------------------


def program_of(size: int) -> str:
    """A one-line ``python -c`` program of exactly ``size`` bytes that tests the fix."""
    code = "from pkg.mathx import add; assert add(2, 3) == 5, add(2, 3)  # "
    return code + "x" * (size - len(code))


@pytest.mark.parametrize("size", [4096, 300_000 // 3])
def test_a_long_inline_program_runs_and_is_proven(
    pytester: pytest.Pytester, bugfix: BugFixRepo, size: int, dist_args: list[str]
) -> None:
    program = program_of(size)
    assert len(program.encode()) == size
    check = shlex.join(["python", "-c", program])
    (bugfix.root / "gates.yaml").write_text(
        f"gates:\n  - id: long-program\n    check: {json.dumps(check)}\n"
    )
    result, gates = prove(pytester, "gates.yaml", bugfix.bug_sha, *dist_args)
    out = result.stdout.str()
    assert "File name too long" not in out and "INTERNALERROR" not in out, out[-3000:]
    assert result.ret == 0, out[-3000:]
    assert gates["long-program"]["mode"] == "pass"
    assert gates["long-program"]["rbg"] == "proven"
