"""End to end: a proven gate must kill mutants of the change it executed.

Real pytest sessions (plain and under ``-n 2``) on the fix-plus-feature repository of
``helpers.mutants_repo``: checks that run the changed code and assert nothing about it
fail as undiscriminating, real tests pass, and no mutant is ever left on disk or in the
user's tree.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from helpers.git_repo import git
from helpers.junit import junit_cases
from helpers.mutants_repo import (
    EXPECTED,
    FIXED,
    PY,
    VERIFIER_EXPECTED,
    VERIFIERS,
    ShopRepo,
    gates_text,
    make_shop_repo,
    pytest_gate,
    verifier_gates_text,
)

LEAN = ("-p", "no:hypothesispytest", "-p", "no:cacheprovider")


@pytest.fixture
def temp(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The sessions' own temp dir, where their base worktrees and mutant copies go (the
    machine's is shared with other sessions)."""
    folder = pytester.path / "tmp"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    return folder


@pytest.fixture
def repo(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, temp: Path) -> ShopRepo:
    made = make_shop_repo(pytester.path)
    monkeypatch.chdir(made.root)
    return made


def write_gates(root: Path, body: str) -> None:
    (root / "gates.yaml").write_text(textwrap.dedent(body), encoding="utf-8")


def our_holders(temp: Path) -> list[str]:
    """This plugin's private trees in the temp dir (base worktrees and mutant copies)."""
    return sorted(p.name for p in temp.glob("vgate-*"))


def assert_untouched(repo: ShopRepo) -> None:
    assert repo.shop.read_text() == FIXED
    assert git(repo.root, "status", "--porcelain", "--untracked-files=no") == ""
    assert git(repo.root, "worktree", "list", "--porcelain").count("worktree ") == 1


def run_against_the_base(
    run_vgate, report: Path
) -> tuple[pytest.RunResult, dict[str, dict[str, object]], dict[str, tuple[object, ...]]]:
    """The gates file under ``--vgate-base HEAD~1`` with defaults: the result, the junit
    cases and each gate's (outcome, ``vgate_rbg``, ``vgate_discrimination``)."""
    result, cases = run_vgate(
        "--vgate", "gates.yaml", "--vgate-only", "--vgate-base", "HEAD~1",
        "--vgate-report", str(report), *LEAN,
    )  # fmt: skip
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    seen = {
        gate_id: (case["outcome"], case.get("vgate_rbg"), case.get("vgate_discrimination"))
        for gate_id, case in cases.items()
    }
    return result, cases, seen


def test_checks_that_assert_nothing_are_not_proven_and_real_tests_are(
    run_vgate, repo: ShopRepo, pytester: pytest.Pytester, temp: Path
) -> None:
    write_gates(repo.root, gates_text())
    report = pytester.path / "report.json"
    result, cases, seen = run_against_the_base(run_vgate, report)
    out = result.stdout.str()
    assert seen == EXPECTED, out
    assert result.ret == 1
    for gate_id, (outcome, _, _) in EXPECTED.items():
        if outcome == "failure":
            assert cases[gate_id]["vgate_cause"] == "broken_test", gate_id
    killed, planted = map(int, str(cases["values"]["vgate_mutants"]).split("/"))
    assert 1 <= killed <= planted <= 8
    killed, planted = map(int, str(cases["runs-only"]["vgate_mutants"]).split("/"))
    assert killed == 0 and 1 <= planted <= 8

    gates = {g["id"]: g for g in json.loads(report.read_text())["gates"]}
    runs_only = gates["runs-only"]["discrimination"]
    assert runs_only["status"] == "undiscriminating"
    assert set(runs_only["pseudo_tested"]) == {"total", "discount"}
    assert "the check passes when `total`, `discount` does nothing" in runs_only["reason"]
    first = runs_only["mutants"][0]
    assert set(first) >= {"path", "line", "kind", "operator", "before", "after", "killed", "mode"}
    kinds = [m["kind"] for m in runs_only["mutants"]]
    assert kinds[:2] == ["extreme", "extreme"] and "value" in kinds
    assert kinds == sorted(kinds, key=lambda kind: kind != "extreme")  # extreme first
    assert len(runs_only["mutants"]) <= 8
    values = gates["values"]["discrimination"]
    assert values["status"] == "discriminating" and values["killed"] >= 1
    assert values["pseudo_tested"] == []
    # The failure report and the summary show the surviving mutants.
    assert "survived pkg/shop.py:2  body of total → return None" in out
    summary = out.split(" vgate ===")[-1]
    assert "mutants of runs-only: 0/" in summary
    assert "  survived pkg/shop.py:2  body of total → return None" in summary
    # The feature test that imports the new name at its top is red for the right reason.
    assert "cannot import name 'discount'" in gates["top-import"]["rbg_reason"]
    # Importing the new name runs its `def` line, not its body: not the change executed.
    assert gates["import-only"]["coverage"]["head_executed"] == {}

    assert_untouched(repo)
    assert our_holders(temp) == []


def test_verifier_gates_are_measured_and_must_kill_mutants_too(
    run_vgate, repo: ShopRepo, pytester: pytest.Pytester, temp: Path
) -> None:
    """``type: python`` gates take part: the verifier's process is measured from before
    its module's import, and so are the tools it runs. A verifier that calls the change
    and asserts nothing is undiscriminating; one that checks values, itself or through a
    pytest tool, kills mutants. Each mutant is imported anew (no zygote of an earlier
    mutant serves the next), and a tool never runs an earlier mutant's stale bytecode:
    only the equivalent mutant (``round(x, 2)`` -> ``round(x, 3)``) survives."""
    (repo.root / "verify_shop.py").write_text(VERIFIERS)  # new with the change: the check
    write_gates(repo.root, verifier_gates_text())
    report = pytester.path / "report.json"
    result, _, seen = run_against_the_base(run_vgate, report)
    out = result.stdout.str()
    assert seen == VERIFIER_EXPECTED, out
    assert result.ret == 1
    gates = {g["id"]: g for g in json.loads(report.read_text())["gates"]}
    # The verifier calling a name the change adds is red for the right reason.
    assert "has no attribute 'discount'" in gates["v-runs-only"]["rbg_reason"]
    assert set(gates["v-runs-only"]["discrimination"]["pseudo_tested"]) == {"total", "discount"}
    for gate_id in ("v-values", "v-through-pytest"):
        disc = gates[gate_id]["discrimination"]
        survived = [(m["before"], m["after"]) for m in disc["mutants"] if not m["killed"]]
        assert survived == [("2", "3")], (gate_id, disc["mutants"])
        coverage = gates[gate_id]["coverage"]
        assert coverage["status"] == "covers", coverage
        assert "pkg/shop.py" in coverage["head_executed"], coverage
        # The verifier module is the check, taken from the current tree: no contamination.
        assert coverage["red"]["contaminated"] == [], coverage
    # Mutants are never planted in the verifier module: it is the check.
    planted = {m["path"] for g in gates.values() for m in g["discrimination"]["mutants"]}
    assert planted == {"pkg/shop.py"}
    assert_untouched(repo)
    assert our_holders(temp) == []


def test_mutate_off_keeps_the_old_verdicts(repo: ShopRepo, pytester: pytest.Pytester) -> None:
    """Without mutants the checks that assert nothing pass as proven: what fails them
    above is the mutants, nothing else."""
    write_gates(repo.root, gates_text())
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest_subprocess(
        "--vgate", "gates.yaml", "--vgate-only", "--vgate-base", "HEAD~1",
        "--vgate-mutate", "off", f"--junitxml={junit}", *LEAN,
    )  # fmt: skip
    cases = junit_cases(junit)
    for gate_id in ("runs-only", "print-true", "tautology", "python-c", "values", "top-import"):
        assert cases[gate_id]["outcome"] == "passed", (gate_id, result.stdout.str())
        assert "vgate_discrimination" not in cases[gate_id]
    assert cases["import-only"]["outcome"] == "failure"


# -- a check that hangs on a mutant ------------------------------------------------------

HANGS = """\
import time

import pkg.shop as shop


def test_hangs_on_a_mutant():
    value = shop.discount(100, 0.1)
    if value is None:  # the body of discount is gone: hang, as a broken loop would
        open({marker!r}, "a").close()
        time.sleep(300)
    assert value == 90.0
"""


def hanging_gate(repo: ShopRepo, marker: Path, timeout: int) -> None:
    (repo.root / "tests" / "test_hang.py").write_text(HANGS.format(marker=str(marker)))
    gate = pytest_gate("hangs", "tests/test_hang.py") + f"    timeout: {timeout}\n"
    write_gates(repo.root, "gates:\n" + gate)


def test_a_mutant_the_check_hangs_on_is_killed_at_the_gates_timeout(
    repo: ShopRepo, pytester: pytest.Pytester, temp: Path
) -> None:
    marker = pytester.path / "hanging"
    hanging_gate(repo, marker, timeout=20)
    report = pytester.path / "report.json"
    result = pytester.runpytest_subprocess(
        "--vgate", "gates.yaml", "--vgate-only", "--vgate-base", "HEAD~1",
        "--vgate-mutants", "2", f"--vgate-report={report}", *LEAN,
    )  # fmt: skip
    assert result.ret == 0, result.stdout.str()
    assert marker.exists()  # it did hang on the mutant
    disc = json.loads(report.read_text())["gates"][0]["discrimination"]
    assert disc["status"] == "discriminating"
    hung = disc["mutants"][0]
    assert (hung["after"], hung["killed"], hung["mode"]) == ("return None", True, "timeout")
    assert_untouched(repo)
    assert our_holders(temp) == []


# -- Ctrl-C, SIGTERM, SIGHUP while a mutant runs -----------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    ("how", "dist"),
    [("SIGTERM", ()), ("SIGHUP", ()), ("SIGINT", ()), ("SIGTERM", ("-n", "2"))],
    ids=["sigterm", "sighup", "ctrl-c", "sigterm-xdist"],
)
def test_a_signal_during_a_mutant_leaves_no_mutant_anywhere(
    repo: ShopRepo, pytester: pytest.Pytester, temp: Path, how: str, dist: tuple[str, ...]
) -> None:
    marker = pytester.path / "hanging"
    hanging_gate(repo, marker, timeout=300)
    argv = [sys.executable, "-m", "pytest", *LEAN, *dist, "--vgate", "gates.yaml",
            "--vgate-only", "--vgate-base", "HEAD~1"]  # fmt: skip
    session = subprocess.Popen(
        argv, cwd=repo.root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        deadline = time.monotonic() + 180
        while not marker.exists() and time.monotonic() < deadline and session.poll() is None:
            time.sleep(0.2)
        assert marker.exists(), session.communicate(timeout=60)[0]
        mutated = [p for p in temp.rglob("shop.py") if "return None" in p.read_text()]
        assert mutated == [], out_so_far(session)  # the mutant lives in a fork's memory
        session.send_signal(getattr(signal, how))
        out, _ = session.communicate(timeout=120)
        assert session.returncode not in (0, None), out
        assert "INTERNALERROR" not in out
        assert_untouched(repo)
        assert our_holders(temp) == [], (our_holders(temp), out[-300:])
    finally:
        session.kill()
        session.wait()


def out_so_far(session: subprocess.Popen[str]) -> str:
    session.kill()
    return session.communicate(timeout=60)[0]


# -- bad input -----------------------------------------------------------------------------


def test_a_change_without_python_lines_is_none_said_once(
    repo: ShopRepo, pytester: pytest.Pytester, temp: Path
) -> None:
    """The change (uncommitted, against HEAD) edits a data file and a C extension's
    source: no Python line to mutate, said once for every gate."""
    (repo.root / "data").mkdir()
    (repo.root / "data" / "rate.txt").write_text("0.1\n")
    (repo.root / "ext").mkdir()
    (repo.root / "ext" / "fast.c").write_text("int fast(void) { return 1; }\n")
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-q", "-m", "data and an extension")
    (repo.root / "data" / "rate.txt").write_text("0.2\n")
    (repo.root / "ext" / "fast.c").write_text("int fast(void) { return 2; }\n")
    check = "assert open('data/rate.txt').read().strip() == '0.2'"
    write_gates(repo.root, f"""\
        gates:
          - id: rate
            check: {PY} -c "{check}"
          - id: rate-again
            check: {PY} -c "{check}; import pkg.shop"
        """)  # fmt: skip
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest_subprocess(
        "--vgate", "gates.yaml", "--vgate-only", "--vgate-base", "HEAD", f"--junitxml={junit}",
        *LEAN,
    )  # fmt: skip
    out = result.stdout.str()
    assert result.ret == 0, out
    cases = junit_cases(junit)
    for gate_id in ("rate", "rate-again"):
        assert cases[gate_id]["vgate_discrimination"] == "none", out
        assert cases[gate_id]["vgate_mutants"] == "0/0"
    said = [line for line in out.splitlines() if line.startswith("discrimination none")]
    assert len(said) == 1, out
    flat = " ".join(out.split(" vgate ===")[-1].split())
    assert "no executable Python lines" in flat and "(2 gates: rate, rate-again)" in flat
    assert our_holders(temp) == []


def test_a_changed_file_that_does_not_parse_is_left_alone(
    repo: ShopRepo, pytester: pytest.Pytester, temp: Path
) -> None:
    """The change adds a template that is not Python to a .py name: no mutant of it, no
    error, and the gate is judged on the code that parses."""
    (repo.root / "pkg" / "template.py").write_text("def {{ name }}(:\n    {{ body }}\n")
    write_gates(repo.root, "gates:\n" + pytest_gate("values", "tests/test_shop.py::test_values"))
    report = pytester.path / "report.json"
    result = pytester.runpytest_subprocess(
        "--vgate", "gates.yaml", "--vgate-only", "--vgate-base", "HEAD~1",
        "--vgate-mutants", "3", f"--vgate-report={report}", *LEAN,
    )  # fmt: skip
    assert result.ret == 0, result.stdout.str()
    disc = json.loads(report.read_text())["gates"][0]["discrimination"]
    assert disc["status"] == "discriminating"
    assert {m["path"] for m in disc["mutants"]} == {"pkg/shop.py"}
    assert (repo.root / "pkg" / "template.py").read_text().startswith("def {{ name }}")
    assert our_holders(temp) == []


# -- a skip on the base is no answer --------------------------------------------------------

SKIPS = """\
import pytest

import pkg.shop as shop


def test_discount():
    if not hasattr(shop, "discount"):
        pytest.skip("discount is not there yet")
    assert shop.discount(100, 0.1) == 90.0
"""


def test_a_test_skipped_on_the_base_is_a_weak_red_with_its_reason(
    repo: ShopRepo, pytester: pytest.Pytester, temp: Path
) -> None:
    (repo.root / "tests" / "test_skips.py").write_text(SKIPS)
    gate = pytest_gate("skips", "-rs tests/test_skips.py")
    write_gates(repo.root, "gates:\n" + gate)
    junit = pytester.path / "junit.xml"
    report = pytester.path / "report.json"
    result = pytester.runpytest_subprocess(
        "--vgate", "gates.yaml", "--vgate-only", "--vgate-base", "HEAD~1",
        f"--junitxml={junit}", f"--vgate-report={report}", *LEAN,
    )  # fmt: skip
    case = junit_cases(junit)["skips"]
    assert (case["outcome"], case["vgate_rbg"], case["vgate_cause"]) == (
        "failure",
        "weak-red",
        "broken_test",
    ), result.stdout.str()
    reason = json.loads(report.read_text())["gates"][0]["rbg_reason"]
    assert "skipped on the base: tests/test_skips.py:8: discount is not there yet" in reason
    assert our_holders(temp) == []


def test_a_check_needing_an_untracked_build_product_is_unmeasured_not_failed(
    repo: ShopRepo, pytester: pytest.Pytester, temp: Path
) -> None:
    """A compiled extension built in place is ignored by git, so the private copy lacks
    it: the check fails on the unmutated copy, and no mutant is counted."""
    (repo.root / ".gitignore").write_text("__pycache__/\nbuild/\n")
    (repo.root / "build").mkdir()
    (repo.root / "build" / "_speedups.so").write_text("built here, not in git\n")
    check = (
        "import pkg.shop as s; assert s.discount(100, 0.1) == 90.0; "
        "open('build/_speedups.so').read()"
    )
    write_gates(repo.root, f'gates:\n  - id: built\n    check: {PY} -c "{check}"\n')
    report = pytester.path / "report.json"
    result = pytester.runpytest_subprocess(
        "--vgate", "gates.yaml", "--vgate-only", "--vgate-base", "HEAD~1",
        f"--vgate-report={report}", *LEAN,
    )  # fmt: skip
    assert result.ret == 0, result.stdout.str()
    gate = json.loads(report.read_text())["gates"][0]
    assert gate["rbg"] == "proven"
    disc = gate["discrimination"]
    assert (disc["status"], disc["planted"], disc["mutants"]) == ("unmeasured", 0, [])
    assert "does not pass on an unmutated private copy" in disc["reason"]
    assert (repo.root / "build" / "_speedups.so").exists()
    assert our_holders(temp) == []
