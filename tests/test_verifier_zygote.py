"""What the zygotes do for the cost of a call, and what that must never change.

A module zygote arms the child's fault handlers once, before any child is forked; each
spare rehearses a call of our own before its job arrives; the pytest process checks the
bytecode cache before each call and tells the zygote which children to reap with its
next request. Each test runs real verifier modules in real processes; none of them
times anything.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.verifiers_modules import call, write_module

from pytest_vgate.process import pid_alive
from pytest_vgate.process.cell import DEFAULT_ENV_ALLOWLIST, NESTED_ENV
from pytest_vgate.verdict import Mode
from pytest_vgate.verifiers import spawner

CALLS = """
import json, os
from pytest_vgate.verifiers import Outcome

os.environ["VGATE_SET_AT_IMPORT"] = "the zygote's, not the job's"

def environment(ctx):
    return Outcome.failed(json.dumps(dict(os.environ)))

def zygote(ctx):
    return Outcome.passed(str(os.getppid()))
"""

LEFT_BEHIND = """
import atexit, os, sys, threading, time, weakref
from pathlib import Path

class Finalized:
    pass

def leaves(ctx):
    (ctx.root / f"pid-{os.getpid()}").write_text("")
    marker = ctx.root / "ran-at-exit"
    atexit.register(marker.write_text, "atexit")
    kept = Finalized()
    weakref.finalize(kept, marker.write_text, "finalizer")
    sys.modules["__main__"].__dict__["kept"] = kept  # alive until interpreter shutdown
    threading.Thread(target=time.sleep, args=(300,)).start()  # not a daemon
    print("before the answer", flush=True)
    return ANSWER
"""

FAULTHANDLER_OFF = """
import ctypes, faulthandler
faulthandler.disable()  # the module's own choice at import: the children still dump

def segfault(ctx):
    ctypes.string_at(0)
"""


GARBAGE = """
import gc, weakref

class Node:
    pass

def _cycle():
    node = Node()
    node.me = node  # only the cyclic collector frees it
    return node

HELD = _cycle()  # alive while the module holds it, then garbage
REF = weakref.ref(HELD)

def frees_what_it_drops(ctx):
    global HELD
    HELD = None
    gc.collect()
    return REF() is None
"""


def test_a_verifier_collects_garbage_as_a_plain_process_does(tmp_path: Path) -> None:
    """The zygote freezes what the import made (fewer pages copied per fork); a verifier
    must still see the collector of a plain process: a cycle it drops is freed."""
    module = write_module(tmp_path, GARBAGE)
    for _ in range(2):  # the first child, then a spare
        result = call(tmp_path, module, "frees_what_it_drops")
        assert result.mode is Mode.PASS, result.detail


@pytest.fixture
def group_isolation() -> Iterator[None]:
    """Zygotes outside a PID namespace: the tests find processes by the pids they see."""
    spawner.default_host().set_isolation("off")
    try:
        yield
    finally:
        spawner.default_host().set_isolation("auto")


def _children(pid: int) -> list[int]:
    """``pid``'s children, zombies included (what the zygote has not collected)."""
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def test_the_rehearsals_leave_the_verifier_exactly_the_jobs_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The zygote (before it forks) and each spare rehearse a call with the zygote's own
    environment, a variable the module's import set included; the call then replaces the
    whole environment with the job's."""
    monkeypatch.setenv("VGATE_TEST_SECRET", "not for verifiers")
    module = write_module(tmp_path, CALLS)
    for _ in range(3):  # the first child and then spares, each rehearsed
        result = call(tmp_path, module, "environment")
        assert result.mode is Mode.FAIL, result.detail
        env = json.loads(result.detail)
        assert "VGATE_SET_AT_IMPORT" not in env
        assert "VGATE_TEST_SECRET" not in env
        allowed = {*DEFAULT_ENV_ALLOWLIST, NESTED_ENV, "HOME", "TMPDIR"}
        assert set(env) <= allowed, set(env) - allowed
        assert env["HOME"].startswith(str(Path(env["TMPDIR"]).parent))  # this call's cell


def test_a_module_that_turns_faulthandler_off_still_shows_the_stack_of_a_segfault(
    tmp_path: Path,
) -> None:
    """The zygote arms faulthandler on the children's output after the import, whatever
    the import did to it."""
    module = write_module(tmp_path, FAULTHANDLER_OFF)
    result = call(tmp_path, module, "segfault")
    assert result.mode is Mode.CRASH, result.detail
    assert "Segmentation fault" in result.detail
    assert "in segfault" in result.detail


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs /proc (Linux)")
@pytest.mark.usefixtures("group_isolation")
@pytest.mark.parametrize(("answer", "mode"), [("True", Mode.PASS), ("False", Mode.FAIL)])
def test_what_a_verifier_leaves_for_its_exit_never_runs_and_never_changes_its_answer(
    tmp_path: Path, answer: str, mode: Mode
) -> None:
    """The child exits at once after its answer (``os._exit``): an atexit handler, a
    finalizer and a non-daemon thread the verifier left never run to the end nor wait:
    the answer is what the function returned, the call does not wait for the thread,
    and the child is gone after the call."""
    module = write_module(tmp_path, LEFT_BEHIND.replace("ANSWER", answer))
    result = call(tmp_path, module, "leaves")
    assert result.mode is mode, result.detail
    assert "before the answer" in result.output
    assert not (tmp_path / "ran-at-exit").exists()
    (pid_file,) = tmp_path.glob("pid-*")
    pid = int(pid_file.name.split("-")[1])
    end = time.monotonic() + 30
    while pid_alive(pid) and time.monotonic() < end:
        time.sleep(0.05)
    assert not pid_alive(pid), "the verifier's process outlived its call"
    assert not (tmp_path / "ran-at-exit").exists()


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs /proc (Linux)")
@pytest.mark.usefixtures("group_isolation")
def test_the_children_of_ended_calls_are_collected_not_left_behind(tmp_path: Path) -> None:
    """Each call's child is killed when it answers and collected by its zygote once the
    pytest process tells it (with the next call's request): the zygote's children are
    the spare and at most the last two calls' children, however many calls ran."""
    module = write_module(tmp_path, CALLS)
    zygotes = set()
    for _ in range(12):
        result = call(tmp_path, module, "zygote")
        assert result.ok, result.detail
        zygotes.add(int(result.detail))
    assert len(zygotes) == 1, zygotes
    (zygote,) = zygotes
    left = _children(zygote)
    assert 1 <= len(left) <= 3, left
    assert os.getpid() not in left
