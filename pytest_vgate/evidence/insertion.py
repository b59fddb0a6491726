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
from collections.abc import Sequence

_Function = ast.FunctionDef | ast.AsyncFunctionDef


def insertion_anchors(
    base_text: str,
    head_text: str,
    statements: frozenset[int],
    opcodes: Sequence[tuple[str, int, int, int, int]],
) -> frozenset[int] | None:
    """The base-side statements (of ``statements``, the base's executable lines) of the
    functions a pure insertion went into; ``opcodes``: difflib's, base lines to head lines.

    None when some inserted code is not inside a function that exists on both sides (a
    new definition, module or class level), when a function's name is not unique, or when
    a side does not parse: then executing the file is what reaches the change.
    """
    try:
        base_functions = _functions(ast.parse(base_text))
        head_functions = _functions(ast.parse(head_text))
    except (SyntaxError, ValueError, RecursionError):
        return None
    if base_functions is None or head_functions is None:
        return None
    head = head_text.splitlines()
    anchors: set[int] = set()
    for tag, _i1, _i2, j1, j2 in opcodes:
        if tag == "equal":
            continue
        code = [n for n in range(j1 + 1, j2 + 1) if _is_code(head[n - 1])]
        if not code:
            continue
        owner = _innermost(head_functions, code[0], code[-1])
        if owner is None or owner not in base_functions:
            return None
        function = base_functions[owner]
        body = range(function.body[0].lineno, (function.end_lineno or 0) + 1)
        anchors.update(n for n in statements if n in body)
    return frozenset(anchors) or None


def _is_code(line: str) -> bool:
    text = line.strip()
    return bool(text) and not text.startswith("#")


def _functions(tree: ast.Module) -> dict[str, _Function] | None:
    """Every function by qualified name (``Class.method``, ``outer.<locals>.inner``); None
    when a name is defined twice (a property's setter, a definition under ``if``)."""
    found: dict[str, _Function] = {}
    twice = False

    def walk(node: ast.AST, prefix: str) -> None:
        nonlocal twice
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}{child.name}"
                twice = twice or name in found
                found[name] = child
                walk(child, f"{name}.<locals>.")
            elif isinstance(child, ast.ClassDef):
                walk(child, f"{prefix}{child.name}.")
            else:
                walk(child, prefix)

    walk(tree, "")
    return None if twice else found


def _innermost(functions: dict[str, _Function], first: int, last: int) -> str | None:
    """The innermost function whose body holds lines ``first`` to ``last``."""
    best: tuple[int, str] | None = None
    for name, node in functions.items():
        start, end = node.body[0].lineno, node.end_lineno or 0
        if start <= first and last <= end and (best is None or start > best[0]):
            best = (start, name)
    return best[1] if best else None
