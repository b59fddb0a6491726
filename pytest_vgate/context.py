"""What one run of a check needs besides the gate: ``RunContext``, passed as values.

Its own module so that everything that runs checks (the runner, the verifier fan-out, the
judges) can name it without importing the runner.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_vgate.defaults import DEFAULT_TIMEOUT
from pytest_vgate.gatesfile import Gate
from pytest_vgate.process import DEFAULT_CAPTURE_LIMIT
from pytest_vgate.process.cell import CellPool
from pytest_vgate.process.measure import MeasureSpec
from pytest_vgate.process.tools import ToolInventory
from pytest_vgate.verdict import Verdict

if TYPE_CHECKING:
    from pytest_vgate.process.contain import Pool


@dataclass(frozen=True)
class RunContext:
    """Everything a run needs besides the gate, passed as values (never a pytest config).

    ``root`` is the tree the check runs on: the gates root, or its image inside the
    base worktree for a red run. ``inventory`` is the session's tool inventory; without
    one (library use) tools are resolved on the spot. With ``measure``, a command check's
    Python processes are measured and the verdict's ``extra[MEASURED_KEY]`` holds the
    ``Measured`` (the caller takes it out before the verdict is serialised). ``fresh``:
    the tree's files change between runs (a mutant each), so no process that imported
    them for an earlier run may serve this one (a verifier's module zygote).
    """

    root: Path
    default_timeout: float = DEFAULT_TIMEOUT
    caller_env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    inventory: ToolInventory | None = None
    capture_limit: int = DEFAULT_CAPTURE_LIMIT
    sys_path: tuple[str, ...] = ()
    # Judges semantic/self_review gates (pytest_vgate_judge, see judging.py); None: no judge.
    judge: Callable[[Gate, RunContext], Verdict | None] | None = None
    isolation: str = "auto"  # --vgate-isolation: auto | strict | off (process.run_process)
    measure: MeasureSpec | None = None
    fresh: bool = False
    # The session's cell pool (SessionState.cells); None: a fresh cell per check.
    cells: CellPool | None = None
    # The session's verifier zygotes (SessionState.zygotes, a ``verifiers.spawner.ZygoteHost``;
    # typed loosely because a run's context sits below the verifiers); None: the default.
    zygotes: Any = None
    # The session's shepherds (SessionState.shepherds); None: the process's default pool.
    shepherds: Pool | None = None


def gate_timeout(gate: Gate, ctx: RunContext) -> float:
    return gate.timeout if gate.timeout is not None else ctx.default_timeout
