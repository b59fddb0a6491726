"""End to end: evidence by execution, repeats, and red that cannot be forged or borrowed.

Real pytest sessions on the real bug/fix repository of ``helpers.evidence_repo`` (plain and
under ``-n 2``); what is asserted is what a user reads: junit properties, the JSON report,
the terminal summary and the ledger on disk.
"""

from __future__ import annotations

import json
import shlex
import textwrap
from importlib import resources
from pathlib import Path

import pytest
from helpers.evidence_repo import EXPECTED, PY, EvidenceRepo, gates_text, make_evidence_repo
from helpers.git_repo import git
from helpers.junit import junit_cases

LEAN = ("-p", "no:hypothesispytest", "-p", "no:cacheprovider")


@pytest.fixture
def repo(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> EvidenceRepo:
    made = make_evidence_repo(pytester.path)
    monkeypatch.chdir(made.root)
    return made


def write_gates(root: Path, body: str) -> None:
    (root / "gates.yaml").write_text(textwrap.dedent(body), encoding="utf-8")


def run_plain(
    pytester: pytest.Pytester, *args: str, junit: Path | None = None
) -> tuple[pytest.RunResult, dict[str, dict[str, object]]]:
    junit = junit or pytester.path / "junit.xml"
    result = pytester.runpytest_subprocess(*LEAN, f"--junitxml={junit}", *args)
    return result, junit_cases(junit) if junit.exists() else {}


def assert_clean(result: pytest.RunResult) -> None:
    text = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in text, text


def gates_by_id(report: Path) -> dict[str, dict[str, object]]:
    return {str(g["id"]): g for g in json.loads(report.read_text())["gates"]}


# -- every case of the acceptance repository, plain and -n 2 -----------------------------


def test_every_case_is_judged_on_what_it_executed(
    run_vgate, repo: EvidenceRepo, pytester: pytest.Pytester
) -> None:
    write_gates(repo.root, gates_text(repo.root))
    report = pytester.path / "report.json"
    result, cases = run_vgate(
        "gates.yaml", "--vgate", "gates.yaml", "--vgate-base", "HEAD~1",
        "--vgate-report", str(report), *LEAN,
    )  # fmt: skip
    assert_clean(result)
    assert result.ret == 1
    seen = {
        gate_id: (case["outcome"], case.get("vgate_rbg"), case.get("vgate_coverage"))
        for gate_id, case in cases.items()
    }
    assert seen == EXPECTED, result.stdout.str()
    for gate_id, (outcome, _, _) in EXPECTED.items():
        if outcome == "failure":
            assert cases[gate_id]["vgate_cause"] == "broken_test", gate_id

    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(resources.files("pytest_vgate").joinpath("report.schema.json").read_text())
    jsonschema.validate(json.loads(report.read_text()), schema)
    gates = gates_by_id(report)
    genuine = gates["genuine"]["coverage"]
    assert isinstance(genuine, dict)
    assert genuine["status"] == "covers"
    assert genuine["base_changed"] == {"pkg/mathx.py": [2]}  # `return a - b`
    assert genuine["base_executed"] == {"pkg/mathx.py": [2]}
    assert genuine["head_executed"] == {"pkg/mathx.py": [2]}  # `return a + b`
    assert "tests/test_fix.py" not in genuine["head_changed"]  # carried by the overlay
    verifier = gates["verifier"]["coverage"]
    assert verifier["base_executed"] == verifier["head_executed"] == {"pkg/mathx.py": [2]}  # type: ignore[index]
    weak = gates["via-sh"]
    assert "never reached the change" in str(weak["rbg_reason"])
    assert weak["coverage"]["base_executed"] == {}  # type: ignore[index]
    leak = str(gates["leaks-current-tree"]["rbg_reason"])
    assert "contaminated" in leak and "pkg/mathx.py" in leak and str(repo.root) in leak
    assert gates["unrelated-flip"]["rbg"] == "disconnected"
    assert "tests/check_add.py" in str(gates["shell-names-new-file"]["rbg_reason"])
    runs = gates["genuine"]["repeat"]["runs"]  # type: ignore[index]
    assert [(r["where"], r["exit_code"]) for r in runs] == [("base", 1), ("current", 0)]

    out = result.stdout.str()
    assert "red-before-green: 1 disconnected, 1 never-red, 4 proven, 6 weak-red" in out
    row = next(line for line in result.stdout.lines if line.startswith("  genuine "))
    assert " covers " in row and "proven" in row
    # The failure report lists the changed lines each run executed or missed.
    assert "red (base): executed none; missed pkg/mathx.py:2" in out


def test_coverage_off_judges_on_exit_codes_only(
    repo: EvidenceRepo, pytester: pytest.Pytester
) -> None:
    """The wrapper hides pytest's exit 4: without coverage that red is (wrongly) genuine.
    unittest's loader error is in its output, so that one is told apart without coverage."""
    write_gates(repo.root, gates_text(repo.root))
    result, cases = run_plain(
        pytester, "gates.yaml", "--vgate", "gates.yaml", "--vgate-base", "HEAD~1",
        "--vgate-coverage", "off", "-k", "via-sh or via-unittest",
    )  # fmt: skip
    assert_clean(result)
    assert (cases["via-sh"]["outcome"], cases["via-sh"]["vgate_rbg"]) == ("passed", "proven")
    assert (cases["via-unittest"]["outcome"], cases["via-unittest"]["vgate_rbg"]) == (
        "failure",
        "weak-red",
    )
    for gate_id in ("via-sh", "via-unittest"):
        assert "vgate_coverage" not in cases[gate_id]


def test_no_require_red_lets_a_weak_red_pass_with_its_status(
    repo: EvidenceRepo, pytester: pytest.Pytester
) -> None:
    write_gates(repo.root, gates_text(repo.root))
    result, cases = run_plain(
        pytester, "gates.yaml", "--vgate", "gates.yaml", "--vgate-base", "HEAD~1",
        "--no-vgate-require-red", "-k", "via-sh or passes-on-both or genuine",
    )  # fmt: skip
    assert_clean(result)
    assert result.ret == 0, result.stdout.str()
    assert cases["via-sh"]["vgate_rbg"] == "weak-red"
    assert cases["passes-on-both"]["vgate_rbg"] == "never-red"
    assert cases["genuine"]["vgate_rbg"] == "proven"
    assert all(case["outcome"] == "passed" for case in cases.values())


def test_a_users_own_cov_run_keeps_working_next_to_it(
    repo: EvidenceRepo, pytester: pytest.Pytester
) -> None:
    """pytest-cov measures the session; the gates' own measuring goes on beside it."""
    pytest.importorskip("pytest_cov")
    write_gates(
        repo.root,
        f"""
        gates:
          - id: genuine
            check: {PY} -c "from pkg.mathx import add; assert add(2, 3) == 5"
            env: [COVERAGE_PROCESS_START, COV_CORE_SOURCE, COV_CORE_CONFIG, COV_CORE_DATAFILE]
        """,
    )
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "pytest_cov", "--cov=pkg", "--cov-report=",
        "tests/test_basic.py", "gates.yaml", "--vgate", "gates.yaml", "--vgate-base", "HEAD~1",
        f"--junitxml={pytester.path / 'junit.xml'}",
    )  # fmt: skip
    assert_clean(result)
    cases = junit_cases(pytester.path / "junit.xml")
    assert result.ret == 0, result.stdout.str()
    assert (cases["genuine"]["vgate_rbg"], cases["genuine"]["vgate_coverage"]) == (
        "proven", "covers",
    )  # fmt: skip
    from coverage import CoverageData

    data = CoverageData(basename=str(repo.root / ".coverage"))  # the user's own data
    data.read()
    measured = {Path(f).name: data.lines(f) for f in data.measured_files()}
    assert measured.get("mathx.py"), measured  # test_basic's neg(), measured by --cov


# -- repeats --------------------------------------------------------------------------------

# Fails on invocations 1, 4, 7, ...: red 1 fails, green 1 passes, red 2 passes: flaky.
FLAKY = (
    "import pathlib, sys; p = pathlib.Path(sys.argv[1]); n = int(p.read_text() or 0) + 1 "
    "if p.exists() else 1; p.write_text(str(n)); sys.exit(1 if n % 3 == 1 else 0)"
)


def flaky_gates(counter: Path) -> str:
    return f"""
    gates:
      - id: flaky
        check: {PY} -c {shlex.quote(FLAKY)} {counter}
      - id: steady
        check: {PY} -c "from pkg.mathx import add; assert add(2, 3) == 5"
    """


def test_flaky_check_is_never_proven_under_repeat(
    run_vgate, repo: EvidenceRepo, pytester: pytest.Pytester
) -> None:
    counter = pytester.path / "count"
    write_gates(repo.root, flaky_gates(counter))
    report = pytester.path / "report.json"
    result, cases = run_vgate(
        "gates.yaml", "--vgate", "gates.yaml", "--vgate-base", "HEAD~1", "--vgate-repeat", "5",
        "--vgate-report", str(report), *LEAN,
    )  # fmt: skip
    assert_clean(result)
    assert (cases["flaky"]["outcome"], cases["flaky"]["vgate_rbg"]) == ("failure", "flaky")
    assert cases["flaky"]["vgate_cause"] == "broken_test"
    assert (cases["steady"]["outcome"], cases["steady"]["vgate_rbg"]) == ("passed", "proven")
    gates = gates_by_id(report)
    flaky = gates["flaky"]["repeat"]
    assert isinstance(flaky, dict)
    assert flaky["stopped_early"] is True
    assert [(r["where"], r["exit_code"]) for r in flaky["runs"]] == [
        ("base", 1), ("current", 0), ("base", 0),
    ]  # fmt: skip
    # The flaky failure executed none of the change: not caused by it (DeFlaker's rule).
    assert flaky["runs"][0]["not_caused_by_change"] is True
    steady = gates["steady"]["repeat"]
    assert isinstance(steady, dict)
    assert steady["n"] == 5 and steady["bound"] == 4.0**-5 and steady["stopped_early"] is False
    assert len(steady["runs"]) == 10
    assert [r["where"] for r in steady["runs"][:4]] == ["base", "current", "base", "current"]
    assert all(r["reached_change"] for r in steady["runs"])
    assert not any(r.get("not_caused_by_change") for r in steady["runs"])


def test_flaky_check_with_junit_in_the_repo_is_not_proven_by_the_ledger(
    repo: EvidenceRepo, pytester: pytest.Pytester
) -> None:
    """The junit file written into the repository must not make "a different tree"."""
    counter = pytester.path / "count"
    write_gates(repo.root, flaky_gates(counter))
    junit = repo.root / "junit.xml"
    first, cases = run_plain(pytester, "gates.yaml", "--vgate", "gates.yaml", junit=junit)
    assert cases["flaky"]["outcome"] == "failure", first.stdout.str()  # invocation 1: red
    second, cases = run_plain(pytester, "gates.yaml", "--vgate", "gates.yaml", "-v", junit=junit)
    assert_clean(second)
    assert cases["flaky"]["outcome"] == "passed"  # invocation 2: green, on the same tree
    assert cases["flaky"]["vgate_rbg"] == "unproven", second.stdout.str()
    assert "ran on this same tree" in " ".join(second.stdout.str().split())  # wrapped hint
    _, cases = run_plain(
        pytester, "gates.yaml", "--vgate", "gates.yaml", "--vgate-repeat", "5", junit=junit
    )
    assert (cases["flaky"]["outcome"], cases["flaky"]["vgate_rbg"]) == ("failure", "flaky")


# -- red that cannot be forged or borrowed ---------------------------------------------------

TRIVIAL = f"""
gates:
  - id: trivial
    check: {PY} -c pass
"""


def _ledger(root: Path) -> Path:
    return root / ".vgate" / "ledger.jsonl"


def test_a_forged_ledger_line_proves_nothing(
    repo: EvidenceRepo, pytester: pytest.Pytester, dist_args: list[str]
) -> None:
    write_gates(repo.root, TRIVIAL)
    first, _ = run_plain(pytester, "gates.yaml", "--vgate", "gates.yaml")
    assert first.ret == 0, first.stdout.str()
    record = json.loads(_ledger(repo.root).read_text().splitlines()[0])
    record.update(mode="fail", cause="product", exit_code=1, genuine_red=True)
    record["tree"].update(commit="d" * 40, dirty="", label="ddddddd")  # no such commit
    with _ledger(repo.root).open("a") as fh:
        fh.write(json.dumps(record) + "\n")
    result, cases = run_plain(
        pytester, "gates.yaml", "--vgate", "gates.yaml", "--vgate-require-red", *dist_args
    )
    assert_clean(result)
    assert (cases["trivial"]["outcome"], cases["trivial"]["vgate_rbg"]) == ("failure", "unproven")
    # A hand-written line carries no MAC of the user's key: it is not even read as a record.
    result.stdout.fnmatch_lines(["*vgate ledger*ignored 1 record(s): their MAC does not verify*"])


def test_a_ledger_copied_from_another_repository_proves_nothing(
    repo: EvidenceRepo,
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    dist_args: list[str],
) -> None:
    other = make_evidence_repo(pytester.path, name="other")
    for made in (repo, other):
        write_gates(
            made.root,
            TRIVIAL.replace("-c pass", '-c "import pkg.mathx as m; assert m.add(2, 3) == 5"'),
        )
    # A genuine red in the other repository: its bug is back in its working tree.
    other.mathx.write_text(other.mathx.read_text().replace("a + b", "a - b"))
    monkeypatch.chdir(other.root)
    red, cases = run_plain(pytester, "gates.yaml", "--vgate", "gates.yaml")
    assert cases["trivial"]["outcome"] == "failure", red.stdout.str()
    _ledger(repo.root).parent.mkdir()
    _ledger(repo.root).write_bytes(_ledger(other.root).read_bytes())
    monkeypatch.chdir(repo.root)
    result, cases = run_plain(
        pytester, "gates.yaml", "--vgate", "gates.yaml", "--vgate-require-red", *dist_args
    )
    assert_clean(result)
    assert (cases["trivial"]["outcome"], cases["trivial"]["vgate_rbg"]) == ("failure", "unproven")
    result.stdout.fnmatch_lines(["*ignored 1 record(s) not bound to this repository*"])


def test_a_typo_red_then_the_typo_fixed_is_not_proven(
    repo: EvidenceRepo, pytester: pytest.Pytester, dist_args: list[str]
) -> None:
    """The fixed code was never red: only the test with a typo was."""
    test = repo.root / "tests" / "test_new.py"
    test.write_text("from pkg.mathx import add\n\n\ndef test_add():\n    assert add(2, 3) == 6\n")
    write_gates(
        repo.root,
        f"""
        gates:
          - id: new-test
            check: {PY} -m pytest -q -p no:cacheprovider tests/test_new.py
            env: {{set: {{PYTEST_DISABLE_PLUGIN_AUTOLOAD: "1"}}}}
        """,
    )
    _, cases = run_plain(pytester, "gates.yaml", "--vgate", "gates.yaml")
    assert (cases["new-test"]["outcome"], cases["new-test"]["vgate_exit_code"]) == ("failure", "1")
    test.write_text(test.read_text().replace("== 6", "== 5"))
    result, cases = run_plain(
        pytester, "gates.yaml", "--vgate", "gates.yaml", "--vgate-require-red", *dist_args
    )
    assert_clean(result)
    assert (cases["new-test"]["outcome"], cases["new-test"]["vgate_rbg"]) == (
        "failure", "unproven",
    ), result.stdout.str()  # fmt: skip


def test_a_comment_only_change_has_no_change(repo: EvidenceRepo, pytester: pytest.Pytester) -> None:
    repo.mathx.write_text(
        '"""Small arithmetic."""\n# add: the sum\n'
        + repo.mathx.read_text().replace(
            "    return a + b", '    """Return the sum."""  # was buggy\n    return a + b'
        )
    )
    write_gates(
        repo.root,
        f"""
        gates:
          - id: adds
            check: {PY} -c "from pkg.mathx import add; assert add(2, 3) == 5"
        """,
    )
    report = pytester.path / "report.json"
    result, cases = run_plain(
        pytester, "gates.yaml", "--vgate", "gates.yaml", "--vgate-base", "HEAD",
        "--vgate-report", str(report),
    )  # fmt: skip
    assert_clean(result)
    assert (cases["adds"]["vgate_coverage"], cases["adds"]["vgate_rbg"]) == (
        "no-change",
        "never-red",
    )
    coverage = gates_by_id(report)["adds"]["coverage"]
    assert isinstance(coverage, dict)
    assert coverage["head_changed"] == {} and coverage["base_changed"] == {}
    git(repo.root, "status", "--short")  # the tree is untouched by the session


# -- the documented worked example ------------------------------------------------------------

DOCS = Path(__file__).resolve().parents[1] / "docs" / "red-before-green.md"


def docs_worked_example() -> str:
    text = DOCS.read_text(encoding="utf-8")
    marker = text.index("is run by tests/test_plugin_evidence.py")
    block = text[text.index("```yaml\n", marker) + len("```yaml\n") :]
    return block[: block.index("```")].replace("python ", f"{PY} ")


def test_the_documented_worked_example(repo: EvidenceRepo, pytester: pytest.Pytester) -> None:
    write_gates(repo.root, docs_worked_example())
    result, cases = run_plain(
        pytester, "gates.yaml", "--vgate", "gates.yaml", "--vgate-base", "HEAD~1"
    )
    assert_clean(result)
    seen = {g: (c["vgate_rbg"], c["vgate_coverage"]) for g, c in cases.items()}
    assert seen == {
        "genuine": ("proven", "covers"),
        "via-sh": ("weak-red", "partial"),
        "via-unittest": ("weak-red", "partial"),
        "passes-on-both": ("never-red", "misses"),
        "unrelated-flip": ("disconnected", "misses"),
        "shell-only": ("proven", "unmeasured"),
    }, result.stdout.str()
    result.stdout.fnmatch_lines(
        ["red-before-green: 1 disconnected, 1 never-red, 2 proven, 2 weak-red*"]
    )
