"""Ledger records carry a MAC made with the user's key: a line that does not verify (hand
written, or made with another key) is ignored with a warning and proves nothing."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from pytest_vgate.evidence import Ledger
from pytest_vgate.evidence.identity import TreeState
from pytest_vgate.evidence.ledger_key import KEY_DIR_ENV, KEY_FILENAME
from pytest_vgate.evidence.record import make_record
from pytest_vgate.gate.decide import is_genuine_red
from pytest_vgate.gatesfile import Gate
from pytest_vgate.verdict import Mode, Verdict

ARGV = ("python", "-m", "pytest", "-q", "tests/test_basic.py::test_add")
GATE = Gate(id="add-works", claim="add adds", check=" ".join(ARGV), argv=ARGV)
TREE = TreeState(commit="a" * 40, dirty="", label="aaaaaaa", repo="b" * 40)


def record(mode: Mode = Mode.FAIL) -> object:
    verdict = Verdict(mode=mode, exit_code=1 if mode is Mode.FAIL else 0, command=ARGV)
    return make_record(
        GATE, verdict, tree=TREE, inputs_digest="", where="base", base_ref="HEAD~1",
        time="2026-01-01T10:00:00.000000Z", judged=is_genuine_red(verdict, GATE),
    )  # fmt: skip


@pytest.fixture
def key_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "config" / "pytest-vgate"
    monkeypatch.setenv(KEY_DIR_ENV, str(folder))
    return folder


def test_records_round_trip_with_a_mac_and_a_private_key(tmp_path: Path, key_dir: Path) -> None:
    ledger = Ledger(tmp_path / "ledger")
    assert ledger.append([record()]) == []  # type: ignore[list-item]
    (line,) = ledger.file.read_text().splitlines()
    assert len(json.loads(line)["mac"]) == 64
    key = key_dir / KEY_FILENAME
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert stat.S_IMODE(key_dir.stat().st_mode) == 0o700
    records, warnings = ledger.read()
    assert [r.gate_id for r in records] == ["add-works"] and warnings == []


@pytest.mark.parametrize("forgery", ["no-mac", "edited", "other-key"])
def test_a_record_that_does_not_verify_is_ignored_with_a_warning(
    tmp_path: Path, key_dir: Path, monkeypatch: pytest.MonkeyPatch, forgery: str
) -> None:
    ledger = Ledger(tmp_path / "ledger")
    if forgery == "other-key":
        monkeypatch.setenv(KEY_DIR_ENV, str(tmp_path / "someone-else"))
    assert ledger.append([record()]) == []  # type: ignore[list-item]
    monkeypatch.setenv(KEY_DIR_ENV, str(key_dir))
    obj = json.loads(ledger.file.read_text())
    if forgery == "no-mac":  # a hand-written line: the fields of a real record, no MAC
        del obj["mac"]
    elif forgery == "edited":  # a real record's red turned into a proof of another gate
        obj["gate_id"] = "other-gate"
    ledger.file.write_text(json.dumps(obj) + "\n")
    records, warnings = ledger.read()
    assert records == []
    assert len(warnings) == 1 and "ignored 1 record(s)" in warnings[0], warnings
    assert "MAC does not verify" in warnings[0]


def test_repository_identity_survives_a_shallow_clone(tmp_path: Path) -> None:
    """A shallow clone's boundary is no root: a record made in one checkout of the
    repository (full or shallow) is bound in the next, by the commit it names."""
    import dataclasses

    from helpers.git_repo import git

    from pytest_vgate.evidence.identity import tree_state
    from pytest_vgate.evidence.proof import bind_records

    origin = tmp_path / "origin"
    origin.mkdir()
    git(origin, "init", "-q")
    for n in range(3):
        (origin / "f.txt").write_text(str(n))
        git(origin, "add", "-A")
        git(origin, "commit", "-q", "-m", f"c{n}")
    root = git(origin, "rev-list", "--max-parents=0", "HEAD")
    full = tree_state(origin)
    assert full.repo == root
    shallow_a, shallow_b = tmp_path / "a", tmp_path / "b"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{origin}", str(shallow_a))
    (origin / "f.txt").write_text("3")
    git(origin, "commit", "-q", "-am", "c3")
    git(tmp_path, "clone", "-q", "--depth", "2", f"file://{origin}", str(shallow_b))
    made = [make_record(GATE, Verdict(mode=Mode.FAIL, exit_code=1, command=ARGV),
                        tree=tree, inputs_digest="", where="base", base_ref="HEAD~1",
                        time="2026-01-01T10:00:00.000000Z", judged=(True, "exit 1"))
            for tree in (full, tree_state(shallow_a))]  # fmt: skip
    for checkout in (shallow_b, origin):
        kept, notes = bind_records(made, tree_state(checkout), checkout)
        assert len(kept) == 2 and notes == [], (checkout, notes)
    foreign = dataclasses.replace(made[0], tree=dataclasses.replace(full, repo="c" * 40))
    kept, notes = bind_records([foreign], tree_state(origin), origin)
    assert kept == [] and "not bound to this repository" in notes[0]


def _commit(repo: Path, name: str, text: str) -> str:
    from helpers.git_repo import git

    (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", f"{name}: {text}")
    return git(repo, "rev-parse", "HEAD")


def test_identity_survives_shallow_and_deepened_clones_of_a_repository_with_two_roots(
    tmp_path: Path, key_dir: Path
) -> None:
    """A second root merged in (``git subtree add``, a merged repository) is the one a
    shallow checkout reaches, the first the one a full clone names: the records each
    checkout of the repository writes (MAC and all, through the ledger) bind in every
    other, shallow, deepened or whole; another repository's bind in none."""
    from helpers.git_repo import git

    from pytest_vgate.evidence.identity import tree_state
    from pytest_vgate.evidence.proof import bind_records

    origin = tmp_path / "origin"
    origin.mkdir()
    git(origin, "init", "-q", "-b", "main")
    first = _commit(origin, "f.txt", "0")
    for n in (1, 2):
        _commit(origin, "f.txt", str(n))
    git(origin, "checkout", "-q", "--orphan", "vendored")
    git(origin, "rm", "-q", "-rf", ".")
    second, n = _commit(origin, "v.txt", "v0"), 0
    while second < first:  # the full clone names the smaller root: make it the first
        n += 1
        git(origin, "commit", "-q", "--amend", "-m", f"vendored {n}")
        second = git(origin, "rev-parse", "HEAD")
    git(origin, "checkout", "-q", "main")
    git(origin, "merge", "-q", "--allow-unrelated-histories", "-m", "vendor", "vendored")
    _commit(origin, "f.txt", "3")
    checkouts = {"origin": origin}
    for name, depth in (("depth1", "1"), ("depth4", "4")):
        checkouts[name] = tmp_path / name
        git(tmp_path, "clone", "-q", "--depth", depth, f"file://{origin}", str(tmp_path / name))
    assert tree_state(origin).repo == first and tree_state(checkouts["depth4"]).repo == second
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    _commit(other, "g.txt", "another project")

    def written_in(checkout: Path) -> list[object]:
        ledger = Ledger(tmp_path / "ledgers" / checkout.name)
        verdict = Verdict(mode=Mode.FAIL, exit_code=1, command=ARGV)
        tree = tree_state(checkout)
        made = make_record(GATE, verdict, tree=tree, inputs_digest="", where="base",
                           base_ref="HEAD~1", time="2026-01-01T10:00:00Z",
                           judged=(True, "exit 1"))  # fmt: skip
        assert ledger.append([made]) == []
        records, warnings = ledger.read()
        assert warnings == [] and len(records) == 1
        return list(records)

    ours = [r for checkout in checkouts.values() for r in written_in(checkout)]
    theirs = written_in(other)
    stages = ["as cloned", "deepened", "unshallowed"]
    for stage in stages:
        for name, checkout in checkouts.items():
            kept, notes = bind_records([*ours, *theirs], tree_state(checkout), checkout)  # type: ignore[list-item]
            assert kept == ours and len(notes) == 1, (stage, name, notes)
        for name in ("depth1", "depth4"):
            if stage == "as cloned":
                git(checkouts[name], "fetch", "-q", "--deepen", "1")
            elif stage == "deepened":
                git(checkouts[name], "fetch", "-q", "--unshallow")
    assert tree_state(checkouts["depth1"]).repo == first  # whole now: the full clone's name
