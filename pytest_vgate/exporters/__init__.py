"""Exporters built on ``pytest_vgate_report``: SARIF 2.1.0 and GitHub Actions.

Each is a plain object with a ``pytest_vgate_report(report)`` method, registered on the
controller like a third-party exporter would be (``extending.register_exporters``); the
formatting is pure functions of the report. Core package: never imports pytest.
"""
