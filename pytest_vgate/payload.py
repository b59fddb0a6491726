"""What an item's payload is: the closed vocabulary of the ``"kind"`` it carries.

A payload is the JSON object an item hands the controller (through xdist: plain values
only, so the kind travels as ``PayloadKind.X.value``); the JSON report's gate entries keep
it as ``kind``. Core module: never imports pytest.
"""

from __future__ import annotations

from pytest_vgate.strenum import StrEnum


class PayloadKind(StrEnum):
    """The ``"kind"`` of an item's payload."""

    GATE = "gate"  # a gate of gates.yaml (gate_result.GateResult)
    VERIFIER = "verifier"  # a @verifier function collected as an item
    TEST = "test"  # an ordinary test marked with a mode
    CITATION = "citation"  # one citation in a document
    CITATION_DOCUMENT = "citation-document"  # a document's own result (its read, its errors)
    CRASHED = "crashed"  # the xdist worker died inside the item
    MISSING = "missing"  # a selected gate with no result (merge of remote reports)


CITATION_KINDS = (PayloadKind.CITATION, PayloadKind.CITATION_DOCUMENT)
