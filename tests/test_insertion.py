"""Where a pure insertion landed (pytest_vgate/evidence/insertion.py), and what a red run
must execute on the base to reach it (evidence/change.py, evidence/reach.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_vgate.evidence.change import Change, diff_file
from pytest_vgate.evidence.reach import red_reach
from pytest_vgate.process.measure import Measured

# more-itertools before 958990e, in small: the fix adds a guard at the top of sliced().
BASE = '''\
"""Slicing helpers."""
from itertools import count, takewhile


def sliced(seq, n):
    """Yield slices of length n from seq."""
    return takewhile(len, (seq[i : i + n] for i in count(0, n)))


class Window:
    size = 2

    def width(self):
        return self.size

    def outer(self):
        def inner(x):
            return x * 2

        return inner(self.size)
'''
GUARD = "    if n < 0:\n        raise ValueError('n must be at least 0')\n\n"


def anchors(head: str, base: str = BASE) -> frozenset[int] | None:
    base_lines, head_lines, found = diff_file(base, head)
    assert not base_lines and head_lines  # a pure insertion
    return found


def line_of(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if needle in line)


def test_a_guard_inserted_into_a_function_is_reached_by_running_that_function() -> None:
    head = BASE.replace(
        '    """Yield slices of length n from seq."""\n', '    """Yield."""\n' + GUARD
    )
    # The docstring line changed too, but a docstring is not code: still a pure insertion.
    assert anchors(head) == {line_of(BASE, "return takewhile")}


def test_a_docstring_edited_elsewhere_leaves_the_anchor_as_it_is() -> None:
    """Only executable inserted lines place the insertion: the module's docstring, not
    code, changed too."""
    head = BASE.replace('"""Slicing helpers."""', '"""Slicing helpers, fixed."""').replace(
        '    """Yield slices of length n from seq."""\n',
        '    """Yield slices of length n from seq."""\n' + GUARD,
    )
    assert anchors(head) == {line_of(BASE, "return takewhile")}


@pytest.mark.parametrize(
    ("old", "new", "needle"),
    [
        ("        return self.size\n", "        if not self:\n            return 0\n"
         "        return self.size\n", "return self.size"),
        ("            return x * 2\n", "            x += 0\n            return x * 2\n",
         "return x * 2"),
        ("        return inner(self.size)\n", "        def extra():\n            return 1\n\n"
         "        return inner(self.size)\n", "def inner"),
    ],
    ids=["into-a-method", "into-a-nested-function", "a-new-def-inside-a-method"],
)  # fmt: skip
def test_the_innermost_existing_function_is_the_anchor(old: str, new: str, needle: str) -> None:
    found = anchors(BASE.replace(old, new))
    assert found is not None and line_of(BASE, needle) in found
    assert line_of(BASE, "return takewhile") not in found  # not the other functions
    assert line_of(BASE, "size = 2") not in found  # nor the class body


@pytest.mark.parametrize(
    "head",
    [
        BASE + "\n\ndef chunked(seq, n):\n    return [seq]\n",
        BASE.replace("    size = 2\n", "    size = 2\n    depth = 1\n"),
        BASE.replace("class Window:\n", "LIMIT = 3\n\n\nclass Window:\n"),
        BASE + "\n    def height(self):\n        return 1\n",
    ],
    ids=["a-new-function", "class-level", "module-level", "a-new-method"],
)
def test_a_new_definition_or_module_code_is_reached_by_the_file(head: str) -> None:
    assert anchors(head) is None


def test_a_name_defined_twice_falls_back_to_the_file() -> None:
    twice = BASE + "\n\nif True:\n    def sliced(seq, n):\n        return []\n"
    head = twice.replace('    """Yield slices of length n from seq."""\n', GUARD, 1)
    assert anchors(head, base=twice) is None


def _measured(root: Path, files: dict[str, set[int]]) -> Measured:
    return Measured(True, {str(root / p): frozenset(ls) for p, ls in files.items()}, processes=1)


def test_a_red_that_only_imported_the_file_did_not_reach_a_guard(tmp_path: Path) -> None:
    """The field trial's case: a check that read sliced()'s source, red on the base and
    green now, was `proven` because importing more.py counted as reaching the insertion."""
    body = line_of(BASE, "return takewhile")
    change = Change(
        head_top=str(tmp_path / "head"),
        base_top=str(tmp_path / "base"),
        head_changed={"slicing.py": frozenset({6, 7})},
        inserted=frozenset({"slicing.py"}),
        anchors={"slicing.py": frozenset({body})},
    )
    imported = red_reach(change, _measured(tmp_path / "base", {"slicing.py": set()}))
    assert imported.measured and not imported.reached
    ran = red_reach(change, _measured(tmp_path / "base", {"slicing.py": {body}}))
    assert ran.reached
    new_function = Change(
        head_top=change.head_top, base_top=change.base_top,
        head_changed=change.head_changed, inserted=change.inserted,
    )  # fmt: skip
    assert red_reach(new_function, _measured(tmp_path / "base", {"slicing.py": set()})).reached
