"""An item's payload on its report: the JSON form out, one strict decode in.

The item's call report carries its payload as ``report.vgate``, the JSON object of its
type (plain values: what survives xdist, ``--report-log`` and any plugin that serialises
reports). On the controller :func:`payload_of` reads it once per report, for every reader
(the controller's record, the exit-status guard). A payload made in this process is
taken back as the object it was encoded from, as long as the report still carries that
very JSON object (nothing is decoded, and what the item observed stands whatever a hook
wrote into it); any other (a worker's, or one a hook put there) is decoded, strictly. A
payload that does not decode (a kind nobody knows, an unknown key, a wrong type) is never
taken at its word: it reads as a failed item of mode ``error`` that says why.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any
from weakref import WeakKeyDictionary

import pytest

from pytest_vgate.payload import CrashedPayload, Payload, PayloadError, decode_payload
from pytest_vgate.verdict import Cause, Mode

ATTRIBUTE = "vgate"
# per report: (the JSON object it carried, the payload read from it)
_READ = pytest.StashKey["WeakKeyDictionary[pytest.TestReport, tuple[Any, Payload | None]]"]()


def put(config: pytest.Config, report: pytest.TestReport, payload: Payload) -> None:
    """Hand ``payload`` to the controller on ``report``."""
    data = payload.to_dict()
    setattr(report, ATTRIBUTE, data)
    _read(config)[report] = (data, payload)


def payload_of(config: pytest.Config, report: pytest.TestReport) -> Payload | None:
    """The payload ``report`` carries (None: it carries none), read once per report."""
    read = _read(config)
    data = getattr(report, ATTRIBUTE, None)
    known = read.get(report)
    if known is not None and known[0] is data:
        return known[1]
    payload = None if data is None else _decode(data, report.nodeid)
    read[report] = (data, payload)
    return payload


def _read(
    config: pytest.Config,
) -> WeakKeyDictionary[pytest.TestReport, tuple[Any, Payload | None]]:
    return config.stash.setdefault(_READ, WeakKeyDictionary())


def _decode(data: object, nodeid: str) -> Payload:
    try:
        payload = decode_payload(data)
    except PayloadError as exc:  # fail closed: a verdict that cannot be read is a failure
        return CrashedPayload(
            id=nodeid,
            mode=Mode.ERROR,
            cause=Cause.BROKEN_TEST,
            detail=f"its payload on the report cannot be read ({exc}); a hook or an xdist "
            "worker changed it, so its verdict is not taken",
            nodeid=nodeid,
        )
    if payload.nodeid != nodeid:  # the report's node id is the one pytest knows
        payload = replace(payload, nodeid=nodeid)
    return payload
