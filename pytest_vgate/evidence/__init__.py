"""Red-before-green evidence: identities, records, the ledger and the status rules.

The core of ``--vgate-base`` and the ledger route; no pytest here. The pytest layer
builds a ``Record`` per run (``make_record``), appends them from the controller
(``Ledger.append``) and asks ``classify`` for each gate's ``vgate_rbg``.
"""

from __future__ import annotations

from pytest_vgate.evidence.classify import RbgResult, classify
from pytest_vgate.evidence.identity import (
    NO_GIT,
    NOT_A_GIT_TREE,
    TreeState,
    claim_hash,
    fingerprint,
    inputs_digest,
    tree_state,
)
from pytest_vgate.evidence.ledger import (
    LEDGER_DIRNAME,
    LEDGER_FILENAME,
    Ledger,
    LedgerWarning,
)
from pytest_vgate.evidence.record import (
    OUTPUT_TAIL,
    Record,
    is_genuine_red,
    make_record,
    utc_now,
)

__all__ = [
    "LEDGER_DIRNAME",
    "LEDGER_FILENAME",
    "NOT_A_GIT_TREE",
    "NO_GIT",
    "OUTPUT_TAIL",
    "Ledger",
    "LedgerWarning",
    "RbgResult",
    "Record",
    "TreeState",
    "claim_hash",
    "classify",
    "fingerprint",
    "inputs_digest",
    "is_genuine_red",
    "make_record",
    "tree_state",
    "utc_now",
]
