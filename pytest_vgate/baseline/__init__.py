"""The base revision of ``--vgate-base``: a detached git worktree with the overlay applied.

The controller creates one per distinct overlay per session and removes it at the end.
Nothing may stay registered in the user's repository: ``remove`` is idempotent, an
``atexit`` hook covers Ctrl-C, and ``cleanup_stale_worktrees`` (run by every ``create``)
removes worktrees of sessions that died (their holder's lock is no longer held).

``worktree`` makes and removes base trees, ``holder`` decides which holders are ours and
dead, ``git`` runs git. Only what the plugin made is ever removed.
"""

from __future__ import annotations

from pytest_vgate.baseline.git import BaselineError, toplevel
from pytest_vgate.baseline.holder import OWNER_NAME, PREFIX, cleanup_stale_worktrees
from pytest_vgate.baseline.worktree import BaseTrees, BaseWorktree

__all__ = [
    "OWNER_NAME",
    "PREFIX",
    "BaseTrees",
    "BaseWorktree",
    "BaselineError",
    "cleanup_stale_worktrees",
    "toplevel",
]
