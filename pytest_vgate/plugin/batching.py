"""``--vgate-batch auto``: a gate's first green and red runs taken from its group's batch.

The group is the gates of this process's selected items that share a batch key
(``batch.group_key``) and a base tree. It runs once per process, when its first gate
runs: the green side, then the base side under the deadline the green batch gives (as a
solo base run's deadline comes from its green run). Under xdist each worker that runs a
gate of a group runs the group's batch once: every worker collects the same items, so
every worker's batch gives a gate the same verdicts. A gate the batch could not attribute
runs alone on that side, and its red-before-green reason says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from pytest_vgate.plugin.session import resources

if TYPE_CHECKING:
    from pytest_vgate.gate.batch import BatchRun
    from pytest_vgate.gate.result import Sides
    from pytest_vgate.gatesfile import Gate
    from pytest_vgate.verdict import Verdict

CACHE_KEY = "batches"


@dataclass(frozen=True)
class Batched:
    """A gate's verdicts from its batches (None: that side runs alone, ``note`` says why)."""

    green: Verdict | None
    red: Verdict | None
    note: str = ""


@dataclass(frozen=True)
class _Group:
    green: BatchRun
    red: BatchRun | None


def batched(item: pytest.Item, gate: Gate, sides: Sides) -> Batched | None:
    """The batch verdicts for ``gate`` (run with ``sides``), or None: not batched."""
    from pytest_vgate.gate.batch import group_key

    res = resources(item.config)
    if res.settings.batch != "auto" or res.settings.repeat != 1:
        return None
    key = _key(gate, sides)
    if key is None:
        return None
    cache: dict[Any, _Group | None] = res.cache.setdefault(CACHE_KEY, {})
    if key not in cache:
        members = [gate]
        for other in item.session.items:
            other_gate = getattr(other, "gate", None)
            if other is item or other_gate is None or other_gate.id == gate.id:
                continue
            if other_gate.root != gate.root or group_key(other_gate, sides.green) is None:
                continue
            if _key(other_gate, sides) == key and res.base_root_for(other_gate) == (
                res.base_root_for(gate)
            ):
                members.append(other_gate)
        cache[key] = _run_group(members, sides) if len(members) > 1 else None
    group = cache[key]
    if group is None:
        return None
    green = group.green.verdict(gate.id)
    red = group.red.verdict(gate.id) if group.red is not None else None
    notes = []
    if green is None:
        notes.append(f"green run alone: {group.green.why.get(gate.id, 'not in the batch')}")
    if group.red is not None and red is None:
        notes.append(f"base run alone: {group.red.why.get(gate.id, 'not in the batch')}")
    return Batched(green, red, "; ".join(notes))


def _key(gate: Gate, sides: Sides) -> tuple[Any, ...] | None:
    from pytest_vgate.gate.batch import group_key

    key = group_key(gate, sides.green)
    if key is None:
        return None
    return (*key, str(sides.red.root) if sides.red is not None else None)


def _run_group(members: list[Gate], sides: Sides) -> _Group:
    from pytest_vgate.context import gate_timeout
    from pytest_vgate.gate.batch import run_batch
    from pytest_vgate.gate.result import BASE_FACTOR, BASE_MARGIN

    green = run_batch(members, sides.green)
    red = None
    if sides.red is not None:
        own = gate_timeout(members[0], sides.red)
        derived = max(BASE_FACTOR * green.duration, green.duration + BASE_MARGIN)
        answered = any(v is not None for v in green.verdicts.values())
        red = run_batch(members, sides.red, timeout=derived if answered and derived < own else None)
    return _Group(green, red)
