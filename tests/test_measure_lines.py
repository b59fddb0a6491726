"""The engines that measure a check against coverage.py, on real checks.

Every check runs under each engine this interpreter has (``sys.monitoring`` on Python
3.12+, coverage.py's C tracer before, a Python ``sys.settrace`` tracer everywhere) and
under coverage.py itself (started by
``COVERAGE_PROCESS_START`` in every process, as a user would): the engines must report
exactly the statements coverage.py reports, and never one that did not run.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_vgate.context import RunContext
from pytest_vgate.evidence.change import Change
from pytest_vgate.gate.result import measure_change
from pytest_vgate.gate.runner import run_check
from pytest_vgate.gatesfile import gate_from_mapping
from pytest_vgate.process.measure import (
    MEASURED_KEY,
    Measured,
    MeasureSpec,
    _read,
    executable_lines,
)

ENGINES = ("auto", "settrace")
AUTO = "monitoring" if sys.version_info >= (3, 12) else "ctracer"

PY = shlex.quote(sys.executable)

MOD = '''\
"""Every place a changed line can hide."""
import functools

CONSTANT = [n * 2 for n in range(3)]  # L:import-time


def deco(f):
    return functools.wraps(f)(f)


@deco  # L:decorator
def decorated(x):
    return x + 1  # L:decorated-body


def nested(n):
    def inner(k):
        return k * 2  # L:inner

    square = lambda v: (  # L:lambda
        v * v
    )
    evens = [inner(i) for i in range(n) if i % 2 == 0]  # L:comprehension
    return square(sum(evens))


class Shape:
    sides = 4  # L:class-body

    def area(self, w):
        return w * w  # L:method


def multiline(a,
              b):
    total = (a +  # L:multiline
             b)
    return total


def handler(x):
    try:
        return 1 / x
    except ZeroDivisionError:  # L:except
        return 0  # L:except-body
    except:  # L:bare-except
        raise


def never():
    return "never"  # L:never


def loop(n):
    while n > 100:
        n -= 1  # L:while-body
    return n


def gen():
    yield 1  # L:gen


if __name__ == "__main__":
    print(decorated(1))  # L:main
'''

TEST = """\
import pkg.mod as m


def test_handler():
    assert m.handler(0) == 0  # L:test-assert
    values = [m.decorated(i) for i in range(2)]
    assert values == [1, 2]  # L:test-values
"""


def line_of(text: str, tag: str) -> int:
    for number, line in enumerate(text.splitlines(), 1):
        if line.endswith(f"# L:{tag}"):
            return number
    raise AssertionError(tag)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "mod.py").write_text(MOD)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_mod.py").write_text(TEST)
    (tmp_path / "script.py").write_text("import pkg.mod as m\n\nprint(m.nested(4))\n")
    return tmp_path


def statements(path: Path) -> frozenset[int]:
    parsed = executable_lines(path.read_text())
    assert parsed is not None
    return parsed[0]


def spec_for(root: Path, files: list[str], engine: str) -> MeasureSpec:
    real = [os.path.realpath(root / f) for f in files]
    lines = tuple((r, tuple(sorted(statements(Path(r))))) for r in real)
    return MeasureSpec(tuple(real), lines=lines, engine=engine)


def run(root: Path, check: str, files: list[str], engine: str = "auto") -> Measured:
    gate = gate_from_mapping({"id": "g", "check": check}, root=root)
    verdict = run_check(gate, RunContext(root=root, measure=spec_for(root, files, engine)))
    measured = verdict.extra[MEASURED_KEY]
    assert isinstance(measured, Measured)
    return measured


def reference(root: Path, check: str, files: list[str], tmp: Path) -> dict[str, frozenset[int]]:
    """What coverage.py itself records of ``files`` when the check runs unmeasured by us."""
    from coverage import CoverageData

    data = tmp / "reference"
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir(parents=True)
    rc = tmp / "reference.rc"
    include = "".join(f"\n    {os.path.realpath(root / f)}" for f in files)
    rc.write_text(f"[run]\nparallel = True\ndata_file = {data / '.coverage'}\ninclude ={include}\n")
    gate = gate_from_mapping(
        {"id": "g", "check": check, "env": {"set": {"COVERAGE_PROCESS_START": str(rc)}}},
        root=root,
    )
    run_check(gate, RunContext(root=root))
    found: dict[str, set[int]] = {}
    for part in data.glob(".coverage*"):
        read = CoverageData(basename=str(part))
        read.read()
        for path in read.measured_files():
            found.setdefault(os.path.realpath(path), set()).update(read.lines(path) or ())
    assert found or not files, "coverage.py recorded nothing: is its .pth installed?"
    return {path: frozenset(lines) for path, lines in found.items()}


def seen(measured: Measured, root: Path, rel: str) -> frozenset[int] | None:
    """The statements of ``rel`` the run executed; None: the file never ran."""
    real = os.path.realpath(root / rel)
    if real not in measured.files:
        return None
    return measured.files[real] & statements(root / rel)


def both(root: Path, check: str, files: list[str]) -> Measured:
    """Run ``check`` under every engine and under coverage.py; every engine must report
    coverage's statements on every file; returns the last engine's run."""
    tmp = root.parent / f"{root.name}-coverage"
    expected = reference(root, check, files, tmp)
    measured = None
    for engine in ENGINES:
        measured = run(root, check, files, engine)
        assert measured.measured, measured.reason
        assert set(measured.engines) == {AUTO if engine == "auto" else engine}
        for rel in files:
            real = os.path.realpath(root / rel)
            traced = expected.get(real)
            assert seen(measured, root, rel) == (
                None if traced is None else traced & statements(root / rel)
            ), (engine, rel)
    assert measured is not None
    return measured


def tags(root: Path, measured: Measured, rel: str = "pkg/mod.py") -> set[str]:
    text = (root / rel).read_text()
    hit = seen(measured, root, rel) or frozenset()
    return {
        line.rsplit("# L:", 1)[1]
        for number, line in enumerate(text.splitlines(), 1)
        if "# L:" in line and number in hit
    }


CALLS = "import pkg.mod as m; m.nested(4); m.Shape().area(2); m.multiline(1, 2); m.handler(0)"


def test_a_line_runs_in_a_nested_function_a_lambda_a_comprehension_a_class(
    project: Path,
) -> None:
    measured = both(project, f"{PY} -c {shlex.quote(CALLS)}", ["pkg/mod.py"])
    assert tags(project, measured) == {
        "import-time", "decorator", "class-body", "inner", "lambda", "comprehension",
        "method", "multiline", "except", "except-body",
    }  # fmt: skip


def test_an_import_runs_only_the_module_level_lines(project: Path) -> None:
    measured = both(project, f"{PY} -c 'import pkg.mod'", ["pkg/mod.py"])
    assert tags(project, measured) == {"import-time", "decorator", "class-body"}


def test_lines_that_never_ran_are_never_reported(project: Path) -> None:
    """A while body never entered, a generator never iterated, a bare except never
    reached, a function never called: none of them is reported."""
    check = "import pkg.mod as m; m.loop(3); m.gen(); m.handler(1); m.decorated(2)"
    measured = both(project, f"{PY} -c {shlex.quote(check)}", ["pkg/mod.py"])
    assert tags(project, measured) == {
        "import-time", "decorator", "class-body", "decorated-body",
    }  # fmt: skip


def test_a_line_reached_only_in_a_subprocess(project: Path) -> None:
    inner = "import pkg.mod as m; m.handler(0)"
    outer = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {inner!r}])"
    check = f"sh -c {shlex.quote(f'{sys.executable} -c {shlex.quote(outer)}')}"
    measured = both(project, check, ["pkg/mod.py"])
    assert measured.processes == 2
    assert {"except", "except-body"} <= tags(project, measured)


def test_a_script_that_imports_the_changed_file(project: Path) -> None:
    measured = both(project, f"{PY} script.py", ["pkg/mod.py", "script.py"])
    assert {"inner", "lambda", "comprehension"} <= tags(project, measured)
    assert seen(measured, project, "script.py") == {1, 3}


def test_the_changed_file_run_as_a_script(project: Path) -> None:
    measured = both(project, f"{PY} pkg/mod.py", ["pkg/mod.py"])
    assert measured.processes == 1
    assert "main" in tags(project, measured)


@pytest.mark.parametrize(
    "check",
    [
        "{py} -m pkg.mod",
        "{py} -c \"import runpy; runpy.run_path('pkg/mod.py', run_name='__main__')\"",
        "{py} -c \"import runpy; runpy.run_module('pkg.mod', run_name='__main__')\"",
        "{py} -c \"p = 'pkg/mod.py'; exec(compile(open(p).read(), p, 'exec'), "
        "{{'__name__': '__main__'}})\"",
    ],
    ids=["python-m", "run_path", "run_module", "exec-compile"],
)
def test_a_file_run_by_runpy_or_exec(project: Path, check: str) -> None:
    measured = both(project, check.format(py=PY), ["pkg/mod.py"])
    assert "main" in tags(project, measured)


def test_a_changed_test_module_under_pytest_assertion_rewriting(project: Path) -> None:
    """pytest compiles a test module itself (and caches it): measured both times."""
    check = f"{PY} -m pytest -q -p no:cacheprovider tests/test_mod.py"
    measured = both(project, check, ["pkg/mod.py", "tests/test_mod.py"])
    assert tags(project, measured, "tests/test_mod.py") == {"test-assert", "test-values"}
    assert {"except", "decorated-body"} <= tags(project, measured)
    again = both(project, check, ["pkg/mod.py", "tests/test_mod.py"])  # from the caches
    assert tags(project, again, "tests/test_mod.py") == {"test-assert", "test-values"}


def test_os_exit_and_a_kill_keep_what_ran(project: Path) -> None:
    """Records are written as they happen: a check leaving by ``os._exit``, or killed,
    is measured up to its end."""
    for leave in ("os._exit(3)", "os.kill(os.getpid(), 9)"):
        check = f"import os, pkg.mod as m; m.handler(0); {leave}"
        measured = run(project, f"{PY} -c {shlex.quote(check)}", ["pkg/mod.py"])
        assert measured.measured and measured.processes == 1, leave
        assert {"except", "except-body"} <= tags(project, measured), leave


def test_a_compiled_binary_check_is_unmeasured(project: Path) -> None:
    for engine in ENGINES:
        measured = run(project, "sh -c 'echo hello; true'", ["pkg/mod.py"], engine)
        assert not measured.measured
        assert "no Python process" in measured.reason


def test_a_match_case_line_counts_as_coverage_counts_it(project: Path) -> None:
    """coverage.py records a ``case`` line whenever its pattern was tried: so do we."""
    (project / "pkg" / "cases.py").write_text(
        textwrap.dedent(
            """\
            def pick(v):
                match v:
                    case 1:
                        return "one"
                    case _:
                        return "other"
            """
        )
    )
    measured = both(project, f"{PY} -c 'import pkg.cases as c; c.pick(2)'", ["pkg/cases.py"])
    assert seen(measured, project, "pkg/cases.py") == {1, 2, 3, 5, 6}


def test_a_file_that_is_not_a_target_is_not_recorded(project: Path) -> None:
    measured = run(project, f"{PY} -c {shlex.quote(CALLS)}", ["script.py"])
    assert measured.measured and measured.processes == 1
    assert measured.files == {}


def test_unreadable_measurement_data_is_unmeasured_not_empty(tmp_path: Path) -> None:
    path = os.fsencode("/src/a.py").hex()
    (tmp_path / "lines.1.ab").write_text(f"s settrace 70\np 0 {path}\nl 0 7\n")
    good = _read(tmp_path)
    assert good.measured and good.files == {"/src/a.py": {7}} and good.processes == 1
    for bad in ("l 0\n", "l 1 7\n", "q 0\n", "l 0 -3\n", "p -1 00\n", "p 0 zz\n"):
        (tmp_path / "lines.1.ab").write_text(f"s settrace 70\np 0 {path}\n{bad}")
        measured = _read(tmp_path)
        assert not measured.measured, bad
        assert "unreadable measurement data" in measured.reason


def test_a_change_is_measured_on_its_changed_files_per_side() -> None:
    """What the plugin asks for: each side's changed files on each tree, and the lines
    the judgment will look at."""
    change = Change(
        head_top="/head",
        base_top="/base",
        head_changed={"a.py": frozenset({3, 4}), "new.py": frozenset({1})},
        base_changed={"a.py": frozenset({3})},
        inserted=frozenset(),
    )
    base, head = measure_change(change, "base"), measure_change(change, "head")
    assert dict(base.lines or ()) == {"/base/a.py": (3,), "/base/new.py": ()}
    assert dict(head.lines or ()) == {"/head/a.py": (3, 4), "/head/new.py": (1,)}
    for spec in (base, head):
        assert set(spec.include) == {"/base/a.py", "/head/a.py", "/base/new.py", "/head/new.py"}
        assert spec.spec_text().splitlines()[0] == "engine auto"


def _other_python(minor: int) -> str | None:
    """A python3.MINOR on PATH or in pyenv's versions (whose shims may not select it)."""
    if sys.version_info[:2] == (3, minor):
        return None
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    candidates = [shutil.which(f"python3.{minor}")]
    candidates += sorted(Path(root).glob(f"versions/3.{minor}.*/bin/python3.{minor}"))
    for found in filter(None, candidates):
        probe = subprocess.run([found, "-c", "pass"], capture_output=True, check=False)
        if probe.returncode == 0:
            return str(found)
    return None


@pytest.mark.parametrize("minor", [8, 9, 10, 11, 12, 13])
def test_the_check_s_own_interpreter_is_measured(project: Path, minor: int) -> None:
    """The check's own interpreter runs the engine, whatever pytest-vgate runs on."""
    if sys.version_info[:2] == (3, minor):
        pytest.skip("pytest-vgate's own Python: measured by every other test here")
    python = _other_python(minor)
    if python is None:
        pytest.skip(f"no python3.{minor} here")
    check = f"{shlex.quote(python)} -c {shlex.quote(CALLS)}"
    measured = run(project, check, ["pkg/mod.py"])
    assert measured.measured and measured.processes == 1, measured.reason
    # Before 3.12: coverage.py's C tracer where that interpreter has coverage.py, else ours.
    assert measured.engines[0] in (("monitoring",) if minor >= 12 else ("ctracer", "settrace"))
    assert tags(project, measured) == {
        "import-time", "decorator", "class-body", "inner", "lambda", "comprehension",
        "method", "multiline", "except", "except-body",
    }  # fmt: skip


@pytest.mark.parametrize(
    "head",
    ['"""Tests."""\n', "from __future__ import annotations\n\n", '"""Tests."""\n\nimport os\n'],
    ids=["docstring", "future", "docstring-then-import"],
)
def test_a_rewritten_test_module_that_does_not_start_with_its_imports(
    project: Path, head: str
) -> None:
    """pytest puts its own imports, with a start line and no end line, after a module's
    docstring or ``__future__`` imports (more-itertools' tests/test_more.py): its lines
    are still the test module's."""
    (project / "tests" / "test_mod.py").write_text(head + TEST)
    check = f"{PY} -m pytest -q -p no:cacheprovider tests/test_mod.py"
    measured = both(project, check, ["pkg/mod.py", "tests/test_mod.py"])
    assert tags(project, measured, "tests/test_mod.py") == {"test-assert", "test-values"}


def test_the_tracer_comes_off_once_every_line_asked_about_ran(project: Path) -> None:
    """Before Python 3.12 a trace hook slows every line of every file: once the lines the
    judgment asks about have run (all of ``lines``, one of each ``any_of``), it comes off.
    A measured file that starts later is still recorded, as started."""
    (project / "pkg" / "later.py").write_text("VALUE = 1\n")
    mod, later = (os.path.realpath(project / "pkg" / n) for n in ("mod.py", "later.py"))
    spec = MeasureSpec(
        (mod, later),
        lines=((mod, (line_of(MOD, "inner"),)),),
        engine="settrace",
        any_of=((mod, (line_of(MOD, "lambda"), line_of(MOD, "main"))),),
    )
    check = "import sys, pkg.mod as m; m.nested(4); print(sys.gettrace()); import pkg.later"
    gate = gate_from_mapping({"id": "g", "check": f"{PY} -c {shlex.quote(check)}"}, root=project)
    verdict = run_check(gate, RunContext(root=project, measure=spec))
    measured = verdict.extra[MEASURED_KEY]
    assert isinstance(measured, Measured) and measured.measured, measured
    assert verdict.stdout.strip() == "None"
    assert {"inner", "lambda"} <= tags(project, measured)
    assert measured.files[later] == frozenset()  # started after: recorded, untraced
    unwatched = replace(spec, lines=((mod, (line_of(MOD, "main"),)),))
    verdict = run_check(gate, RunContext(root=project, measure=unwatched))
    assert verdict.stdout.strip() != "None"  # a line that never ran: the tracer stays


def test_only_the_functions_holding_a_line_asked_about_are_traced_line_by_line(
    project: Path,
) -> None:
    """The rest of a changed file runs without a line tracer (its frames' ``f_trace``
    stays None), while the file is still recorded as executed."""
    frames = project / "pkg" / "frames.py"
    frames.write_text(
        "import sys\n\n\ndef watched():\n    return sys._getframe().f_trace\n\n\n"
        "def unwatched():\n    return sys._getframe().f_trace\n"
    )
    real = os.path.realpath(frames)
    spec = MeasureSpec((real,), lines=((real, (5,)),), engine="settrace")
    check = "import pkg.frames as f; print(f.unwatched() is None, f.watched() is None)"
    gate = gate_from_mapping({"id": "g", "check": f"{PY} -c {shlex.quote(check)}"}, root=project)
    verdict = run_check(gate, RunContext(root=project, measure=spec))
    measured = verdict.extra[MEASURED_KEY]
    assert isinstance(measured, Measured) and measured.measured, measured
    assert verdict.stdout.split() == ["True", "False"]
    assert 5 in measured.files[real]


THREADS = """\
import threading, json

box, go = [], threading.Event()


def work():
    go.wait()
    box[0].handler(0)


early = threading.Thread(target=work)
early.start()
import pkg.mod as m

box.append(m)
go.set()
early.join()
late = threading.Thread(target=m.nested, args=(4,))
late.start()
late.join()
"""


def test_lines_run_in_threads_started_before_and_after_the_changed_file_loads(
    project: Path,
) -> None:
    (project / "threads.py").write_text(THREADS)
    measured = both(project, f"{PY} threads.py", ["pkg/mod.py"])
    assert {"except", "except-body", "inner", "lambda", "comprehension"} <= tags(project, measured)
    first = "import pkg.mod as m, threading; t = threading.Thread(target=m.handler, args=(0,))"
    check = f"{first}; t.start(); t.join()"  # threading loads, then starts one: no import between
    measured = both(project, f"{PY} -c {shlex.quote(check)}", ["pkg/mod.py"])
    assert {"except", "except-body"} <= tags(project, measured)
    if sys.version_info < (3, 12):  # a thread started before threading's hook could be set
        (project / "threads.py").write_text(THREADS.replace("threading, json", "json, threading"))
        measured = run(project, f"{PY} threads.py", ["pkg/mod.py"])
        assert not measured.measured and "a thread started before" in measured.reason


def test_before_312_tracing_starts_when_a_measured_file_loads(project: Path) -> None:
    """No line of a measured file can run before it loads: until then the process runs
    without a tracer (pytest's start-up, its plugins), at full speed."""
    check = "import sys; print(sys.gettrace()); import pkg.mod as m; m.handler(0)"
    measured = run(project, f"{PY} -c {shlex.quote(check)}", ["pkg/mod.py"])
    assert measured.measured, measured.reason
    assert {"except", "except-body"} <= tags(project, measured)
    gate = gate_from_mapping({"id": "g", "check": f"{PY} -c {shlex.quote(check)}"}, root=project)
    spec = spec_for(project, ["pkg/mod.py"], "auto")
    assert run_check(gate, RunContext(root=project, measure=spec)).stdout.strip() == "None"


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="sys.monitoring leaves the slot free")
def test_the_checks_own_tracer_keeps_the_slot_and_the_run_is_unmeasured(project: Path) -> None:
    check = "import sys, pkg.mod as m; sys.settrace(lambda *a: None); m.handler(0)"
    measured = run(project, f"{PY} -c {shlex.quote(check)}", ["pkg/mod.py"])
    assert not measured.measured
    assert "a tracer we could not share replaced ours" in measured.reason, measured.reason


@pytest.mark.skipif(sys.version_info < (3, 12), reason="the trace slot is ours before 3.12")
def test_from_312_the_checks_own_tracer_and_the_measuring_run_side_by_side(project: Path) -> None:
    """``sys.monitoring`` is not the ``sys.settrace`` slot: a check that sets its own tracer
    keeps it, and its run is still measured, the lines it ran after that included."""
    check = "import sys, pkg.mod as m; sys.settrace(lambda *a: None); m.handler(0)"
    measured = run(project, f"{PY} -c {shlex.quote(check)}", ["pkg/mod.py"])
    assert measured.measured, measured.reason
    assert measured.engines == ("monitoring",)
    assert {"except", "except-body"} <= tags(project, measured)


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="sys.monitoring measures there")
def test_coverage_c_tracer_has_the_members_the_bootstrap_sets() -> None:
    """What the bootstrap relies on in coverage.py's C tracer (checked against its source
    from 7.4 on): the tracer's members, and the file disposition's fields."""
    from coverage.tracer import CFileDisposition, CTracer

    from pytest_vgate.process import bootstrap

    assert all(hasattr(CTracer(), name) for name in bootstrap.CTRACER_MEMBERS)
    fields = ("original_filename", "canonical_filename", "source_filename", "reason")
    disposition = CFileDisposition()
    for name in (*fields, "file_tracer", "has_dynamic_filename", "trace"):
        setattr(disposition, name, None)
