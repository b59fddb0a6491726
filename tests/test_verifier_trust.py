"""What a verifier cannot do to its own verdict, tried for real.

Grounding is recorded by the pytest process: each forgery here is real code in a real
verifier process (appending to ``ctx._runs``, patching the context, writing a record
file, sending a crafted answer over the call socket). A pass that a tool run
contradicts is ``ungrounded`` ("unbound"). ``pytest.fail()`` is a ``fail``. The
verifier's process sees no secret of ours and its output is bounded. The zygotes it is
forked from do not outlive the session.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.peak_memory import PEAK_KIB
from helpers.verifiers_modules import call, write_module

from pytest_vgate.process import pid_alive
from pytest_vgate.verdict import Cause, Mode

FORGERIES = """
import json, os, socket, struct
from pytest_vgate.verifiers import Outcome, verifier
from pytest_vgate.verifiers.context import ToolRun, ToolUse, VerifierContext

FAKE = ToolUse("python", "/usr/bin/python3", "0" * 64, 0)

@verifier(tools=["python"])
def append_to_runs(ctx):
    ctx.__dict__.setdefault("_runs", []).append(FAKE)
    return True

@verifier(tools=["python"])
def patch_the_context(ctx):
    fake = ToolRun("python", "/usr/bin/python3", "0" * 64, ("python",), 0, "", "", 0.0)
    ctx.run = lambda *a, **k: fake
    VerifierContext.run = lambda self, *a, **k: fake
    ctx.tools = ()
    assert ctx.run("python").ok
    return True

@verifier(tools=["python"])
def write_a_record_file(ctx):
    record = json.dumps({"runs": [FAKE.to_dict()], "tools": [FAKE.record().to_dict()]})
    for where in (ctx.cell / "runs.json", ctx.root / "runs.json", ctx.cell / "tmp" / "vgate"):
        where.write_text(record)
    return True

def _socket():
    for fd in range(3, 64):
        try:
            s = socket.socket(fileno=os.dup(fd))
        except OSError:
            continue
        if s.family == socket.AF_UNIX:
            return s
        s.detach()
    raise RuntimeError("no call socket found")

def _send(message):
    body = json.dumps(message).encode()
    _socket().sendall(struct.pack("!I", len(body)) + body)

@verifier(tools=["python"])
def crafted_answer_with_runs(ctx):
    _send({"op": "result", "result": {"mode": "pass", "cause": None, "detail": "forged",
           "runs": [FAKE.to_dict()], "declared_tools": []}})
    os._exit(0)

@verifier(tools=["python"])
def crafted_answer_judgment(ctx):
    _send({"op": "result", "result": {"mode": "judgment", "detail": "skip me"}})
    os._exit(0)

@verifier(tools=["python"])
def undeclare_then_pass(ctx):
    _send({"op": "declare", "tools": []})
    return True

@verifier(tools=["python"])
def honest(ctx):
    return ctx.run("python", "--version").ok
"""

FORGED = [
    "append_to_runs",
    "patch_the_context",
    "write_a_record_file",
    "crafted_answer_with_runs",
    "undeclare_then_pass",
]


@pytest.fixture
def forgeries(tmp_path: Path) -> str:
    return write_module(tmp_path, FORGERIES, "forge")


@pytest.mark.parametrize("function", FORGED)
def test_a_forged_record_of_a_tool_run_does_not_ground_a_pass(
    tmp_path: Path, forgeries: str, function: str
) -> None:
    result = call(tmp_path, forgeries, function, tool_paths={"python": sys.executable})
    assert (result.mode, result.cause) == (Mode.UNGROUNDED, Cause.BROKEN_TEST), result.detail
    assert result.runs == ()
    assert result.to_verdict().tools == ()


def test_the_honest_twin_passes(tmp_path: Path, forgeries: str) -> None:
    """The control: the same module with a real run passes, so the forgeries above fail
    for what they forged, not for something else."""
    result = call(tmp_path, forgeries, "honest", tool_paths={"python": sys.executable})
    assert result.mode is Mode.PASS, result.detail
    assert [r.id for r in result.runs] == ["python"]


def test_a_verifier_process_cannot_answer_a_mode_of_ours(tmp_path: Path, forgeries: str) -> None:
    """``judgment`` would be a skip: only the pytest process gives modes other than
    pass/fail/error/panic/unavailable."""
    result = call(
        tmp_path, forgeries, "crafted_answer_judgment", tool_paths={"python": sys.executable}
    )
    assert result.mode is Mode.ERROR
    assert "cannot answer mode 'judgment'" in result.detail


FORGE_SESSION = """
from pytest_vgate import verifier

@verifier(id="forged", tools=["python"])
def forged(ctx):
    ctx.__dict__.setdefault("_runs", []).append(object())
    return True

@verifier(id="ignored-exit", tools=["python"])
def ignored_exit(ctx):
    ctx.run("python", "--no-such-option")  # python answers 2: a usage error
    return True

@verifier(id="declared-exit", tools=["python"])
def declared_exit(ctx):
    r = ctx.run("python", "--no-such-option", expect=2)
    return r.ok

def test_plain():
    pass
"""


@pytest.mark.slow
def test_forged_and_unbound_passes_fail_the_session(run_vgate, pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_forge=FORGE_SESSION)
    tools = pytester.path / ".toolchain" / "bin"
    tools.mkdir(parents=True)
    (tools / "python").symlink_to(sys.executable)
    result, cases = run_vgate()
    assert result.ret == 1, result.stdout.str()
    assert cases["forged"]["vgate_mode"] == "ungrounded"
    assert cases["ignored-exit"]["vgate_mode"] == "ungrounded"
    assert "unbound" in result.stdout.str()
    assert cases["declared-exit"]["outcome"] == "passed"
    assert cases["test_plain"]["outcome"] == "passed"


# --- unbound: a pass a tool run contradicts ---------------------------------------------

UNBOUND = """
from pytest_vgate.verifiers import Outcome, verifier

def ignores_exit_1(ctx):
    ctx.run("python", "-c", "import sys; sys.exit(1)")
    return True

def expects_2(ctx):
    return ctx.run("python", "-c", "import sys; sys.exit(2)", expect=2).ok

def expects_a_list(ctx):
    a = ctx.run("python", "-c", "import sys; sys.exit(2)", expect=[0, 2])
    b = ctx.run("python", "-c", "pass", expect=[0, 2])
    return a.ok and b.ok

def expects_0_gets_2(ctx):
    ctx.run("python", "-c", "import sys; sys.exit(2)", expect=0)
    return Outcome.passed("it said 2, I say fine")

def fails_on_it(ctx):
    r = ctx.run("python", "-c", "import sys; sys.exit(1)")
    return Outcome.failed(f"exit {r.exit_code}")

def bad_expect(ctx):
    ctx.run("python", "-c", "pass", expect="0")
    return True
"""


@pytest.mark.parametrize(
    ("function", "mode", "cause"),
    [
        ("ignores_exit_1", Mode.UNGROUNDED, Cause.BROKEN_TEST),
        ("expects_0_gets_2", Mode.UNGROUNDED, Cause.BROKEN_TEST),
        ("expects_2", Mode.PASS, None),
        ("expects_a_list", Mode.PASS, None),
        ("fails_on_it", Mode.FAIL, Cause.PRODUCT),
        ("bad_expect", Mode.ERROR, Cause.BROKEN_TEST),
    ],
)
def test_a_pass_must_agree_with_its_tool_runs(
    tmp_path: Path, function: str, mode: Mode, cause: Cause | None
) -> None:
    module = write_module(tmp_path, UNBOUND, "unbound")
    result = call(tmp_path, module, function, tool_paths={"python": sys.executable})
    assert (result.mode, result.cause) == (mode, cause), result.detail
    if mode is Mode.UNGROUNDED:
        assert "unbound" in result.detail
        assert "python exited" in result.detail


# --- pytest.fail() --------------------------------------------------------------------


def test_pytest_fail_in_a_verifier_is_a_fail(tmp_path: Path) -> None:
    module = write_module(
        tmp_path,
        """
        import pytest
        def check(ctx):
            pytest.fail("the parser accepted ''")
        def skips(ctx):
            pytest.skip("not today")
        """,
    )
    result = call(tmp_path, module, "check")
    assert (result.mode, result.cause) == (Mode.FAIL, Cause.PRODUCT), result.detail
    assert "pytest.fail(): the parser accepted ''" in result.detail
    assert call(tmp_path, module, "skips").mode is Mode.PANIC  # a skip is no answer


# --- secrets stay out -------------------------------------------------------------------

SECRET = "AKIAVGATEFAKESECRET0123456789"
ENV_DUMP = """
import os, sys
from pytest_vgate import Outcome, verifier

@verifier(id="dump-env")
def dump_env(ctx):
    print(dict(os.environ))
    sys.stderr.write(repr(dict(os.environ)))
    return Outcome.failed("environment: " + repr(dict(os.environ)))
"""


@pytest.mark.slow
def test_a_planted_secret_reaches_no_verifier_output(
    run_vgate, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("TZ", "UTC")  # allowlisted: proves the dump does reach the report
    pytester.makepyfile(test_env=ENV_DUMP)
    (pytester.path / "gates.yaml").write_text(
        f"gates:\n  - {{id: trivial, check: '{sys.executable} -c pass', red: not-required}}\n"
    )
    result, cases = run_vgate("--vgate", "gates.yaml", "--vgate-report", "report.json", "-rA")
    assert result.ret == 1
    assert cases["dump-env"]["vgate_mode"] == "fail"
    report = (pytester.path / "report.json").read_text()
    junit = (pytester.path / "junit.xml").read_text()
    seen = result.stdout.str() + result.stderr.str()
    assert "'TZ': 'UTC'" in report and "'TZ': 'UTC'" in seen  # the dump is there ...
    for where in (seen, junit, report):
        assert SECRET not in where  # ... without the secret
        assert "AWS_SECRET_ACCESS_KEY" not in where


def test_the_verifier_gets_the_allowlist_and_the_gates_env(tmp_path: Path) -> None:
    from pytest_vgate.gatesfile import EnvSpec

    module = write_module(
        tmp_path,
        """
        import os
        from pytest_vgate import Outcome
        def check(ctx):
            return Outcome.passed(" ".join(sorted(os.environ)))
        """,
    )
    caller = {"PATH": os.environ["PATH"], "AWS_SECRET_ACCESS_KEY": SECRET, "NAMED": "x"}
    result = call(
        tmp_path,
        module,
        "check",
        caller_env=caller,
        env=EnvSpec(pass_names=("NAMED",), set_values=(("SET", "y"),)),
    )
    assert result.detail.split() == [
        "HOME",
        "NAMED",
        "PATH",
        "PYTEST_VGATE_NESTED",
        "SET",
        "TMPDIR",
    ]


# --- output is bounded --------------------------------------------------------------------

FLOOD_SCRIPT = (
    PEAK_KIB
    + """
import sys
from pathlib import Path
from pytest_vgate.verifiers import VerifierCall, VerifierTarget, call_verifier

r = call_verifier(VerifierTarget(sys.argv[2], "flood"), VerifierCall(root=Path(sys.argv[1]),
                  timeout=120, sys_path=(sys.argv[1],), scratch=Path(sys.argv[3])))
disk = sum(p.stat().st_size for p in Path(sys.argv[3]).rglob("*") if p.is_file())
print("RESULT", r.mode.value, r.output_bytes, len(r.output), disk, peak_kib())
"""
)


@pytest.mark.slow
def test_a_flood_of_output_is_bounded_on_disk_and_in_memory(tmp_path: Path) -> None:
    mib = 300
    module = write_module(
        tmp_path,
        f"""
        import os
        from pytest_vgate import Outcome
        def flood(ctx):
            chunk = b"v" * (1 << 20)
            for _ in range({mib}):
                os.write(1, chunk)
            print("THE-END")
            return Outcome.failed("flooded")
        """,
    )
    script = tmp_path / "flood.py"
    script.write_text(FLOOD_SCRIPT)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path), module, str(scratch)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    line = [x for x in done.stdout.splitlines() if x.startswith("RESULT")]
    assert line, done.stdout + done.stderr
    _, mode, total, kept, disk, rss_kib = line[0].split()
    assert mode == "fail"
    assert int(total) == mib * (1 << 20) + len("THE-END\n")
    assert int(kept) < (1 << 20) + 200  # head + tail of the default 1 MiB limit
    assert int(disk) < 1 << 20  # nothing of it went to a file
    assert int(rss_kib) < 200 * 1024  # the caller never held it


def test_the_tail_of_the_output_is_kept(tmp_path: Path) -> None:
    module = write_module(
        tmp_path,
        """
        import os
        from pytest_vgate import Outcome
        def flood(ctx):
            os.write(1, b"HEAD" + b"x" * (4 << 20))
            print("TAIL-MARK")
            return Outcome.failed("flooded")
        """,
    )
    result = call(tmp_path, module, "flood", capture_limit=1 << 16)
    assert result.output.startswith("HEAD")
    assert "TAIL-MARK" in result.output and "bytes omitted" in result.output
    assert len(result.output) < (1 << 16) + 200
    assert result.output_bytes == 4 + (4 << 20) + len("TAIL-MARK\n")


# --- the zygotes ---------------------------------------------------------------------------

THREADED = """
import os, threading, time
from pytest_vgate import Outcome
STOP = threading.Event()
threading.Thread(target=STOP.wait, daemon=True).start()  # a thread from the import
STATE = []

def check(ctx):
    STATE.append(1)
    return Outcome.passed(f"{os.getpid()} {len(STATE)} {threading.active_count()}")
"""


def test_a_module_whose_import_starts_a_thread_is_never_forked_from(tmp_path: Path) -> None:
    """Forking it would copy the thread's locks in whatever state; each call then imports
    the module in a process of its own instead (still one call per process)."""
    module = write_module(tmp_path, THREADED)
    details = [call(tmp_path, module, "check").detail.split() for _ in range(3)]
    assert len({d[0] for d in details}) == 3, details
    assert all(d[1] == "1" for d in details), details
    assert all(d[2] == "2" for d in details), details  # its thread is there: not a fork


SURVIVORS = """
import os
from pytest_vgate import verifier

def _ppid(pid):
    with open(f"/proc/{pid}/stat") as fh:
        return int(fh.read().rsplit(")", 1)[1].split()[1])

@verifier(id="family")
def family(ctx):
    zygote = os.getppid()
    (ctx.root / f"family-{os.getpid()}").write_text(f"{zygote} {_ppid(zygote)}")
    return True

def test_plain():
    pass
"""


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")
def test_no_zygote_outlives_the_session(run_vgate, pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_family=SURVIVORS)
    result, _ = run_vgate("--vgate-isolation", "off")  # the pids it writes are ours
    assert result.ret == 0, result.stdout.str()
    [record] = list(pytester.path.glob("family-*"))
    pids = [int(p) for p in record.read_text().split()]
    end = time.monotonic() + 10
    while time.monotonic() < end and any(pid_alive(p) for p in pids):
        time.sleep(0.05)
    assert not [p for p in pids if pid_alive(p)], "a zygote outlived the session"


def test_an_import_that_hangs_is_a_timeout_and_one_that_raises_an_error(tmp_path: Path) -> None:
    hangs = write_module(
        tmp_path, "import time\ntime.sleep(300)\ndef check(ctx):\n    return True\n"
    )
    started = time.monotonic()
    result = call(tmp_path, hangs, "check", timeout=1.5)
    assert (result.mode, result.cause) == (Mode.TIMEOUT, Cause.ENVIRONMENT), result.detail
    assert "still importing" in result.detail
    assert time.monotonic() - started < 15  # generous: only a hang would exceed it
    raises = write_module(tmp_path, "raise ValueError('at import')\n")
    for _ in range(2):  # every call reports it, not only the first
        failed = call(tmp_path, raises, "check")
        assert failed.mode is Mode.ERROR
        assert "ValueError: at import" in failed.detail


def test_the_job_is_json_not_pickle() -> None:
    """Nothing a verifier process sends is unpickled by the pytest process."""
    source = Path(__file__).parents[1] / "pytest_vgate" / "verifiers"
    for path in source.glob("*.py"):
        text = path.read_text()
        assert "import pickle" not in text and "multiprocessing" not in text, path


@pytest.mark.parametrize("count", [3])
def test_fan_out_of_one_module_shares_its_zygote(tmp_path: Path, count: int) -> None:
    from pytest_vgate.verifiers import VerifierCall, VerifierTarget, run_verifiers

    module = write_module(
        tmp_path,
        """
        import os, time
        from pytest_vgate import Outcome
        def check(ctx):
            time.sleep(0.5)
            return Outcome.passed(f"{os.getpid()} {os.getppid()}")
        """,
    )
    verdict = run_verifiers(
        [VerifierTarget(module, "check", name=f"c{i}") for i in range(count)],
        VerifierCall(root=tmp_path, timeout=30, sys_path=(str(tmp_path),)),
    )
    assert verdict.mode is Mode.PASS, verdict.detail
    seen = [c.detail.split() for c in verdict.checks]
    assert len({pid for pid, _ in seen}) == count
    assert len({zygote for _, zygote in seen}) == 1


SLEEPER = """
import os, time
from pytest_vgate import verifier

@verifier(id="sleeper")
def sleeper(ctx):
    (ctx.root / f"pid-{os.getpid()}").write_text(str(os.getppid()))
    time.sleep(300)
"""


@pytest.mark.slow
def test_a_killed_session_leaves_no_verifier_or_zygote(pytester: pytest.Pytester) -> None:
    """SIGKILL to pytest mid-verifier: the zygotes see the end of their control socket,
    kill what they forked and exit."""
    pytester.makepyfile(test_sleeper=SLEEPER)
    session = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "test_sleeper.py",
            "--vgate-isolation",
            "off",
        ],
        cwd=pytester.path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        end = time.monotonic() + 60
        while not list(pytester.path.glob("pid-*")) and time.monotonic() < end:
            time.sleep(0.05)
        [record] = list(pytester.path.glob("pid-*"))
    finally:
        session.kill()
        session.wait()
    pids = [int(record.name.split("-")[1]), int(record.read_text())]
    end = time.monotonic() + 60  # a loaded machine can take long to deliver EOF
    while time.monotonic() < end and any(pid_alive(p) for p in pids):
        time.sleep(0.05)
    assert not [p for p in pids if pid_alive(p)], "a verifier or its zygote survived"


# --- grounding is a tool's answer ---------------------------------------------------------

AUTHORED = """
import os, sys
from pathlib import Path
from pytest_vgate.verifiers import Outcome, ToolUnavailableError, verifier

HERE = Path(__file__).parent

@verifier(tools=["python"])
def inline(ctx):
    return ctx.run("python", "-c", "print(6 * 7)").stdout.strip() == "42"

@verifier(tools=["python"])
def clustered(ctx):
    return ctx.run("python", "-Ic", "pass").ok

@verifier(tools=["python"])
def script_next_to_it(ctx):
    (HERE / "mine.py").write_text("pass")
    return ctx.run("python", str(HERE / "mine.py")).ok

@verifier(tools=["python"])
def script_in_its_cell(ctx):
    (ctx.cell / "mine.py").write_text("pass")
    return ctx.run("python", str(ctx.cell / "mine.py")).ok

@verifier(tools=["python"])
def inline_and_a_real_run(ctx):
    return ctx.run("python", "-c", "pass").ok and ctx.run("python", "--version").ok

@verifier(tools=["python"])
def raises_unavailable_itself(ctx):
    raise ToolUnavailableError("tool 'python' was not found")

@verifier(tools=["python", "no-such-tool-vgate"])
def runs_a_missing_tool(ctx):
    return ctx.run("no-such-tool-vgate").ok
"""


@pytest.mark.parametrize(
    ("function", "mode", "cause"),
    [
        ("inline", Mode.UNGROUNDED, Cause.BROKEN_TEST),
        ("clustered", Mode.UNGROUNDED, Cause.BROKEN_TEST),
        ("script_next_to_it", Mode.UNGROUNDED, Cause.BROKEN_TEST),
        ("script_in_its_cell", Mode.UNGROUNDED, Cause.BROKEN_TEST),
        ("inline_and_a_real_run", Mode.PASS, None),
        ("raises_unavailable_itself", Mode.ERROR, Cause.BROKEN_TEST),
        ("runs_a_missing_tool", Mode.UNAVAILABLE, Cause.ENVIRONMENT),
    ],
)
def test_grounding_is_a_tool_answer(
    tmp_path: Path, function: str, mode: Mode, cause: Cause | None
) -> None:
    module = write_module(tmp_path, AUTHORED, "authored")
    result = call(tmp_path, module, function, tool_paths={"python": sys.executable})
    assert (result.mode, result.cause) == (mode, cause), result.detail
    if mode is Mode.UNGROUNDED:
        assert "only runs were authored" in result.detail
    for run in result.runs:  # each run records what ran
        assert run.argv[0] == sys.executable and len(run.argv) >= 2
        assert run.authored == (run.argv[1] != "--version")
