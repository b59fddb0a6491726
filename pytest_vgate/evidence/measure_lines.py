"""Which changed lines ran: one-shot probes compiled into the changed files (CPython < 3.12).

Written into a measured run's bootstrap folder as ``_vgate_lines.py`` and imported by its
``sitecustomize`` inside the check's own interpreter (pytest_vgate/evidence/measure.py): standard
library only, nothing of pytest-vgate, Python 3.8 syntax.

Before Python 3.12 there is no ``sys.monitoring``: coverage.py's C tracer is a
``sys.settrace`` hook, and any trace hook makes CPython 3.11 run *every* instruction of
*every* frame through its slow tracing path, whether the file is recorded or not (2.3x on
more-itertools' test suite with nothing recorded at all). The judgment needs far less than
a line trace: which of a few changed lines ran, and whether a changed file was executed at
all. So the changed files are compiled with a probe in front of each statement that starts
on a changed line (``if not H[n]: hit(i, n)``: after its first hit a list lookup and a
branch) and a marker at the top of the module; nothing else is touched and no trace hook
is set.

Every way Python turns a changed file into code goes through ``compile`` or ``marshal``:

- ``builtins.compile``: importlib's ``source_to_code`` (imports, ``python -m``, runpy,
  ``importlib.util.spec_from_file_location``), pytest's assertion rewriting (a rewritten
  test module), ``runpy.run_path``, ``exec(compile(source, path, "exec"))``. A call naming
  a target file in ``exec`` mode compiles the probed tree instead; any other call is
  passed on unchanged (the caller's ``__future__`` flags included).
- ``marshal.loads`` / ``marshal.load``: a cached ``.pyc`` of a target file (importlib's
  cache, already checked against its source) is replaced by the probed compile of that
  source; pytest's rewritten cache of a target file is refused (not a code object), so
  pytest rewrites the file again, through ``compile``.
- ``marshal.dumps`` / ``marshal.dump`` write the unprobed code of a probed code object: no
  bytecode cache is ever left holding probes.

Hits are appended to ``lines.<token>`` in the run's folder the moment they happen (one
``open``/``write``/``close`` per changed line, once), so nothing is lost at ``os._exit``.
A script run as ``python changed_file.py`` is compiled by the interpreter itself, before
any hook: ``sitecustomize`` measures such a process with coverage.py instead.
"""

from __future__ import annotations
import __future__

import ast
import builtins
import marshal
import os
import sys
import types
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

PROBED_NAME = "_@vgate"  # not an identifier: no name of the program can collide with it
REWRITTEN = frozenset({"@py_builtins", "@pytest_ar"})  # pytest's assertion rewriting
FUTURE_FLAGS = 0
for _name in __future__.all_feature_names:
    FUTURE_FLAGS |= getattr(__future__, _name).compiler_flag

_folder = ""
_token = ""
_targets: dict[str, tuple[int, frozenset[int]]] = {}  # real path -> (index, lines)
_hits: list[list[bool]] = []
_entered: list[bool] = []
_real_paths: dict[str, str | None] = {}
# id(probed code) -> (the probed code, its unprobed twin or how to compile it)
_originals: dict[int, tuple[types.CodeType, types.CodeType | Callable[[], types.CodeType]]] = {}
_real_compile = builtins.compile
_real_loads = marshal.loads
_real_load = marshal.load
_real_dumps = marshal.dumps
_real_dump = marshal.dump


def install(folder: str, token: str, targets: dict[str, list[int]]) -> None:
    """Start probing ``targets`` (real path -> changed lines) in this process."""
    global _folder, _token
    _folder, _token = folder, token
    for index, (path, lines) in enumerate(sorted(targets.items())):
        _targets[path] = (index, frozenset(lines))
        _hits.append([False] * (max(lines, default=0) + 1))
        _entered.append(False)
    builtins.compile = _compile
    marshal.loads = _loads
    marshal.load = _load
    marshal.dumps = _dumps
    marshal.dump = _dump


def enter(index: int) -> list[bool]:
    """A probed module starts executing: record the file once, hand it its hit list."""
    if not _entered[index]:
        _entered[index] = True
        _write(f"f {index}\n")
    return _hits[index]


def hit(index: int, line: int) -> None:
    """A probed statement is about to run: record its line once."""
    hits = _hits[index]
    if not hits[line]:
        hits[line] = True
        _write(f"l {index} {line}\n")


def _write(text: str) -> None:
    # Open, append, close: a check that closes or reuses file descriptors (a daemon's
    # closerange) can never make a hit land in one of its own files.
    try:
        fd = os.open(
            os.path.join(_folder, "lines." + _token), os.O_WRONLY | os.O_CREAT | os.O_APPEND
        )
        try:
            os.write(fd, text.encode("ascii"))
        finally:
            os.close(fd)
    except OSError:
        pass


def _target(filename: object) -> tuple[int, frozenset[int]] | None:
    try:
        name = os.fsdecode(os.fspath(filename))  # type: ignore[call-overload]
    except TypeError:
        return None
    if name not in _real_paths:
        _real_paths[name] = os.path.realpath(name) if name and name[0] != "<" else None
    real = _real_paths[name]
    return _targets.get(real) if real is not None else None


def _compile(
    source: Any,
    filename: Any,
    mode: str,
    flags: int = 0,
    dont_inherit: bool = False,
    optimize: int = -1,
    **extra: Any,
) -> Any:
    if not dont_inherit:  # what the real compile would inherit from its caller
        try:  # noqa: SIM105 - the cheapest form, on every compile() call
            flags |= sys._getframe(1).f_code.co_flags & FUTURE_FLAGS
        except ValueError:  # called with no Python frame: nothing to inherit
            pass
    target = None
    if mode == "exec" and not flags & ast.PyCF_ONLY_AST:
        target = _target(filename)
    if target is not None:
        try:
            return _probed(source, filename, flags, optimize, target, extra)
        except SyntaxError:
            pass  # the real compile below raises it, as the caller expects
        except Exception:  # noqa: BLE001 - never break the check: this file goes unprobed
            pass
    return _real_compile(source, filename, mode, flags, True, optimize, **extra)


def _probed(
    source: Any,
    filename: Any,
    flags: int,
    optimize: int,
    target: tuple[int, frozenset[int]],
    extra: dict[str, Any],
) -> types.CodeType:
    if isinstance(source, ast.AST):
        import copy

        tree = copy.deepcopy(source)  # the caller's tree stays as it gave it
    else:
        tree = _real_compile(source, filename, "exec", flags | ast.PyCF_ONLY_AST, True, optimize)
    if not isinstance(tree, ast.Module):
        raise TypeError("not a module")
    index, lines = target
    _Prober(index, lines).module(tree)
    code: types.CodeType = _real_compile(tree, filename, "exec", flags, True, optimize, **extra)

    def plain() -> types.CodeType:  # compiled only if a bytecode cache asks for it
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the probed compile already warned
            made: types.CodeType = _real_compile(
                source, filename, "exec", flags, True, optimize, **extra
            )
        return made

    _originals[id(code)] = (code, plain)  # what a bytecode cache gets instead
    return code


def _swap(obj: object) -> object:
    """A code object read from a bytecode cache: the probed compile of its source."""
    if type(obj) is not types.CodeType or id(obj) in _originals:
        return obj
    target = _target(obj.co_filename)
    if target is None or obj.co_name != "<module>":
        return obj
    if REWRITTEN & set(obj.co_names):
        return None  # pytest's cache: refused, so pytest rewrites the source through compile
    try:
        with open(obj.co_filename, "rb") as fh:
            source = fh.read()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a cached load never warns
            tree: Any = _real_compile(source, obj.co_filename, "exec", ast.PyCF_ONLY_AST, True)
            index, lines = target
            _Prober(index, lines).module(tree)
            code = _real_compile(tree, obj.co_filename, "exec", 0, True)
    except Exception:  # noqa: BLE001 - never break the check: this file goes unprobed
        return obj
    _originals[id(code)] = (code, obj)
    return code


def _loads(data: Any, *args: Any, **kwargs: Any) -> object:
    return _swap(_real_loads(data, *args, **kwargs))


def _load(file: Any, *args: Any, **kwargs: Any) -> object:
    return _swap(_real_load(file, *args, **kwargs))


def _plain(value: Any) -> Any:
    pair = _originals.get(id(value))
    if pair is None or pair[0] is not value:
        return value
    plain = pair[1]
    if not isinstance(plain, types.CodeType):
        plain = plain()
        _originals[id(value)] = (value, plain)
    return plain


def _dumps(value: object, *args: Any, **kwargs: Any) -> bytes:
    return _real_dumps(_plain(value), *args, **kwargs)


def _dump(value: object, file: Any, *args: Any, **kwargs: Any) -> None:
    _real_dump(_plain(value), file, *args, **kwargs)


_Node = TypeVar("_Node", bound=ast.AST)


def _placed(node: _Node, where: ast.AST) -> _Node:
    """``node`` at ``where``'s place, with an end: nodes pytest's assertion rewriting adds
    (its imports after a docstring or ``__future__`` line) have a start line and no end,
    and ``fix_missing_locations`` would then end them on line 1, before they start, which
    ``compile`` refuses (the module went unprobed)."""
    ast.copy_location(node, where)
    line = getattr(node, "lineno", None)
    if line is not None and getattr(node, "end_lineno", None) is None:
        node.end_lineno = line  # type: ignore[attr-defined]
        node.end_col_offset = getattr(node, "col_offset", 0)  # type: ignore[attr-defined]
    return node


def _index(value: int) -> Any:
    """A subscript's index: wrapped in ``ast.Index`` before Python 3.9."""
    constant = ast.Constant(value)
    if sys.version_info < (3, 9):  # noqa: UP036 - runs in the check's Python, 3.8 included
        return ast.Index(value=constant)  # type: ignore[call-arg,unused-ignore]
    return constant


def _is_docstring(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    )


def _is_future(node: ast.stmt) -> bool:
    return isinstance(node, ast.ImportFrom) and node.module == "__future__"


class _Prober:
    """Puts a probe in front of every statement starting on a target line."""

    def __init__(self, index: int, lines: frozenset[int]) -> None:
        self.index = index
        self.lines = lines
        self.done: set[int] = set()
        self.hits = f"{PROBED_NAME}{index}"

    def _name(self, name: str, where: ast.AST) -> ast.Name:
        return _placed(ast.Name(id=name, ctx=ast.Load()), where)

    def _hit_call(self, line: int, where: ast.AST) -> ast.Call:
        func = ast.Attribute(value=self._name(PROBED_NAME, where), attr="hit", ctx=ast.Load())
        call = ast.Call(func=func, args=[ast.Constant(self.index), ast.Constant(line)], keywords=[])
        return ast.fix_missing_locations(_placed(call, where))

    def _stmt(self, line: int, where: ast.AST) -> ast.stmt:
        """``if not H[line]: hit(index, line)``."""
        self.done.add(line)
        seen = ast.Subscript(value=self._name(self.hits, where), slice=_index(line))
        seen.ctx = ast.Load()
        test = ast.UnaryOp(op=ast.Not(), operand=seen)
        probe = ast.If(test=test, body=[ast.Expr(self._hit_call(line, where))], orelse=[])
        return ast.fix_missing_locations(_placed(probe, where))

    def _wrap(self, line: int, expr: ast.expr) -> ast.expr:
        """``(hit(index, line), expr)[1]``: the probe runs first, then the expression."""
        self.done.add(line)
        pair = ast.Tuple(elts=[self._hit_call(line, expr), expr], ctx=ast.Load())
        picked = ast.Subscript(value=pair, slice=_index(1), ctx=ast.Load())
        return ast.fix_missing_locations(_placed(picked, expr))

    def module(self, tree: ast.Module) -> None:
        body = tree.body
        head = 0
        if body and _is_docstring(body[0]):
            head = 1
        while head < len(body) and _is_future(body[head]):
            head += 1
        where = body[head] if head < len(body) else (body[0] if body else tree)
        prologue: list[ast.stmt] = [
            ast.Import(names=[ast.alias(name="_vgate_lines", asname=PROBED_NAME)]),
            ast.Assign(
                targets=[ast.Name(id=self.hits, ctx=ast.Store())],
                value=ast.Call(
                    func=ast.Attribute(
                        value=ast.Name(id=PROBED_NAME, ctx=ast.Load()), attr="enter", ctx=ast.Load()
                    ),
                    args=[ast.Constant(self.index)],
                    keywords=[],
                ),
            ),
        ]
        # __future__ imports must stay first: their lines are hit as the module starts.
        prologue += [self._stmt(s.lineno, s) for s in body[:head] if s.lineno in self.lines]
        for node in prologue:
            ast.fix_missing_locations(_placed(node, where))
        tree.body = body[:head] + prologue + self._body(body[head:])

    def _body(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for node in stmts:
            line = node.lineno
            if line in self.lines and line not in self.done:
                out.append(self._stmt(line, node))
            self._inside(node)
            out.append(node)
        return out

    def _inside(self, node: ast.stmt) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            node.decorator_list = [
                self._wrap(d.lineno, d)
                if d.lineno in self.lines and d.lineno not in self.done
                else d
                for d in node.decorator_list
            ]
            keep = 1 if node.body and _is_docstring(node.body[0]) else 0
            node.body = node.body[:keep] + self._body(node.body[keep:])
            return
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                setattr(node, field, self._body(block))
        for handler in getattr(node, "handlers", ()):
            line = handler.lineno
            if line in self.lines and line not in self.done:
                if handler.type is not None:
                    handler.type = self._wrap(line, handler.type)
                else:
                    handler.body.insert(0, self._stmt(line, handler))
            handler.body = self._body(handler.body)
        for case in getattr(node, "cases", ()):  # match: a case line counts when it matched
            line = case.pattern.lineno
            if line in self.lines and line not in self.done:
                case.body.insert(0, self._stmt(line, case.pattern))
            case.body = self._body(case.body)
