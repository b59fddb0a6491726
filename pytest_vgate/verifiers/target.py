"""Naming a verifier so that another process can find it: module + qualname (+ file).

A target is plain data. :func:`load_target` imports it where the call runs (the
verifier's zygote and child): by module name first, by file location when the
module name is not importable there (pytest's ``importlib`` import mode, rootless files).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from pytest_vgate.errors import VgateError
from pytest_vgate.jsonable import Jsonable
from pytest_vgate.verifiers.api import Isolation, VerifierDefinitionError, find_verifier_spec


class VerifierImportError(VgateError):
    """The target could not be found where the call runs; the message names it and why."""


@dataclass(frozen=True)
class VerifierTarget(Jsonable):
    """One verifier to call. ``name`` is how it is reported (its id or ``module:function``).

    ``timeout``, ``tools`` and ``isolation`` are the declaration's (copied by
    :meth:`from_callable`); ``tools`` may also carry a gate's tools for an undecorated
    function. The child reads the function's own ``@verifier`` tools too and uses both.
    """

    module: str
    qualname: str
    file: str | None = None
    name: str = ""
    timeout: float | None = None
    tools: tuple[str, ...] = ()
    isolation: Isolation = Isolation.PROCESS

    @property
    def display(self) -> str:
        return self.name or f"{self.module}:{self.qualname}"

    @classmethod
    def from_callable(cls, fn: Callable[..., Any], *, name: str | None = None) -> VerifierTarget:
        """The target of a function already imported here (collection time)."""
        spec = find_verifier_spec(fn)
        code = getattr(fn, "__code__", None)
        module = getattr(fn, "__module__", None) or ""
        qualname = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", "")
        if not module or not qualname or "<locals>" in qualname:
            raise VerifierDefinitionError(
                f"{fn!r} cannot be a verifier: define it at module level so that a fresh "
                "process can import it by name"
            )
        if spec is None:
            return cls(module, qualname, code.co_filename if code else None, name or "")
        return cls(
            module=module,
            qualname=qualname,
            file=spec.file or (code.co_filename if code else None),
            name=name or spec.id,
            timeout=spec.timeout,
            tools=spec.tools,
            isolation=spec.isolation,
        )

    @classmethod
    def from_reference(cls, reference: str, *, name: str | None = None) -> VerifierTarget:
        """A ``module:function`` reference from gates.yaml (not imported here)."""
        module, sep, qualname = reference.strip().partition(":")
        if not sep or not module.strip() or not qualname.strip():
            raise VerifierDefinitionError(
                f"verifier reference {reference!r} must look like 'module:function' "
                "(e.g. 'checks:parser_rejects_empty')"
            )
        return cls(module.strip(), qualname.strip(), None, name or reference.strip())


def extend_sys_path(entries: Sequence[str], *, first: bool) -> None:
    """Put ``entries`` on sys.path: in front (``first``) or appended where missing."""
    wanted = [e for e in dict.fromkeys(entries) if e]
    if first:
        sys.path[:] = wanted + [p for p in sys.path if p not in wanted]
    else:
        sys.path.extend(e for e in wanted if e not in sys.path)


def _import_module(module: str, file: str | None) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        # Fall back to the file only when the target module itself is not importable by
        # name; a dependency it imports that is missing is the module's own error.
        if file is None or not (module == missing or module.startswith(missing + ".")):
            raise
    spec = importlib.util.spec_from_file_location(module, file)
    if spec is None or spec.loader is None:
        raise VerifierImportError(f"cannot import {module!r}: no loader for the file {file}")
    loaded = importlib.util.module_from_spec(spec)
    sys.modules[module] = loaded
    try:
        spec.loader.exec_module(loaded)
    except BaseException:
        sys.modules.pop(module, None)
        raise
    return loaded


def import_module(module: str, file: str | None) -> ModuleType:
    """Import a verifier module (by name, else from ``file``). Exceptions raised by the
    module's own code propagate unchanged; a module found nowhere is VerifierImportError."""
    try:
        return _import_module(module, file)
    except ModuleNotFoundError as exc:
        where = f" (nor from the file {file})" if file else ""
        raise VerifierImportError(
            f"cannot import module {module!r}{where}: {exc}; put its folder on "
            "sys.path (the gates root is added) or fix the reference"
        ) from None


def load_target(target: VerifierTarget) -> Callable[..., Any]:
    """Import the target's function. Exceptions raised by the module's own code propagate
    unchanged (the caller classifies them); lookup problems are VerifierImportError."""
    obj: Any = import_module(target.module, target.file)
    for part in target.qualname.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise VerifierImportError(
                f"module {target.module!r} has no {target.qualname!r} "
                f"(looked for {part!r}); fix the reference 'module:function'"
            ) from None
    if not callable(obj):
        raise VerifierImportError(
            f"{target.module}:{target.qualname} is a {type(obj).__name__}, not a function"
        )
    return obj  # type: ignore[no-any-return]
