"""The verifier core, fault-injected for real: child processes running misbehaving modules.

Every verifier here is a real function in a real module file; each call runs in a real
child process forked from its module's zygote. Nothing is mocked.
"""

from __future__ import annotations

import builtins
import os
import pickle
import re
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.procs import new_marker, survivors
from helpers.verifiers_modules import ZOO, call, write_module
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_vgate.context import RunContext
from pytest_vgate.gatesfile import Gate, GateType
from pytest_vgate.process import pid_alive
from pytest_vgate.process.tools import ToolInventory
from pytest_vgate.verdict import Cause, Mode, Verdict
from pytest_vgate.verifiers import (
    Isolation,
    Outcome,
    VerifierCall,
    VerifierDefinitionError,
    VerifierResult,
    VerifierSpec,
    VerifierTarget,
    find_verifier_spec,
    run_verifier_refs,
    run_verifiers,
    spawner,
    verifier,
)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return tmp_path


@pytest.fixture
def group_isolation() -> Iterator[None]:
    """Verifier processes outside a PID namespace, for the tests that find them by the
    pids they write (a namespace's pids are not ours); the namespace has its own tests
    (test_plugin_verifier_containment.py)."""
    spawner.default_host().set_isolation("off")
    try:
        yield
    finally:
        spawner.default_host().set_isolation("auto")


@pytest.fixture
def zoo(folder: Path) -> str:
    return write_module(folder, ZOO, "zoo")


def wait_dead(pid: int, within: float = 5.0) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        if not pid_alive(pid):
            return True
        time.sleep(0.05)
    return not pid_alive(pid)


# --- the declaration -------------------------------------------------------------------


def test_verifier_decorator_returns_the_function_with_a_frozen_spec() -> None:
    @verifier(id="parser-rejects-empty", timeout=5, tools=["python"])
    def check(ctx: object) -> bool:
        return True

    spec = find_verifier_spec(check)
    assert spec == VerifierSpec(
        id="parser-rejects-empty",
        timeout=5.0,
        tools=("python",),
        isolation=Isolation.PROCESS,
        module=__name__,
        qualname=check.__qualname__,
        file=__file__,
    )
    assert check(None) is True  # unchanged function
    assert VerifierSpec.from_dict(spec.to_dict()) == spec
    assert pickle.loads(pickle.dumps(spec)) == spec


def test_bare_decorator_uses_the_function_name() -> None:
    @verifier
    def plain(ctx: object) -> bool:
        return True

    spec = find_verifier_spec(plain)
    assert spec is not None
    assert spec.id == "plain"
    assert spec.tools == ()
    assert spec.timeout is None


def test_find_verifier_spec_ignores_other_objects() -> None:
    class Anything:
        def __getattr__(self, name: str) -> object:
            return VerifierSpec(id="forged")

    assert find_verifier_spec(lambda ctx: True) is None
    assert find_verifier_spec(Anything()) is None  # no __getattr__ magic
    assert find_verifier_spec(42) is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"tools": "python"}, "tools=['python']"),
        ({"timeout": 0}, "positive number of seconds"),
        ({"timeout": float("nan")}, "positive number of seconds"),
        ({"timeout": True}, "positive number of seconds"),
        ({"isolation": "thread"}, "must be 'process'"),
        ({"id": ""}, "non-empty string"),
        ({"tools": ["python", ""]}, "non-empty tool ids"),
    ],
)
def test_bad_declarations_are_clear_errors(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(VerifierDefinitionError, match=re.escape(message)):
        verifier(**kwargs)(lambda ctx: True)  # type: ignore[arg-type]


def test_async_verifier_is_refused_at_declaration() -> None:
    async def check(ctx: object) -> bool:
        return True

    with pytest.raises(VerifierDefinitionError, match="async"):
        verifier()(check)


def test_outcome_is_strict_and_picklable() -> None:
    assert Outcome.passed().ok is True
    assert Outcome.failed("no").detail == "no"
    assert pickle.loads(pickle.dumps(Outcome.failed("x"))) == Outcome.failed("x")
    assert Outcome.from_dict(Outcome.passed("d").to_dict()) == Outcome.passed("d")
    with pytest.raises(TypeError):
        Outcome("yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Outcome.failed(42)  # type: ignore[arg-type]


def test_target_from_callable_and_reference(folder: Path) -> None:
    module = write_module(
        folder,
        """
        from pytest_vgate.verifiers import verifier

        @verifier(id="named", timeout=7, tools=["python"])
        def check(ctx):
            return True
        """,
    )
    sys.path.insert(0, str(folder))
    try:
        fn = __import__(module).check
    finally:
        sys.path.remove(str(folder))
    target = VerifierTarget.from_callable(fn)
    assert (target.module, target.qualname, target.name) == (module, "check", "named")
    assert (target.timeout, target.tools, target.isolation) == (7.0, ("python",), Isolation.PROCESS)
    assert target.file == str(folder / f"{module}.py")
    assert VerifierTarget.from_dict(target.to_dict()) == target
    ref = VerifierTarget.from_reference("checks:first")
    assert (ref.module, ref.qualname, ref.display) == ("checks", "first", "checks:first")
    with pytest.raises(VerifierDefinitionError, match="module:function"):
        VerifierTarget.from_reference("checks.first")
    with pytest.raises(VerifierDefinitionError, match="module level"):
        VerifierTarget.from_callable(lambda ctx: True)


# --- one call: every mode --------------------------------------------------------------


@pytest.mark.parametrize(
    ("function", "mode", "cause", "needle"),
    [
        ("raises", Mode.ERROR, Cause.BROKEN_TEST, "ValueError: boom from the verifier"),
        ("system_exit_0", Mode.PANIC, Cause.BROKEN_TEST, "SystemExit"),
        ("sys_exit_call", Mode.PANIC, Cause.BROKEN_TEST, "SystemExit"),
        ("generator_exit", Mode.PANIC, Cause.BROKEN_TEST, "GeneratorExit"),
        ("keyboard_interrupt", Mode.PANIC, Cause.BROKEN_TEST, "KeyboardInterrupt"),
        ("user_panic", Mode.PANIC, Cause.BROKEN_TEST, "UserPanic: mine"),
        ("exit_0", Mode.CRASH, Cause.ENVIRONMENT, "exited with status 0 without delivering"),
        ("segfault", Mode.CRASH, Cause.ENVIRONMENT, "SIGSEGV"),
        ("sigkill_self", Mode.CRASH, Cause.ENVIRONMENT, "killed by SIGKILL"),
        ("returns_none", Mode.FAIL, Cause.BROKEN_TEST, "returned None"),
        ("no_return", Mode.FAIL, Cause.BROKEN_TEST, "returned None"),
        ("returns_yes", Mode.FAIL, Cause.BROKEN_TEST, "returned 'yes' (str)"),
        ("returns_false", Mode.FAIL, Cause.BROKEN_TEST, "returned False"),
        ("returns_one", Mode.FAIL, Cause.BROKEN_TEST, "returned 1 (int)"),
        ("returns_outcome_subclass", Mode.FAIL, Cause.BROKEN_TEST, "(Sneaky)"),
        ("returns_bad_repr", Mode.FAIL, Cause.BROKEN_TEST, "its repr() raised SystemExit"),
        ("returns_coroutine", Mode.FAIL, Cause.BROKEN_TEST, "coroutine"),
        ("outcome_failed", Mode.FAIL, Cause.PRODUCT, "the product said no"),
        ("outcome_passed", Mode.PASS, None, "all good"),
        ("returns_true", Mode.PASS, None, ""),
        ("no_argument", Mode.PASS, None, ""),
    ],
)
def test_each_behaviour_has_its_own_mode(
    folder: Path, zoo: str, function: str, mode: Mode, cause: Cause | None, needle: str
) -> None:
    result = call(folder, zoo, function)
    assert (result.mode, result.cause) == (mode, cause), result.detail
    assert needle in result.detail
    assert result.ok is (mode is Mode.PASS)
    verdict = result.to_verdict()
    assert verdict.mode is mode
    assert verdict.checks[0].name == f"{zoo}:{function}"
    assert Verdict.from_dict(verdict.to_dict()).to_dict() == verdict.to_dict()


def test_error_detail_shows_the_verifiers_frame_not_ours(folder: Path, zoo: str) -> None:
    result = call(folder, zoo, "raises")
    assert f'{zoo}.py", line' in result.detail
    assert "in raises" in result.detail
    assert "invoke.py" not in result.detail


def test_segfault_detail_carries_the_faulthandler_stack(folder: Path, zoo: str) -> None:
    result = call(folder, zoo, "segfault")
    assert "Segmentation fault" in result.detail
    assert "in segfault" in result.detail


def test_huge_return_value_is_described_within_bounds(folder: Path, zoo: str) -> None:
    result = call(folder, zoo, "returns_huge")
    assert result.mode is Mode.FAIL
    assert len(result.detail) < 1000


@pytest.mark.parametrize(
    ("source", "function", "mode", "needle"),
    [
        ("raise KeyError('at import')\n", "x", Mode.ERROR, "KeyError: 'at import'"),
        ("import no_such_dependency_xyz\n", "x", Mode.ERROR, "no_such_dependency_xyz"),
        ("raise SystemExit(3)\n", "x", Mode.PANIC, "SystemExit: 3"),
        ("x = 1\n", "x", Mode.ERROR, "not a function"),
        ("x = 1\n", "missing", Mode.ERROR, "has no 'missing'"),
    ],
)
def test_unimportable_targets_are_errors(
    folder: Path, source: str, function: str, mode: Mode, needle: str
) -> None:
    module = write_module(folder, source)
    result = call(folder, module, function)
    assert result.mode is mode, result.detail
    assert needle in result.detail
    assert "importing" in result.detail or mode is Mode.ERROR


def test_a_failed_assert_is_the_verifiers_answer_no(folder: Path) -> None:
    """As in a test: a failed ``assert`` is ``fail``/``product``, with its message."""
    module = write_module(folder, "def check(ctx):\n    assert 1 + 1 == 3, 'sums differ'\n")
    result = call(folder, module, "check")
    assert (result.mode, result.cause) == (
        Mode.FAIL,
        Cause.PRODUCT,
    ), result.detail
    assert "assertion failed: AssertionError: sums differ" in result.detail


def test_an_assert_that_fails_while_importing_is_an_error(folder: Path) -> None:
    module = write_module(folder, "assert False, 'at import'\ndef check(ctx):\n    return True\n")
    result = call(folder, module, "check")
    assert result.mode is Mode.ERROR, result.detail


def test_a_module_that_is_not_on_sys_path_is_an_error(folder: Path) -> None:
    result = call(folder, "no_such_module_anywhere", "check")
    assert result.mode is Mode.ERROR
    assert "cannot import module 'no_such_module_anywhere'" in result.detail


def test_import_by_file_location_when_the_name_is_not_importable(folder: Path) -> None:
    (folder / "sub").mkdir()
    path = folder / "sub" / "located.py"
    path.write_text("def check(ctx):\n    return True\n")
    target = VerifierTarget("pkg_not_on_path.located", "check", file=str(path))
    result = run_verifiers([target], VerifierCall(root=folder, timeout=30))
    assert result.mode is Mode.PASS, result.detail


def test_ctx_attributes(folder: Path) -> None:
    module = write_module(
        folder,
        """
        import json, os, stat, time
        from pytest_vgate.verifiers import Outcome

        def check(ctx):
            st = os.stat(ctx.cell)
            (ctx.cell / "scratch.txt").write_text("mine")
            return Outcome.passed(json.dumps({
                "root": str(ctx.root), "cell": str(ctx.cell), "gate": ctx.gate,
                "left": ctx.deadline - time.time(), "mode": stat.S_IMODE(st.st_mode),
                "stdin": os.read(0, 10).decode(),
            }))
        """,
    )
    result = call(folder, module, "check", timeout=20, gate={"id": "g1", "claim": "c"})
    assert result.mode is Mode.PASS, result.detail
    import json

    seen = json.loads(result.detail)
    assert seen["root"] == str(folder)
    assert seen["gate"] == {"id": "g1", "claim": "c"}
    assert 10 < seen["left"] <= 20
    assert seen["mode"] == 0o700
    assert seen["stdin"] == ""  # stdin is /dev/null, not ours
    assert not Path(seen["cell"]).exists()  # the cell is removed after the call


def test_what_the_verifier_prints_stays_out_of_our_streams(
    folder: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    module = write_module(
        folder,
        """
        import os, sys
        def check(ctx):
            print("PRINTED-BY-VERIFIER")
            os.write(2, b"FD2-BY-VERIFIER")
            os._exit(0)
        """,
    )
    result = call(folder, module, "check")
    assert result.mode is Mode.CRASH
    assert "PRINTED-BY-VERIFIER" in result.output
    assert "FD2-BY-VERIFIER" in result.detail
    out, err = capfd.readouterr()
    assert "BY-VERIFIER" not in out + err


def test_invalid_timeout_is_an_error_not_a_pass(folder: Path, zoo: str) -> None:
    for bad in (0, -1, float("nan"), float("inf")):
        assert call(folder, zoo, "returns_true", timeout=bad).mode is Mode.ERROR


# --- deadlines -------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("function", ["spin", "sleep_in_c"])
@pytest.mark.usefixtures("group_isolation")
def test_hang_past_the_deadline_is_a_timeout_and_the_child_is_killed(
    folder: Path, function: str
) -> None:
    module = write_module(
        folder,
        f"""
        import os, time
        def check(ctx):
            (ctx.root / "pid-{function}").write_text(str(os.getpid()))
            if "{function}" == "spin":
                while True:
                    pass
            time.sleep(300)
        """,
    )
    started = time.monotonic()
    result = call(folder, module, "check", timeout=1.5)
    elapsed = time.monotonic() - started
    assert (result.mode, result.cause) == (Mode.TIMEOUT, Cause.ENVIRONMENT)
    assert elapsed < 15  # generous: only a hang would exceed it
    assert "in check" in result.detail  # the stack dumped just before the deadline
    assert wait_dead(int((folder / f"pid-{function}").read_text()))


@pytest.mark.slow
@pytest.mark.usefixtures("group_isolation")
def test_processes_the_verifier_started_itself_die_with_it(folder: Path) -> None:
    module = write_module(
        folder,
        """
        import subprocess, sys, time
        def check(ctx):
            p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
            (ctx.root / "grandchild").write_text(str(p.pid))
            time.sleep(300)
        """,
    )
    result = call(folder, module, "check", timeout=1.5)
    assert result.mode is Mode.TIMEOUT
    assert wait_dead(int((folder / "grandchild").read_text()))


@pytest.mark.slow
def test_a_tool_running_at_the_deadline_is_killed(folder: Path) -> None:
    marker = new_marker("tool")  # the tool may run in its own PID namespace: no pid file
    module = write_module(
        folder,
        f"""
        def check(ctx):
            ctx.run("python", "-c",
                    "open('tool-started', 'w').close(); import time; time.sleep(300)",
                    "{marker}")
            return True
        """,
    )
    result = call(
        folder,
        module,
        "check",
        timeout=1.5,
        declare=["python"],
        tool_paths={"python": sys.executable},
    )
    assert result.mode is Mode.TIMEOUT
    assert (folder / "tool-started").exists()
    assert survivors(marker) == [], "the tool outlived the verifier's deadline"


# --- state does not leak between calls --------------------------------------------------

LOCK_MODULE = """
import threading
LOCK = threading.Lock()
STATE = {"poisoned": False}

def take_and_raise(ctx):
    LOCK.acquire()
    STATE["poisoned"] = True
    raise RuntimeError("died holding the lock")

def take_and_pass(ctx):
    if not LOCK.acquire(timeout=2):
        return False
    return not STATE["poisoned"]
"""


def test_a_verifier_dying_with_a_lock_does_not_affect_the_next(folder: Path) -> None:
    module = write_module(folder, LOCK_MODULE)
    first = call(folder, module, "take_and_raise")
    assert first.mode is Mode.ERROR
    started = time.monotonic()
    second = call(folder, module, "take_and_pass")
    assert second.mode is Mode.PASS, second.detail
    assert time.monotonic() - started < 2


@pytest.mark.slow
def test_in_one_process_the_lock_would_stay_held(folder: Path) -> None:
    """The contrast that proves the test above can fail: in one process, the lock stays held."""
    module = write_module(
        folder,
        LOCK_MODULE + "\ndef both(ctx):\n    try:\n        take_and_raise(ctx)\n"
        "    except RuntimeError:\n        pass\n    return take_and_pass(ctx)\n",
    )
    result = call(folder, module, "both")
    assert result.mode is Mode.FAIL  # the lock was never released
    assert "returned False" in result.detail


# --- where children come from: the forkserver's preload, the warm spare -----------------

FRESH_MODULE = """
import os, sys
from pytest_vgate.verifiers import Outcome
IMPORTS = []  # module state: one entry per import of this module in this process
IMPORTS.append(os.getpid())
PYTEST_PRELOADED = "pytest" in sys.modules  # before this module imports anything else

def who(ctx):
    IMPORTS.append("called")
    return Outcome.passed(f"{os.getpid()} {len(IMPORTS)}")

def preloaded(ctx):
    return Outcome.passed(str(PYTEST_PRELOADED))

def cwd(ctx):
    return Outcome.passed(os.getcwd())
"""

IMPORTER = """
def importer(ctx):
    return Outcome.passed(str(IMPORTS[0]))
"""


def test_every_call_gets_its_own_fresh_process(folder: Path) -> None:
    """The spare forked during one call serves the next, yet no two calls share a
    process and each finds the module as its import left it (state untouched by earlier
    calls), although the module was imported once, by its zygote."""
    module = write_module(folder, FRESH_MODULE + IMPORTER)
    details = [call(folder, module, "who").detail for _ in range(6)]
    pids = [d.split()[0] for d in details]
    assert len(set(pids)) == len(pids), details
    assert all(d.split()[1] == "2" for d in details), details  # one import + this call
    assert str(os.getpid()) not in pids
    importers = {call(folder, module, "importer").detail for _ in range(2)}
    assert len(importers) == 1 and importers.isdisjoint(pids)  # the zygote imported it


def test_a_spare_started_before_a_chdir_runs_in_the_callers_cwd(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = write_module(folder, FRESH_MODULE)
    assert call(folder, module, "who").ok  # leaves a spare started in the old cwd
    elsewhere = folder / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    result = call(folder, module, "cwd")
    assert result.detail == str(elsewhere)


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs /proc (Linux)")
@pytest.mark.usefixtures("group_isolation")
def test_a_spare_that_died_waiting_is_replaced_not_reported(folder: Path) -> None:
    """Killed before it got a job (OOM killer, a stray kill): not the next verifier's crash."""
    module = write_module(folder, FRESH_MODULE + IMPORTER)
    zygote = int(call(folder, module, "importer").detail)  # forks the spare for the next
    end = time.monotonic() + 10  # the child that answered is being killed and collected
    while (spares := [p for p in _children(zygote) if pid_alive(p)]) and len(spares) > 1:
        if time.monotonic() > end:
            break
        time.sleep(0.05)
    assert len(spares) == 1, spares
    os.kill(spares[0], 9)
    assert wait_dead(spares[0])
    result = call(folder, module, "who")
    assert result.mode is Mode.PASS, result.detail
    assert result.detail.split()[0] != str(spares[0])


PRELOAD_SCRIPT = """
import sys
from pathlib import Path
from pytest_vgate.verifiers import VerifierCall, VerifierTarget, call_verifier

if __name__ == "__main__":  # not at the top: children re-run this script's top level
    {imports}
    r = call_verifier(VerifierTarget(sys.argv[2], "preloaded"),
                      VerifierCall(root=Path(sys.argv[1]), timeout=60, sys_path=(sys.argv[1],)))
    print("RESULT", r.mode.value, r.detail, "pytest" in sys.modules)
"""


@pytest.mark.parametrize("imported", [True, False])
def test_the_forkserver_preloads_pytest_only_when_the_caller_imported_it(
    folder: Path, imported: bool
) -> None:
    """Children of a pytest session do not import pytest again (it is ~200 ms a call);
    a library caller without pytest does not get it imported for it."""
    module = write_module(folder, FRESH_MODULE)
    script = folder / "preload.py"
    script.write_text(PRELOAD_SCRIPT.format(imports="import pytest" if imported else "pass"))
    done = subprocess.run(
        [sys.executable, str(script), str(folder), module],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert f"RESULT pass {imported} {imported}" in done.stdout, done.stdout + done.stderr


# --- inline: a deprecated alias of process ----------------------------------------------


def test_inline_is_a_deprecated_alias_that_runs_in_a_process_of_its_own(
    folder: Path, zoo: str
) -> None:
    with pytest.warns(DeprecationWarning, match="inline"):
        declared = verifier(isolation="inline")(lambda ctx: True)
    spec = find_verifier_spec(declared)
    assert spec is not None and spec.isolation is Isolation.PROCESS
    assert Isolation("inline") is Isolation.PROCESS is Isolation.INLINE
    with pytest.warns(DeprecationWarning, match="inline"):
        exited = call(folder, zoo, "exit_0", isolation="inline")
    assert exited.mode is Mode.CRASH  # not the end of this process
    with pytest.warns(DeprecationWarning, match="inline"):
        assert call(folder, zoo, "raises", isolation="inline").mode is Mode.ERROR
    assert call(folder, zoo, "returns_true", isolation="thread").mode is Mode.ERROR


def test_declared_inline_isolation_runs_elsewhere(folder: Path) -> None:
    module = write_module(
        folder,
        """
        import os
        from pytest_vgate.verifiers import Outcome
        def check(ctx):
            return Outcome.passed(str(os.getpid()))
        """,
    )
    inline = VerifierTarget(module, "check", isolation=Isolation.INLINE)
    verdict = run_verifiers(
        [inline], VerifierCall(root=folder, timeout=10, sys_path=(str(folder),))
    )
    assert verdict.mode is Mode.PASS
    assert verdict.checks[0].detail != str(os.getpid())


# --- fan-out ---------------------------------------------------------------------------


def test_fan_out_keeps_each_result_and_takes_the_worst_mode(folder: Path) -> None:
    module = write_module(
        folder,
        """
        from pytest_vgate.verifiers import Outcome
        def alpha(ctx):
            return Outcome.passed("alpha saw it")
        def panics(ctx):
            raise SystemExit(0)
        def beta(ctx):
            return Outcome.passed("beta saw it")
        """,
    )
    targets = [VerifierTarget(module, f) for f in ("alpha", "panics", "beta")]
    verdict = run_verifiers(targets, VerifierCall(root=folder, timeout=30, sys_path=(str(folder),)))
    assert (verdict.mode, verdict.cause) == (Mode.PANIC, Cause.BROKEN_TEST)
    by_name = {c.name: c for c in verdict.checks}
    assert by_name[f"{module}:alpha"].mode is Mode.PASS
    assert by_name[f"{module}:alpha"].detail == "alpha saw it"
    assert by_name[f"{module}:beta"].detail == "beta saw it"
    assert by_name[f"{module}:panics"].mode is Mode.PANIC
    assert "1 of 3 verifiers failed" in verdict.detail
    assert f"{module}:panics: panic" in verdict.detail
    assert Verdict.from_dict(verdict.to_dict()).to_dict() == verdict.to_dict()


def test_fan_out_all_pass_and_empty_is_blank(folder: Path, zoo: str) -> None:
    targets = [VerifierTarget(zoo, "returns_true"), VerifierTarget(zoo, "outcome_passed")]
    verdict = run_verifiers(targets, VerifierCall(root=folder, timeout=30, sys_path=(str(folder),)))
    assert verdict.mode is Mode.PASS
    assert len(verdict.checks) == 2
    assert run_verifiers([], VerifierCall(root=folder, timeout=30)).mode is Mode.BLANK


@pytest.mark.slow
def test_fan_out_runs_concurrently(folder: Path) -> None:
    module = write_module(
        folder,
        """
        import time
        def one(ctx):
            time.sleep(2)
            return True
        def two(ctx):
            time.sleep(2)
            return True
        """,
    )
    targets = [VerifierTarget(module, "one"), VerifierTarget(module, "two")]
    started = time.monotonic()
    verdict = run_verifiers(targets, VerifierCall(root=folder, timeout=30, sys_path=(str(folder),)))
    assert verdict.mode is Mode.PASS, verdict.detail
    assert time.monotonic() - started < 3.8


def test_gate_of_references_runs_from_the_gates_root(folder: Path) -> None:
    (folder / "checks.py").write_text(
        "from pytest_vgate.verifiers import Outcome\n"
        "def first(ctx):\n    return Outcome.passed(ctx.gate['id'])\n"
        "def second(ctx):\n    return Outcome.failed('second says no')\n"
    )
    gate = Gate(
        id="parser",
        type=GateType.PYTHON,
        verifiers=("checks:first", "checks:second"),
        root=folder,
    )
    verdict = run_verifier_refs(gate, RunContext(root=folder, default_timeout=30))
    assert (verdict.mode, verdict.cause) == (Mode.FAIL, Cause.PRODUCT)
    assert [c.detail for c in verdict.checks] == ["parser", "second says no"]


# --- tools and grounding ---------------------------------------------------------------

TOOL_MODULE = """
import threading, time
from pytest_vgate.verifiers import Outcome, UndeclaredToolError, verifier

@verifier(tools=["python"])
def exit_code_decides(ctx):
    r = ctx.run("python", "tool/decide.py")
    return Outcome.passed("tool said 0") if r.exit_code == 0 else Outcome.failed(
        f"tool said {r.exit_code}")

@verifier(tools=["python"])
def never_runs(ctx):
    return True

@verifier(tools=["python"])
def undeclared(ctx):
    ctx.run("sh", "-c", "true")
    return True

@verifier(tools=["python"])
def undeclared_swallowed(ctx):
    try:
        ctx.run("sh", "-c", "true")
    except UndeclaredToolError:
        pass
    return True

@verifier(tools=["python"])
def in_flight(ctx):
    threading.Thread(target=ctx.run, args=("python", "-c", "import time; time.sleep(3)"),
                     daemon=True).start()
    time.sleep(0.3)
    return True

@verifier(tools=["no-such-tool-for-vgate"])
def missing(ctx):
    ctx.run("no-such-tool-for-vgate")
    return True

@verifier(tools=["mytool"])
def moved(ctx):
    ctx.run("mytool")
    return True
"""


@pytest.fixture
def tools_module(folder: Path) -> str:
    return write_module(folder, TOOL_MODULE, "tools")


@pytest.mark.parametrize(("code", "mode"), [("0", Mode.PASS), ("3", Mode.FAIL)])
def test_a_real_tool_run_decides_and_is_recorded(
    folder: Path, tools_module: str, code: str, mode: Mode
) -> None:
    (folder / "code").write_text(code)
    (folder / "tool").mkdir()  # a program of the project, not the verifier's own code
    (folder / "tool" / "decide.py").write_text("import sys; sys.exit(int(open('code').read()))")
    result = call(folder, tools_module, "exit_code_decides", tool_paths={"python": sys.executable})
    assert result.mode is mode, result.detail
    assert result.detail == f"tool said {code}"
    [run] = result.runs
    assert (run.id, run.path, run.exit_code) == ("python", sys.executable, int(code))
    assert re.fullmatch(r"[0-9a-f]{64}", run.sha256)
    assert result.to_verdict().tools[0].path == sys.executable


def test_declared_tools_without_a_completed_run_is_ungrounded(
    folder: Path, tools_module: str
) -> None:
    result = call(folder, tools_module, "never_runs", tool_paths={"python": sys.executable})
    assert (result.mode, result.cause) == (Mode.UNGROUNDED, Cause.BROKEN_TEST)
    assert "without a completed ctx.run()" in result.detail


def test_a_run_still_in_flight_when_the_verifier_returns_does_not_count(
    folder: Path, tools_module: str
) -> None:
    result = call(folder, tools_module, "in_flight", tool_paths={"python": sys.executable})
    assert result.mode is Mode.UNGROUNDED
    assert result.runs == ()


@pytest.mark.parametrize("function", ["undeclared", "undeclared_swallowed"])
def test_running_an_undeclared_tool_is_an_error(
    folder: Path, tools_module: str, function: str
) -> None:
    result = call(folder, tools_module, function, tool_paths={"python": sys.executable})
    assert result.mode is Mode.ERROR
    assert "'sh' is not among the verifier's declared tools ['python']" in result.detail


def test_a_tool_found_nowhere_is_unavailable(folder: Path, tools_module: str) -> None:
    result = call(folder, tools_module, "missing")
    assert (result.mode, result.cause) == (Mode.UNAVAILABLE, Cause.ENVIRONMENT)
    assert "no-such-tool-for-vgate" in result.detail


def test_a_tool_that_moved_after_the_inventory_is_sandbox_and_not_run(
    folder: Path, tools_module: str
) -> None:
    tool = folder / ".toolchain" / "bin" / "mytool"
    tool.parent.mkdir(parents=True)
    marker = folder / "ran"
    tool.write_text(f"#!/bin/sh\ntouch {marker}\n")
    tool.chmod(0o755)
    inventory = ToolInventory.build(["mytool"], root=folder, path_env=os.environ.get("PATH"))
    with tool.open("a") as fh:
        fh.write("# appended after the inventory\n")
    result = call(folder, tools_module, "moved", tools=inventory)
    assert (result.mode, result.cause) == (Mode.SANDBOX, Cause.ENVIRONMENT)
    assert not marker.exists()


def test_toolchain_tool_is_run_through_the_inventory(folder: Path, tools_module: str) -> None:
    tool = folder / ".toolchain" / "bin" / "mytool"
    tool.parent.mkdir(parents=True)
    tool.write_text("#!/bin/sh\nexit 0\n")
    tool.chmod(0o755)
    inventory = ToolInventory.build(["mytool"], root=folder, path_env=os.environ.get("PATH"))
    result = call(folder, tools_module, "moved", tools=inventory)
    assert result.mode is Mode.PASS, result.detail
    assert result.runs[0].path == str(tool)


# --- Ctrl-C ----------------------------------------------------------------------------

INTERRUPT_SCRIPT = """
import os, signal, sys, threading, time
from pathlib import Path
from pytest_vgate.process import pid_alive
from pytest_vgate.verifiers import (
    VerifierCall, VerifierTarget, call_verifier, run_verifiers, spawner,
)

folder = Path(sys.argv[1])
spawner.default_host().set_isolation("off")  # the pids the verifiers write are ours
if __name__ == "__main__":
    def interrupt_when_running():  # every verifier has written its pid (60 s at most)
        end = time.monotonic() + 60
        while len(list(folder.glob("pid-*"))) < int(sys.argv[3]) and time.monotonic() < end:
            time.sleep(0.05)
        time.sleep(0.2)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt_when_running, daemon=True).start()
    targets = [VerifierTarget(sys.argv[2], "check")] * int(sys.argv[3])
    try:
        job = VerifierCall(root=folder, timeout=60, sys_path=(str(folder),))
        if len(targets) == 1:
            call_verifier(targets[0], job)
        else:
            run_verifiers(targets, job)
    except KeyboardInterrupt:
        # Check before exiting: multiprocessing's atexit would kill daemonic children anyway.
        pids = [int(p.name.split("-")[1]) for p in folder.glob("pid-*")]
        end = time.monotonic() + 3
        while time.monotonic() < end and any(pid_alive(pid) for pid in pids):
            time.sleep(0.05)
        alive = [pid for pid in pids if pid_alive(pid)]
        print("INTERRUPTED", len(pids), "ALIVE" if alive else "ALL-DEAD", flush=True)
        sys.exit(0)
    print("RETURNED", flush=True)
"""


@pytest.mark.slow
@pytest.mark.parametrize("count", [1, 2])
def test_ctrl_c_propagates_and_kills_the_children(folder: Path, count: int) -> None:
    module = write_module(
        folder,
        """
        import os, time
        def check(ctx):
            (ctx.root / f"pid-{os.getpid()}").write_text("")
            time.sleep(300)
        """,
    )
    script = folder / "interrupt.py"
    script.write_text(textwrap.dedent(INTERRUPT_SCRIPT))
    done = subprocess.run(
        [sys.executable, str(script), str(folder), module, str(count)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert f"INTERRUPTED {count} ALL-DEAD" in done.stdout, done.stdout + done.stderr


# --- the property: nothing but True or Outcome.passed() passes ---------------------------

BUILTIN_EXCEPTIONS = sorted(
    (c for c in vars(builtins).values() if isinstance(c, type) and issubclass(c, BaseException)),
    key=lambda c: c.__name__,
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)

PASSING_EXPRESSIONS = ["True", "Outcome.passed()", "Outcome.passed('fine')", "Outcome(True)"]
OTHER_EXPRESSIONS = [
    "object()",
    "Outcome.failed('no')",
    "Outcome(False, 'x')",
    "1",
    "1.0",
    "'True'",
    "[True]",
    "(True,)",
    "{'ok': True}",
    "Sub(True)",
    "Truthy()",
    "BadRepr()",
    "type(Outcome.passed())",
    "Outcome",
    "iter([True])",
    "NotImplemented",
    "...",
]
FAULTS = {
    "os._exit(0)": Mode.CRASH,
    "os._exit(1)": Mode.CRASH,
    "ctypes.string_at(0)": Mode.CRASH,
    "os.kill(os.getpid(), signal.SIGKILL)": Mode.CRASH,
    "sys.exit(0)": Mode.PANIC,
    "sys.exit(None)": Mode.PANIC,
    "time.sleep(30)": Mode.TIMEOUT,
}

PROPERTY_PRELUDE = """
import ctypes, json, os, signal, sys, time
from pytest_vgate.verifiers import Outcome

class Sub(Outcome):
    pass

class Truthy:
    def __bool__(self):
        return True
    def __eq__(self, other):
        return True

class BadRepr:
    def __repr__(self):
        raise KeyboardInterrupt
"""

behaviours = st.one_of(
    st.tuples(st.just("raise"), st.sampled_from(BUILTIN_EXCEPTIONS), st.booleans()),
    st.tuples(st.just("json"), json_values, st.just(False)),
    st.tuples(
        st.just("expr"), st.sampled_from(PASSING_EXPRESSIONS + OTHER_EXPRESSIONS), st.just(False)
    ),
    st.tuples(st.just("fault"), st.sampled_from(sorted(FAULTS)), st.just(False)),
)


@pytest.fixture(scope="module")
def property_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("property")


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(behaviour=behaviours)
def test_property_never_a_pass_unless_true_or_outcome_passed(
    property_folder: Path, behaviour: tuple[str, object, bool]
) -> None:
    kind, value, subclass = behaviour
    body: str
    if kind == "raise":
        assert isinstance(value, type)
        base = value.__name__
        if subclass:
            body = f"class Generated({base}):\n        pass\n    raise Generated('m')"
        else:
            body = f"raise {base}('m')"
    elif kind == "json":
        import json

        body = f"return json.loads({json.dumps(value)!r})"
    elif kind == "expr":
        body = f"return {value}"
    else:
        body = str(value)
    source = PROPERTY_PRELUDE + f"\ndef check(ctx):\n    {body}\n"
    module = write_module(property_folder, source, "prop")
    timeout = 0.8 if body == "time.sleep(30)" else 30
    result = call(property_folder, module, "check", timeout=timeout)

    passing = (kind == "json" and value is True) or (
        kind == "expr" and value in PASSING_EXPRESSIONS
    )
    assert result.ok is passing, (body, result.mode, result.detail)
    assert (result.mode is Mode.PASS) is passing
    if kind == "raise":
        assert isinstance(value, type)
        if issubclass(value, AssertionError):  # a failed assert answers, as in a test
            assert (result.mode, result.cause) == (Mode.FAIL, Cause.PRODUCT), result.detail
            return
        # Constructing some builtin exceptions with one argument fails: that is an error.
        assert result.mode in (Mode.ERROR, Mode.PANIC)
        if result.mode is Mode.PANIC:
            assert not issubclass(value, Exception)
    if kind == "fault":
        assert result.mode is FAULTS[str(value)], result.detail
    assert isinstance(VerifierResult.from_dict(result.to_dict()), VerifierResult)
