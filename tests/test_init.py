"""The core of --vgate-init: the diff, which tests it touches, and the gates file text."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from helpers.git_repo import git, make_bugfix_repo

from pytest_vgate.evidence.init import (
    Change,
    CollectedTest,
    InitError,
    changed_lines,
    gate_ids,
    humanize,
    is_test_file,
    render_gates_file,
    select_tests,
    write_gates_file,
)
from pytest_vgate.gatesfile import load_gates_file


def test_changed_lines_reads_commits_edits_and_untracked_files(tmp_path: Path) -> None:
    repo = make_bugfix_repo(tmp_path)
    (repo.root / "tests" / "test_new.py").write_text("def test_x():\n    assert 1\n")
    basic = repo.root / "tests" / "test_basic.py"
    basic.write_text(basic.read_text().replace("neg(2) == -2", "neg(3) == -3"))
    change = changed_lines(repo.root, repo.bug_sha)
    assert change.sha == repo.bug_sha
    lines = {Path(p).relative_to(repo.repo).as_posix(): sorted(v) for p, v in change.lines.items()}
    assert lines["tests/test_fix.py"] == [1, 2, 3, 4, 5]  # the fix commit's new test
    assert lines["pkg/mathx.py"] == [2]  # `-` became `+`
    assert lines["tests/test_basic.py"] == [5]  # unstaged edit
    assert lines["tests/test_new.py"] == [1, 2, 3]  # untracked (the trailing newline's row)


def test_a_deleted_line_marks_its_neighbours(tmp_path: Path) -> None:
    repo = make_bugfix_repo(tmp_path)
    fix = repo.fix_test
    fix.write_text("from pkg.mathx import add\n\n\ndef test_add():\n    pass\n    assert 1\n")
    git(repo.repo, "commit", "-qam", "two lines")
    fix.write_text("from pkg.mathx import add\n\n\ndef test_add():\n    assert 1\n")
    change = changed_lines(repo.root, "HEAD")
    assert sorted(change.lines[str(fix)]) == [4, 5]


@pytest.mark.parametrize("ref", ["no-such-ref", "-p"])
def test_a_bad_base_is_an_error_that_names_it(tmp_path: Path, ref: str) -> None:
    repo = make_bugfix_repo(tmp_path)
    with pytest.raises(InitError, match="not a"):
        changed_lines(repo.root, ref)


def test_outside_a_git_tree_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(InitError, match="not inside a git work tree"):
        changed_lines(tmp_path, "HEAD")


def _test(name: str, start: int, end: int, **kw: object) -> CollectedTest:
    cls = kw.get("cls")
    nodeid = f"tests/test_m.py::{cls}::{name}" if cls else f"tests/test_m.py::{name}"
    return CollectedTest(
        nodeid=str(kw.get("nodeid", nodeid)),
        path="/r/tests/test_m.py",
        name=name,
        cls=cls,  # type: ignore[arg-type]
        start=start,
        end=end,
        class_start=int(kw.get("class_start", 0)),  # type: ignore[call-overload]
        class_end=int(kw.get("class_end", 0)),  # type: ignore[call-overload]
        doc=str(kw.get("doc", "")),
    )


def _change(lines: set[int]) -> Change:
    return Change(
        top=Path("/r"), base="B", sha="0" * 40, lines={"/r/tests/test_m.py": frozenset(lines)}
    )


def test_select_folds_parameter_sets_and_keeps_collection_order() -> None:
    tests = [
        _test("test_b", 10, 14, nodeid="tests/test_m.py::test_b[1]"),
        _test("test_b", 10, 14, nodeid="tests/test_m.py::test_b[2]"),
        _test("test_a", 1, 5),
        _test("test_c", 20, 22),
    ]
    chosen = select_tests(tests, _change({11, 2}))
    assert [t.base_nodeid for t in chosen] == ["tests/test_m.py::test_b", "tests/test_m.py::test_a"]


def test_a_class_body_change_outside_its_methods_touches_every_method(tmp_path: Path) -> None:
    source = tmp_path / "test_m.py"
    source.write_text("class T:\n    x = 1\n    # note\n\n    def test_a(self): ...\n")
    tests = [
        CollectedTest("m::T::test_a", str(source), "test_a", "T", 5, 5, 1, 5),
        CollectedTest("m::U::test_b", str(source), "test_b", "U", 9, 9, 8, 9),
    ]
    change = Change(top=tmp_path, base="B", sha="0" * 40, lines={str(source): frozenset({2})})
    assert [t.nodeid for t in select_tests(tests, change)] == ["m::T::test_a"]
    comment_only = Change(top=tmp_path, base="B", sha="0" * 40, lines={str(source): frozenset({3})})
    assert select_tests(tests, comment_only) == []


def test_ids_and_claims_come_from_the_tests() -> None:
    tests = [
        _test("test_empty_reversed", 1, 2, cls="NumericRangeTests"),
        _test("test_basic", 3, 4, cls="A", doc="Adds two numbers.\n\nMore text."),
        _test("test_basic", 5, 6, cls="A", nodeid="tests/other.py::A::test_basic"),
        _test("test_ünïcode", 7, 8),
    ]
    assert gate_ids(tests) == [
        "NumericRangeTests.test_empty_reversed",
        "test_m.A.test_basic",
        "test_m.A.test_basic-2",
        "test_-n-code",
    ]
    assert humanize(tests[0]) == "NumericRangeTests: empty reversed"
    assert humanize(tests[1]) == "Adds two numbers."


def test_a_claim_is_the_docstring_s_first_sentence_wrapped_over_lines() -> None:
    """more-itertools' SlicedTests.test_negative: a summary wrapped over two lines made
    the claim "Negative slice sizes should raise instead of silently"."""
    doc = (
        "Negative slice sizes should raise instead of silently\n"
        "        yielding a wrong result.\n        \n        More text."
    )
    wrapped = _test("test_negative", 1, 2, cls="SlicedTests", doc=doc)
    assert humanize(wrapped) == (
        "Negative slice sizes should raise instead of silently yielding a wrong result."
    )


def test_the_rendered_file_loads_and_runs_each_test_by_node_id(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_m.py").write_text("")
    tests = [_test("test_q", 1, 2, doc='says "quoted": yes # not a comment')]
    tests = [
        CollectedTest(**{**t.to_dict(), "path": str(tmp_path / "tests" / "test_m.py")})
        for t in tests
    ]
    change = Change(top=tmp_path, base="v1.0", sha="a" * 40, lines={})
    text = render_gates_file(
        tests,
        change=change,
        root=tmp_path,
        folder=tmp_path,
        overlay=[str(tmp_path / "tests" / "test_m.py")],
    )
    out = tmp_path / "gates.yaml"
    write_gates_file(out, text, force=False)
    loaded = load_gates_file(out)
    (gate,) = loaded.gates
    assert gate.argv == ("python", "-m", "pytest", "-q", "tests/test_m.py::test_q")
    assert gate.claim == 'says "quoted": yes # not a comment'
    assert gate.overlay == ("tests/test_m.py",)
    assert "--vgate-base v1.0" in text
    with pytest.raises(InitError, match="--vgate-init-force"):
        write_gates_file(out, "gates: []\n", force=False)
    assert load_gates_file(out).gates == loaded.gates  # untouched


def test_a_root_elsewhere_is_written_relative(tmp_path: Path) -> None:
    (tmp_path / "proj").mkdir()
    change = Change(top=tmp_path, base="B", sha="a" * 40, lines={})
    text = render_gates_file(
        [_test("test_a", 1, 2)],
        change=change,
        root=tmp_path / "proj",
        folder=tmp_path / "ci",
        overlay=[],
    )
    assert yaml.safe_load(text)["root"] == "../proj"


@pytest.mark.parametrize(
    ("path", "expected"),
    [("/r/tests/test_a.py", True), ("/r/tests/a_test.py", True), ("/r/pkg/mod.py", False)],
)
def test_test_files_are_found_by_python_files(path: str, expected: bool) -> None:
    assert is_test_file(path, ["test_*.py", "*_test.py"]) is expected


@pytest.mark.parametrize("setting", ["diff.noprefix", "diff.mnemonicPrefix"])
def test_the_users_diff_configuration_does_not_change_the_reading(
    tmp_path: Path, setting: str
) -> None:
    repo = make_bugfix_repo(tmp_path)
    git(repo.repo, "config", setting, "true")
    change = changed_lines(repo.root, repo.bug_sha)
    assert str(repo.fix_test) in change.lines


def test_the_diff_reader_takes_quoted_paths_plus_lines_and_deleted_tests() -> None:
    from pytest_vgate.evidence.init import parse_diff

    diff = (
        '+++ "b/tests/test_tab\\there \\303\\251.py"\n'
        "@@ -1,0 +2,2 @@\n"
        "+++ b/tests/elsewhere.py\n"  # content: an added line that reads `++ b/...`
        "+-- a/x\n"
        "@@ -9,0 +12 @@\n"
        "+    assert x\n"
        "+++ b/tests/test_with space.py\t\n"
        "@@ -10,3 +11,0 @@\n"  # a whole test deleted: no neighbour changed
        "-def test_gone():\n"
        "-    pass\n"
        "-\n"
        "@@ -20 +19,0 @@\n"  # one line of a test deleted: its neighbours changed
        "-    x = 1\n"
    )
    assert parse_diff(diff) == {
        "tests/test_tab\there é.py": {2, 3, 12},
        "tests/test_with space.py": {19, 20},
    }
