"""What a change defines, and whether a base run failed for want of it.

A feature's test fails on the base because the feature is missing: ``from pkg import
new_name`` raises ``ImportError`` at the test module's import (pytest: a collection
error, exit 4), ``pkg.new_name(...)`` an ``AttributeError``, ``new_name(...)`` a
``NameError``, ``import pkg.new_module`` a ``ModuleNotFoundError``. Such a red is genuine
when the missing name is one the change **defines**: an added ``def``, ``class``, method or
module-level assignment, or a module the change adds. Any other missing name (a typo, a
test that is not on the base) stays a red for the wrong reason.
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from pytest_vgate.paths import is_test_path
from pytest_vgate.process.statements import parse

if TYPE_CHECKING:
    from pytest_vgate.gatesfile import Gate

_PATTERNS = (
    re.compile(r"ImportError: cannot import name '([^']+)'"),
    re.compile(r"AttributeError: .*has no attribute '([^']+)'"),
    re.compile(r"NameError: name '([^']+)' is not defined"),
    re.compile(r"ModuleNotFoundError: No module named '([^']+)'"),
)


def _names(text: str | None) -> set[str] | None:
    """Top-level and class-level names a module defines; None when it does not parse."""
    if text is None:
        return set()
    try:
        tree = parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None
    found: set[str] = set()

    def scan(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.add(prefix + node.name)
            elif isinstance(node, ast.ClassDef):
                found.add(prefix + node.name)
                scan(node.body, f"{prefix}{node.name}.")
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    for name in ast.walk(target):
                        if isinstance(name, ast.Name):
                            found.add(prefix + name.id)
            elif isinstance(node, (ast.If, ast.Try)):
                scan(node.body, prefix)

    scan(tree.body, "")
    return found


def added_names(base_text: str | None, head_text: str) -> frozenset[str]:
    """The names ``head_text`` defines that ``base_text`` does not (a method as
    ``Class.method`` and as ``method``)."""
    head, base = _names(head_text), _names(base_text)
    if head is None or base is None:
        return frozenset()
    out: set[str] = set()
    for name in head - base:
        out.add(name)
        out.add(name.rpartition(".")[2])
    return frozenset(out)


def module_names(rel: str) -> frozenset[str]:
    """The dotted names a file may be imported as (``src/pkg/new.py``: ``pkg.new``,
    ``src.pkg.new``, and so on up to ``new``), whichever folder is on ``sys.path``."""
    parts = rel.replace("\\", "/").rsplit(".", 1)[0].split("/")
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return frozenset(".".join(parts[i:]) for i in range(len(parts)) if parts[i:])


def added_modules(rel: str) -> frozenset[str]:
    """The dotted names a new file may be imported as (``module_names``). A new test module
    is not one: a test missing on the base is not the feature missing there."""
    return frozenset() if is_test_path(rel) else module_names(rel)


def check_modules(gate: Gate) -> frozenset[str]:
    """The modules that are a gate's check itself: a ``python`` gate's verifier modules."""
    return frozenset(ref.partition(":")[0].strip() for ref in gate.verifiers)


def is_check_module(rel: str, modules: frozenset[str]) -> bool:
    """Whether ``rel`` is one of ``modules`` as the gate imports it, from the gates root
    (``checks.py``, ``pkg/checks.py``, ``pkg/checks/__init__.py``). Not any file whose
    last components match: a verifier module named ``shop`` must not make
    ``pkg/shop.py``, the product, the check's own code."""
    stem = rel.replace("\\", "/").rsplit(".", 1)[0].removesuffix("/__init__")
    return stem.replace("/", ".") in modules


def is_check_file(rel: str, modules: frozenset[str] = frozenset()) -> bool:
    """Whether a file is the check's own code, never the change it tests: test code by
    name (``is_test_path``), or one of the gate's ``check_modules``."""
    return is_test_path(rel) or is_check_module(rel, modules)


def missing_defined(output: str, defined: frozenset[str]) -> str:
    """The first line of ``output`` that says a name the change defines is missing, or ""."""
    if not defined:
        return ""
    for line in output.splitlines():
        for pattern in _PATTERNS:
            hit = pattern.search(line)
            if hit and hit.group(1) in defined:
                return line.strip().removeprefix("E").strip()
    return ""
