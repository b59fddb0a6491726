"""Per-session resources of the pytest layer, shared by items through ``config.stash``.

The controller makes the expensive things once (tool inventory, base worktree,
citation fixes) and hands plain values to xdist workers through ``workerinput``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_vgate.baseline import BaseTrees
from pytest_vgate.evidence import TreeState
from pytest_vgate.options import Settings
from pytest_vgate.proof import Evidence
from pytest_vgate.spec import Gate
from pytest_vgate.tools import ToolInventory


@dataclass
class Resources:
    settings: Settings
    inventories: dict[str, ToolInventory] = field(default_factory=dict)  # by gates root
    base_trees: dict[str, BaseTrees] = field(default_factory=dict)  # by gates root
    tree_states: dict[str, TreeState] = field(default_factory=dict)  # by gates root
    fixed_citations: dict[str, str] = field(default_factory=dict)  # new node name -> old
    warnings: list[str] = field(default_factory=list)
    cache: dict[str, Any] = field(default_factory=dict)  # per-process caches (checkers...)
    results: list[dict[str, Any]] = field(default_factory=list)  # controller: payloads seen

    def default_timeout(self, item: pytest.Item) -> float:
        """--vgate-timeout, else pytest-timeout's timeout for this item, else 60 s."""
        if self.settings.timeout_given:
            return self.settings.timeout
        claimed = getattr(item, "vgate_pytest_timeout", None)
        if isinstance(claimed, (int, float)) and claimed > 0:
            return float(claimed)
        return self.settings.timeout

    def inventory_for(self, root: Path) -> ToolInventory | None:
        return self.inventories.get(str(root))

    def base_root_for(self, gate: Gate) -> Path | None:
        """The gates root inside the base worktree made for this gate's overlay."""
        trees = self.base_trees.get(str(gate.root))
        if trees is None:
            return None
        return trees.for_overlay(gate.overlay).root_in_base(gate.root)

    def evidence_for(self, root: Path) -> Evidence:
        """The session's evidence of a gates root, loaded once per process."""
        key = f"evidence:{root}"
        evidence = self.cache.get(key)
        if evidence is None:
            evidence = Evidence.load(
                root, self.settings.ledger, self.settings.base, self.tree_states.get(str(root))
            )
            self.tree_states[str(root)] = evidence.tree
            self.cache[key] = evidence
        assert isinstance(evidence, Evidence)
        return evidence


RESOURCES = pytest.StashKey[Resources]()


def resources(config: pytest.Config) -> Resources:
    return config.stash[RESOURCES]


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")
