"""What one process knows for red before green: the session's evidence (``Evidence``), a
gate's runs (``Series``) and the files its check names that the base lacks or holds
otherwise. Pure core; ``gate/decide.py`` decides.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_vgate.evidence import (
    NO_GIT,
    Ledger,
    Record,
    TreeState,
    tree_state,
)
from pytest_vgate.evidence.change import Change, compute_change
from pytest_vgate.evidence.identity import Listing, commits_here, list_tree, named_files
from pytest_vgate.evidence.record import Where
from pytest_vgate.gatesfile import Gate
from pytest_vgate.process.regular import read_regular
from pytest_vgate.verdict import Verdict

if TYPE_CHECKING:
    from pytest_vgate.baseline import BaseWorktree


@dataclass
class Evidence:
    """Session-wide evidence of one gates root, loaded once per process."""

    root: Path
    ledger: Ledger
    tree: TreeState
    history: dict[str, list[Record]] = field(default_factory=dict)  # by gate id
    warnings: list[str] = field(default_factory=list)
    base_ref: str | None = None
    base_trees: dict[str, TreeState] = field(default_factory=dict)  # worktree path -> state
    changes: dict[str, Change] = field(default_factory=dict)  # worktree path -> change
    # Paths no part of the tree: the session's own files, xdist's copies of pytest.
    not_the_tree: tuple[Path, ...] = ()
    listing: Listing | None = None  # git's listing of the tree, where this process took it
    # In the process that writes the ledger (``remember_built``): each record's JSON object
    # as ``encode`` made it, by id, with the record (see ``record_of``).
    remember_built: bool = False
    built: dict[int, tuple[dict[str, Any], Record]] = field(default_factory=dict, repr=False)

    @classmethod
    def load(
        cls,
        root: Path,
        ledger_path: Path | None,
        base_ref: str | None,
        tree: TreeState | None = None,
        exclude: Sequence[Path] = (),
    ) -> Evidence:
        """Read the ledger; ``tree`` is the controller's view of the tree, when there is one.

        ``exclude``: files the session writes itself (junit, JSON report), which never
        change the tree's identity. Records not bound to this repository are dropped.
        """
        ledger = Ledger(ledger_path) if ledger_path is not None else Ledger.default(root)
        records, warnings = ledger.read()
        not_the_tree = (ledger.file, *exclude)
        listing = None
        if tree is None:
            listing = list_tree(root)
            tree = tree_state(root, exclude=not_the_tree, listing=listing) if listing else NO_GIT
        kept, dropped = bind_records(records, tree, root)
        history: dict[str, list[Record]] = {}
        for record in kept:
            history.setdefault(record.gate_id, []).append(record)
        return cls(
            root=root,
            ledger=ledger,
            tree=tree,
            history=history,
            warnings=[*warnings, *(ledger.warning(text) for text in dropped)],
            base_ref=base_ref,
            not_the_tree=not_the_tree,
            listing=listing,
        )

    def encode(self, records: Sequence[Record]) -> tuple[dict[str, Any], ...]:
        """The records' JSON objects, as a gate's payload carries them to the ledger's
        writer; in that process each is remembered with its record (``record_of``)."""
        out = tuple(record.to_dict() for record in records)
        if self.remember_built:
            for data, record in zip(out, records, strict=True):
                self.built[id(data)] = (data, record)
        return out

    def record_of(self, data: object) -> Record:
        """The record a payload's JSON object stands for. One ``encode`` made in this
        process is taken back as the record it was made from (whatever happened to the
        payload's copy since: the ledger keeps what was observed); any other (a worker's,
        a merged shard's) is decoded, strictly (``JsonShapeError`` if it does not fit)."""
        hit = self.built.pop(id(data), None)
        if hit is not None and hit[0] is data:
            return hit[1]
        return Record.from_dict(data)

    def base_tree(self, base_root: Path, base: BaseWorktree | None = None) -> TreeState:
        """The state of a base worktree (``base``: the one checked out there, whose top
        and commit need not be asked of git)."""
        key = str(base_root)
        if key not in self.base_trees:
            known = list_tree(base_root, top=base.path, commit=base.sha) if base else None
            self.base_trees[key] = tree_state(base_root, listing=known)
        return self.base_trees[key]

    def change_for(self, base: BaseWorktree) -> Change:
        """The change from this base worktree to the current tree, computed once."""
        key = str(base.path)
        if key not in self.changes:
            listed = self.listing
            self.changes[key] = compute_change(
                base.repo,
                base.path,
                base.sha,
                exclude=self.not_the_tree,
                untracked=listed.untracked if listed is not None else None,
            )
        return self.changes[key]


def bind_records(
    records: Iterable[Record], tree: TreeState, root: Path
) -> tuple[list[Record], list[str]]:
    """Keep the records of this repository that name a commit it has; say what was dropped.

    A record's identity (the root commit its checkout reached; None when a shallow one
    reached none) must be a root here: any one, as a repository may have several and the
    one a checkout reaches moves with its depth. A shallow clone also keeps one it cannot
    see (beyond its boundary), bound by its commit alone. Outside git nothing is dropped
    (the ledger cannot prove anything there anyway).
    """
    records = list(records)
    if not tree.is_git or not records:
        return records, []
    found = commits_here(root, [x or "" for r in records for x in (r.tree.commit, r.tree.repo)])
    if found is None:
        return [], [f"git could not check the {len(records)} records' commits; none is used"]
    known, roots = found
    ours = [r for r in records if r.tree.repo is None or r.tree.repo in roots]
    kept = [r for r in ours if r.tree.commit in known]
    unknown = [r for r in ours if r.tree.commit not in known]
    notes = []
    if len(ours) < len(records):
        notes.append(
            f"ignored {len(records) - len(ours)} record(s) not bound to this repository (no "
            "root commit of it): copied from another repository, or written by hand"
        )
    if unknown:
        shown = ", ".join(sorted({(r.tree.commit or "none")[:12] for r in unknown})[:3])
        notes.append(
            f"ignored {len(unknown)} record(s) naming a commit this repository does not have "
            f"({shown})"
        )
    return kept, notes


@dataclass(frozen=True)
class Series:
    """A gate's runs in one session: green runs on this tree, red runs on the base,
    interleaved (red 1, green 1, red 2, ...). ``repeat``: the runs asked for of each."""

    greens: tuple[Verdict, ...]
    reds: tuple[Verdict, ...] = ()
    repeat: int = 1

    @property
    def stopped_early(self) -> bool:
        return len(self.greens) < self.repeat

    def to_dict(self, reached: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
        runs: list[dict[str, Any]] = []
        for i in range(max(len(self.greens), len(self.reds))):
            for where, seq in ((Where.BASE, self.reds), (Where.CURRENT, self.greens)):
                if i < len(seq):
                    v = seq[i]
                    facts = {"mode": v.mode.value, "exit_code": v.exit_code}
                    runs.append({"where": where.value, "run": i + 1, **facts})
        for run, extra in zip(runs, reached, strict=False):
            run.update(extra)
        return {
            "n": self.repeat,
            "runs": runs,
            "stopped_early": self.stopped_early,
            # A check that passes or fails at random shows one fixed pattern of 2N runs
            # (red N times, green N times) with probability at most 4^-N.
            "bound": 4.0**-self.repeat,
        }


def missing_on_base(gate: Gate, root: Path, base_root: Path) -> list[str]:
    """Files the check names that exist in the current tree but not on the base."""
    return [rel for rel in named_files(gate, root) if not (base_root / rel).exists()]


def changed_on_base(gate: Gate, root: Path, base_root: Path) -> list[str]:
    """Files the check names whose bytes on the base differ from the current tree's."""
    changed = []
    for rel in named_files(gate, root):
        try:
            if read_regular(root / rel) != read_regular(base_root / rel):
                changed.append(rel)
        except OSError:  # a folder, a special file, missing on the base: not this rule's
            continue
    return changed
