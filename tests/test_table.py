"""table: the summary's text layout (``wrap``'s shortcut gives what textwrap gives)."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_vgate.plugin.table import elide, wrap

WORDS = st.text(alphabet=st.sampled_from("ab-./_ \t\n"), max_size=40)


@given(
    WORDS,
    st.integers(min_value=0, max_value=50),
    st.sampled_from(["", "  ", "      "]),
    st.sampled_from([None, "", "  "]),
)
def test_wrap_is_textwrap_on_the_normalised_text(
    text: str, width: int, indent: str, subsequent: str | None
) -> None:
    words = " ".join(text.split())
    expected = (
        textwrap.wrap(
            words,
            width=max(width, len(indent) + 1, len(subsequent or indent) + 1),
            initial_indent=indent,
            subsequent_indent=indent if subsequent is None else subsequent,
            break_long_words=True,
            break_on_hyphens=False,
        )
        if words
        else ([indent.rstrip()] if indent.strip() else [""])
    )
    assert wrap(text, width, indent, subsequent) == expected


def test_a_text_that_fits_is_one_line() -> None:
    assert wrap("g1  exit 0", 20, "  ") == ["  g1 exit 0"]
    assert wrap("a b c", 3) == ["a b", "c"]


# -- the red-before-green table in a real session: gate ids never break -----------------

LONG_IDS = (
    "PeekableTests.test_class_getitem",
    "NumericRangeTests.test_empty_reversed_range_of_a_long_named_case_and_more",
    "x" * 128,  # the longest id allowed, wider than 80 columns: its middle is elided
)
SHORT_IDS = ("fix-add", "neg")


@pytest.mark.parametrize("columns", [80, 200])
def test_gate_ids_stay_whole_and_the_status_column_aligned(
    run_vgate: Any, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, columns: int
) -> None:
    ids = (*SHORT_IDS, *LONG_IDS)
    gates = "".join(f'  - id: "{gate_id}"\n    check: python -c "pass"\n' for gate_id in ids)
    pytester.makefile(".yaml", gates="gates:\n" + gates)
    monkeypatch.setenv("COLUMNS", str(columns))
    result, _ = run_vgate("--vgate", "gates.yaml")
    assert result.ret == 0, result.stdout.str()
    out = result.stdout.lines
    start = next(i for i, line in enumerate(out) if line.startswith("red-before-green:"))
    end = next(i for i in range(start + 1, len(out)) if not out[i].startswith("  "))
    table = out[start + 1 : end]
    assert all(len(line) <= columns for line in out[start:end]), "\n".join(table)
    header = table[0]
    status_at = header.index("status")
    for gate_id in ids:
        whole = [line for line in table if gate_id in line]
        shown = elide(gate_id, columns - 2)
        assert whole or any(shown in line for line in table), (gate_id, "\n".join(table))
        if not whole:  # elided: its two ends on one line, never the id cut over lines
            assert "\u2026" in shown and len(shown) <= columns - 2
    # Every row's status sits under the header's "status".
    statuses = [line for line in table[1:] if "unproven" in line]
    assert len(statuses) == len(ids)
    assert {line.index("unproven") for line in statuses} == {status_at}
    # No line holds a fragment of a long id: each line's name cell is a whole id or empty.
    names = {elide(i, columns - 2) for i in ids} | set(ids)
    for line in table[1:]:
        first = line.strip().split("  ")[0]
        if line.startswith("  ") and not line.startswith("   "):
            assert first in names, line
