"""Where a pure insertion landed: the function on the base that a red run must enter.

A fix that only adds lines inside an existing function (a guard, a new branch) changes no
line of the base, so no base-side line can be executed. Importing the module is not
reaching it either: an import runs the ``def`` line and nothing of the body. A red run
reaches such an insertion by running the function it went into, on the base. A new
definition (a function, a method, a class) at module or class level is reached by
executing the file: its test fails on the base because the feature is missing.
"""

from __future__ import annotations

import ast

from pytest_vgate.evidence.mutate import functions
from pytest_vgate.process.statements import parse

_Function = ast.FunctionDef | ast.AsyncFunctionDef


def insertion_anchors(
    base_text: str, head_text: str, statements: frozenset[int], inserted: frozenset[int]
) -> frozenset[int] | None:
    """The base-side statements (of ``statements``, the base's executable lines) of the
    functions the head's ``inserted`` executable lines went into.

    None when some inserted line is inside no function that exists on both sides (a
    new definition, module or class level), when a function's name is not unique, or when
    a side does not parse: then executing the file is what reaches the change.
    """
    try:
        base_functions = _functions(parse(base_text))
        head_functions = _functions(parse(head_text))
    except (SyntaxError, ValueError, RecursionError):
        return None
    if base_functions is None or head_functions is None:
        return None
    anchors: set[int] = set()
    for line in sorted(inserted):
        # The innermost function around the line that the base has too: a new helper
        # nested in an existing method is reached by running that method.
        owner = next((f for f in _around(head_functions, line) if f in base_functions), None)
        if owner is None:
            return None
        function = base_functions[owner]
        body = range(function.body[0].lineno, (function.end_lineno or 0) + 1)
        anchors.update(n for n in statements if n in body)
    return frozenset(anchors) or None


def _functions(tree: ast.Module) -> dict[str, _Function] | None:
    """Every function by qualified name (``mutate.functions``); None when a name is
    defined twice (a property's setter, a definition under ``if``)."""
    named = list(functions(tree))
    found = dict(named)
    return found if len(found) == len(named) else None


def _around(functions: dict[str, _Function], line: int) -> list[str]:
    """The functions whose body holds ``line``, innermost first."""
    holding = [
        (node.body[0].lineno, name)
        for name, node in functions.items()
        if node.body[0].lineno <= line <= (node.end_lineno or 0)
    ]
    return [name for _, name in sorted(holding, reverse=True)]
