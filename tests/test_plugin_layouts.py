"""End to end: the first hour on real project shapes, in real sessions on real repos.

A check may be a long inline program; a src-layout project works in the two documented
commands without an install; the advice a failed gate gives, followed, proves it.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
import yaml
from helpers.git_repo import BugFixRepo, git, make_bugfix_repo

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


# -- src layouts, no install ---------------------------------------------------------------

BUGGY_SHAPES = (
    "def area(w, h):\n    return w + h\n\n\ndef perimeter(w, h):\n    return 2 * (w + h)\n"
)
FIXED_SHAPES = BUGGY_SHAPES.replace("return w + h", "return w * h")
OLD_TEST = (
    "from shapes import perimeter\n\n\ndef test_perimeter():\n    assert perimeter(1, 2) == 6\n"
)
NEW_TEST = (
    "from shapes import area\n\n\n"
    'def test_area():\n    """area multiplies its sides."""\n    assert area(2, 3) == 6\n'
)


@pytest.fixture
def src_pair(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A src-layout release pair, never installed: the base commit has the bug, HEAD the
    fix and its new test. No pytest configuration names `src`."""
    root = pytester.path / "shapes"
    (root / "src" / "shapes").mkdir(parents=True)
    (root / "tests").mkdir()
    git(root, "init", "-q")
    (root / ".gitignore").write_text("__pycache__/\n.pytest_cache/\n")
    (root / "pyproject.toml").write_text('[project]\nname = "shapes"\nversion = "1.0"\n')
    (root / "src" / "shapes" / "__init__.py").write_text(BUGGY_SHAPES)
    (root / "tests" / "test_perimeter.py").write_text(OLD_TEST)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "shapes 1.0")
    (root / "src" / "shapes" / "__init__.py").write_text(FIXED_SHAPES)
    (root / "tests" / "test_area.py").write_text(NEW_TEST)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "shapes 1.1: area multiplies")
    monkeypatch.chdir(root)
    monkeypatch.delenv("PYTHONPATH", raising=False)
    return root


def test_a_src_layout_works_in_the_two_documented_commands(
    pytester: pytest.Pytester, src_pair: Path
) -> None:
    result = pytester.runpytest_subprocess(*LEAN, "--vgate-init", "HEAD~1")
    out = result.stdout.str()
    assert result.ret == 0, out
    assert "the tests import the project from src (it is not installed)" in out
    (next_line,) = [line for line in out.splitlines() if line.startswith("next: ")]
    argv = shlex.split(next_line[len("next: ") :])
    assert argv[:6] == ["pytest", "--vgate", "gates.yaml", "--vgate-base", "HEAD~1", "--vgate-only"]
    assert argv[6:] == ["-n", "auto"]
    text = (src_pair / "gates.yaml").read_text()
    assert 'env: {set: {PYTHONPATH: "src"}}' in text
    report = pytester.path / "report.json"
    proof = pytester.runpytest_subprocess(*LEAN, *argv[1:], f"--vgate-report={report}")
    assert proof.ret == 0, proof.stdout.str()
    (gate,) = json.loads(report.read_text())["gates"]
    assert (gate["id"], gate["rbg"]) == ("test_area", "proven")


def test_an_uncommitted_config_edit_reaches_the_base_run(
    pytester: pytest.Pytester, src_pair: Path, dist_args: list[str]
) -> None:
    """`pythonpath = ["src"]` added to pyproject.toml and not committed: the base worktree
    gets the edit, as an overlay file, and the header says so."""
    pyproject = src_pair / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text() + '\n[tool.pytest.ini_options]\npythonpath = ["src"]\n'
    )
    (src_pair / "gates.yaml").write_text(
        "gates:\n  - id: area\n    check: python -m pytest -q tests/test_area.py\n"
        "    overlay: [tests/test_area.py]\n"
    )
    result, gates = prove(pytester, "gates.yaml", "HEAD~1", *dist_args)
    out = result.stdout.str()
    assert "overlay tests/test_area.py; uncommitted edits of pyproject.toml carried on" in out
    assert result.ret == 0, out
    assert gates["area"]["rbg"] == "proven"


# -- init sees what pytest sees ------------------------------------------------------------

MIXIN = """\
from pkg.mathx import add, neg


class Mixin:
    def test_neg_twice(self):
        assert neg(neg(1)) == 1
"""
ADDED_TO_MIXIN = '''

    def test_add(self):
        """add adds."""
        assert add(2, 3) == 5
'''


def init(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(*LEAN, "--vgate-init", *args)


def test_a_test_added_to_a_mixin_gets_a_gate_in_every_collecting_class(
    pytester: pytest.Pytester, bugfix: BugFixRepo, dist_args: list[str]
) -> None:
    """Three classes in three files inherit the mixin in tests/__init__.py; the change
    touches the mixin, the code and one of the three test files."""
    root = bugfix.root
    git(root, "checkout", "-q", bugfix.bug_sha)
    (root / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
    (root / "tests" / "__init__.py").write_text(MIXIN)
    for name in ("one", "two", "three"):
        (root / "tests" / f"test_{name}.py").write_text(
            f"from tests import Mixin\n\n\nclass Test{name.title()}(Mixin):\n    pass\n"
        )
    git(root, "add", "-A")
    git(root, "commit", "-qm", "a mixin and three classes")
    base = git(root, "rev-parse", "HEAD")
    bugfix.fix_bug()
    (root / "tests" / "__init__.py").write_text(MIXIN + ADDED_TO_MIXIN)
    one = root / "tests" / "test_one.py"
    one.write_text(one.read_text() + "\n\n# the one test file the change touches\n")
    result = init(pytester, base)
    assert result.ret == 0, result.stdout.str()
    data = yaml.safe_load((root / "gates.yaml").read_text())
    assert [(g["id"], g["check"].split()[-1]) for g in data["gates"]] == [
        ("TestOne.test_add", "tests/test_one.py::TestOne::test_add"),
        ("TestThree.test_add", "tests/test_three.py::TestThree::test_add"),
        ("TestTwo.test_add", "tests/test_two.py::TestTwo::test_add"),
    ]
    assert all("tests/__init__.py" in g["overlay"] for g in data["gates"])
    result, gates = prove(pytester, "gates.yaml", base, "--vgate-only", *dist_args)
    assert result.ret == 0, result.stdout.str()
    assert {k: g["rbg"] for k, g in gates.items()} == dict.fromkeys(
        ["TestOne.test_add", "TestThree.test_add", "TestTwo.test_add"], "proven"
    )


def test_a_deleted_test_gives_its_neighbour_no_gate_and_a_doctest_is_named(
    pytester: pytest.Pytester, bugfix: BugFixRepo
) -> None:
    basic = bugfix.root / "tests" / "test_basic.py"
    basic.write_text(
        basic.read_text() + "\n\ndef test_gone():\n    assert neg(0) == 0\n\n\n"
        "def test_after():\n    assert neg(-1) == 1\n"
    )
    bugfix.mathx.write_text(
        bugfix.mathx.read_text().replace(
            "def neg(a):\n", 'def neg(a):\n    """\n    >>> neg(1)\n    -1\n    """\n'
        )
    )
    git(bugfix.repo, "commit", "-qam", "more")
    basic.write_text(
        basic.read_text().replace("def test_gone():\n    assert neg(0) == 0\n\n\n", "")
    )
    bugfix.mathx.write_text(
        bugfix.mathx.read_text().replace(">>> neg(1)\n    -1", ">>> neg(2)\n    -2")
    )
    (bugfix.root / "tests" / "test_new.py").write_text("def test_new():\n    assert True\n")
    result = init(pytester, "HEAD")
    out = result.stdout.str()
    assert result.ret == 0, out
    data = yaml.safe_load((bugfix.root / "gates.yaml").read_text())
    assert [g["id"] for g in data["gates"]] == ["test_new"]
    assert (
        "vgate-init: note: the change touches a doctest at pkg/mathx.py:7, which init does "
        "not gate; give it a gate of its own with "
        "`check: python -m pytest -q --doctest-modules pkg/mathx.py`"
    ) in out


ODD_FILES = ["test_with space.py", "test_tab\there.py", 'test_"quoted".py', "test_ünïcödé.py"]
ODD_BODY = '''

def test_odd_{n}():
    """Odd {n}: DEL \\x7f, C1 \\x85\\x9f and a lone surrogate \\udcff in the docstring."""
    assert True
'''
PLUS_LINES = '''\
TEXT = """
++ b/tests/elsewhere.py
"""


def test_keep():
    assert TEXT
'''


def test_init_takes_any_path_docstring_line_and_id(
    pytester: pytest.Pytester, bugfix: BugFixRepo
) -> None:
    tests = bugfix.root / "tests"
    for name in ODD_FILES:
        (tests / name).write_text("def test_placeholder():\n    assert True\n")
    (tests / "test_plus.py").write_text(PLUS_LINES.replace("++ b/tests/elsewhere.py\n", ""))
    (tests / "test_a::b.py").write_text("def test_placeholder():\n    assert True\n")
    git(bugfix.repo, "add", "-A")
    git(bugfix.repo, "commit", "-qm", "odd files")
    for n, name in enumerate(ODD_FILES):
        (tests / name).write_text((tests / name).read_text() + ODD_BODY.format(n=n))
    # An added line reading `++ b/…` is content; the hunk after it is still this file's.
    (tests / "test_plus.py").write_text(
        PLUS_LINES + "\n\ndef test_after_plus():\n    assert TEXT.strip()\n"
    )
    (tests / "test_ids.py").write_text(
        "import pytest\n\n\n"
        '@pytest.mark.parametrize("x", [1, 2], ids=["a::b", "c::d[e]"])\n'
        "def test_param(x):\n    assert x\n"
    )
    (tests / "test_a::b.py").write_text("def test_colons():\n    assert True\n")
    result = init(pytester, "HEAD")
    out = result.stdout.str()
    assert result.ret == 0, out
    assert "no gate for 'tests/test_a::b.py::test_colons': its file name holds `::`" in out
    written = bugfix.root / "gates.yaml"
    data = yaml.safe_load(written.read_text())
    checks = {g["id"]: shlex.split(g["check"])[-1] for g in data["gates"]}
    assert checks == {
        "test_odd_0": "tests/test_with space.py::test_odd_0",
        "test_odd_1": "tests/test_tab\there.py::test_odd_1",
        "test_odd_2": 'tests/test_"quoted".py::test_odd_2',
        "test_odd_3": "tests/test_ünïcödé.py::test_odd_3",
        "test_after_plus": "tests/test_plus.py::test_after_plus",
        "test_param": "tests/test_ids.py::test_param",
    }
    claim = next(g["claim"] for g in data["gates"] if g["id"] == "test_odd_0")
    assert claim == "Odd 0: DEL , C1 and a lone surrogate \ufffd in the docstring."
    # The file loads, and each gate runs exactly the tests it names.
    report = pytester.path / "report.json"
    run = pytester.runpytest_subprocess(
        *LEAN, "--vgate", "gates.yaml", "--vgate-only", f"--vgate-report={report}"
    )
    assert run.ret == 0, run.stdout.str()
    gates = {g["id"]: g for g in json.loads(report.read_text())["gates"]}
    ran = {k: g["stdout"].strip().splitlines()[-1].split(" in ")[0] for k, g in gates.items()}
    assert ran == {k: "2 passed" if k == "test_param" else "1 passed" for k in checks}


# -- advice that is right: follow it and the gate is proven --------------------------------


def follow_advice(out: str, gates_file: Path, gate_id: str) -> str:
    """Apply the `what to do:` line's gates-file snippet (`key: value`) to the gate.

    Read from the failure report: under CI (the ``CI`` variable set), pytest's short
    summary repeats a failure's whole text."""
    report = out.split("short test summary info")[0]
    (line,) = [row for row in report.splitlines() if row.startswith("what to do: ")]
    snippets = [s for s in re.findall(r"`([^`]+)`", line) if re.match(r"^[a-z_]+: ", s)]
    assert snippets, line
    data = yaml.safe_load(gates_file.read_text())
    (gate,) = [g for g in data["gates"] if g["id"] == gate_id]
    gate.update(yaml.safe_load(snippets[-1]))
    gates_file.write_text(yaml.safe_dump(data))
    return line


def prove_following_the_advice(
    pytester: pytest.Pytester, gates_file: Path, base: str, dist_args: list[str]
) -> tuple[str, str]:
    """Run, check the gate is not proven, follow the advice, run again: (advice, status)."""
    result, gates = prove(pytester, gates_file.name, base, "--vgate-only", *dist_args)
    ((gate_id, first),) = gates.items()
    assert result.ret == 1 and first["rbg"] in ("weak-red", "never-red"), result.stdout.str()
    line = follow_advice(result.stdout.str(), gates_file, gate_id)
    result, gates = prove(pytester, gates_file.name, base, "--vgate-only", *dist_args)
    assert result.ret == 0, f"{line}\n{result.stdout.str()}"
    return line, str(gates[gate_id]["rbg"])


def test_advice_for_a_test_missing_on_the_base_names_its_file(
    pytester: pytest.Pytester, bugfix: BugFixRepo, dist_args: list[str]
) -> None:
    gates = bugfix.root / "gates.yaml"
    gates.write_text(
        "gates:\n  - id: add\n    check: python -m pytest -q tests/test_fix.py::test_add\n"
    )
    line, status = prove_following_the_advice(pytester, gates, bugfix.bug_sha, dist_args)
    assert "`overlay: [tests/test_fix.py]`" in line
    assert status == "proven"


def test_advice_for_a_test_helper_missing_on_the_base_carries_it(
    pytester: pytest.Pytester, bugfix: BugFixRepo, dist_args: list[str]
) -> None:
    tests = bugfix.root / "tests"
    (tests / "helpers_math.py").write_text("def five():\n    return 5\n")
    (tests / "test_five.py").write_text(
        "from helpers_math import five\n\nfrom pkg.mathx import add\n\n\n"
        "def test_five():\n    assert add(2, 3) == five()\n"
    )
    gates = bugfix.root / "gates.yaml"
    gates.write_text(
        "gates:\n  - id: five\n    check: python -m pytest -q tests/test_five.py\n"
        "    overlay: [tests/test_five.py]\n"
    )
    line, status = prove_following_the_advice(pytester, gates, bugfix.bug_sha, dist_args)
    assert "could not import 'helpers_math'" in line
    assert "`overlay: [tests/test_five.py, tests/helpers_math.py]`" in line
    assert status == "proven"


def test_advice_for_a_project_the_base_cannot_import_sets_its_path(
    pytester: pytest.Pytester, src_pair: Path, dist_args: list[str]
) -> None:
    """The change itself configures `pythonpath = ["src"]` (committed): the base revision
    has no such configuration, so its runs cannot import the project."""
    pyproject = src_pair / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text() + '\n[tool.pytest.ini_options]\npythonpath = ["src"]\n'
    )
    git(src_pair, "commit", "-qam", "pythonpath")
    gates = src_pair / "gates.yaml"
    gates.write_text(
        "gates:\n  - id: area\n    check: python -m pytest -q tests/test_area.py\n"
        "    overlay: [tests/test_area.py]\n"
    )
    line, status = prove_following_the_advice(pytester, gates, "HEAD~2", dist_args)
    assert "could not import 'shapes': this tree has it in src/shapes" in line
    assert "overlay" not in line.split("; add")[-1]
    assert "`env: {set: {PYTHONPATH: src}}`" in line
    assert status == "proven"


def test_advice_for_a_guard_is_the_line_that_declares_it(
    pytester: pytest.Pytester, bugfix: BugFixRepo, dist_args: list[str]
) -> None:
    gates = bugfix.root / "gates.yaml"
    gates.write_text("gates:\n  - id: neg\n    check: python -m pytest -q tests/test_basic.py\n")
    line, status = prove_following_the_advice(pytester, gates, bugfix.bug_sha, dist_args)
    assert "add the line `red: not-required` to the gate `neg`" in line
    assert status == "regression"


# -- gates first ---------------------------------------------------------------------------


def test_vgate_cite_alone_checks_the_document_without_the_suite(
    pytester: pytest.Pytester, dist_args: list[str]
) -> None:
    pytester.makepyfile(
        test_broken="import no_such_module\n",
        test_other="def test_other():\n    raise AssertionError('the suite ran')\n",
    )
    pytester.makefile(".md", answer="- test_other.py:1 defines `test_other`\n")
    result = pytester.runpytest_subprocess(*LEAN, "--vgate-cite", "answer.md", *dist_args)
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=1)
    # Test paths named too: those run as well.
    both = pytester.runpytest_subprocess(
        *LEAN, "--vgate-cite", "answer.md", "test_other.py", *dist_args
    )
    both.assert_outcomes(passed=1, failed=1)


# -- readability -----------------------------------------------------------------------------


def test_the_base_runs_decisive_lines_carry_no_colour_codes(
    pytester: pytest.Pytester, bugfix: BugFixRepo
) -> None:
    """The project forces `--color=yes`: its checks' pytest colours what it prints (run
    alone: a batch's output is its reporter's, not pytest's terminal)."""
    (bugfix.root / "pytest.ini").write_text("[pytest]\naddopts = --color=yes\n")
    git(bugfix.repo, "commit", "-qam", "colour")
    gates = bugfix.root / "gates.yaml"
    gates.write_text("gates:\n  - id: neg\n    check: python -m pytest -q tests/test_basic.py\n")
    result, report = prove(pytester, "gates.yaml", "HEAD", "--vgate-only", "--vgate-batch=off")
    assert report["neg"]["rbg"] == "never-red"
    assert "\x1b[" in str(report["neg"]["stdout"])  # the check's own output, as it was
    out = result.stdout.str()
    decisive = out.split("base output (decisive lines):\n", 1)[1].split("what to do:")[0]
    assert "1 passed" in decisive
    assert "[0m" not in decisive and "\x1b" not in decisive, repr(decisive)  # shown as `?[0m`


@pytest.mark.parametrize("rootdir", [[], ["--rootdir=."]], ids=["found", "given"])
def test_a_gates_file_outside_the_rootdir_has_one_name_everywhere(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    rootdir: list[str],
    dist_args: list[str],
) -> None:
    project = pytester.path / "proj"
    (project / "tests").mkdir(parents=True)
    (project / "pytest.ini").write_text("[pytest]\n")
    (project / "tests" / "test_a.py").write_text("def test_a():\n    pass\n")
    bench = pytester.path / "bench"
    bench.mkdir()
    (bench / "gates.yaml").write_text(
        'gates:\n  - id: g\n    check: python -c "raise SystemExit(1)"\n    red: not-required\n'
    )
    monkeypatch.chdir(project)
    result = pytester.runpytest_subprocess(
        *LEAN, "--vgate", "../bench/gates.yaml", "-rf", *rootdir, *dist_args
    )
    assert result.ret == 1
    named = [line for line in result.stdout.lines if "gates.yaml" in line]
    assert any(line.startswith("vgate: ../bench/gates.yaml (1 gate)") for line in named), named
    assert any(line.startswith("  ../bench/gates.yaml::g: fail") for line in named), named
    assert any(line.startswith("FAILED ../bench/gates.yaml::g") for line in named), named
    others = [line for line in named if "../bench/gates.yaml" not in line and "gates.yaml" in line]
    assert not others, others
