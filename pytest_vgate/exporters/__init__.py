"""Exporters built on ``pytest_vgate_report``: SARIF 2.1.0 and GitHub Actions.

Each is a plain object with a ``pytest_vgate_report(report)`` method, registered on the
controller like a third-party exporter would be (``extending.register_exporters``); the
formatting is pure functions of the report. Core package: never imports pytest.
"""

from __future__ import annotations

from pytest_vgate.exporters.common import Finding, findings, relative_uri

__all__ = ["Finding", "findings", "relative_uri"]
