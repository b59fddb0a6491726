"""Causes say whose fault a failure is: real pytest processes, real verifier exceptions.

A pytest check that never reached an answer (exit 2-5, or no pytest at all) is a broken
test, not a broken product; an exception the code under test raised inside a verifier is
the product's answer (``fail``/``product``, a genuine red), while one the verifier itself
raised stays ``error``/``broken_test``.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
from helpers.git_repo import git

from pytest_vgate import run_oracle_check
from pytest_vgate.context import RunContext
from pytest_vgate.gate.decide import is_genuine_red
from pytest_vgate.gate.runner import run_check
from pytest_vgate.gatesfile import Gate, gate_from_mapping
from pytest_vgate.verdict import Cause, Mode, Verdict

QUIET = {"set": {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}}
PRODUCT = """\
import json


def div(a, b):
    return a // b


def parse(text):
    return json.loads(text)
"""
CHECKS = """\
def product_raises(ctx):
    from pkg.calc import div
    return div(1, 0) == 0


def product_raises_through_the_stdlib(ctx):
    from pkg.calc import parse
    return parse("not json") == {}


def verifier_raises(ctx):
    return {}["missing"]


def verifier_calls_the_stdlib(ctx):
    import json
    return json.loads("not json")


def test_helper_raises(ctx):
    from tests.helper import boom
    return boom()


def product_fine(ctx):
    from pkg.calc import div
    return div(4, 2) == 2
"""
TESTS = """\
from pkg.calc import div


def test_div():
    assert div(4, 2) == 3
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("project")
    for rel, text in {
        "pkg/__init__.py": "",
        "pkg/calc.py": PRODUCT,
        "checks.py": CHECKS,
        "tests/__init__.py": "",
        "tests/helper.py": "def boom():\n    raise RuntimeError('helper broke')\n",
        "tests/test_calc.py": TESTS,
        "tests/test_broken_import.py": "import no_such_module_vgate\n",
        "empty/.keep": "",
        "pytest.ini": "[pytest]\n",
    }.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def run(project: Path, **gate: object) -> tuple[Gate, Verdict]:
    parsed = gate_from_mapping({"id": "g", **gate}, root=project)
    return parsed, run_check(parsed, RunContext(root=project, default_timeout=120))


@pytest.mark.parametrize(
    ("args", "code", "why"),
    [
        ("tests/test_calc.py::test_typo", 4, "usage error"),
        ("--no-such-option tests/test_calc.py", 4, "usage error"),
        ("empty", 5, "no tests were collected"),
        ("tests/test_broken_import.py", 2, "interrupted"),
    ],
    ids=["node-id-typo", "usage", "nothing-collected", "interrupted"],
)
def test_pytest_that_never_answered_is_a_broken_test(
    project: Path, args: str, code: int, why: str
) -> None:
    _, verdict = run(
        project, check=f"{sys.executable} -m pytest -q -p no:cacheprovider {args}", env=QUIET
    )
    assert (verdict.mode, verdict.exit_code) == (Mode.FAIL, code), verdict.stdout + verdict.stderr
    assert verdict.cause is Cause.BROKEN_TEST
    assert why in verdict.detail and "never answered" in verdict.detail


def test_a_python_without_pytest_is_a_broken_test(project: Path) -> None:
    # -S: this real interpreter without its site-packages, so without pytest
    _, verdict = run(project, check=f"{sys.executable} -S -m pytest -q tests", env=QUIET)
    assert (verdict.mode, verdict.exit_code) == (Mode.FAIL, 1)
    assert "No module named pytest" in verdict.stderr
    assert verdict.cause is Cause.BROKEN_TEST and "has no pytest" in verdict.detail


def test_a_failing_test_is_still_the_product(project: Path) -> None:
    _, verdict = run(
        project,
        check=f"{sys.executable} -m pytest -q -p no:cacheprovider tests/test_calc.py",
        env=QUIET,
    )
    assert (verdict.mode, verdict.cause, verdict.exit_code) == (Mode.FAIL, Cause.PRODUCT, 1)
    assert verdict.detail == "exit code 1, expected 0"


def test_an_expected_pytest_exit_code_still_passes(project: Path) -> None:
    _, verdict = run(project, check=f"{sys.executable} -m pytest -q empty", env=QUIET, expect=5)
    assert verdict.ok


@pytest.mark.parametrize(
    ("function", "mode", "cause", "fragment"),
    [
        ("product_raises", Mode.FAIL, Cause.PRODUCT, "raised at pkg/calc.py:5"),
        ("product_raises_through_the_stdlib", Mode.FAIL, Cause.PRODUCT, "pkg/calc.py:9"),
        ("verifier_raises", Mode.ERROR, Cause.BROKEN_TEST, "KeyError"),
        ("verifier_calls_the_stdlib", Mode.ERROR, Cause.BROKEN_TEST, "JSONDecodeError"),
        ("test_helper_raises", Mode.ERROR, Cause.BROKEN_TEST, "helper broke"),
        ("product_fine", Mode.PASS, None, ""),
    ],
)
def test_an_exception_is_the_products_only_when_the_product_raised_it(
    project: Path, function: str, mode: Mode, cause: Cause | None, fragment: str
) -> None:
    gate, verdict = run(project, type="python", verifiers=[f"checks:{function}"])
    assert (verdict.mode, verdict.cause) == (mode, cause), verdict.detail
    assert fragment in verdict.detail
    if mode is Mode.FAIL:  # the product's answer: on a base, a genuine red
        assert is_genuine_red(verdict, gate)[0]
    elif mode is Mode.ERROR:
        assert not is_genuine_red(verdict, gate)[0]


@pytest.mark.parametrize("check", ["''", '""  ""', "# TODO", "  # later"])
def test_checks_that_run_nothing_are_blank(check: str) -> None:
    verdict = run_oracle_check({"check": check})
    assert (verdict.mode, verdict.cause) == (Mode.BLANK, Cause.BROKEN_TEST), verdict.detail
    assert "runs nothing" in verdict.detail


def test_a_product_exception_on_the_base_is_a_genuine_red(
    run_vgate, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """End to end, plain and under -n 2: the base's product raises, the fix answers yes."""
    repo = pytester.path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "__init__.py").write_text("")
    (repo / "pkg" / "calc.py").write_text("def half(x):\n    raise NotImplementedError\n")
    (repo / "checks.py").write_text(
        "def halves(ctx):\n    from pkg.calc import half\n    return half(4) == 2\n"
    )
    (repo / "gates.yaml").write_text(
        "gates:\n  - id: halves\n    type: python\n    verifiers: [checks:halves]\n"
    )
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "half is missing")
    (repo / "pkg" / "calc.py").write_text("def half(x):\n    return x / 2\n")
    git(repo, "commit", "-q", "-am", "half halves")
    monkeypatch.chdir(repo)
    report = pytester.path / "report.json"
    result, cases = run_vgate(
        "gates.yaml", "--vgate", "gates.yaml", "--vgate-base", "HEAD~1",
        "--vgate-report", str(report),
    )  # fmt: skip
    assert result.ret == 0, result.stdout.str()
    assert (cases["halves"]["vgate_mode"], cases["halves"]["vgate_rbg"]) == ("pass", "proven")
    (gate,) = json.loads(report.read_text())["gates"]
    assert (gate["base"]["mode"], gate["base"]["cause"]) == ("fail", "product")
    assert "the code under test raised at pkg/calc.py:2" in gate["base"]["detail"]
