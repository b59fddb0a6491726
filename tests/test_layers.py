"""The layering contract, checked on the real import graph of the package.

Every import statement counts, at module level or inside a function (a lazy import is
still a dependency), relative or absolute. Two layers: the pytest layer is the
subpackage ``pytest_vgate.plugin`` (with the command line, ``pytest_vgate.__main__``);
the core is everything else and never reaches pytest, xdist or the pytest layer.
Inside the core, each folder may use only the folders below it (``FOLDER_RULES``).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "pytest_vgate"
OUTER = ("pytest_vgate.plugin", "pytest_vgate.__main__")
PYTEST_WORLD = {"pytest", "_pytest", "xdist", "pluggy"}


def module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Each module of the package -> every module it imports (ours by module, others by
    top-level name), from every import statement in its source."""
    modules = {module_name(p, root): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(
                    a.name if a.name in modules else a.name.split(".")[0] for a in node.names
                )
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    target = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    target = node.module or ""
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    found.add(
                        sub
                        if sub in modules
                        else target
                        if target in modules
                        else target.split(".")[0]
                    )
        found.discard(name)
        graph[name] = found
    return graph


def is_core(name: str) -> bool:
    return not any(name == outer or name.startswith(outer + ".") for outer in OUTER)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start] & graph.keys())))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt] & graph.keys()))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_the_core_never_imports_pytest_or_the_pytest_layer() -> None:
    graph = import_graph()
    offenders = {
        name: sorted(deps & PYTEST_WORLD | {d for d in deps if d in graph and not is_core(d)})
        for name, deps in graph.items()
        if is_core(name)
    }
    offenders = {name: deps for name, deps in offenders.items() if deps}
    assert not offenders, f"core modules reaching pytest or the pytest layer: {offenders}"


def test_the_pytest_layer_is_one_subpackage() -> None:
    graph = import_graph()
    using_pytest = sorted(name for name, deps in graph.items() if deps & {"pytest", "_pytest"})
    assert using_pytest
    assert all(not is_core(name) for name in using_pytest), using_pytest


SHARED_VALUES = {
    "pytest_vgate.defaults",
    "pytest_vgate.errors",
    "pytest_vgate.jsonable",
    "pytest_vgate.strenum",
    "pytest_vgate.verdict",
}
"""Root modules every folder may use: the shared value types and their codec."""

FOLDER_RULES: dict[str, tuple[set[str], set[str]]] = {
    # folder: (what it may import of ours, or empty for "anything not refused"; refused)
    "process": (SHARED_VALUES, set()),
    "baseline": (SHARED_VALUES | {"pytest_vgate.process"}, set()),
    "citations": (SHARED_VALUES | {"pytest_vgate.process", "pytest_vgate.clip"}, set()),
    "spec": (
        set(),
        {
            "pytest_vgate.evidence",
            "pytest_vgate.verifiers",
            "pytest_vgate.baseline",
            "pytest_vgate.runner",
            "pytest_vgate.exporters",
        },
    ),
    "evidence": (
        set(),
        {
            "pytest_vgate.verifiers",
            "pytest_vgate.citations",
            "pytest_vgate.runner",
            "pytest_vgate.gate_result",
            "pytest_vgate.exporters",
        },
    ),
}
"""The folders of the core, lowest first: execution (``process``) knows no gate, no
evidence and no verifier; ``baseline`` checks out trees with it; ``citations`` reads
documents; ``spec`` turns gates files into values; ``evidence`` judges runs it is given
and never starts a check itself."""


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def folder_offenders(graph: dict[str, set[str]], folder: str) -> dict[str, list[str]]:
    """The imports of ``pytest_vgate.<folder>`` that its row in ``FOLDER_RULES`` refuses."""
    allowed, refused = FOLDER_RULES[folder]
    prefix = f"pytest_vgate.{folder}"
    found: dict[str, list[str]] = {}
    for name, deps in graph.items():
        if not _within(name, prefix):
            continue
        ours = {d for d in deps if d in graph and not _within(d, prefix)}
        bad = {
            d
            for d in ours
            if (allowed and not any(_within(d, a) for a in allowed))
            or any(_within(d, r) for r in refused)
        }
        if bad:
            found[name] = sorted(bad)
    return found


@pytest.mark.parametrize("folder", sorted(FOLDER_RULES))
def test_each_core_folder_uses_only_the_folders_below_it(folder: str) -> None:
    assert (PACKAGE / folder).is_dir(), folder
    assert folder_offenders(import_graph(), folder) == {}


def test_the_folder_rules_see_an_upward_import(tmp_path: Path) -> None:
    """The checker itself: execution reaching evidence, lazily, is refused."""
    package = tmp_path / "pytest_vgate"
    for folder in ("process", "evidence"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "verdict.py").write_text("")
    (package / "process" / "cell.py").write_text(
        "from pytest_vgate import verdict\ndef f():\n    from pytest_vgate.evidence import x\n"
    )
    assert folder_offenders(import_graph(package), "process") == {
        "pytest_vgate.process.cell": ["pytest_vgate.evidence"]
    }


def test_there_is_no_import_cycle() -> None:
    assert cycles(import_graph()) == []


def test_the_contract_sees_lazy_imports_and_cycles(tmp_path: Path) -> None:
    """The checker itself: an import inside a function counts, and a cycle is found."""
    package = tmp_path / "pytest_vgate"
    (package / "plugin").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "plugin" / "__init__.py").write_text("import pytest\n")
    (package / "a.py").write_text("def f():\n    from pytest_vgate.plugin import x\n")
    (package / "b.py").write_text("from . import c\n")
    (package / "c.py").write_text("def g():\n    from pytest_vgate import b\n")
    graph = import_graph(package)
    assert "pytest_vgate.plugin" in graph["pytest_vgate.a"]
    assert "pytest" in graph["pytest_vgate.plugin"]
    assert cycles(graph) == [["pytest_vgate.b", "pytest_vgate.c"]]


def test_the_entry_point_imports_only_what_every_session_needs() -> None:
    """Loading the plugin (what every pytest run of every user does) imports a handful of
    our modules; the rest loads when vgate is asked for (docs/performance.md)."""
    code = (
        "import sys; import pytest_vgate.plugin; "
        "print('\\n'.join(sorted(m for m in sys.modules if m.startswith('pytest_vgate'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout.split()
    assert set(out) <= ENTRY_MODULES, sorted(set(out) - ENTRY_MODULES)


ENTRY_MODULES = {
    "pytest_vgate",
    "pytest_vgate.defaults",
    "pytest_vgate.plugin",
    "pytest_vgate.plugin.options",
    "pytest_vgate.plugin.startup",
}


@pytest.mark.parametrize("name", sorted(ENTRY_MODULES))
def test_entry_modules_exist(name: str) -> None:
    assert name in import_graph(), name
