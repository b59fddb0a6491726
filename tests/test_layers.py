"""The layering contract, checked on the real import graph of the package.

Every import statement counts, at module level or inside a function (a lazy import is
still a dependency), relative or absolute. Two layers: the pytest layer is the
subpackage ``pytest_vgate.plugin`` (with the command line, ``pytest_vgate.__main__``);
the core is everything else and never reaches pytest, xdist or the pytest layer.
Inside the core, each room (a folder, or a root module) sits on a floor and imports only
its own floor and those below (``FLOORS``); rooms beside each other never meet.
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


FLOORS: tuple[tuple[str, ...], ...] = (
    # lowest first; a module may import its own floor's and the floors below
    ("defaults", "errors", "jsonable", "clip", "paths", "verdict"),
    ("process",),
    ("citations",),
    ("gatesfile",),
    ("causes", "payload", "context"),
    ("baseline", "verifiers"),
    ("evidence",),
    ("gate", "exporters"),
    ("plugin", "__main__", ""),
)
"""The floors of docs/architecture.md, top-level names under ``pytest_vgate`` ("" is the
package's ``__init__``, the public API): the vocabulary at the bottom, then execution
(``process``: processes, cells, tools, how a process is measured), documents and the gates
file, the values a run carries, the verifiers and the base worktree, the evidence
(what the runs mean), running and judging a gate and the outputs, the pytest layer."""

SIDE_BY_SIDE = {("baseline", "verifiers"), ("gate", "exporters")}
"""Rooms on one floor that never import each other."""

ROOT_MODULES_AT_MOST = 12


def room(name: str) -> str:
    """``pytest_vgate.evidence.proof`` -> ``evidence``; the package itself -> ""."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else ""


def floor_of(name: str) -> int:
    for number, rooms in enumerate(FLOORS):
        if room(name) in rooms:
            return number
    raise AssertionError(f"{name} is on no floor of FLOORS: add its room to one")


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every import of a module of a higher floor (or of a room beside it on its floor)."""
    found = []
    for name, deps in graph.items():
        for dep in sorted(d for d in deps if d in graph and room(d) != room(name)):
            beside = tuple(sorted((room(name), room(dep)))) in SIDE_BY_SIDE
            if floor_of(dep) > floor_of(name) or beside:
                found.append(f"{name} -> {dep}")
    return found


def test_every_room_is_on_a_floor_and_imports_only_downward() -> None:
    assert upward_imports(import_graph()) == []


def test_the_root_holds_the_public_api_and_the_vocabulary_alone() -> None:
    modules = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(modules) <= ROOT_MODULES_AT_MOST, modules
    assert set(FLOORS[0]) | {"causes", "payload", "context"} >= {
        p.stem for p in PACKAGE.glob("*.py") if not p.stem.startswith("__")
    }


def test_the_floors_see_an_upward_import(tmp_path: Path) -> None:
    """The checker itself: execution reaching evidence, lazily, is refused, and so is a
    room reaching the one beside it."""
    package = tmp_path / "pytest_vgate"
    for folder in ("process", "evidence", "baseline", "verifiers"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "verdict.py").write_text("")
    (package / "process" / "cell.py").write_text(
        "from pytest_vgate import verdict\ndef f():\n    from pytest_vgate.evidence import x\n"
    )
    (package / "baseline" / "tree.py").write_text("from pytest_vgate.verifiers import y\n")
    (package / "evidence" / "proof.py").write_text("from pytest_vgate.process import cell\n")
    assert sorted(upward_imports(import_graph(package))) == [
        "pytest_vgate.baseline.tree -> pytest_vgate.verifiers",
        "pytest_vgate.process.cell -> pytest_vgate.evidence",
    ]


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
