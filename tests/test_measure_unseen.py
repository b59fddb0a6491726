"""A measured check sees nothing of the measurement: real checks, run measured and not.

Each check prints what user code can observe (its modules, its path, its code objects,
``dis``, ``inspect``, tracebacks, a profiler's calls, code rebuilt with other globals or
builtins, its threads, signal handlers and file numbers, a fork); the output must be the
same, byte for byte, with and without measurement (and the stack sample at its deadline).
"""

from __future__ import annotations

import glob
import os
import shlex
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest
from helpers.measure import include_for

from pytest_vgate.context import RunContext
from pytest_vgate.gate.runner import run_check
from pytest_vgate.gatesfile import gate_from_mapping
from pytest_vgate.process.measure import MEASURED_KEY, Measured
from pytest_vgate.verdict import Mode

PY = shlex.quote(sys.executable)

PRODUCT = """\
def f(x):
    total = 0
    for i in range(x):
        total += i
    return total


def boom(x):
    return 1 // x
"""

STARTUP = """\
import sys

print(sorted(sys.modules))
print(sys.path)
print(sys.getprofile(), sys.flags)
if sys.version_info >= (3, 12):
    print(sys.gettrace(), [sys.monitoring.get_tool(i) for i in (0, 1, 2, 5)])  # 4: ours
print(sorted(vars(__builtins__) if isinstance(__builtins__, dict) else vars(__builtins__)))
print(sorted(globals()))
"""

INTROSPECT = """\
import copy
import dis
import inspect
import sys
import traceback
import types

sys.path.insert(0, ".")
import pkg.m as m

code = m.f.__code__
print(code.co_names, code.co_consts, code.co_varnames, code.co_filename, code.co_firstlineno)
print(list(code.co_lines()) if hasattr(code, "co_lines") else code.co_lnotab)
dis.dis(m.f)
print(inspect.getsource(m.f))
print(inspect.getclosurevars(m.f))
print(sorted(vars(m)))
try:
    m.boom(0)
except ZeroDivisionError:
    print(traceback.format_exc())
calls = []
sys.setprofile(lambda frame, event, arg: calls.append((event, frame.f_code.co_name)))
m.f(3)
sys.setprofile(None)
print(calls)
print(types.FunctionType(m.f.__code__, {"__builtins__": __builtins__})(4))
space = {"__builtins__": {"range": range}}
with open(m.__file__) as fh:
    exec(compile(fh.read(), m.__file__, "exec"), space)
print(space["f"](5))
print(sorted(copy.deepcopy({k: v for k, v in vars(m).items() if not k.startswith("__")})))
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "m.py").write_text(PRODUCT)
    (tmp_path / "startup.py").write_text(STARTUP)
    (tmp_path / "introspect.py").write_text(INTROSPECT)
    return tmp_path


def outputs(root: Path, check: str, **gate: object) -> tuple[str, str, Measured]:
    """The check's stdout unmeasured, then measured, and what the measured run saw."""
    spec = gate_from_mapping({"id": "g", "check": check, **gate}, root=root)
    plain = run_check(spec, RunContext(root=root))
    measured = run_check(spec, RunContext(root=root, measure=include_for([root])))
    assert plain.ok, plain.stderr
    assert measured.ok, measured.stderr
    found = measured.extra[MEASURED_KEY]
    assert isinstance(found, Measured)
    return plain.stdout, measured.stdout, found


def test_startup_loads_no_module_and_leaves_no_path_entry_or_name(project: Path) -> None:
    plain, measured, found = outputs(project, f"{PY} startup.py")
    assert found.measured and str(project / "startup.py") in found.files, found.reason
    assert measured == plain
    assert "'ast'" not in measured and "'typing'" not in measured.splitlines()[0]


def test_code_objects_inspect_dis_tracebacks_and_profilers_see_no_measurement(
    project: Path,
) -> None:
    plain, measured, found = outputs(project, f"{PY} introspect.py")
    assert found.measured, found.reason
    assert found.files[str(project / "pkg" / "m.py")] >= {1, 2, 3, 4, 5, 8, 9}
    assert measured == plain
    assert "ZeroDivisionError" in measured and 'm.py", line 9, in boom' in measured


def test_the_checks_own_sitecustomize_still_runs_and_keeps_its_name(project: Path) -> None:
    own = project / "own"
    own.mkdir()
    (own / "sitecustomize.py").write_text("import os\nos.environ['OWN_SITE'] = 'ran'\n")
    show = textwrap.dedent(
        """\
        import os, sys
        print(os.environ.get('OWN_SITE'), sys.modules['sitecustomize'].__file__)
        print([p for p in sys.path if 'measure' in p])
        """
    )
    (project / "show.py").write_text(show)
    plain, measured, found = outputs(
        project, f"{PY} show.py", env={"set": {"PYTHONPATH": str(own)}}
    )
    assert found.measured, found.reason
    assert measured == plain
    assert measured.splitlines()[0] == f"ran {own / 'sitecustomize.py'}"


# Prints what a sampled base run's watchdog could change, forks a child that exits through
# the interpreter's finalization (it would wait forever for a watchdog thread it does not
# have), with warnings as errors (Python 3.12 warns about forking with a thread), then hangs
# until the deadline so that the sample is taken.
SAMPLED = """\
import sys

print(sorted(sys.modules), sorted(globals()), flush=True)
import os, signal, threading, time, warnings

warnings.simplefilter("error")
print([t.name for t in threading.enumerate()], threading.active_count())
print(sorted((int(s), str(signal.getsignal(s))) for s in signal.valid_signals()))
import faulthandler

print(faulthandler.is_enabled(), os.open(os.devnull, os.O_RDONLY))
pid = os.fork()
if pid == 0:
    sys.exit(0)
print("child", os.waitpid(pid, 0)[1], flush=True)
while True:
    time.sleep(0.05)
"""


def _pythons() -> list[str]:
    """This interpreter, and others of 3.10 to 3.13 that pyenv holds here."""
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    found = [sys.executable]
    for minor in (10, 12, 13):
        found.extend(sorted(glob.glob(f"{root}/versions/3.{minor}.*/bin/python3.{minor}"))[-1:])
    return found


@pytest.mark.slow
@pytest.mark.parametrize("python", _pythons(), ids=lambda p: Path(p).name)
def test_the_stack_sample_adds_no_module_thread_handler_or_file_number_and_forks_cleanly(
    project: Path, python: str
) -> None:
    (project / "sampled.py").write_text(SAMPLED)
    gate = gate_from_mapping(
        {"id": "g", "check": f"{shlex.quote(python)} sampled.py", "timeout": 4}, root=project
    )
    plain = run_check(gate, RunContext(root=project))
    sampled = replace(include_for([project]), sample=True)
    measured = run_check(gate, RunContext(root=project, measure=sampled))
    assert plain.mode is measured.mode is Mode.TIMEOUT, (plain.stderr, measured.stderr)
    assert "child 0" in plain.stdout, plain.stderr
    assert measured.stdout == plain.stdout
    assert measured.stderr == plain.stderr == ""
    found = measured.extra[MEASURED_KEY]
    assert isinstance(found, Measured)
    assert found.measured and found.sampled, found
    assert any(f.path.endswith("sampled.py") for t in found.stacks for f in t), found.stacks
