"""Verifiers that misbehave on purpose, one per failure mode (see failure-modes.yaml)."""

from __future__ import annotations

from pytest_vgate import Outcome


def raises(ctx):
    raise RuntimeError("the verifier itself is broken")


def exits(ctx):
    raise SystemExit(0)


def returns_none(ctx):
    pass  # forgot to return: None never counts as a pass


def says_no(ctx):
    return Outcome.failed("the product answered no")


def never_runs_its_tool(ctx):
    return True  # declares a tool but never runs it: ungrounded
