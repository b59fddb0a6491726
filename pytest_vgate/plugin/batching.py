"""``--vgate-batch auto``: a gate's first green and red runs, and its mutants, taken from
its group's batches.

A group is the session's gates that share a batch key (``batch.group_key``) and a base
tree. Its head batch (which forks the mutants, ``gate/fork.py``) and base batch run once,
when its first gate runs: at once when two cores are free (the base under the gates' own
timeout), else the head first and the base under the deadline the head's nodes give.
Under xdist the first worker to need a group runs it under a lock in the controller's
folder; the others read what it wrote. A gate the batch could not attribute runs alone on
that side (its red-before-green reason says why); one found not proven loses its mutants.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_vgate.plugin.session import resources

if TYPE_CHECKING:
    from pytest_vgate.evidence.discriminate import Forked
    from pytest_vgate.gate.batch import Attributed, BatchRun
    from pytest_vgate.gate.result import Sides
    from pytest_vgate.gatesfile import Gate
    from pytest_vgate.plugin.settings import Settings
    from pytest_vgate.verdict import Verdict

CACHE_KEY = "batches"
WORKERS_ENV = "PYTEST_XDIST_WORKER_COUNT"  # set by xdist in every worker


@dataclass(frozen=True)
class Batched:
    """A gate's verdicts from its batches (None: that side runs alone, ``note`` says why)
    and its mutants as the head batch forked them (by ``mutant_key``)."""

    green: Verdict | None
    red: Verdict | None
    note: str = ""
    forked: Mapping[str, Forked] | None = None


@dataclass(frozen=True)
class _Group:
    green: Attributed
    red: Attributed | None
    forked: Mapping[str, Mapping[str, Forked]]


def batched(item: pytest.Item, gate: Gate, sides: Sides) -> Batched | None:
    """The batch verdicts for ``gate`` (run with ``sides``), or None: not batched."""
    from pytest_vgate.gate.batch import group_key

    res = resources(item.config)
    if res.settings.batch != "auto" or res.settings.repeat != 1:
        return None
    key = _key(gate, sides)
    if key is None:
        return None
    cache: dict[Any, _Group] = res.cache.setdefault(CACHE_KEY, {})
    if key not in cache:
        members: list[Gate] = []  # in the session's order, which every xdist worker shares
        for other in item.session.items:
            other_gate = getattr(other, "gate", None)
            if other_gate is None or any(g.id == other_gate.id for g in members):
                continue
            if other_gate.root != gate.root or group_key(other_gate, sides.green) is None:
                continue
            if _key(other_gate, sides) == key and res.base_root_for(other_gate) == (
                res.base_root_for(gate)
            ):
                members.append(other_gate)
        if not any(g.id == gate.id for g in members):
            members.append(gate)
        runs = _shared(res.batch_folder, key, lambda: _run_group(members, sides, res.settings))
        cache[key] = _read(members, sides, runs)
    group = cache[key]
    green = group.green.verdict(gate.id)
    red = group.red.verdict(gate.id) if group.red is not None else None
    notes = []
    if green is None:
        notes.append(f"green run alone: {group.green.why.get(gate.id, 'not in the batch')}")
    if group.red is not None and red is None:
        notes.append(f"base run alone: {group.red.why.get(gate.id, 'not in the batch')}")
    return Batched(green, red, "; ".join(notes), group.forked.get(gate.id))


def _key(gate: Gate, sides: Sides) -> tuple[Any, ...] | None:
    from pytest_vgate.gate.batch import group_key

    key = group_key(gate, sides.green)
    if key is None:
        return None
    return (*key, str(sides.red.root) if sides.red is not None else None)


def at_once() -> bool:
    """Whether two cores are free for the two sides: the cores this process may run on,
    less one for every other xdist worker. The load average is not asked: it lags by a
    minute, and on a shared host it would say no for good, while two runnable processes
    still get two shares of the machine."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # macOS
        cores = os.cpu_count() or 1
    return cores - (int(os.environ.get(WORKERS_ENV, "1")) - 1) >= 2


def _run_group(members: list[Gate], sides: Sides, settings: Settings) -> list[BatchRun | None]:
    """The head batch (forking the mutants) and the base batch of one group."""
    from pytest_vgate.gate.batch import attribute, run_batch
    from pytest_vgate.gate.fork import planner
    from pytest_vgate.gate.result import BASE_FACTOR, BASE_MARGIN

    change, limit = sides.change, settings.mutants_per_gate
    plan = None
    if limit and sides.red is not None and change is not None and change.head_changed:
        plan = planner(members, sides.green, change, limit)
    red_ctx = sides.red
    if red_ctx is None:
        return [run_batch(members, sides.green, planner=plan), None]
    if at_once():
        box: list[BatchRun] = []
        base = threading.Thread(target=lambda: box.append(run_batch(members, red_ctx)))
        base.start()
        try:
            green = run_batch(members, sides.green, planner=plan)
        finally:
            base.join()
        return [green, box[0]]
    green = run_batch(members, sides.green, planner=plan)
    own = members[0].timeout if members[0].timeout is not None else red_ctx.default_timeout
    derived = max(BASE_FACTOR * green.duration, green.duration + BASE_MARGIN)
    answered = any(v is not None for v in attribute(members, sides.green, green).verdicts.values())
    return [green, run_batch(members, red_ctx, derived if answered and derived < own else None)]


def _read(members: list[Gate], sides: Sides, runs: list[BatchRun | None]) -> _Group:
    from pytest_vgate.gate.batch import attribute
    from pytest_vgate.gate.fork import forked

    green, red = runs
    assert green is not None
    return _Group(
        attribute(members, sides.green, green),
        attribute(members, sides.red, red) if red is not None and sides.red is not None else None,
        forked(members, green),
    )


def _shared(
    folder: str | None, key: tuple[Any, ...], run: Callable[[], list[BatchRun | None]]
) -> list[BatchRun | None]:
    """``run()``, once per session: under xdist the first worker runs it under a lock in
    the controller's ``folder`` and writes the result there; the others read it."""
    from pytest_vgate.gate.batch import BatchRun

    if folder is None:
        return run()
    name = hashlib.sha256(repr(key).encode()).hexdigest()[:32]
    done = Path(folder) / f"{name}.json"
    with open(Path(folder) / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or we die
        try:
            data = json.loads(done.read_text(encoding="utf-8"))
            return [BatchRun.from_dict(r) if r is not None else None for r in data]
        except (OSError, ValueError, KeyError, TypeError):
            pass  # not run yet (or its writer died): ours to run
        runs = run()
        scratch = done.with_suffix(".tmp")
        scratch.write_text(json.dumps([r.to_dict() if r else None for r in runs]), "utf-8")
        os.replace(scratch, done)
        return runs
