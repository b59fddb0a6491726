"""The statement map of ``process/statements.py`` against coverage.py's own parser.

Both must give, for every source, the same statements and, for every line, the same first
line of its statement: over real files (this package, pytest, the standard library) and
over the shapes a logical line can take (multi-line headers, bodies on the header's line,
backslash continuations, decorators, ``match``).
"""

from __future__ import annotations

import ast
import sys
import sysconfig
import textwrap
from pathlib import Path

import _pytest
import pytest
from coverage.parser import PythonParser

import pytest_vgate
from pytest_vgate.process import statements

STDLIB = Path(sysconfig.get_paths()["stdlib"])
# A spread of the standard library: large modules, decorators, async code, deep nesting,
# backslash continuations, match statements.
STDLIB_FILES = (
    *("argparse.py", "ast.py", "asyncio/base_events.py", "asyncio/tasks.py", "difflib.py"),
    *("collections/__init__.py", "configparser.py", "dataclasses.py", "enum.py", "typing.py"),
    *("email/_header_value_parser.py", "functools.py", "inspect.py", "json/decoder.py"),
    *("logging/__init__.py", "pathlib.py", "pickle.py", "pydoc.py", "re/_parser.py"),
    *("shutil.py", "subprocess.py", "tarfile.py", "textwrap.py", "tokenize.py"),
    *("unittest/mock.py", "zipfile.py"),
)

SHAPES = {
    "multi-line call": "x = f(\n    1,\n    # a comment\n\n    2,\n)\ny = 3\n",
    "semicolons across lines": "a = (1,\n     2); b = 3\nc = 4\n",
    "header over lines": "def f(a,\n      b,\n      ) -> int:\n    return a\n",
    "header then comment lines": "if (a and\n        b):  # why\n    # here\n\n    pass\n",
    "body on the header's line": "if x: y = (1,\n        2); z = 3\nelse: w = 4\n",
    "class and keywords": "class A(B,\n  metaclass=M):\n    '''doc\n    more'''\n    x = 1\n",
    "decorators": "@dec(1,\n     2)\n@other\ndef f():\n    pass\n",
    "try and handlers": (
        "try:\n    x = (1,\n         2)\nexcept (A,\n        B) as e:\n    y = 1\n"
        "else:\n    z = 2\nfinally: w = 3\n"
    ),
    "with items": "with (open(a) as f,\n      open(b) as g,\n      ):\n    pass\n",
    "for and while": "for i in range(\n        3):\n    pass\nwhile (x\n       ):\n    break\n",
    "async": "async def f():\n  async with a as b:\n    async for c in d:\n      await e\n",
    "lambda in a default": "def f(a=lambda: (1,\n        2)):\n    return a\n",
    "strings over lines": 's = """a\nb\n"""\nt = ("x"\n     "y")\n',
    "docstrings": 'def f():\n    """Doc\n    more."""\n    return 1\n',
    "backslash in a statement": "x = 1 + \\\n    2\ny = 3\n",
    "backslash joining statements": "a = 1; \\\nb = 2\n",
    "backslash before a blank line": "x = 1 \\\n\ny = 2\n",
    "backslash before the body": "if x: \\\n    y = 1\n",
    "backslash before else's colon": "if x:\n    pass\nelse \\\n: y = 1\n",
    "backslash before a header's colon": "def f(a,\n      b) \\\n  :\n    return 1\n",
    "backslash in a comment": "x = 1  # c:\\\ny = 2\n",
    "backslash in a string": 's = "a\\\nb"\nt = 2\n',
    "parenthesised decorator": "@(\n    dec\n)\ndef f():\n    pass\n",
    "comment only": "# nothing\n",
    "global": "def f():\n    global x\n    x = 1\n",
    "nested functions": "def f():\n  def g(a,\n        b):\n    return (a,\n      b)\n  return g\n",
    "match": (
        "match (x,\n       y):\n    case (1,\n          2) if z:\n        pass\n    case _: w = 1\n"
    ),
}
if sys.version_info >= (3, 11):
    SHAPES["except star"] = "try:\n    pass\nexcept* (A,\n         B):\n    pass\n"


def coverage_answers(text: str) -> tuple[frozenset[int], dict[int, int]] | None:
    """coverage.py's statements and every line's first line (1 past the end too)."""
    try:
        parser = PythonParser(text=text)
        parser.parse_source()
    except Exception:  # noqa: BLE001 - coverage's "not Python", whatever it raised
        return None
    count = text.count("\n") + 2
    return frozenset(parser.statements), {n: parser.first_line(n) for n in range(1, count)}


def our_answers(text: str) -> tuple[frozenset[int], dict[int, int]] | None:
    statements.executable_lines.cache_clear()
    found = statements.executable_lines(text)
    if found is None:
        return None
    count = text.count("\n") + 2
    return found[0], {n: found[1].get(n, n) for n in range(1, count)}


def real_files() -> list[Path]:
    ours = sorted(Path(pytest_vgate.__file__).parent.rglob("*.py"))
    theirs = sorted(Path(_pytest.__file__).parent.rglob("*.py"))
    return [*ours, *theirs, *(STDLIB / name for name in STDLIB_FILES if (STDLIB / name).is_file())]


def test_the_same_answers_as_coverage_line_for_line_on_real_files() -> None:
    files = real_files()
    assert len(files) > 150
    differ = []
    for path in files:
        text = path.read_text(encoding="utf-8")
        if our_answers(text) != coverage_answers(text):
            differ.append(str(path))
    assert differ == []


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_same_answers_as_coverage_on_every_shape(shape: str) -> None:
    text = SHAPES[shape]
    ast.parse(text)  # every shape is valid Python
    assert our_answers(text) == coverage_answers(text)


def test_real_files_are_read_without_coverages_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    """The point of the module: coverage.py's tokenizing parser answers only for what the
    scan does not read (a carriage return, a backslash in a comment, ``@(`` ...)."""
    asked: list[str] = []
    original = statements._by_coverage
    monkeypatch.setattr(
        statements, "_by_coverage", lambda text: asked.append(text) or original(text)
    )
    for path in real_files():
        our_answers(path.read_text(encoding="utf-8"))
    our_answers(SHAPES["backslash before a header's colon"])
    assert len(asked) <= 3  # the few real files with a backslash in a comment
    for odd in ("backslash in a comment", "parenthesised decorator"):
        our_answers(SHAPES[odd])
        assert asked[-1] == SHAPES[odd]


@pytest.mark.parametrize(
    "text",
    ["", "def (:\n", "x = 1\0\n", "return 1\n", "x = '\udcff'\n", "a = 1\r\nb = (2,\r\n3)\r\n"],
    ids=["empty", "syntax", "nul", "return-outside", "surrogate", "crlf"],
)
def test_odd_texts_and_what_does_not_parse_as_for_coverage(text: str) -> None:
    assert our_answers(text) == coverage_answers(text)


def test_a_syntax_warning_is_not_ours_to_say(recwarn: pytest.WarningsRecorder) -> None:
    our_answers(textwrap.dedent("x = 1\nif x is 1:\n    pass\n"))
    assert [w for w in recwarn if issubclass(w.category, SyntaxWarning)] == []
