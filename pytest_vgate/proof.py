"""Red before green for one gate: records of this session's runs, classified with history.

Pure core. ``Evidence`` is what one process knows about a gates root for the whole
session (its tree, the ledger's earlier records, the base tree); ``prove`` turns a
gate's current (and base) verdicts into ledger records and an ``RbgResult``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_vgate.evidence import (
    Ledger,
    RbgResult,
    Record,
    TreeState,
    classify,
    inputs_digest,
    make_record,
    tree_state,
)
from pytest_vgate.spec import Gate
from pytest_vgate.verdict import Verdict


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

    @classmethod
    def load(
        cls,
        root: Path,
        ledger_path: Path | None,
        base_ref: str | None,
        tree: TreeState | None = None,
    ) -> Evidence:
        """Read the ledger; ``tree`` is the controller's view of the tree, when there is one."""
        ledger = Ledger(ledger_path) if ledger_path is not None else Ledger.default(root)
        records, warnings = ledger.read()
        history: dict[str, list[Record]] = {}
        for record in records:
            history.setdefault(record.gate_id, []).append(record)
        return cls(
            root=root,
            ledger=ledger,
            tree=tree if tree is not None else tree_state(root, exclude=[ledger.file]),
            history=history,
            warnings=list(warnings),
            base_ref=base_ref,
        )

    def base_tree(self, base_root: Path) -> TreeState:
        key = str(base_root)
        if key not in self.base_trees:
            self.base_trees[key] = tree_state(base_root)
        return self.base_trees[key]


def prove(
    gate: Gate,
    current: Verdict,
    evidence: Evidence,
    *,
    base: Verdict | None = None,
    base_root: Path | None = None,
    require_red: bool = False,
) -> tuple[RbgResult, Sequence[Record]]:
    """Classify the gate and return the records of this session's runs for the ledger."""
    now = make_record(
        gate,
        current,
        tree=evidence.tree,
        inputs_digest=inputs_digest(gate.root, gate.inputs),
        where="current",
    )
    then: Record | None = None
    if base is not None and base_root is not None:
        then = make_record(
            gate,
            base,
            tree=evidence.base_tree(base_root),
            inputs_digest=inputs_digest(base_root, gate.inputs),
            where="base",
            base_ref=evidence.base_ref,
        )
    result = classify(
        gate,
        now,
        base=then,
        history=evidence.history.get(gate.id, ()),
        require_red=require_red,
    )
    return result, (now,) if then is None else (then, now)
