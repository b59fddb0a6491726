"""Red-before-green facts: identities, records, the ledger, the change and what runs reached.

Trees come from real git repositories (tests/helpers/git_repo.py); the ledger is real
files, real locks and real concurrent processes.
"""

from __future__ import annotations

import fcntl
import json
import multiprocessing
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from helpers.git_repo import FIX_TEST_ID, BugFixRepo, git, make_bugfix_repo

from pytest_vgate.baseline import BaseWorktree
from pytest_vgate.evidence import (
    NOT_A_GIT_TREE,
    OUTPUT_TAIL,
    Ledger,
    Record,
    TreeState,
    claim_hash,
    fingerprint,
    identity,
    inputs_digest,
    make_record,
    tree_state,
)
from pytest_vgate.evidence import ledger as ledger_mod
from pytest_vgate.evidence.change import Change, compute_change, diff_file
from pytest_vgate.evidence.identity import content_digest, list_tree
from pytest_vgate.evidence.proof import Evidence, bind_records
from pytest_vgate.evidence.reach import (
    CoverageStatus,
    RunReach,
    describe_lines,
    green_reach,
    red_reach,
)
from pytest_vgate.gate.decide import coverage_of, is_genuine_red
from pytest_vgate.gatesfile import EnvSpec, Gate, GateType, RedPolicy
from pytest_vgate.jsonable import JsonShapeError
from pytest_vgate.process.measure import Measured
from pytest_vgate.verdict import Mode, ToolRecord, Verdict

PYTEST_ARGV = ("python", "-m", "pytest", "-q", FIX_TEST_ID)
GATE = Gate(id="add-works", claim="add adds", check=" ".join(PYTEST_ARGV), argv=PYTEST_ARGV)
PASS = Verdict(mode=Mode.PASS, exit_code=0, command=PYTEST_ARGV)
RED = Verdict.failed(Mode.FAIL, "exit 1", exit_code=1, command=PYTEST_ARGV)
NO_TEST = Verdict.failed(Mode.FAIL, "exit 4", exit_code=4, command=PYTEST_ARGV)
TIMEOUT = Verdict.failed(Mode.TIMEOUT, "deadline")
UNITTEST_ARGV = ("python", "-m", "unittest", "-q", "tests.test_more.SlicedTests.test_negative")
NOT_LOADED = (  # python3.11 -m unittest names a method its class does not have
    "E\n======================================================================\n"
    "ERROR: test_negative (unittest.loader._FailedTest.test_negative)\n"
    "----------------------------------------------------------------------\n"
    "AttributeError: type object 'SlicedTests' has no attribute 'test_negative'\n"
)
NOT_LOADED_38 = "ERROR: test_negative (unittest.loader._FailedTest)\n"  # Python 3.8-3.10
UNITTEST_RED = "FAIL: test_even (tests.test_more.SlicedTests.test_even)\nAssertionError: 1 != 2\n"


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> dict[str, TreeState]:
    """The fixed tree (HEAD, clean) and the buggy tree (HEAD with the bug put back)."""
    bugfix = make_bugfix_repo(tmp_path_factory.mktemp("trees"))
    fixed = tree_state(bugfix.root)
    bugfix.reintroduce_bug()
    buggy = tree_state(bugfix.root)
    bugfix.fix_bug()
    return {"fixed": fixed, "buggy": buggy}


def rec(
    verdict: Verdict,
    tree: TreeState,
    *,
    gate: Gate = GATE,
    where: str = "current",
    time: str = "2026-01-01T10:00:00.000000Z",
    inputs: str = "",
) -> Record:
    base_ref = "HEAD~1" if where == "base" else None
    return make_record(
        gate,
        verdict,
        tree=tree,
        inputs_digest=inputs,
        where=where,
        base_ref=base_ref,
        time=time,
        judged=is_genuine_red(verdict, gate),
    )


# --- identity ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "change",
    [
        {"type": GateType.CODE},
        {"argv": ("python", "-m", "pytest", "-q", "tests/test_basic.py")},
        {"expect": (0, 1)},
        {"cwd": "sub"},
        {"env": EnvSpec(pass_names=("HOME",))},
        {"env": EnvSpec(set_values=(("LANG", "C"),))},
        {"tools": ("python",)},
        {"overlay": ("tests/",)},
        {"verifiers": ("checks:first",)},
    ],
)
def test_fingerprint_changes_with_the_check_identity(change: dict[str, object]) -> None:
    assert fingerprint(replace(GATE, **change)) != fingerprint(GATE)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "change",
    [
        {"claim": "something else"},
        {"timeout": 5.0},
        {"root": Path("/elsewhere")},
        {"red": RedPolicy.NOT_REQUIRED},
        {"red_exit": (1,)},
        {"inputs": ("src/**/*.py",)},
        {"stale_at": "2026-01-01T00:00:00Z"},
        {"id": "renamed"},
        {"line": 99},
    ],
)
def test_fingerprint_ignores_what_is_not_the_check(change: dict[str, object]) -> None:
    assert fingerprint(replace(GATE, **change)) == fingerprint(GATE)  # type: ignore[arg-type]


def test_fingerprint_includes_tool_bytes_but_not_tool_paths() -> None:
    gate = replace(GATE, tools=("python",))
    a = fingerprint(gate, [ToolRecord("python", "/usr/bin/python", "aa" * 32)])
    moved = fingerprint(gate, [ToolRecord("python", "/base/.toolchain/python", "aa" * 32)])
    other_bytes = fingerprint(gate, [ToolRecord("python", "/usr/bin/python", "bb" * 32)])
    assert a == moved
    assert a != other_bytes
    assert a != fingerprint(gate)


def test_claim_hash_tells_claims_apart_but_not_whitespace() -> None:
    assert claim_hash("add adds") == claim_hash("  add adds \n")
    assert claim_hash("a\r\nb") == claim_hash("a\nb")
    assert claim_hash("add adds") != claim_hash("add subtracts")
    assert len(claim_hash("")) == 64


def test_tree_state_of_a_clean_and_a_dirty_tree(bugfix: BugFixRepo) -> None:
    clean = tree_state(bugfix.root)
    assert clean.commit == bugfix.fix_sha
    assert (clean.dirty, clean.label) == ("", bugfix.fix_sha[:7])
    bugfix.reintroduce_bug()
    dirty = tree_state(bugfix.root)
    assert dirty.commit == bugfix.fix_sha
    assert dirty.label == f"{bugfix.fix_sha[:7]}+dirty:{dirty.dirty[:4]}"
    assert dirty.key != clean.key
    bugfix.fix_bug()  # the same bytes as HEAD again: the same tree
    assert tree_state(bugfix.root).key == clean.key
    (bugfix.root / "notes.txt").write_text("untracked")
    untracked = tree_state(bugfix.root)
    assert untracked.key not in (clean.key, dirty.key)
    (bugfix.root / "notes.txt").write_text("untracked, other bytes")
    assert tree_state(bugfix.root).key != untracked.key


def test_tree_state_sees_a_mode_change(bugfix: BugFixRepo) -> None:
    clean = tree_state(bugfix.root)
    bugfix.mathx.chmod(0o755)
    assert tree_state(bugfix.root).key != clean.key


def test_tree_state_ignores_caches_bytecode_and_the_ledger(tmp_path: Path) -> None:
    repo = make_bugfix_repo(tmp_path)
    (repo.repo / ".gitignore").write_text("")  # nothing ignored by the user
    git(repo.repo, "commit", "-q", "-am", "no ignores")
    clean = tree_state(repo.root)
    (repo.root / "pkg" / "__pycache__").mkdir()
    (repo.root / "pkg" / "__pycache__" / "mathx.cpython-311.pyc").write_bytes(b"\0\1")
    (repo.root / "stray.pyc").write_bytes(b"\0")
    (repo.root / ".pytest_cache").mkdir()
    (repo.root / ".pytest_cache" / "v").write_text("x")
    assert Ledger.default(repo.root).append([rec(PASS, clean)]) == []
    elsewhere = repo.root / "evidence" / "mine.jsonl"
    assert Ledger(elsewhere).append([rec(PASS, clean)]) == []
    assert tree_state(repo.root, exclude=[elsewhere]).key == clean.key
    assert tree_state(repo.root).key != clean.key  # without exclude the file counts


def test_tree_state_ignores_what_sessions_make_in_a_temp_dir_inside_the_repo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``TMPDIR=$PWD/tmp``: the cells, worktrees and coverage folders a session (this one
    or another running next to it) makes there are not the tree under test; the user's
    own files there still count."""
    import tempfile

    from pytest_vgate.process.cell import CellPool

    repo = make_bugfix_repo(tmp_path)
    temp = repo.root / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    clean = tree_state(repo.root)
    pool = CellPool()
    with pool.cell() as cell:
        (cell / "home" / "notes.txt").write_text("a check's scratch")
        assert cell.parent == temp.resolve()
        assert tree_state(repo.root).key == clean.key
    pool.close()
    (temp / "mine.txt").write_text("the user's")
    assert tree_state(repo.root).key != clean.key


def test_tree_state_outside_git_and_before_the_first_commit(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    state = tree_state(plain)
    assert (state.commit, state.label, state.is_git) == (None, NOT_A_GIT_TREE, False)
    assert tree_state(tmp_path / "missing").label == NOT_A_GIT_TREE
    unborn = tmp_path / "unborn"
    unborn.mkdir()
    git(unborn, "init", "-q")
    (unborn / "a.py").write_text("x = 1\n")
    state = tree_state(unborn)
    assert state.commit is None
    assert state.is_git
    assert state.label.startswith("unborn+dirty:")


def test_tree_state_of_a_subfolder_is_the_repository_state(tmp_path: Path) -> None:
    repo = make_bugfix_repo(tmp_path, subdir="proj")
    (repo.repo / "outside.txt").write_text("changed outside the project")
    assert tree_state(repo.root) == tree_state(repo.repo)
    assert tree_state(repo.root).dirty


def test_inputs_digest(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "src" / "deep").mkdir(parents=True)
    (root / "src" / "a.py").write_text("a")
    (root / "src" / "deep" / "b.py").write_text("b")
    (root / "README").write_text("r")
    assert inputs_digest(root, []) == ""
    first = inputs_digest(root, ["src/**/*.py"])
    assert first
    assert first == inputs_digest(root, ["src/**/*.py"])
    (root / "README").write_text("not an input")
    assert inputs_digest(root, ["src/**/*.py"]) == first
    (root / "src" / "deep" / "b.py").write_text("b2")
    changed = inputs_digest(root, ["src/**/*.py"])
    assert changed != first
    (root / "src" / "c.py").write_text("")
    assert inputs_digest(root, ["src/**/*.py"]) != changed
    secret = tmp_path / "secret.py"
    secret.write_text("outside")
    before = inputs_digest(root, ["src/**/*.py", "../*.py"])
    (root / "src" / "link.py").symlink_to(secret)
    assert inputs_digest(root, ["src/**/*.py", "../*.py"]) == before  # nothing outside read
    assert inputs_digest(root, ["nothing/*"]) != ""


# --- records ----------------------------------------------------------------------------


def test_record_round_trips_through_json(trees: dict[str, TreeState]) -> None:
    big = Verdict.failed(Mode.FAIL, "x", exit_code=1, stdout="o" * 10_000 + "END", stderr="e")
    record = rec(big, trees["buggy"], where="base")
    assert record.stdout.endswith("END")
    assert len(record.stdout) < OUTPUT_TAIL + 64
    cut = 10_003 - OUTPUT_TAIL
    assert record.stdout == f"[... {cut} characters cut ...]\n" + ("o" * 10_000 + "END")[cut:]
    assert record.genuine_red
    assert record.red_reason
    assert record.base_ref == "HEAD~1"
    again = Record.from_dict(json.loads(json.dumps(record.to_dict())))
    assert again == record
    assert again.tree.key == trees["buggy"].key


def test_a_record_keeps_why_a_silent_check_was_red(trees: dict[str, TreeState]) -> None:
    """A Python verifier prints nothing: its red's why is the verdict's detail, which the
    record keeps (its tail); a record written before ``detail`` existed reads as none."""
    gate = Gate(id="v", type=GateType.PYTHON, verifiers=("checks:adds",))
    said = "1 of 1 verifiers failed:\n- checks:adds: fail: add(2, 2) = 0"
    record = rec(Verdict.failed(Mode.FAIL, said), trees["buggy"], gate=gate, where="base")
    assert (record.genuine_red, record.stdout, record.detail) == (True, "", said)
    written = record.to_dict()
    assert Record.from_dict(json.loads(json.dumps(written))) == record
    older = {k: v for k, v in written.items() if k != "detail"}
    assert Record.from_dict(older) == replace(record, detail="")
    long = rec(Verdict.failed(Mode.FAIL, "d" * 10_000 + "END"), trees["buggy"], gate=gate)
    assert long.detail.endswith("END") and len(long.detail) < OUTPUT_TAIL + 64


def test_record_from_dict_rejects_malformed() -> None:
    good = rec(PASS, TreeState("a" * 40, "", "aaaaaaa")).to_dict()
    for broken in (
        {**good, "where": "elsewhere"},
        {**good, "mode": "maybe"},
        {**good, "exit_code": "1"},
        {k: v for k, v in good.items() if k != "gate_id"},
        {**good, "tree": "abc"},
    ):
        with pytest.raises((KeyError, ValueError, TypeError)):
            Record.from_dict(broken)


def test_the_ledger_writer_takes_back_its_own_records_and_decodes_any_other(
    tmp_path: Path,
) -> None:
    """The process that writes the ledger gets the records it made back as made (no decode
    of its own JSON, and a payload's copy edited since does not change the ledger); a
    record from elsewhere (an xdist worker, a merged shard) is decoded strictly."""
    tree = TreeState("a" * 40, "", "aaaaaaa")
    records = [rec(PASS, tree), rec(RED, tree)]
    elsewhere = Evidence(root=tmp_path, ledger=Ledger.default(tmp_path), tree=tree)
    writer = replace(elsewhere, remember_built=True, built={})
    theirs = elsewhere.encode(records)
    ours = writer.encode(records)
    assert list(theirs) == list(ours) == [r.to_dict() for r in records]
    assert elsewhere.built == {}  # a worker keeps nothing
    ours[0]["exit_code"] = "99"  # whatever happened to the payload's copy since
    assert writer.record_of(ours[0]) is records[0]
    assert writer.record_of(ours[1]) is records[1]
    assert writer.built == {}  # each is taken back once
    again = writer.record_of(dict(theirs[1]))  # a copy: decoded, equal
    assert again == records[1] and again is not records[1]
    with pytest.raises(JsonShapeError):
        writer.record_of({**theirs[0], "mode": "maybe"})
    with pytest.raises(JsonShapeError):
        writer.record_of(ours[0])  # taken already: now only its edited JSON is left


# --- the ledger -------------------------------------------------------------------------


def test_ledger_round_trip_in_the_default_location(tmp_path: Path) -> None:
    ledger = Ledger.default(tmp_path)
    assert ledger.file == tmp_path / ".vgate" / "ledger.jsonl"
    assert ledger.read() == ([], [])  # no ledger yet: no evidence, no warning
    tree = TreeState("a" * 40, "", "aaaaaaa")
    first = [rec(RED, tree), rec(PASS, tree, gate=replace(GATE, id="other"))]
    assert ledger.append(first) == []
    assert ledger.append([rec(PASS, tree)]) == []
    records, warnings = ledger.read()
    assert warnings == []
    assert records == [*first, rec(PASS, tree)]
    assert (tmp_path / ".vgate" / ".gitignore").read_text().splitlines()[-1] == "*"
    assert len(ledger.file.read_text().splitlines()) == 3  # one JSON object per line


def test_ledger_path_may_name_the_file(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / "deep" / "evidence.jsonl")
    assert ledger.append([rec(PASS, TreeState(None, "", NOT_A_GIT_TREE, is_git=False))]) == []
    assert ledger.file.is_file()
    assert not (tmp_path / "deep" / ".gitignore").exists()  # not our directory
    assert len(ledger.read()[0]) == 1


def test_garbage_in_the_ledger_keeps_what_parses(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / ".vgate")
    tree = TreeState("a" * 40, "", "aaaaaaa")
    assert ledger.append([rec(RED, tree), rec(PASS, tree)]) == []
    with ledger.file.open("ab") as fh:
        fh.write(b'\x00\xff\xfegarbage\n[1, 2]\n{"gate_id": "x"}\n{"truncated": ')
    assert ledger.append([rec(PASS, tree, time="2026-02-02T00:00:00.000000Z")]) == []
    records, warnings = ledger.read()
    assert [r.mode for r in records] == [Mode.FAIL, Mode.PASS, Mode.PASS]
    assert len(warnings) == 1
    assert str(ledger.file) in warnings[0]
    assert "skipped 4 unreadable line" in warnings[0]


def test_a_directory_where_the_ledger_file_should_be(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path / ".vgate")
    ledger.file.mkdir(parents=True)
    warnings = ledger.append([rec(PASS, TreeState("a" * 40, "", "aaaaaaa"))])
    assert len(warnings) == 1
    assert str(ledger.file) in warnings[0]
    records, warnings = ledger.read()
    assert records == []
    assert len(warnings) == 1
    assert str(ledger.file) in warnings[0]


def test_a_file_where_the_ledger_directory_should_be(tmp_path: Path) -> None:
    (tmp_path / ".vgate").write_text("I am a file")
    ledger = Ledger.default(tmp_path)
    warnings = ledger.append([rec(PASS, TreeState("a" * 40, "", "aaaaaaa"))])
    assert len(warnings) == 1
    assert str(ledger.file) in warnings[0]
    assert "not recorded" in warnings[0]
    assert ledger.read()[0] == []


@pytest.mark.skipif(
    os.geteuid() == 0, reason="root writes through chmod 0o500; see the cases above"
)
def test_a_read_only_ledger_directory(tmp_path: Path) -> None:
    ledger = Ledger.default(tmp_path)
    ledger.file.parent.mkdir()
    ledger.file.parent.chmod(0o500)
    try:
        warnings = ledger.append([rec(PASS, TreeState("a" * 40, "", "aaaaaaa"))])
    finally:
        ledger.file.parent.chmod(0o700)
    assert len(warnings) == 1
    assert str(ledger.file) in warnings[0]


def test_a_locked_ledger_degrades_to_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ledger_mod, "LOCK_WAIT", 0.3)
    ledger = Ledger.default(tmp_path)
    tree = TreeState("a" * 40, "", "aaaaaaa")
    assert ledger.append([rec(RED, tree)]) == []
    holder = os.open(ledger.file, os.O_RDONLY)  # another open file: flock conflicts with it
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        warnings = ledger.append([rec(PASS, tree)])
    finally:
        os.close(holder)
    assert len(warnings) == 1
    assert "locked" in warnings[0]
    assert str(ledger.file) in warnings[0]
    assert ledger.append([rec(PASS, tree)]) == []
    assert [r.mode for r in ledger.read()[0]] == [Mode.FAIL, Mode.PASS]


def _writer(path: str, writer: int, count: int, start: Any) -> None:
    ledger = Ledger(Path(path))
    tree = TreeState("b" * 40, "", "bbbbbbb")
    start.wait(10)
    for i in range(count):
        record = rec(RED, tree, gate=replace(GATE, id=f"w{writer}-{i}"))
        if ledger.append([record]) != []:  # one locked append per record: most contention
            os._exit(3)
    os._exit(0)


def test_two_concurrent_writer_processes_lose_no_record(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    start = ctx.Event()
    path = str(tmp_path / ".vgate")
    procs = [ctx.Process(target=_writer, args=(path, w, 500, start)) for w in (1, 2)]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0]
    records, warnings = Ledger(Path(path)).read()
    assert warnings == []
    ids = sorted(r.gate_id for r in records)
    assert len(ids) == 1000
    assert set(ids) == {f"w{w}-{i}" for w in (1, 2) for i in range(500)}


# -- the change, what runs reached of it, and records bound to the repository ------------

SOURCE = 'def add(a, b):\n    """Sum."""\n    total = (a +\n             b)\n    return total\n'


@pytest.mark.parametrize(
    ("head", "base_lines", "head_lines"),
    [
        (SOURCE.replace('"""Sum."""', '"""The sum."""'), set(), set()),  # docstring only
        (SOURCE.replace("    total", "    # why\n    total"), set(), set()),  # comment only
        (SOURCE.replace("             b)", "             b + 0)"), {3}, {3}),  # inside a statement
        (SOURCE + "\n\ndef sub(a, b):\n    return a - b\n", set(), {8, 9}),  # pure insertion
        (SOURCE.replace("    return total\n", ""), {5}, set()),  # pure deletion
    ],
    ids=["docstring", "comment", "multi-line", "insertion", "deletion"],
)
def test_changed_lines_are_coverage_statements(
    head: str, base_lines: set[int], head_lines: set[int]
) -> None:
    assert diff_file(SOURCE, head)[:2] == (base_lines, head_lines)


def test_change_between_a_base_worktree_and_the_tree(bugfix: BugFixRepo) -> None:
    with BaseWorktree.create(bugfix.root, "HEAD~1", ["tests/"]) as base:
        change = compute_change(base.repo, base.path, base.sha)
    assert change.base_changed == {"pkg/mathx.py": {2}}
    assert change.head_changed == {"pkg/mathx.py": {2}}  # tests/ is on both sides
    assert "pkg/mathx.py" in change.tree and not change.error


def test_what_the_session_listed_once_gives_the_answers_git_gives(bugfix: BugFixRepo) -> None:
    """The session lists the tree once (``list_tree``) and reuses the listing for the
    change, the configuration edits carried onto the base and the base tree's state:
    the same answers as asking git each time."""
    (bugfix.root / "conftest.py").write_text("# an uncommitted configuration edit\n")
    (bugfix.root / "extra.py").write_text("def added():\n    return 1\n")
    listing = list_tree(bugfix.root)
    assert listing is not None and listing.commit
    assert "extra.py" in listing.untracked
    uncommitted = (*listing.changed, *listing.untracked)
    with (
        BaseWorktree.create(bugfix.root, "HEAD~1", ["tests/"]) as asked,
        BaseWorktree.create(bugfix.root, "HEAD~1", ["tests/"], uncommitted=uncommitted) as told,
    ):
        assert asked.config == told.config == ("conftest.py",)
        base_root = told.root_in_base(bugfix.root)
        evidence = Evidence.load(bugfix.root, None, "HEAD~1")
        assert evidence.listing == listing
        assert evidence.base_tree(base_root, told) == tree_state(base_root)
        plain = compute_change(told.repo, told.path, told.sha)
        given = compute_change(told.repo, told.path, told.sha, untracked=listing.untracked)
        assert given == plain and "extra.py" in given.head_changed


def test_paths_that_are_no_part_of_the_tree_are_no_change(bugfix: BugFixRepo) -> None:
    # xdist's copy of pytest in a worker's checkout, a report the session writes: untracked
    # Python files that are neither changed code nor code to plant mutants in.
    copy = bugfix.root / "_pytest"
    copy.mkdir()
    (copy / "__init__.py").write_text("def main():\n    return 0\n")
    (bugfix.root / "own.py").write_text("x = 1\n")
    with BaseWorktree.create(bugfix.root, "HEAD~1", ["tests/"]) as base:
        seen = compute_change(base.repo, base.path, base.sha)
        left = compute_change(
            base.repo, base.path, base.sha, exclude=[copy, bugfix.root / "own.py"]
        )
    assert {"_pytest/__init__.py", "own.py"} <= set(seen.head_changed)
    assert set(left.head_changed) == {"pkg/mathx.py"}


def _change(tmp_path: Path) -> Change:
    return Change(
        head_top=str(tmp_path / "head"),
        base_top=str(tmp_path / "base"),
        head_changed={"m.py": frozenset({2}), "new.py": frozenset({1})},
        base_changed={"m.py": frozenset({2})},
        inserted=frozenset({"grown.py"}),
        tree=frozenset({"m.py", "grown.py"}),
    )


def _ran(root: Path, files: dict[str, set[int]]) -> Measured:
    return Measured(True, {str(root / p): frozenset(ls) for p, ls in files.items()}, processes=1)


def status(change: Change, red: RunReach, green: RunReach) -> CoverageStatus:
    """``vgate_coverage`` as the verdict module gives it for these runs."""
    found = coverage_of(change, red, green)
    assert found is not None
    return found.status


def test_reaching_the_change(tmp_path: Path) -> None:
    change = _change(tmp_path)
    base, head = tmp_path / "base", tmp_path / "head"
    red = red_reach(change, _ran(base, {"m.py": {1, 2}}))
    green = green_reach(change, _ran(head, {"m.py": {1, 2}}))
    assert red.reached and green.reached and red.executed == {"m.py": {2}}
    assert status(change, red, green) is CoverageStatus.COVERS
    missed = red_reach(change, _ran(base, {"m.py": {1}}))
    assert not missed.reached
    assert status(change, missed, green) is CoverageStatus.PARTIAL
    nothing = green_reach(change, _ran(head, {}))
    assert status(change, missed, nothing) is CoverageStatus.MISSES
    # A file changed by pure insertion is reached by executing it on the base at all.
    assert red_reach(change, _ran(base, {"grown.py": {1}})).reached
    unmeasured = red_reach(change, Measured(False, reason="no Python"))
    assert status(change, unmeasured, green) is CoverageStatus.UNMEASURED
    empty = Change(head_top=change.head_top, base_top=change.base_top)
    assert status(empty, red, green) is CoverageStatus.NO_CHANGE


def test_a_base_run_that_executed_the_current_tree_is_contaminated(tmp_path: Path) -> None:
    change = _change(tmp_path)
    leak = _ran(tmp_path / "head", {"m.py": {1, 2}, "venv_file.py": {1}})
    red = red_reach(change, leak)
    assert red.contaminated == ("m.py",) and not red.reached  # only the tree's own files


def test_describe_lines_shows_a_few_then_a_count() -> None:
    changed = {"a.py": frozenset(range(1, 10))}
    text = describe_lines({"a.py": frozenset({1})}, changed, limit=3)
    assert text == "executed a.py:1; missed a.py:2, a.py:3, a.py:4 and 5 more"


def test_records_are_bound_to_the_repository_and_its_commits(bugfix: BugFixRepo) -> None:
    tree = tree_state(bugfix.root)
    assert tree.repo == bugfix.bug_sha  # the root commit
    ours = make_record(GATE, RED, tree=tree, inputs_digest="", judged=is_genuine_red(RED, GATE))
    forged = replace(ours, tree=replace(tree, commit="e" * 40))
    borrowed = replace(ours, tree=replace(tree, repo="f" * 40))
    # Made in a shallow clone, which cannot name its root: bound by its commit alone.
    shallow = replace(ours, tree=replace(tree, repo=None))
    kept, notes = bind_records([ours, forged, borrowed, shallow], tree, bugfix.root)
    assert kept == [ours, shallow]
    assert any("1 record(s) not bound to this repository" in n for n in notes)
    assert any("1 record(s) naming a commit this repository does not have" in n for n in notes)


def test_a_digest_remembered_for_a_file_notices_every_write(bugfix: BugFixRepo) -> None:
    """A file's digest is remembered by its stat for the session's later gates; a write of
    the same size with its times set back is still noticed: its ctime moved."""
    path = bugfix.fix_test
    text, stat = path.read_text(), os.stat(path)
    time.sleep(identity._SETTLED_NS / 1e9 + 0.01)  # its last write is now settled
    first = content_digest(GATE, bugfix.root)
    assert any(key[0] == str(path) for key in identity._DIGESTS)  # remembered
    assert content_digest(GATE, bugfix.root) == first
    path.write_text(text[:-1] + "#")  # the same size, other bytes, the same times
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert os.stat(path).st_size == stat.st_size
    assert content_digest(GATE, bugfix.root) != first


def test_a_file_written_just_now_is_not_remembered(bugfix: BugFixRepo) -> None:
    """A file written twice within the file system's clock tick may keep its ctime: its
    digest is remembered only once its last write is older than that."""
    path = bugfix.fix_test
    path.write_text(path.read_text() + "# more\n")
    content_digest(GATE, bugfix.root)
    assert not any(key[0] == str(path) for key in identity._DIGESTS)


def test_content_digest_covers_named_files_and_the_overlay(bugfix: BugFixRepo) -> None:
    before = content_digest(GATE, bugfix.root)
    assert before  # the argv names tests/test_fix.py
    bugfix.fix_test.write_text(bugfix.fix_test.read_text() + "# more\n")
    assert content_digest(GATE, bugfix.root) != before
    overlaid = replace(GATE, argv=("python", "-c", "pass"), overlay=("tests/",))
    plain = replace(GATE, argv=("python", "-c", "pass"))
    assert content_digest(plain, bugfix.root) == ""
    assert content_digest(overlaid, bugfix.root) != ""
    assert fingerprint(GATE, (), "a") != fingerprint(GATE, (), "b")
