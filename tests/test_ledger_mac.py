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
