"""Real misbehaving verifiers for end-to-end sessions (tests/test_verifier_fail_closed.py).

Each fault exists twice: as ``@verifier`` items in a test module, and as plain functions
in a module that ``type: python`` gates of a gates.yaml name as ``module:function``.
"""

from __future__ import annotations

import textwrap

# fault name -> (body of the verifier, expected vgate_mode, expected vgate_cause)
FAULTS: dict[str, tuple[str, str, str]] = {
    "raises": ('raise ValueError("boom from the verifier")', "error", "broken_test"),
    "asserts": ('assert 1 == 2, "the verifier answers no"', "fail", "product"),
    "system_exit_0": ("raise SystemExit(0)", "panic", "broken_test"),
    "spin": ("while True:\n        pass", "timeout", "environment"),
    "sleep_in_c": ("time.sleep(300)", "timeout", "environment"),
    "exit_0": ("os._exit(0)", "crash", "environment"),
    "segfault": ("ctypes.string_at(0)", "crash", "environment"),
    "returns_none": ("return None", "fail", "broken_test"),
    "returns_truthy": ("return Truthy()", "fail", "broken_test"),
}
HANGS = ("spin", "sleep_in_c")
HANG_TIMEOUT = 1.5  # seconds: the deadline of the verifiers that never return

_PRELUDE = """\
import ctypes, os, time
from pytest_vgate import Outcome, verifier


class Truthy:
    '''Truthy, equal to everything, and not an Outcome: must still fail.'''

    def __bool__(self):
        return True

    def __eq__(self, other):
        return True

    __hash__ = object.__hash__

"""


def fault_test_module() -> str:
    """A test module: one ``@verifier`` item per fault (id ``v-<fault>``), a healthy one,
    and an ordinary test after them all."""
    parts = [_PRELUDE]
    for name, (body, _, _) in FAULTS.items():
        timeout = f", timeout={HANG_TIMEOUT}" if name in HANGS else ""
        parts.append(f'@verifier(id="v-{name}"{timeout})\ndef check_{name}(ctx):\n    {body}\n\n')
    parts.append('@verifier(id="v-healthy")\ndef check_healthy(ctx):\n')
    parts.append('    return Outcome.passed("healthy after the faults")\n\n\n')
    parts.append("def test_ordinary_after_the_faults():\n    assert True\n")
    return "".join(parts)


def fault_gates_module() -> str:
    """Plain functions (no decorator) for ``type: python`` gates."""
    parts = [_PRELUDE]
    for name, (body, _, _) in FAULTS.items():
        parts.append(f"def {name}(ctx):\n    {body}\n\n\n")
    parts.append('def healthy(ctx):\n    return Outcome.passed("healthy gate")\n')
    return "".join(parts)


def fault_gates_yaml(module: str) -> str:
    """One ``type: python`` gate per fault (id ``g-<fault>``) and a healthy gate."""
    lines = ["gates:"]
    for name in (*FAULTS, "healthy"):
        lines += [f"  - id: g-{name}", "    type: python", f"    verifier: {module}:{name}"]
        lines.append("    red: not-required")
        if name in HANGS:
            lines.append(f"    timeout: {HANG_TIMEOUT}")
    return "\n".join(lines) + "\n"


LOCK_MODULE = textwrap.dedent(
    '''
    """A module-level lock and module state that the first verifier dies holding."""
    import threading
    from pytest_vgate import Outcome, verifier

    LOCK = threading.Lock()
    STATE = {"poisoned": False}


    def _poison(ctx, marker):
        LOCK.acquire()
        STATE["poisoned"] = True
        (ctx.root / marker).write_text("ran")
        raise RuntimeError("died holding the module lock")


    def _take(ctx, marker):
        if not (ctx.root / marker).exists():
            return Outcome.failed("the poisoning verifier did not run before me")
        if not LOCK.acquire(timeout=2):
            return Outcome.failed("the module lock is still held after 2 s")
        LOCK.release()
        if STATE["poisoned"]:
            return Outcome.failed("module state corrupted by the earlier verifier")
        return Outcome.passed("took the lock; module state clean")


    @verifier(id="dies-holding-the-lock")
    def poison(ctx):
        return _poison(ctx, "poisoned-by-item")


    @verifier(id="takes-the-lock")
    def take(ctx):
        return _take(ctx, "poisoned-by-item")


    def gate_poison(ctx):
        return _poison(ctx, "poisoned-by-gate")


    def gate_take(ctx):
        return _take(ctx, "poisoned-by-gate")
    '''
)

FAN_MODULE = textwrap.dedent(
    """
    import time
    from pytest_vgate import Outcome


    def first(ctx):
        time.sleep(0.5)  # still running when its sibling panics
        return Outcome.passed("first saw the widget")


    def panics(ctx):
        raise SystemExit(0)


    def second(ctx):
        time.sleep(0.5)
        return Outcome.passed("second saw the gadget")


    def _slow(ctx, name):
        start = time.time()  # wall clock: comparable across processes
        time.sleep(2)
        (ctx.root / f"{name}.interval").write_text(f"{start} {time.time()}")
        return Outcome.passed(f"{name} done")


    def slow_a(ctx):
        return _slow(ctx, "slow_a")


    def slow_b(ctx):
        return _slow(ctx, "slow_b")
    """
)

FAN_GATES = """\
gates:
  - id: fan-three
    type: python
    claim: three verifiers, one panics
    verifiers: [fanmod:first, fanmod:panics, fanmod:second]
    red: not-required
  - id: fan-parallel
    type: python
    claim: two 2-second verifiers run together
    verifiers: [fanmod:slow_a, fanmod:slow_b]
    red: not-required
"""
