"""Acceptance of the fail-closed verifier runner, end to end, in real pytest sessions.

Each session is a real ``pytest`` subprocess (pytester), plain and under ``-n 2``; each
fault is real code (a raise, a busy loop, a sleep in C, ``os._exit``, a segfault, a wrong
return value). The observables are the exit code, the junit properties, the JSON report,
the failure text and, for Ctrl-C, whether the verifier's process is still alive.
"""

from __future__ import annotations

import builtins
import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest
from helpers.call_paths import references, scan
from helpers.fail_closed_modules import (
    FAN_GATES,
    FAN_MODULE,
    FAULTS,
    HANG_TIMEOUT,
    LOCK_MODULE,
    fault_gates_module,
    fault_gates_yaml,
    fault_test_module,
)
from helpers.junit import junit_cases
from helpers.report import read_report
from helpers.verifiers_modules import write_module
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pytest_vgate
from pytest_vgate.context import RunContext
from pytest_vgate.gate.result import evaluate_gate
from pytest_vgate.gatesfile import Gate, GateType, RedPolicy
from pytest_vgate.process import pid_alive
from pytest_vgate.verdict import Mode
from pytest_vgate.verifiers import child, wire
from pytest_vgate.verifiers.messages import VerifierJob
from pytest_vgate.verifiers.target import VerifierTarget

TESTS_FAILED = int(pytest.ExitCode.TESTS_FAILED)


def report_of(pytester: pytest.Pytester) -> dict[str, dict[str, object]]:
    """The JSON report's gate/verifier entries by id."""
    data = read_report(pytester.path / "report.json")
    return {str(entry["id"]): entry for entry in data["gates"]}


def assert_completed(result: pytest.RunResult) -> None:
    """The session ran to its end: tests failed (1), not interrupted/internal/usage (2/3/4)."""
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == TESTS_FAILED, out
    assert "INTERNALERROR" not in out
    assert "Timeout +++" not in out  # pytest-timeout's thread method did not fire


def assert_passed(case: dict[str, object]) -> None:
    assert case["outcome"] == "passed", case
    assert case["vgate_mode"] == "pass", case


# --- every fault: a failed item with its own mode; the session goes on -----------------


@pytest.mark.slow
def test_every_fault_is_a_failed_item_with_its_own_mode(
    run_vgate, pytester: pytest.Pytester
) -> None:
    pytester.makepyfile(test_zoo=fault_test_module(), zoo_checks=fault_gates_module())
    (pytester.path / "gates.yaml").write_text(fault_gates_yaml("zoo_checks"))
    result, cases = run_vgate("--vgate", "gates.yaml", "--vgate-report", "report.json")
    assert_completed(result)
    result.assert_outcomes(failed=2 * len(FAULTS), passed=3)
    report = report_of(pytester)
    for fault, (_, mode, cause) in FAULTS.items():
        for name in (f"v-{fault}", f"g-{fault}"):
            assert cases[name]["outcome"] == "failure", (name, cases[name])
            assert cases[name]["vgate_mode"] == mode, (name, cases[name])
            assert cases[name]["vgate_cause"] == cause, (name, cases[name])
            assert report[name]["mode"] == mode, (name, report[name])
            assert report[name]["ok"] is False, name
    for name in ("v-healthy", "g-healthy"):
        assert_passed(cases[name])
    assert cases["test_ordinary_after_the_faults"]["outcome"] == "passed"
    # Each failure says what happened, in the verifier's terms.
    assert report["v-raises"]["kind"] == "verifier"
    assert "ValueError: boom from the verifier" in str(report["v-raises"]["detail"])
    assert "SystemExit" in str(report["g-system_exit_0"]["detail"])
    assert f"deadline of {HANG_TIMEOUT:g}s" in str(report["v-spin"]["detail"])
    assert "exited with status 0" in str(report["g-exit_0"]["detail"])
    assert "SIGSEGV" in str(report["v-segfault"]["detail"])
    assert "returned None" in str(report["g-returns_none"]["detail"])
    assert "Truthy" in str(report["v-returns_truthy"]["detail"])


# --- a verifier that dies holding a lock does not poison the next one -------------------


@pytest.mark.slow
def test_a_verifier_dying_with_the_module_lock_does_not_poison_the_next(
    run_vgate, dist_args: list[str], pytester: pytest.Pytester
) -> None:
    pytester.makepyfile(test_lockmod=LOCK_MODULE)
    (pytester.path / "gates.yaml").write_text(
        "gates:\n"
        "  - {id: gate-dies-holding-the-lock, type: python, verifier: 'test_lockmod:gate_poison',"
        " red: not-required}\n"
        "  - {id: gate-takes-the-lock, type: python, verifier: 'test_lockmod:gate_take',"
        " red: not-required}\n"
    )
    # One session, in order: under xdist, both of a file's items go to the same worker.
    same_worker = ["--dist", "loadfile"] if dist_args else []
    result, cases = run_vgate("--vgate", "gates.yaml", *same_worker)
    assert_completed(result)
    for first, second in (
        ("dies-holding-the-lock", "takes-the-lock"),
        ("gate-dies-holding-the-lock", "gate-takes-the-lock"),
    ):
        assert cases[first]["vgate_mode"] == "error", cases[first]
        assert_passed(cases[second])
    assert "died holding the module lock" in result.stdout.str()


# --- fan-out: siblings keep their own results; concurrency --------------------------------


@pytest.mark.slow
def test_fan_out_keeps_each_result_and_runs_concurrently(
    run_vgate, pytester: pytest.Pytester
) -> None:
    pytester.makepyfile(fanmod=FAN_MODULE)
    (pytester.path / "gates.yaml").write_text(FAN_GATES)
    result, cases = run_vgate("--vgate", "gates.yaml", "--vgate-report", "report.json")
    assert_completed(result)
    assert cases["fan-three"]["vgate_mode"] == "panic"
    assert cases["fan-three"]["vgate_cause"] == "broken_test"
    gate = report_of(pytester)["fan-three"]
    assert gate["mode"] == "panic"
    checks = {str(c["name"]): c for c in gate["checks"]}  # type: ignore[union-attr]
    assert list(checks) == ["fanmod:first", "fanmod:panics", "fanmod:second"]
    assert checks["fanmod:first"]["mode"] == "pass"
    assert checks["fanmod:first"]["detail"] == "first saw the widget"
    assert checks["fanmod:second"]["mode"] == "pass"
    assert checks["fanmod:second"]["detail"] == "second saw the gadget"
    assert checks["fanmod:panics"]["mode"] == "panic"
    out = result.stdout.str()
    assert "check fanmod:first: pass - first saw the widget" in out
    assert "check fanmod:second: pass - second saw the gadget" in out
    assert "check fanmod:panics: panic" in out

    parallel = report_of(pytester)["fan-parallel"]
    assert_passed(cases["fan-parallel"])
    durations = [float(c["duration"]) for c in parallel["checks"]]  # type: ignore[union-attr]
    assert len(durations) == 2
    assert min(durations) >= 1.9, durations  # each really slept 2 s
    # Run together: their sleeps overlap, and the gate took about one of them, not both.
    # (Relative bounds: an absolute one flakes on a loaded 2-core machine.)
    (a0, a1), (b0, b1) = (
        map(float, (pytester.path / f"{n}.interval").read_text().split())
        for n in ("slow_a", "slow_b")
    )
    assert a0 < b1 and b0 < a1, "the two verifiers ran one after the other"
    gate_duration = float(parallel["duration"])  # type: ignore[arg-type]
    assert gate_duration < sum(durations) - 1.0, (gate_duration, durations)
    assert gate_duration < max(durations) + 1.0, (gate_duration, durations)


# --- ordinary tests marked vgate -----------------------------------------------------------

MARKED_TESTS = """
import time
import pytest

@pytest.mark.vgate
def test_value_error():
    raise ValueError("not a verifier, still tagged")

@pytest.mark.vgate
def test_system_exit():
    raise SystemExit(0)

@pytest.mark.vgate
def test_sleeps():
    time.sleep(30)

@pytest.mark.vgate
def test_asserts():
    assert 1 == 2

@pytest.mark.vgate
def test_own_timeout_message():
    pytest.fail("Timeout waiting for the widget")

@pytest.mark.vgate
def test_passes():
    pass

def test_unmarked_error():
    raise ValueError("ordinary")
"""


@pytest.mark.slow
def test_marked_ordinary_tests_carry_their_mode(run_vgate, pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_marked=MARKED_TESTS)
    result, cases = run_vgate("--timeout", "1", "--timeout-method", "signal")
    assert_completed(result)
    result.assert_outcomes(failed=6, passed=1)
    expected = {
        "test_value_error": "error",
        "test_system_exit": "panic",
        "test_sleeps": "timeout",
        "test_asserts": "fail",
        "test_own_timeout_message": "fail",  # only pytest-timeout's own message is a timeout
        "test_passes": "pass",
    }
    for name, mode in expected.items():
        assert cases[name].get("vgate_mode") == mode, (name, cases[name])
    assert cases["test_sleeps"]["vgate_cause"] == "environment"
    assert cases["test_system_exit"]["vgate_cause"] == "broken_test"
    assert "vgate_mode" not in cases["test_unmarked_error"]


# --- pytest-timeout: its timeout is our default deadline, its thread never kills us ----------

SLEEPING_VERIFIER = """
import time
from pytest_vgate import verifier

@verifier(id="sleeps-forever")
def sleeps(ctx):
    time.sleep(300)

def sleeps_too(ctx):
    time.sleep(300)

def test_after_the_sleeper():
    pass
"""


@pytest.mark.slow
@pytest.mark.parametrize("method", ["thread", "signal"])
def test_pytest_timeout_is_the_default_deadline_and_never_kills_the_session(
    run_vgate, dist_args: list[str], pytester: pytest.Pytester, method: str
) -> None:
    if method == "signal" and dist_args:
        pytest.skip("the signal method under xdist adds nothing the thread method does not")
    pytester.makepyfile(test_sleeper=SLEEPING_VERIFIER)
    sleep = f"{sys.executable} -c 'import time; time.sleep(300)'"
    (pytester.path / "gates.yaml").write_text(
        "gates:\n"
        "  - {id: sleeping-gate, type: python, verifier: 'test_sleeper:sleeps_too',"
        " red: not-required}\n"
        f'  - {{id: sleeping-command, check: "{sleep}", red: not-required}}\n'
    )
    result, cases = run_vgate("--vgate", "gates.yaml", "--timeout", "2", "--timeout-method", method)
    assert_completed(result)  # thread method: the process would have been killed
    result.assert_outcomes(failed=3, passed=1)
    for name in ("sleeps-forever", "sleeping-gate", "sleeping-command"):
        assert cases[name]["vgate_mode"] == "timeout", (name, cases[name])
    assert cases["test_after_the_sleeper"]["outcome"] == "passed"
    assert result.stdout.str().count("deadline of 2s") >= 3  # ours, from --timeout 2


# --- isolation="inline" cannot end the session: it is a process like any other -----------

INLINE_EXIT = """
import os
from pytest_vgate import verifier

def test_before():
    pass

@verifier(id="inline-exit", isolation="inline")
def exits(ctx):
    os._exit(0)

def test_after():
    pass
"""


@pytest.mark.slow
def test_an_inline_verifier_calling_os_exit_0_cannot_end_the_session_green(
    run_vgate, pytester: pytest.Pytester
) -> None:
    """Once, ``inline`` ran in pytest's own process: os._exit(0) ended pytest with exit 0,
    no junit, and the later tests never ran."""
    pytester.makepyfile(test_inline_exit=INLINE_EXIT)
    result, cases = run_vgate("-W", "ignore::DeprecationWarning")
    assert_completed(result)
    assert cases, "no junit was written"
    assert cases["test_after"]["outcome"] == "passed"
    case = cases["inline-exit"]
    assert case["outcome"] == "failure", case
    assert (case["vgate_mode"], case["vgate_cause"]) == ("crash", "environment")


# --- xdist: a worker killed by a test ------------------------------------------------------

WORKER_EXIT = """
import os
from pytest_vgate import verifier

def test_before():
    pass

def test_worker_exit():
    os._exit(1)

def test_after():
    pass

@verifier(id="healthy-after")
def healthy(ctx):
    return True
"""


@pytest.mark.slow
def test_a_worker_killed_by_a_test_is_a_crash(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_worker_exit=WORKER_EXIT)
    (pytester.path / "gates.yaml").write_text(
        f"gates:\n  - {{id: trivial, check: '{sys.executable} -c pass', red: not-required}}\n"
    )
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-n", "2", "--junitxml=junit.xml",
        "--vgate", "gates.yaml", "--vgate-report", "report.json",
    )  # fmt: skip
    assert_completed(result)
    out = result.stdout.str()
    assert "crashed while running 'test_worker_exit.py::test_worker_exit'" in out
    assert "test_worker_exit.py::test_worker_exit: crash (environment)" in out  # our summary
    crashed = report_of(pytester)["test_worker_exit.py::test_worker_exit"]
    assert crashed["mode"] == "crash"
    assert crashed["cause"] == "environment"
    assert crashed["ok"] is False
    cases = junit_cases(pytester.path / "junit.xml")
    for name in ("test_before", "test_after", "healthy-after", "trivial"):
        assert cases[name]["outcome"] == "passed", (name, cases)
    case = cases["test_worker_exit"]
    assert case["outcome"] in ("failure", "error"), case
    assert case["vgate_mode"] == "crash", case
    assert case["vgate_cause"] == "environment", case


@pytest.mark.slow
def test_a_crash_is_tagged_without_a_gates_file(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_worker_exit=WORKER_EXIT)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2")
    assert_completed(result)
    assert "test_worker_exit.py::test_worker_exit: crash (environment)" in result.stdout.str()


# --- Ctrl-C: stops the session as in plain pytest, leaves no verifier alive -----------------

SLEEPER_WITH_PID = """
import os, time
from pytest_vgate import verifier

@verifier(id="sleeper")
def sleeper(ctx):
    (ctx.root / f"pid-{os.getpid()}").write_text("")
    time.sleep(300)

def test_after():
    pass
"""


@pytest.mark.slow
def test_ctrl_c_stops_the_session_and_kills_the_verifier(
    pytester: pytest.Pytester, dist_args: list[str]
) -> None:
    pytester.makepyfile(test_sleeper=SLEEPER_WITH_PID)
    argv = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        *dist_args,
        "--vgate-isolation",
        "off",
    ]  # outside a PID namespace: the pids the verifier writes are ours
    # Its own process group, as a terminal's foreground job: Ctrl-C reaches the group
    # (pytest and, under xdist, its workers), not the verifier, which leads its own.
    proc = pytester.popen(argv, stdin=None, start_new_session=True)
    try:
        end = time.monotonic() + 60
        while not list(pytester.path.glob("pid-*")) and time.monotonic() < end:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        pids = [int(p.name.split("-", 1)[1]) for p in pytester.path.glob("pid-*")]
        assert pids, "the verifier never started"
        time.sleep(0.3)
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    text = out.decode(errors="replace") + err.decode(errors="replace")
    assert proc.returncode == int(pytest.ExitCode.INTERRUPTED), text
    assert "KeyboardInterrupt" in text
    end = time.monotonic() + 5
    while any(pid_alive(pid) for pid in pids) and time.monotonic() < end:
        time.sleep(0.05)
    assert not [pid for pid in pids if pid_alive(pid)], "a verifier child survived Ctrl-C"


# --- the runner is the only call path ------------------------------------------------------


def test_only_invoke_execute_calls_a_verifier() -> None:
    package = Path(pytest_vgate.__file__).parent
    sites = scan(package)
    assert sites, "the scanner found no call at all: it is blind, not the package clean"
    where = {(s.file, s.function, s.kind) for s in sites}
    assert where == {("pytest_vgate/verifiers/invoke.py", "_call", "call")}, sites
    # _call is the verifier call of execute, and execute runs only where a call is isolated.
    assert references(package, "_call") == {("pytest_vgate/verifiers/invoke.py", "execute")}
    # Besides the child's call, the rehearsal (in the zygote and in each spare) executes a
    # job of its own, whose target is a function of ours, never a verifier.
    assert references(package, "execute") == {
        ("pytest_vgate/verifiers/child.py", "child_main"),
        ("pytest_vgate/verifiers/child.py", "rehearse"),
    }
    (frame,) = wire.FrameReader().feed(child._frame())
    assert VerifierJob.from_message(frame).target == VerifierTarget(
        "pytest_vgate.verifiers.child", "_rehearsal_check"
    )


ROGUE_SOURCES = {
    "direct": "def run(t, ctx):\n    fn = load_target(t)\n    return fn(ctx)\n",
    "inline": "def run(t, ctx):\n    return load_target(t)(ctx)\n",
    "spec-guarded": "def run(obj, ctx):\n    if find_verifier_spec(obj):\n        obj(ctx)\n",
    "thread": "def run(t):\n    fn = load_target(t)\n    threading.Thread(target=fn).start()\n",
    "via-helper": (
        "def get(t):\n    f = load_target(t)\n    return f\n\n"
        "def run(t, ctx):\n    g = get(t)\n    return g(ctx)\n"
    ),
    "into-a-function": (
        "def call_it(x, ctx):\n    return x(ctx)\n\n"
        "def run(t, ctx):\n    return call_it(load_target(t), ctx)\n"
    ),
    "closure": (
        "class Runner:\n    def go(self, t, ctx):\n        fn = load_target(t)\n"
        "        body = lambda: fn(ctx)\n        return body()\n"
    ),
    "stored": "def run(self, t):\n    self.fn = load_target(t)\n",
}


@pytest.mark.parametrize("name", list(ROGUE_SOURCES))
def test_the_call_path_scanner_flags_a_rogue_call(tmp_path: Path, name: str) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "rogue.py").write_text(ROGUE_SOURCES[name])
    sites = scan(package)
    assert sites, f"{name}: a rogue call of a verifier went unnoticed"
    assert all(s.file == "pkg/rogue.py" for s in sites)


# --- the property, at the runner level: no pass unless every verifier passed ----------------

RAISABLE = sorted(
    (c for c in vars(builtins).values() if isinstance(c, type) and issubclass(c, BaseException)),
    key=lambda c: c.__name__,
)
PASSING = ["True", "Outcome.passed()", "Outcome.passed('fine')", "Outcome(True)"]
NOT_PASSING = [
    "None",
    "False",
    "1",
    "'True'",
    "[True]",
    "Outcome.failed('no')",
    "Sub(True)",
    "Truthy()",
    "Outcome",
    "object()",
    "NotImplemented",
]
HANG = "time.sleep(30)"
FAULT_BODIES = [
    "os._exit(0)",
    "ctypes.string_at(0)",
    "sys.exit(0)",
    HANG,
    "os.kill(os.getpid(), signal.SIGKILL)",
    "raise KeyboardInterrupt",
]
PRELUDE = """
import ctypes, json, os, signal, sys, time
from pytest_vgate import Outcome

class Sub(Outcome):
    pass

class Truthy:
    def __bool__(self):
        return True
    def __eq__(self, other):
        return True
"""

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=6,
)
# (body of the verifier, whether it may pass)
behaviour = st.one_of(
    st.sampled_from(RAISABLE).map(lambda c: (f"raise {c.__name__}('m')", False)),
    st.sampled_from(PASSING).map(lambda e: (f"return {e}", True)),
    st.sampled_from(NOT_PASSING).map(lambda e: (f"return {e}", False)),
    json_values.map(lambda v: (f"return json.loads({json.dumps(v)!r})", v is True)),
    st.sampled_from(FAULT_BODIES).map(lambda b: (b, False)),
)


@pytest.fixture(scope="module")
def property_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fail-closed-property")


@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(behaviours=st.lists(behaviour, min_size=1, max_size=3))
def test_property_a_gate_passes_only_if_every_verifier_passed(
    property_root: Path, behaviours: list[tuple[str, bool]]
) -> None:
    source = PRELUDE + "".join(
        f"\ndef v{i}(ctx):\n    {body}\n" for i, (body, _) in enumerate(behaviours)
    )
    module = write_module(property_root, source, "prop")
    hangs = any(body == HANG for body, _ in behaviours)
    gate = Gate(
        id="prop",
        type=GateType.PYTHON,
        verifiers=tuple(f"{module}:v{i}" for i in range(len(behaviours))),
        timeout=1.0 if hangs else 30.0,
        red=RedPolicy.NOT_REQUIRED,
        root=property_root,
    )
    result = evaluate_gate(gate, RunContext(root=property_root))  # the items' path
    everyone_passed = all(passes for _, passes in behaviours)
    assert result.ok is everyone_passed, (behaviours, result.verdict.detail)
    assert (result.verdict.mode is Mode.PASS) is everyone_passed
    assert len(result.verdict.checks) == len(behaviours)
    for check, (body, passes) in zip(result.verdict.checks, behaviours, strict=True):
        if check.mode is Mode.PASS:
            assert passes, (body, check)  # never a pass from anything else
        elif not hangs:  # (a sibling's hang may time the others out under load)
            assert not passes, (body, check)
