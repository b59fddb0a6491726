"""End to end: measuring a gate's runs changes nothing the check can see or count.

The real bug/fix repository of ``helpers.evidence_repo``, one gate per way a check can
notice the measurement (its own coverage.py in three forms, a coverage gate with
``fail_under``, a lean-import assertion, code rebuilt with other globals) and a check that
hides its tests in a clean-environment subprocess. Each gate must get the verdict it gets
with ``--vgate-coverage off``; what coverage says of it depends on whether the interpreter
lets two tracers run side by side (``sys.monitoring``, Python 3.12+), and is never blame.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from helpers.evidence_repo import LEAN_ENV, PY, EvidenceRepo, make_evidence_repo
from helpers.junit import junit_cases

pytest.importorskip("pytest_cov")

LEAN = ("-p", "no:hypothesispytest", "-p", "no:cacheprovider")
PYTEST = f"{PY} -m pytest -q -p no:cacheprovider"
SHARED = sys.version_info >= (3, 12)  # a monitoring tool of our own beside coverage.py's

FILES = {
    "tests/cov.ini": "[pytest]\naddopts = --cov=pkg --cov-report=json:cov-addopts.json\n",
    "tests/run_cov.py": """\
        import sys

        import coverage

        cov = coverage.Coverage(data_file=".coverage-script", source=["pkg"])
        cov.start()
        import pytest

        code = pytest.main(["-q", "-p", "no:cacheprovider", "tests/test_fix.py"])
        cov.stop()
        cov.save()
        cov.json_report(outfile="cov-script.json")
        sys.exit(code)
        """,
    "tests/tox_like.py": """\
        import os
        import subprocess
        import sys

        env = {"PATH": os.environ.get("PATH", ""), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
        argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *sys.argv[1:]]
        sys.exit(subprocess.run(argv, env=env).returncode)
        """,
    "tests/check_lean.py": """\
        import sys

        assert "ast" not in sys.modules and "typing" not in sys.modules, sorted(sys.modules)
        sys.path.insert(0, ".")
        from pkg.mathx import add

        assert add(2, 3) == 5
        """,
    "tests/check_globals.py": """\
        import copy
        import sys
        import types

        sys.path.insert(0, ".")
        import pkg.mathx as m

        rebuilt = types.FunctionType(m.add.__code__, {"__builtins__": __builtins__})
        assert rebuilt(2, 3) == 5
        space = {"__builtins__": {}}
        with open(m.__file__) as fh:
            exec(compile(fh.read(), m.__file__, "exec"), space)
        assert space["add"](2, 3) == 5
        copy.deepcopy({k: v for k, v in vars(m).items() if not k.startswith("__")})
        assert m.add.__code__.co_names == () and m.add.__code__.co_filename == m.__file__
        assert [k for k in vars(m) if not k.startswith("__")] == ["add", "neg"]
        """,
    "tests/test_full.py": """\
        from pkg.mathx import add, neg


        def test_all():
            assert add(2, 3) == 5
            assert neg(2) == -2
        """,
}

COV_RUN = f"{PY} -m coverage run --data-file=.coverage-run -m pytest -q -p no:cacheprovider"
COV_JSON = f"{PY} -m coverage json --data-file=.coverage-run -o cov-run.json"
FULL_RUN = f"{PY} -m coverage run --data-file=.coverage-full -m pytest -q -p no:cacheprovider"
FULL_REPORT = f"{PY} -m coverage report --data-file=.coverage-full --fail-under=100"
CHECKS = {  # gate id -> (check, lean environment)
    "addopts-cov": (f"{PYTEST} -p pytest_cov -c tests/cov.ini --rootdir=. tests/test_fix.py", True),
    "coverage-run": (f"sh -c {shlex.quote(f'{COV_RUN} tests/test_fix.py && {COV_JSON}')}", True),
    "runner-script": (f"{PY} tests/run_cov.py", True),
    "fail-under": (f"sh -c {shlex.quote(f'{FULL_RUN} tests/test_full.py && {FULL_REPORT}')}", True),
    "clean-env": (f"{PY} tests/tox_like.py tests/test_fix.py", False),
    "clean-env-never-red": (f"{PY} tests/tox_like.py tests/test_basic.py", False),
    "lean-import": (f"{PY} tests/check_lean.py", False),
    "globals": (f"{PY} tests/check_globals.py", False),
}
GATES = "gates:\n" + "".join(
    f"  - id: {gate_id}\n    check: {json.dumps(check)}\n    overlay: [tests/]\n"
    + (f"    env: {LEAN_ENV}\n" if lean else "")
    for gate_id, (check, lean) in CHECKS.items()
)

COVERED = "covers"
OWN_TRACER = "covers" if SHARED else "unmeasured"
EXPECTED_COVERAGE = {
    "addopts-cov": OWN_TRACER,
    "coverage-run": OWN_TRACER,
    "runner-script": OWN_TRACER,
    "fail-under": OWN_TRACER,
    "clean-env": "unmeasured",
    "clean-env-never-red": "unmeasured",
    "lean-import": COVERED,
    "globals": COVERED,
}
VERDICTS = {"clean-env-never-red": ("failure", "never-red")}  # the others: passed, proven
# The command each gate's own coverage report comes from, and the report it writes.
OWN_REPORTS = {
    "addopts-cov": "cov-addopts.json",
    "coverage-run": "cov-run.json",
    "runner-script": "cov-script.json",
}


@pytest.fixture
def repo(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> EvidenceRepo:
    made = make_evidence_repo(pytester.path)
    for rel, text in FILES.items():
        (made.root / rel).write_text(textwrap.dedent(text), encoding="utf-8")
    with (made.root / ".gitignore").open("a") as fh:
        fh.write(".coverage*\ncov-*.json\n")
    (made.root / "gates.yaml").write_text(GATES, encoding="utf-8")
    monkeypatch.chdir(made.root)
    return made


def session(
    pytester: pytest.Pytester, *args: str
) -> tuple[dict[str, dict[str, object]], dict[str, Any], str]:
    junit, report = pytester.path / "junit.xml", pytester.path / "report.json"
    result = pytester.runpytest_subprocess(
        *LEAN, f"--junitxml={junit}", "gates.yaml", "--vgate", "gates.yaml",
        "--vgate-base", "HEAD~1", "--vgate-report", str(report), *args,
    )  # fmt: skip
    text = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in text, text
    gates = {str(g["id"]): g for g in json.loads(report.read_text())["gates"]}
    return junit_cases(junit), gates, result.stdout.str()


def own_report(root: Path, name: str) -> dict[str, object]:
    data = json.loads((root / name).read_text())
    return {
        path: (entry["executed_lines"], entry["summary"]["percent_covered"])
        for path, entry in data["files"].items()
    }


def test_a_measured_check_sees_and_counts_exactly_what_it_does_unmeasured(
    repo: EvidenceRepo, pytester: pytest.Pytester
) -> None:
    cases, gates, out = session(pytester)
    own = {name: own_report(repo.root, name) for name in OWN_REPORTS.values()}
    off, _, _ = session(pytester, "--vgate-coverage", "off")

    wrong = []
    for gate_id, coverage in EXPECTED_COVERAGE.items():
        seen = (cases[gate_id]["outcome"], cases[gate_id]["vgate_rbg"])
        unmeasured = (off[gate_id]["outcome"], off[gate_id]["vgate_rbg"])
        said = cases[gate_id]["vgate_coverage"]
        verdict = VERDICTS.get(gate_id, ("passed", "proven"))
        if not seen == unmeasured == verdict or said != coverage:
            wrong.append((gate_id, seen, unmeasured, said, gates[gate_id].get("rbg_reason")))
    assert not wrong, wrong
    for gate_id, coverage in EXPECTED_COVERAGE.items():
        if coverage == COVERED:
            measured = gates[gate_id]["coverage"]
            assert measured["head_executed"] == {"pkg/mathx.py": [2]}, gate_id
            assert measured["base_executed"] == {"pkg/mathx.py": [2]}, gate_id

    # Missing data is said, with what was not measured, never judged as a miss.
    reason = str(gates["clean-env"]["coverage"]["reason"])  # type: ignore[index]
    assert "environment that drops the measurement" in reason and "pytest" in reason, reason
    report = out.split("clean-env-never-red", 1)[1]
    assert "coverage: unmeasured (a Python process started with an environment" in report
    assert "red (base): not measured" in report and "green (now): not measured" in report
    if not SHARED:
        reason = str(gates["coverage-run"]["coverage"]["reason"])  # type: ignore[index]
        assert "a tracer we could not share" in reason and "coverage" in reason, reason

    # The check's own coverage numbers are those of the same command run without us.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COV", "PYTEST_"))}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    for gate_id, name in OWN_REPORTS.items():
        (repo.root / name).unlink()
        argv = shlex.split(CHECKS[gate_id][0])
        subprocess.run(argv, cwd=repo.root, env=env, check=True, capture_output=True)
        assert own_report(repo.root, name) == own[name], gate_id
