"""Per-session resources of the pytest layer, shared by items through ``config.stash``.

The controller makes the expensive things once (tool inventory, base worktree,
citation fixes) and hands plain values to xdist workers through ``workerinput``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypedDict

import pytest

from pytest_vgate.gatesfile import Gate, GatesFile, GatesFileError, load_gates_file
from pytest_vgate.plugin.settings import Settings

if TYPE_CHECKING:  # imported where first used: a session that only collects needs none
    from pytest_vgate.baseline import BaseTrees, BaseWorktree
    from pytest_vgate.evidence import TreeState
    from pytest_vgate.evidence.proof import Evidence
    from pytest_vgate.gate.session import SessionState
    from pytest_vgate.process.tools import ToolInventory


class WorkerInput(TypedDict, total=False):
    """``workerinput["vgate"]``: what the controller hands each xdist worker, as the plain
    values execnet carries (each ``to_dict()`` decoded by its own type on the worker)."""

    inventories: dict[str, dict[str, Any]]  # ToolInventory by gates root
    base_trees: dict[str, dict[str, Any]]  # BaseTrees by gates root
    tree_states: dict[str, dict[str, Any]]  # TreeState by gates root
    fixed_citations: dict[str, Any]
    starting_path: str | None
    batch_folder: str  # where the first worker to run a group of gates leaves its batches
    origin: dict[str, Any]  # remote.origin_payload: what a worker elsewhere must match


@dataclass
class Resources:
    settings: Settings
    inventories: dict[str, ToolInventory] = field(default_factory=dict)  # by gates root
    base_trees: dict[str, BaseTrees] = field(default_factory=dict)  # by gates root
    tree_states: dict[str, TreeState] = field(default_factory=dict)  # by gates root
    # new node name -> {"was": old location, "result": what checking it found}
    fixed_citations: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    gates_files: dict[Path, GatesFile | GatesFileError] = field(default_factory=dict)
    cache: dict[str, Any] = field(default_factory=dict)  # per-process caches (checkers...)
    own_files: tuple[Path, ...] = ()  # junit, JSON report: never part of the tree identity
    caller_env: Mapping[str, str] | None = None  # see run_basics()
    starting_path: str | None = None  # PATH when pytest started (the controller's)
    sys_path: tuple[str, ...] | None = None
    batch_folder: str | None = None  # under xdist: see WorkerInput

    def run_basics(self) -> tuple[Mapping[str, str], tuple[str, ...]]:
        """The caller's environment and ``sys.path`` every check of this process runs with.

        Copied once, when the first gate or verifier of the process runs: after
        collection, so what conftest files and plugins set up is in; what tests change
        later (a leaked ``os.environ`` entry) no longer reaches the checks. ``PATH`` is
        the one taken when pytest started: a conftest cannot put a shim before a tool.
        """
        if self.caller_env is None or self.sys_path is None:
            env = dict(os.environ)
            if self.starting_path is not None:
                env["PATH"] = self.starting_path
            self.caller_env = MappingProxyType(env)
            self.sys_path = tuple(sys.path)
        return self.caller_env, self.sys_path

    def default_timeout(self, item: pytest.Item) -> float:
        """--vgate-timeout, else pytest-timeout's timeout for this item, else 60 s."""
        if self.settings.timeout_given:
            return self.settings.timeout
        claimed = getattr(item, "vgate_pytest_timeout", None)
        if isinstance(claimed, (int, float)) and claimed > 0:
            return float(claimed)
        return self.settings.timeout

    def gates_file(self, path: Path) -> GatesFile:
        """Load a gates file once per process; its error, too, is kept and raised again."""
        key = path.resolve()
        loaded = self.gates_files.get(key)
        if loaded is None:
            try:
                loaded = load_gates_file(key)
            except GatesFileError as exc:
                loaded = exc
            self.gates_files[key] = loaded
        if isinstance(loaded, GatesFileError):
            raise loaded
        return loaded

    def inventory_for(self, root: Path) -> ToolInventory | None:
        return self.inventories.get(str(root))

    def base_tree_for(self, gate: Gate) -> BaseWorktree | None:
        """The base worktree made for this gate's overlay (None without --vgate-base)."""
        trees = self.base_trees.get(str(gate.root))
        return trees.for_overlay(gate.overlay) if trees is not None else None

    def base_root_for(self, gate: Gate) -> Path | None:
        """The gates root inside the base worktree made for this gate's overlay."""
        trees = self.base_trees.get(str(gate.root))
        if trees is None:
            return None
        return trees.for_overlay(gate.overlay).root_in_base(gate.root)

    def evidence_for(self, root: Path) -> Evidence:
        """The session's evidence of a gates root, loaded once per process."""
        from pytest_vgate.evidence.proof import Evidence

        key = f"evidence:{root}"
        evidence = self.cache.get(key)
        if evidence is None:
            evidence = Evidence.load(
                root,
                self.settings.ledger,
                self.settings.base,
                self.tree_states.get(str(root)),
                exclude=self.own_files,
            )
            self.tree_states[str(root)] = evidence.tree
            self.cache[key] = evidence
        assert isinstance(evidence, Evidence)
        return evidence


RESOURCES = pytest.StashKey[Resources]()
# The processes and folders this session keeps between checks: opened when the first
# check asks for them (a session that only collects opens none), closed at unconfigure
# (hooks.py).
STATE = pytest.StashKey["SessionState"]()


def resources(config: pytest.Config) -> Resources:
    return config.stash[RESOURCES]


def session_state(config: pytest.Config) -> SessionState:
    state = config.stash.get(STATE, None)
    if state is None:
        from pytest_vgate.gate.session import SessionState

        state = SessionState.open(resources(config).settings.isolation)
        config.stash[STATE] = state
    return state


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")
