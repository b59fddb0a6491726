"""Red-before-green evidence: identities, records, the ledger, the change and what runs
executed of it, the mutants: the facts ``gate/decide.py`` decides on.

The core of ``--vgate-base`` and the ledger route; no pytest here. ``gate/result.py``
builds a ``Record`` per run (``make_record``); the controller appends them
(``Ledger.append``).
"""

from __future__ import annotations

from pytest_vgate.evidence.identity import (
    NO_GIT,
    NOT_A_GIT_TREE,
    TreeState,
    claim_hash,
    fingerprint,
    inputs_digest,
    tree_state,
)
from pytest_vgate.evidence.ledger import Ledger
from pytest_vgate.evidence.record import OUTPUT_TAIL, Record, make_record

__all__ = [
    "NOT_A_GIT_TREE",
    "NO_GIT",
    "OUTPUT_TAIL",
    "Ledger",
    "Record",
    "TreeState",
    "claim_hash",
    "fingerprint",
    "inputs_digest",
    "make_record",
    "tree_state",
]
