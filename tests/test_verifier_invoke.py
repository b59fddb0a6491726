"""How a verifier is called in its process: ``fn(ctx)`` or ``fn()``, as its signature says.

A plain function's answer is read from its code object (what ``inspect`` reads too, at a
fraction of the objects a forked process touches); it must be the answer
``inspect.signature`` gives, for every shape a function can have.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import pytest

from pytest_vgate.verifiers.invoke import _takes_argument


def _by_inspect(fn: Callable[..., Any]) -> bool:
    """The rule, as it was written before the code-object path: any positional parameter."""
    kinds = (
        inspect.Parameter.POSITIONAL_ONLY,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.VAR_POSITIONAL,
    )
    return any(p.kind in kinds for p in inspect.signature(fn).parameters.values())


def _wraps_without_argument(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper() -> Any:
        return fn(None)

    return wrapper


def _signed(fn: Callable[..., Any], sig: inspect.Signature) -> Callable[..., Any]:
    fn.__signature__ = sig  # type: ignore[attr-defined]
    return fn


class _Callable:
    def __call__(self, ctx: object) -> bool:
        return True

    def method(self, ctx: object) -> bool:
        return True

    def bare(self) -> bool:
        return True


def none() -> bool:
    return True


def one(ctx: object) -> bool:
    return True


SHAPES: dict[str, Callable[..., Any]] = {
    "no parameter": none,
    "one parameter": one,
    "a default": lambda ctx=None: True,
    "positional-only": lambda ctx, /: True,
    "*args": lambda *args: True,
    "**kwargs only": lambda **kwargs: True,
    "keyword-only": lambda *, ctx: True,
    "keyword-only and **kwargs": lambda *, ctx=None, **kw: True,
    "a lambda of none": lambda: True,
    "wrapped: the wrapper takes none, the wrapped one": _wraps_without_argument(one),
    "wrapped: both take one": functools.wraps(one)(lambda ctx: True),
    "__signature__ says none": _signed(lambda ctx: True, inspect.Signature()),
    "__signature__ says one": _signed(
        lambda: True,
        inspect.Signature([inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD)]),
    ),
    "partial that fills it": functools.partial(one, None),
    "partial of *args": functools.partial(lambda *a: True, 1),
    "a callable object": _Callable(),
    "a bound method": _Callable().method,
    "a bound method of none": _Callable().bare,
    "a builtin": abs,
    "a class": _Callable,
}


@pytest.mark.parametrize("fn", SHAPES.values(), ids=SHAPES.keys())
def test_a_verifier_gets_ctx_exactly_when_its_signature_takes_a_positional_argument(
    fn: Callable[..., Any],
) -> None:
    assert _takes_argument(fn) is _by_inspect(fn)


def test_a_callable_without_a_signature_is_left_to_the_caller() -> None:
    """``inspect`` cannot say (ValueError): the caller passes ctx (``invoke._call``)."""
    without = [f for f in (min, max, iter, next, getattr) if not _has_signature(f)]
    if not without:
        pytest.skip("every builtin tried has a signature on this Python")
    with pytest.raises(ValueError, match="no signature found"):
        _takes_argument(without[0])


def _has_signature(fn: Callable[..., Any]) -> bool:
    try:
        inspect.signature(fn)
    except ValueError:
        return False
    return True
