"""pytest-html's report gains the vgate columns: mode, cause, rbg, coverage, discrimination.

Filled from the junit properties on the item's report (plain and xdist runs alike); every
value is escaped, since pytest-html cells are HTML strings.
"""

from __future__ import annotations

import html
from typing import Any

import pytest

# (junit property, column header); pytest-html sorts a column whose header is "sortable".
COLUMNS = (
    ("vgate_mode", "vgate mode"),
    ("vgate_cause", "vgate cause"),
    ("vgate_rbg", "vgate rbg"),
    ("vgate_coverage", "vgate coverage"),
    ("vgate_mutants", "vgate discrimination"),
)


class HtmlColumns:
    """The two pytest-html hooks, as one plugin object."""

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_header(self, cells: list[str]) -> None:
        cells.extend(
            f'<th class="sortable" data-column-type="{name}">{html.escape(title)}</th>'
            for name, title in COLUMNS
        )

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_table_row(self, report: pytest.TestReport, cells: list[str]) -> None:
        props: dict[str, Any] = {}
        for pair in getattr(report, "user_properties", ()) or ():
            if isinstance(pair, tuple) and len(pair) == 2:
                props[str(pair[0])] = pair[1]
        for name, _ in COLUMNS:
            value = props.get(name, "")
            if name == "vgate_mutants" and props.get("vgate_discrimination"):
                value = f"{value} {props['vgate_discrimination']}".strip()
            cells.append(f'<td class="col-{name}">{html.escape(str(value), quote=True)}</td>')
