"""End to end: `pytest --vgate-init BASE` writes gates that `--vgate-base BASE` proves.

Real repositories (the bug/fix pair, and a real release pair of more-itertools built from
its two sdists), real pytest sessions for the init and for the proof, plain and -n 2.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
import yaml
from helpers.git_repo import BugFixRepo, git
from helpers.release_pair import SDISTS, make_release_repo, sha256

LEAN = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest")
RELEASE_PAIR = {  # sha256 as published on PyPI
    "more-itertools-9.0.0.tar.gz": (
        "5a6257e40878ef0520b1803990e3e22303a41b5714006c32a3fd8304b26ea1ab"
    ),
    "more-itertools-9.1.0.tar.gz": (
        "cabaa341ad0389ea83c17a94566a53ae4c9d07349861ecb14dc6d0345cf9ac5d"
    ),
}


def init(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(*LEAN, "--vgate-init", *args)


def prove(
    pytester: pytest.Pytester, gates: str, base: str, *extra: str
) -> tuple[pytest.RunResult, dict[str, object]]:
    report = pytester.path / "report.json"
    result = pytester.runpytest_subprocess(
        *LEAN,
        "--vgate",
        gates,
        "--vgate-base",
        base,
        f"--vgate-report={report}",
        "-m",
        "vgate",
        *extra,
    )
    return result, json.loads(report.read_text())


def test_init_then_base_proves_the_new_test(
    pytester: pytest.Pytester, bugfix_on_path: BugFixRepo, dist_args: list[str]
) -> None:
    result = init(pytester, bugfix_on_path.bug_sha)
    assert result.ret == 0, result.stdout.str()
    out = result.stdout.str()
    assert "wrote gates.yaml (1 gate," in out
    assert "python -m pytest -q tests/test_fix.py::test_add" in out  # printed as well
    assert "collected" not in out and "passed" not in out  # no test ran
    data = yaml.safe_load((bugfix_on_path.root / "gates.yaml").read_text())
    assert data["gates"] == [
        {
            "id": "test_add",
            "claim": "add",
            "check": "python -m pytest -q tests/test_fix.py::test_add",
            "overlay": ["tests/test_fix.py"],
        }
    ]
    assert "vgate-init: note:" not in out
    proof, report = prove(pytester, "gates.yaml", bugfix_on_path.bug_sha, *dist_args)
    assert proof.ret == 0, proof.stdout.str()
    assert [(g["id"], g["rbg"]) for g in report["gates"]] == [("test_add", "proven")]  # type: ignore[index]


def test_init_on_a_change_to_tests_only_says_its_gates_cannot_be_red(
    pytester: pytest.Pytester, bugfix_on_path: BugFixRepo
) -> None:
    """more-itertools 5c715d8 ("close the last coverage gaps") changed only tests: every
    gate --vgate-init wrote came out never-red, with no word before."""
    bugfix_on_path.fix_test.write_text(
        bugfix_on_path.fix_test.read_text()
        + "\n\ndef test_add_zero():\n    assert add(2, 0) == 2\n"
    )
    result = init(pytester, "HEAD")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(
        ["vgate-init: note: nothing outside these tests changed since HEAD: *never-red*"]
    )
    proof, report = prove(pytester, "gates.yaml", "HEAD")
    assert proof.ret == 1, proof.stdout.str()
    assert [(g["id"], g["rbg"]) for g in report["gates"]] == [("test_add_zero", "never-red")]  # type: ignore[index]
    (bugfix_on_path.root / "NOTES.txt").write_text("a note\n")
    result = init(pytester, "HEAD", "--vgate-init-force")
    result.stdout.fnmatch_lines(
        [
            "vgate-init: note: outside these tests only files that are not Python changed "
            "since HEAD (NOTES.txt): unless the tests read them, *never-red*"
        ]
    )


def test_init_finds_methods_parametrized_and_unittest_tests_only_where_changed(
    pytester: pytest.Pytester, bugfix_on_path: BugFixRepo
) -> None:
    tests = bugfix_on_path.root / "tests"
    (tests / "test_more.py").write_text(
        textwrap.dedent(
            '''\
            import unittest

            import pytest

            from pkg.mathx import add, neg


            class TestAdd:
                def test_untouched(self):
                    assert neg(1) == -1

                def test_method(self):
                    assert add(1, 1) == 2


            @pytest.mark.parametrize("a", [1, 2])
            def test_param(a):
                assert add(a, 0) == a


            class AddCase(unittest.TestCase):
                def test_unittest(self):
                    """Adding zero keeps the number."""
                    self.assertEqual(add(5, 0), 5)
            '''
        )
    )
    git(bugfix_on_path.repo, "add", "-A")
    git(bugfix_on_path.repo, "commit", "-qm", "more tests")
    # Change some of them in the working tree: the body of one, the decorator of another.
    text = (tests / "test_more.py").read_text()
    text = text.replace("add(1, 1) == 2", "add(1, 2) == 3").replace("[1, 2]", "[1, 2, 3]")
    (tests / "test_more.py").write_text(text + "\n\ndef helper():\n    return 1\n")
    result = init(pytester, "HEAD", "--vgate-init-out", "ci/new-gates.yaml")
    assert result.ret == 0, result.stdout.str()
    data = yaml.safe_load((bugfix_on_path.root / "ci" / "new-gates.yaml").read_text())
    assert data["root"] == ".."
    assert [(g["id"], g["check"].split()[-1]) for g in data["gates"]] == [
        ("TestAdd.test_method", "tests/test_more.py::TestAdd::test_method"),
        ("test_param", "tests/test_more.py::test_param"),
    ]
    # Everything new since the bug: the fix's test and all four of these.
    result = init(pytester, bugfix_on_path.bug_sha, "--vgate-init-out", "all.yaml")
    data = yaml.safe_load((bugfix_on_path.root / "all.yaml").read_text())
    by_id = {g["id"]: g for g in data["gates"]}
    assert list(by_id) == [
        "test_add",
        "TestAdd.test_untouched",
        "TestAdd.test_method",
        "test_param",
        "AddCase.test_unittest",
    ]
    assert by_id["AddCase.test_unittest"]["claim"] == "Adding zero keeps the number."
    assert by_id["test_add"]["overlay"] == ["tests/test_fix.py", "tests/test_more.py"]


def test_init_never_overwrites_without_force(
    pytester: pytest.Pytester, bugfix_on_path: BugFixRepo
) -> None:
    (bugfix_on_path.root / "gates.yaml").write_text("gates: []\n")
    result = init(pytester, bugfix_on_path.bug_sha)
    assert result.ret == 4
    result.stdout.fnmatch_lines(["*gates.yaml exists; pass --vgate-init-force*"])
    assert (bugfix_on_path.root / "gates.yaml").read_text() == "gates: []\n"
    result = init(pytester, bugfix_on_path.bug_sha, "--vgate-init-force")
    assert result.ret == 0
    assert "test_add" in (bugfix_on_path.root / "gates.yaml").read_text()


def test_init_reads_no_untracked_fifo_or_device_and_writes_a_plain_file(
    pytester: pytest.Pytester, bugfix_on_path: BugFixRepo
) -> None:
    """Untracked symlinks to a FIFO and to /dev/zero are not read (the FIFO hung it, the
    device would read without end); the file written has the mode any file gets."""
    import os

    fifo = pytester.path / "fifo"
    os.mkfifo(fifo)
    (bugfix_on_path.root / "tests" / "link_to_fifo").symlink_to(fifo)
    (bugfix_on_path.root / "tests" / "link_to_zero").symlink_to("/dev/zero")
    result = pytester.runpytest_subprocess(
        *LEAN, "--vgate-init", bugfix_on_path.bug_sha, timeout=120
    )
    assert result.ret == 0, result.stdout.str()
    written = bugfix_on_path.root / "gates.yaml"
    assert "test_add" in written.read_text()
    umask = os.umask(0)
    os.umask(umask)
    assert written.stat().st_mode & 0o777 == 0o666 & ~umask


def test_init_refuses_an_output_it_cannot_write_in_one_line(
    pytester: pytest.Pytester, bugfix_on_path: BugFixRepo
) -> None:
    (bugfix_on_path.root / "outdir").mkdir()
    (bugfix_on_path.root / "dangling.yaml").symlink_to(bugfix_on_path.root / "nowhere.yaml")
    for out, force, says in [
        ("outdir", True, "*outdir is a folder; give --vgate-init-out a file name*"),
        ("/proc/vgate-gates.yaml", True, "*cannot write /proc/vgate-gates.yaml*"),
        ("dangling.yaml", False, "*dangling.yaml exists; pass --vgate-init-force*"),
    ]:
        args = [bugfix_on_path.bug_sha, f"--vgate-init-out={out}"]
        result = init(pytester, *args, *(["--vgate-init-force"] if force else []))
        assert result.ret == 4, result.stdout.str()
        result.stdout.fnmatch_lines([says])
        assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert (bugfix_on_path.root / "dangling.yaml").is_symlink()
    assert not (bugfix_on_path.root / "nowhere.yaml").exists()


def test_init_with_nothing_to_gate_writes_nothing(
    pytester: pytest.Pytester, bugfix_on_path: BugFixRepo
) -> None:
    result = init(pytester, "HEAD")
    assert result.ret == 5
    result.stdout.fnmatch_lines(["*no test file changed since HEAD*no gates file written*"])
    assert not (bugfix_on_path.root / "gates.yaml").exists()
    bugfix_on_path.mathx.write_text(bugfix_on_path.mathx.read_text() + "\n")
    bugfix_on_path.fix_test.write_text(bugfix_on_path.fix_test.read_text() + "\n# a comment\n")
    result = init(pytester, "HEAD")
    assert result.ret == 5
    result.stdout.fnmatch_lines(["*1 test file changed since HEAD, but no test function*"])


def test_init_names_changed_test_data_when_no_test_changed(
    pytester: pytest.Pytester, bugfix_on_path: BugFixRepo
) -> None:
    """tomli 9e56735: the fix's new cases are .toml files a parametrized test reads."""
    cases = bugfix_on_path.root / "tests" / "data" / "invalid"
    cases.mkdir(parents=True)
    for name in ("extend-defined-aot", "extend-defined-table"):
        (cases / f"{name}.toml").write_text("a.b = 1\n[a]\n")
    result = init(pytester, "HEAD")
    assert result.ret == 5
    result.stdout.fnmatch_lines(
        [
            "*no test file changed since HEAD (*), but 2 other files under test folders did "
            "(tests/data/invalid/extend-defined-aot.toml, tests/data/invalid/"
            "extend-defined-table.toml): *write its gate by hand*; no gates file written"
        ]
    )


def test_init_reports_a_bad_base_and_a_broken_test_module(
    pytester: pytest.Pytester, bugfix_on_path: BugFixRepo
) -> None:
    result = init(pytester, "no-such-ref")
    assert result.ret == 4
    result.stdout.fnmatch_lines(["*--vgate-init 'no-such-ref' is not a commit*"])
    (bugfix_on_path.root / "tests" / "test_broken.py").write_text("import nowhere_to_be_found\n")
    result = init(pytester, bugfix_on_path.bug_sha)
    assert result.ret == 2
    result.stdout.fnmatch_lines(["*could not collect*test_broken.py*", "*nowhere_to_be_found*"])
    assert not (bugfix_on_path.root / "gates.yaml").exists()


@pytest.fixture
def release_pair(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """more-itertools 9.0.0 -> 9.1.0 as two commits, from the sdists shipped in tests/data."""
    old, new = (SDISTS / name for name in RELEASE_PAIR)
    for path in (old, new):
        assert sha256(path) == RELEASE_PAIR[path.name], f"{path} is not the published sdist"
    repo = make_release_repo(pytester.path, old, new)
    monkeypatch.chdir(repo.root)
    return repo.root


@pytest.mark.slow
def test_release_pair_gates_are_all_proven_without_editing(
    pytester: pytest.Pytester, release_pair: Path, dist_args: list[str]
) -> None:
    """The acceptance: --vgate-init on a real release pair, then every gate is proven and
    kills mutants of the change (the default eight a gate, forked from the batch)."""
    result = init(pytester, "HEAD~1")
    assert result.ret == 0, result.stdout.str()
    gates = yaml.safe_load((release_pair / "gates.yaml").read_text())["gates"]
    assert len(gates) == 13
    assert {g["overlay"][0] for g in gates} == {"tests/test_more.py"}
    assert "SplitAfterTest.test_max_split" in [g["id"] for g in gates]  # the bug fix's test
    proof, report = prove(pytester, "gates.yaml", "HEAD~1", *dist_args)
    assert proof.ret == 0, proof.stdout.str()
    statuses = {g["id"]: g["rbg"] for g in report["gates"]}  # type: ignore[index]
    assert set(statuses.values()) == {"proven"}, statuses
    assert len(statuses) == 13
    tested = {g["id"]: g["discrimination"]["status"] for g in report["gates"]}  # type: ignore[index]
    assert set(tested.values()) == {"discriminating"}, tested
    ways = {m["how"] for g in report["gates"] for m in g["discrimination"]["mutants"]}  # type: ignore[index]
    assert ways == {"fork"}, ways


def test_init_options_are_in_help_and_documented(pytester: pytest.Pytester) -> None:
    help_text = pytester.runpytest_subprocess("--help").stdout.str()
    docs = Path(__file__).resolve().parents[1] / "docs"
    pages = (docs / "quickstart.md").read_text() + (docs / "options.md").read_text()
    for option in ("--vgate-init", "--vgate-init-out", "--vgate-init-force"):
        assert option in help_text, option
        assert f"`{option}" in pages, option
