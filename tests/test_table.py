"""table: the summary's text layout (``wrap``'s shortcut gives what textwrap gives)."""

from __future__ import annotations

import textwrap

from hypothesis import given
from hypothesis import strategies as st

from pytest_vgate.plugin.table import wrap

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
