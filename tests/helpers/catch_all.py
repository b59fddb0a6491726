"""Find the catch-all sites of the package by reading its source (tests/test_boundaries.py).

A catch-all is an ``except`` that takes ``Exception`` or ``BaseException`` (bare, named,
or in a tuple) or a ``suppress(...)`` of them. An ``except`` whose body ends in a bare
``raise`` is cleanup on the way out, not a catch, and is not listed. Scripts the package
runs in other processes (kept as strings: the coverage bootstrap, the zygote's boot, the
origin probe) are read too.
"""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import pytest_vgate

PACKAGE = Path(pytest_vgate.__file__).parent
CATCH_ALL = {"Exception", "BaseException"}
# Module-level strings that are Python run in another process: (module, name).
SCRIPTS = (
    ("pytest_vgate.process.origin", "_PROBE"),
    ("pytest_vgate.verifiers.zygote", "BOOT"),
)


def _names(node: ast.expr | None) -> set[str]:
    if node is None:
        return {"BaseException"}  # a bare except
    if isinstance(node, ast.Tuple):
        return {n for elt in node.elts for n in _names(elt)}
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.Attribute):
        return {node.attr}
    return set()


def _reraises(handler: ast.ExceptHandler) -> bool:
    last = handler.body[-1]
    return isinstance(last, ast.Raise) and last.exc is None


class _Finder(ast.NodeVisitor):
    def __init__(self, module: str, lines: list[str]) -> None:
        self.module = module
        self.lines = lines
        self.scope: list[str] = []
        self.found: list[tuple[str, int, str]] = []  # (site, line, the comment that says why)

    def _visit_scope(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _visit_scope

    def _add(self, line: int) -> None:
        site = f"{self.module}:{'.'.join(self.scope) or '<module>'}"
        here = self.lines[line - 1]
        above = self.lines[line - 2].strip() if line >= 2 else ""
        why = here.split("#", 1)[1].strip() if "#" in here else ""
        if above.startswith("#"):
            why = f"{above[1:].strip()} {why}".strip()
        self.found.append((site, line, why))

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if _names(node.type) & CATCH_ALL and not _reraises(node):
            self._add(node.lineno)
        self.generic_visit(node)

    def visit_With(self, node: ast.With) -> None:
        for item in node.items:
            call = item.context_expr
            if (
                isinstance(call, ast.Call)
                and _names(call.func) & {"suppress"}
                and any(_names(arg) & CATCH_ALL for arg in call.args)
            ):
                self._add(node.lineno)
        self.generic_visit(node)


def _scan(source: str, module: str) -> list[tuple[str, int, str]]:
    finder = _Finder(module, source.splitlines())
    finder.visit(ast.parse(source))
    return finder.found


def _script_source(module: str, name: str) -> str:
    import importlib

    text = getattr(importlib.import_module(module), name)
    assert isinstance(text, str)
    return text


def catch_all_sites() -> list[tuple[str, int, str]]:
    """(module:function, line, comment) per catch-all in the package, scripts included."""
    found: list[tuple[str, int, str]] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found.extend(_scan(path.read_text(encoding="utf-8"), module))
    for module, name in SCRIPTS:
        found.extend(_scan(_script_source(module, name), f"{module}.{name}"))
    return found


def site_counts() -> Counter[str]:
    return Counter(site for site, _, _ in catch_all_sites())
