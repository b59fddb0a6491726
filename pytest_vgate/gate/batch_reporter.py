"""The reporter inside a batch's pytest process: what each node did, as it happens.

Loaded by the batch with ``-p`` from a private folder (``batch.py`` copies this file
there under ``MODULE``), it imports nothing but the standard library and, once loaded,
takes its folder off ``sys.path``. Each record is one JSON line appended to the file
named by ``OUT_ENV`` (open, append, close: a crash or a kill keeps every record made so
far): the rootdir, each node's start (also raised as the measurement's node marker,
``bootstrap.NODE_EVENT``), each phase's report, each collection failure, the exit status.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

OUT_ENV = "PYTEST_VGATE_BATCH_OUT"
NODE_EVENT = "pytest-vgate.node"  # bootstrap.NODE_EVENT (the bootstrap imports nothing)
MODULE = "_pytest_vgate_batch_reporter"

_here = os.path.dirname(os.path.abspath(__file__))
while _here in sys.path:  # the check's own imports never see our folder
    sys.path.remove(_here)


def _put(record: dict[str, Any]) -> None:
    out = os.environ.get(OUT_ENV)
    if not out:
        return
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, (json.dumps(record) + "\n").encode())
    finally:
        os.close(fd)


def pytest_configure(config: Any) -> None:
    _put({"rootdir": str(config.rootpath), "pid": os.getpid()})


def pytest_runtest_logstart(nodeid: str, location: Any) -> None:
    _put({"start": nodeid})
    sys.audit(NODE_EVENT, nodeid)


def pytest_runtest_logreport(report: Any) -> None:
    _put(
        {
            "report": report.nodeid,
            "when": report.when,
            "outcome": report.outcome,
            "xfail": hasattr(report, "wasxfail"),
            "longrepr": "" if report.longrepr is None else str(report.longrepr),
            "duration": float(getattr(report, "duration", 0.0)),
        }
    )


def pytest_runtest_logfinish(nodeid: str, location: Any) -> None:
    _put({"finish": nodeid})


def pytest_collectreport(report: Any) -> None:
    if report.outcome != "passed":
        text = "" if report.longrepr is None else str(report.longrepr)
        _put({"collect_error": report.nodeid, "longrepr": text})


def pytest_sessionfinish(session: Any, exitstatus: Any) -> None:
    _put({"exit": int(exitstatus)})
