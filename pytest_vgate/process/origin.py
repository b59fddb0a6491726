"""Which copy of the package under test a check would import: this tree's, or another.

A check's ``python`` can import an installed copy (site-packages) or an editable install
that points at another tree, and then it tests that copy, not the tree being checked: on
the base worktree, an editable install of the current tree makes every red run test the
fixed code. ``import_warnings`` asks the checks' interpreter, in the checks' environment,
where it finds each top-level package of the tree (without importing it). Pure core.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from pytest_vgate.process import run_process

PROBE_TIMEOUT = 30.0
_NOT_PACKAGES = {"tests", "test", "testing", "docs", "doc", "examples", "build", "dist", "bench"}
_PROBE = """
import importlib.util, json, os, sys
sys.path[:0] = [os.path.abspath(p) for p in json.loads(sys.argv[1])]
found = {}
for name in json.loads(sys.argv[2]):
    try:
        spec = importlib.util.find_spec(name)
    except Exception:  # find_spec imports the parent packages: their code may raise anything
        spec = None
    where = None
    if spec is not None:
        where = spec.origin if spec.origin not in (None, "namespace") else None
        if where is None and spec.submodule_search_locations:
            where = list(spec.submodule_search_locations)[0]
    found[name] = where
print(json.dumps(found))
"""


def local_packages(root: Path) -> dict[str, Path]:
    """Top-level packages defined in the tree: ``<root>/<pkg>/__init__.py`` and the src
    layout's ``<root>/src/<pkg>/__init__.py`` (test, docs and build folders excluded)."""
    found: dict[str, Path] = {}
    for folder in (root / "src", root):
        try:
            entries = sorted(folder.iterdir())
        except OSError:
            continue
        for entry in entries:
            name = entry.name
            if name in _NOT_PACKAGES or not name.isidentifier() or name in found:
                continue
            if (entry / "__init__.py").is_file():
                found[name] = entry
    return found


def probe(
    python: str,
    cwd: Path,
    env: Mapping[str, str],
    names: Sequence[str],
    extra_paths: Sequence[str] = (),
) -> dict[str, str | None] | None:
    """Where ``python`` started in ``cwd`` with ``env`` finds each name; None if the probe
    itself could not run (then nothing is claimed)."""
    result = run_process(
        [python, "-c", _PROBE, json.dumps(list(extra_paths)), json.dumps(list(names))],
        cwd=cwd,
        env=env,
        timeout=PROBE_TIMEOUT,
    )
    if result.exit_code != 0:
        return None
    try:
        data = json.loads(result.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None
    return {str(k): (None if v is None else str(v)) for k, v in data.items()}


def _inside(path: str, folder: Path) -> bool:
    real = os.path.realpath(path)
    top = os.path.realpath(folder)
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


def import_warnings(
    *,
    python: str,
    tree: Path,
    env: Mapping[str, str],
    extra_paths: Sequence[str] = (),
    label: str = "checks",
    current_tree: Path | None = None,
) -> list[str]:
    """One warning per package of ``tree`` that the checks would import from elsewhere.

    ``label`` names the run (``checks`` / ``red runs on base REF``); ``current_tree`` is
    given for the base worktree, so a copy found there is called what it is."""
    packages = local_packages(tree)
    if not packages:
        return []
    found = probe(python, tree, env, list(packages), extra_paths)
    if found is None:
        return []
    warnings = []
    for name, folder in packages.items():
        where = found.get(name)
        rel = os.path.relpath(folder, tree)
        if where is None:
            warnings.append(
                f"{label} cannot import {name} (this tree has it in {rel}/): {_recipe(rel)}"
            )
        elif not _inside(where, tree):
            whose = (
                "the current tree (an editable install or a path pointing there), so they test "
                "the new code"
                if current_tree is not None and _inside(where, current_tree)
                else "outside this tree (an installed copy?)"
            )
            warnings.append(
                f"{label} import {name} from {where}, {whose}, not {rel}/ of {tree}: {_recipe(rel)}"
            )
    return warnings


def _recipe(rel: str) -> str:
    parent = os.path.dirname(rel) or "."
    return (
        f"set `pythonpath = {parent}` in the pytest configuration, or give the gate "
        f'`env: {{set: {{PYTHONPATH: {parent}}}}}` (docs/quickstart.md, "The right copy '
        'of the code")'
    )
