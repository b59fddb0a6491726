"""What one session keeps between checks and gives back at its end: ``SessionState``.

The pytest layer opens one per config (``plugin.session.STATE``) and closes it at
unconfigure; a library caller opens its own, or passes none (each check then gets a fresh
cell). Nothing it made outlives the session; it never touches what it did not make.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pytest_vgate.process.cell import CellPool
from pytest_vgate.process.contain import Pool
from pytest_vgate.verifiers.spawner import ZygoteHost


@dataclass
class SessionState:
    """The session's reusable resources (the cell pool, the verifier and shepherd
    processes kept ready); ``close`` is idempotent."""

    cells: CellPool = field(default_factory=CellPool)
    zygotes: ZygoteHost = field(default_factory=ZygoteHost)
    shepherds: Pool = field(default_factory=Pool)
    closed: bool = False

    @classmethod
    def open(cls, isolation: str = "auto") -> SessionState:
        """``isolation``: --vgate-isolation of the verifier processes."""
        return cls(zygotes=ZygoteHost(isolation))

    def close(self) -> None:
        """Remove the idle cells; stop the zygotes and idle shepherds started for checks."""
        if self.closed:
            return
        self.closed = True
        from pytest_vgate.gate.runner import forget_folders
        from pytest_vgate.process import contain
        from pytest_vgate.process.tools import remove_shims

        self.cells.close()
        self.zygotes.shutdown()
        self.shepherds.close()
        contain.POOL.close()  # the default pool's idle shepherds: tools a verifier ran
        forget_folders()
        remove_shims()
