"""Find every place in a package's source that calls, or hands on, a verifier function.

A *verifier value* is what the package holds as a user's verifier: the result of
``load_target(...)``, the object given to ``find_verifier_spec(...)`` or
``VerifierTarget.from_callable(...)``, the function the decorator marks with
``setattr(fn, SPEC_ATTRIBUTE, ...)``. The scanner follows such values through local
names, into the parameters of the package's own functions, and out of functions that
return them, and reports each *call* of one and each time one is *handed* to anything
other than an inspection (``callable``, ``getattr``, ``inspect.signature``, ...).
Conservative on purpose: a false alarm is a prompt to look, a miss is a hole.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

SOURCE_CALLS = {"load_target"}  # their result is a verifier value
MARKING_CALLS = {"find_verifier_spec", "from_callable"}  # their first argument is one
INSPECTIONS = MARKING_CALLS | {
    "callable",
    "getattr",
    "getattr_static",
    "setattr",
    "hasattr",
    "isinstance",
    "type",
    "id",
    "repr",
    "signature",
    "iscoroutinefunction",
    "isasyncgenfunction",
    "isgeneratorfunction",
    "isfunction",
}


@dataclass(frozen=True)
class Site:
    file: str  # relative to the scanned folder's parent
    function: str  # top-level function or Class.method the site is in
    line: int
    kind: str  # "call" or "handed"
    detail: str


@dataclass
class _Function:
    file: str
    qualname: str  # "name", "Class.name", or "<module>" for module-level statements
    body: list[ast.stmt]
    params: list[str]  # positional parameters, without self/cls
    tainted: set[str]
    nodes: list[ast.AST] = field(default_factory=list)  # walk() cache

    @property
    def short(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]

    def walk(self) -> list[ast.AST]:
        """Every node of the body, nested functions and lambdas included (closures)."""
        if not self.nodes:
            self.nodes = [node for stmt in self.body for node in ast.walk(stmt)]
        return self.nodes

    def own_returns(self) -> list[ast.Return]:
        """The return statements of this function itself, not of functions nested in it."""
        found: list[ast.Return] = []
        todo: list[ast.AST] = list(self.body)
        while todo:
            node = todo.pop()
            if isinstance(node, ast.Return):
                found.append(node)
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                todo.extend(ast.iter_child_nodes(node))
        return found


def _name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _function(
    file: str, qualname: str, node: ast.FunctionDef | ast.AsyncFunctionDef, method: bool
) -> _Function:
    names = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
    return _Function(file, qualname, node.body, names[1:] if method else names, set())


def _functions(root: Path) -> list[_Function]:
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = str(path.relative_to(root.parent))
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
        defs = (ast.FunctionDef, ast.AsyncFunctionDef)
        module_level = [s for s in tree.body if not isinstance(s, (*defs, ast.ClassDef))]
        found.append(_Function(rel, "<module>", module_level, [], set()))
        for stmt in tree.body:
            if isinstance(stmt, defs):
                found.append(_function(rel, stmt.name, stmt, method=False))
            elif isinstance(stmt, ast.ClassDef):
                for sub in stmt.body:
                    if isinstance(sub, defs):
                        found.append(_function(rel, f"{stmt.name}.{sub.name}", sub, True))
    return found


def scan(package: Path) -> list[Site]:
    """Every call of a verifier value in ``package`` (a folder), and every hand-off."""
    functions = _functions(package)
    by_name: dict[str, list[_Function]] = {}
    for fn in functions:
        by_name.setdefault(fn.short, []).append(fn)
    sources = set(SOURCE_CALLS)
    while True:  # propagate to a fixpoint
        before = (len(sources), sum(len(fn.tainted) for fn in functions))
        for fn in functions:
            _propagate(fn, by_name, sources)
        if (len(sources), sum(len(fn.tainted) for fn in functions)) == before:
            break
    return [site for fn in functions for site in _sites(fn, by_name, sources)]


def _is_value(node: ast.expr, tainted: set[str], sources: set[str]) -> bool:
    if isinstance(node, ast.Name):
        return node.id in tainted
    if isinstance(node, ast.Call):  # load_target(t) used directly
        return _name(node.func) in sources
    return False


def _propagate(fn: _Function, by_name: dict[str, list[_Function]], sources: set[str]) -> None:
    for node in fn.walk():
        if isinstance(node, ast.Call):
            called = _name(node.func)
            first = node.args[0] if node.args else None
            marks = called in MARKING_CALLS or (  # setattr(fn, SPEC_ATTRIBUTE, spec)
                called == "setattr" and len(node.args) > 1 and "SPEC" in ast.unparse(node.args[1])
            )
            if marks and isinstance(first, ast.Name):
                fn.tainted.add(first.id)
            for index, arg in enumerate(node.args):
                if _is_value(arg, fn.tainted, sources) and called in by_name:
                    for target in by_name[called]:
                        if index < len(target.params):
                            target.tainted.add(target.params[index])
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)):
            value = node.value
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if value is not None and _is_value(value, fn.tainted, sources):
                fn.tainted.update(t.id for t in targets if isinstance(t, ast.Name))

    for ret in fn.own_returns():
        if ret.value is not None and _is_value(ret.value, fn.tainted, sources):
            sources.add(fn.short)  # a function that returns a verifier is a source too


def _sites(fn: _Function, by_name: dict[str, list[_Function]], sources: set[str]) -> list[Site]:
    sites = []
    for node in fn.walk():
        if not isinstance(node, ast.Call):
            if isinstance(node, ast.Assign) and _is_value(node.value, fn.tainted, sources):
                for target in node.targets:
                    if not isinstance(target, ast.Name):  # stored away: self.x = fn, d[k] = fn
                        sites.append(_site(fn, node, "handed", ast.unparse(node)))
            continue
        func = node.func
        if _is_value(func, fn.tainted, sources) or (
            isinstance(func, ast.Attribute) and _is_value(func.value, fn.tainted, sources)
        ):
            sites.append(_site(fn, node, "call", ast.unparse(node)))
            continue
        called = _name(func)
        given = [*node.args, *(k.value for k in node.keywords)]
        for arg in given:
            if not _is_value(arg, fn.tainted, sources):
                continue
            if called in INSPECTIONS or (called in by_name and arg in node.args):
                continue  # an inspection, or into our own function (followed there)
            sites.append(_site(fn, node, "handed", ast.unparse(node)))
    return sites


def _site(fn: _Function, node: ast.AST, kind: str, text: str) -> Site:
    return Site(fn.file, fn.qualname, getattr(node, "lineno", 0), kind, text)


def references(package: Path, name: str) -> set[tuple[str, str]]:
    """(file, function) pairs whose code mentions ``name`` other than defining it."""
    found = set()
    for fn in _functions(package):
        for node in fn.walk():
            if (isinstance(node, ast.Name) and node.id == name) or (
                isinstance(node, ast.Attribute) and node.attr == name
            ):
                found.add((fn.file, fn.qualname))
    return found
