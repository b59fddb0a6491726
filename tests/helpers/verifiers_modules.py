"""Real misbehaving verifier modules, written to a folder that goes on the child's sys.path."""

from __future__ import annotations

import itertools
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_vgate.verifiers import VerifierCall, VerifierResult, VerifierTarget, call_verifier

_counter = itertools.count()

# One function per fault; each is a real verifier, not a mock of one.
ZOO = """
import ctypes, os, signal, sys, threading, time
from pytest_vgate.verifiers import Outcome, verifier

class UserPanic(BaseException):
    pass

def raises(ctx):
    raise ValueError("boom from the verifier")

def system_exit_0(ctx):
    raise SystemExit(0)

def sys_exit_call(ctx):
    sys.exit(0)

def generator_exit(ctx):
    raise GeneratorExit()

def keyboard_interrupt(ctx):
    raise KeyboardInterrupt()

def user_panic(ctx):
    raise UserPanic("mine")

def spin(ctx):
    while True:
        pass

def sleep_in_c(ctx):
    time.sleep(300)

def exit_0(ctx):
    os._exit(0)

def segfault(ctx):
    ctypes.string_at(0)

def sigkill_self(ctx):
    os.kill(os.getpid(), signal.SIGKILL)

def returns_none(ctx):
    return None

def no_return(ctx):
    pass

def returns_yes(ctx):
    return "yes"

def returns_false(ctx):
    return False

def returns_one(ctx):
    return 1

def returns_outcome_subclass(ctx):
    class Sneaky(Outcome):
        pass
    return Sneaky(True, "subclass")

class BadRepr:
    def __repr__(self):
        raise SystemExit("repr is a trap")

def returns_bad_repr(ctx):
    return BadRepr()

def returns_huge(ctx):
    return "x" * 100_000

def outcome_failed(ctx):
    return Outcome.failed("the product said no")

def outcome_passed(ctx):
    return Outcome.passed("all good")

def returns_true(ctx):
    return True

def no_argument():
    return True

def returns_coroutine(ctx):
    async def inner():
        return True
    return inner()
"""


def write_module(folder: Path, source: str, stem: str = "vmod") -> str:
    """Write ``source`` as a fresh uniquely named module in ``folder``; return its name."""
    name = f"{stem}_{next(_counter)}"
    (folder / f"{name}.py").write_text(textwrap.dedent(source))
    return name


def call(
    folder: Path,
    module: str,
    function: str,
    *,
    timeout: float = 30.0,
    declare: Sequence[str] = (),
    **kwargs: Any,
) -> VerifierResult:
    """call_verifier on ``module:function`` with ``folder`` as root and on sys.path;
    ``declare`` adds declared tools to the target, ``kwargs`` are ``VerifierCall`` fields."""
    target = VerifierTarget(module, function, tools=tuple(declare))
    return call_verifier(
        target, VerifierCall(root=folder, timeout=timeout, sys_path=(str(folder),), **kwargs)
    )
