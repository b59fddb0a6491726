"""An item's payload on its report: typed in its process, its JSON object across xdist.

The call report carries it as ``report.vgate``: the frozen payload where the item ran, its
JSON object wherever the report is serialised (an xdist worker, ``--report-log``).
:func:`payload_of` reads it once per report on the controller; what does not decode, or
anything else a hook put there, reads as a failed item of mode ``error`` that says why.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import replace
from typing import Any
from weakref import WeakKeyDictionary

import pytest

from pytest_vgate.payload import (
    PAYLOAD_TYPES,
    CrashedPayload,
    Payload,
    PayloadError,
    decode_payload,
)
from pytest_vgate.verdict import Cause, Mode

ATTRIBUTE = "vgate"
_TYPES = tuple(PAYLOAD_TYPES.values())
# per report: (what it carried, the payload read from it); a JSON object is decoded once
_READ = pytest.StashKey["WeakKeyDictionary[pytest.TestReport, tuple[Any, Payload | None]]"]()


def put(report: pytest.TestReport, payload: Payload) -> None:
    """Hand ``payload`` to the controller on ``report``."""
    setattr(report, ATTRIBUTE, payload)


@pytest.hookimpl(wrapper=True)
def pytest_report_to_serializable(
    report: pytest.CollectReport | pytest.TestReport,
) -> Generator[None, dict[str, Any] | None, dict[str, Any] | None]:
    """The payload leaves its process as its JSON object."""
    data = yield
    payload = getattr(report, ATTRIBUTE, None)
    if isinstance(data, dict) and isinstance(payload, _TYPES):
        data[ATTRIBUTE] = payload.to_dict()
    return data


def payload_of(config: pytest.Config, report: pytest.TestReport) -> Payload | None:
    """The payload ``report`` carries (None: it carries none), read once per report."""
    data = getattr(report, ATTRIBUTE, None)
    if data is None or (type(data) in _TYPES and data.nodeid == report.nodeid):
        return data  # made in this process
    read = config.stash.setdefault(_READ, WeakKeyDictionary())
    known = read.get(report)
    if known is not None and known[0] is data:
        return known[1]
    payload = _decode(data, report.nodeid)
    read[report] = (data, payload)
    return payload


def _decode(data: object, nodeid: str) -> Payload:
    try:
        payload = data if type(data) in _TYPES else decode_payload(data)
    except PayloadError as exc:  # fail closed: a verdict that cannot be read is a failure
        return CrashedPayload(
            id=nodeid,
            mode=Mode.ERROR,
            cause=Cause.BROKEN_TEST,
            detail=f"its payload on the report cannot be read ({exc}); a hook or an xdist "
            "worker changed it, so its verdict is not taken",
            nodeid=nodeid,
        )
    assert isinstance(payload, _TYPES)
    if payload.nodeid != nodeid:  # the report's node id is the one pytest knows
        payload = replace(payload, nodeid=nodeid)
    return payload
