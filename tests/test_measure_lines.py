"""The probes (pytest_vgate/evidence/measure_lines.py) against coverage.py, on real checks.

Every check runs three times on the same tree: probes (compiling the file afresh), then
coverage.py (the tracer, the engine the probes replace on Python < 3.12), then probes
again (now from the bytecode cache the first runs left). The probes must report exactly
the changed lines coverage.py reports, and never one that did not run.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_vgate.evidence.change import Change, executable_lines
from pytest_vgate.evidence.measure import MEASURED_KEY, Measured, MeasureSpec, _read
from pytest_vgate.gate_result import measure_change
from pytest_vgate.process import bytecode
from pytest_vgate.run_context import RunContext
from pytest_vgate.runner import run_check
from pytest_vgate.spec import gate_from_mapping

pytestmark = pytest.mark.skipif(
    sys.implementation.name != "cpython" or sys.version_info >= (3, 12),
    reason="the probes measure CPython < 3.12 only; coverage.py's sysmon core does after",
)

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


def seen(measured: Measured, root: Path, rel: str) -> frozenset[int] | None:
    """The statements of ``rel`` the run executed; None: the file never ran."""
    real = os.path.realpath(root / rel)
    if real not in measured.files:
        return None
    return measured.files[real] & statements(root / rel)


def both(root: Path, check: str, files: list[str], probed: bool = True) -> Measured:
    """Run ``check`` with probes, coverage.py, probes; the probes' runs must equal
    coverage's on every file; returns the last probes run."""
    first = run(root, check, files)
    traced = run(root, check, files, engine="coverage")
    again = run(root, check, files)
    assert traced.measured and traced.probed == 0
    for probes in (first, again):
        assert probes.measured, probes.reason
        assert (probes.probed >= 1) is probed  # the probes measured it, not coverage.py
        for rel in files:
            assert seen(probes, root, rel) == seen(traced, root, rel), rel
    return again


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
    reached, a function never called: the probes in front of them never fire."""
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
    assert measured.processes == 2 and measured.probed == 2
    assert {"except", "except-body"} <= tags(project, measured)


def test_a_script_that_imports_the_changed_file(project: Path) -> None:
    measured = both(project, f"{PY} script.py", ["pkg/mod.py", "script.py"], probed=False)
    assert {"inner", "lambda", "comprehension"} <= tags(project, measured)
    # script.py is itself a target: `python script.py` is compiled before any hook, so
    # that process is measured by coverage.py, and still reports the same lines.
    assert seen(measured, project, "script.py") == {1, 3}


def test_the_changed_file_run_as_a_script_falls_back_to_coverage(project: Path) -> None:
    measured = both(project, f"{PY} pkg/mod.py", ["pkg/mod.py"], probed=False)
    assert measured.probed == 0 and measured.processes == 1
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
    """pytest compiles a test module itself (and caches it): probed both times, and no
    cache keeps a probe."""
    check = f"{PY} -m pytest -q -p no:cacheprovider tests/test_mod.py"
    measured = both(project, check, ["pkg/mod.py", "tests/test_mod.py"])
    assert tags(project, measured, "tests/test_mod.py") == {"test-assert", "test-values"}
    assert {"except", "decorated-body"} <= tags(project, measured)
    prefix = bytecode.cache_prefix()
    assert prefix is not None
    cached = [p for tree in bytecode.mirror_of(prefix, project) for p in tree.rglob("*.pyc")]
    assert any("pytest" in p.name for p in cached)  # pytest's rewritten cache is there
    assert any(p.name.startswith("mod.") for p in cached)  # and importlib's
    assert not [p for p in cached if b"_@vgate" in p.read_bytes()]


def test_os_exit_keeps_what_ran(project: Path) -> None:
    """Hits are written as they happen: a check leaving by os._exit is measured (the
    tracer saves nothing then)."""
    check = "import os, pkg.mod as m; m.handler(0); os._exit(3)"
    measured = run(project, f"{PY} -c {shlex.quote(check)}", ["pkg/mod.py"])
    assert measured.measured and measured.probed == 1 and measured.unfinished == 0
    assert {"except", "except-body"} <= tags(project, measured)


def test_a_compiled_binary_check_is_unmeasured(project: Path) -> None:
    for engine in ("auto", "coverage"):
        measured = run(project, "sh -c 'echo hello; true'", ["pkg/mod.py"], engine)
        assert not measured.measured
        assert "no Python process" in measured.reason


def test_a_match_case_line_counts_only_when_it_matched(project: Path) -> None:
    """coverage.py records a ``case`` line whenever its pattern was tried; the probes only
    when it matched (a stricter answer, never a wider one)."""
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
    check = f"{PY} -c 'import pkg.cases as c; c.pick(2)'"
    probes = run(project, check, ["pkg/cases.py"])
    traced = run(project, check, ["pkg/cases.py"], engine="coverage")
    assert seen(traced, project, "pkg/cases.py") == {1, 2, 3, 5, 6}
    assert seen(probes, project, "pkg/cases.py") == {1, 2, 5, 6}


def test_a_changed_line_in_a_file_that_is_not_a_target_is_not_probed(project: Path) -> None:
    """Only the files asked about are probed; the rest of the tree runs as compiled."""
    measured = run(project, f"{PY} -c {shlex.quote(CALLS)}", ["script.py"])
    assert measured.measured and measured.probed == 1
    assert measured.files == {}


def test_unreadable_probe_data_is_unmeasured_not_empty(tmp_path: Path) -> None:
    (tmp_path / "started.1.ab").write_text("probes python")
    (tmp_path / "finished.1.ab").write_text("")
    (tmp_path / "lines.1.ab").write_text("f 0\nl 0 7\n")
    good = _read(tmp_path, ["/src/a.py"])
    assert good.measured and good.files == {"/src/a.py": {7}} and good.probed == 1
    for bad in ("l 0\n", "l 1 7\n", "x 0\n", "l 0 -3\n", "f -1\n"):
        (tmp_path / "lines.1.ab").write_text(bad)
        measured = _read(tmp_path, ["/src/a.py"])
        assert not measured.measured, bad
        assert "unreadable probe data" in measured.reason


def test_a_change_is_measured_on_its_changed_lines_per_side() -> None:
    """What the plugin asks for: each side's changed lines on each tree, so the probes
    (not coverage.py) measure a gate's runs."""
    change = Change(
        head_top="/head",
        base_top="/base",
        head_changed={"a.py": frozenset({3, 4}), "new.py": frozenset({1})},
        base_changed={"a.py": frozenset({3})},
        inserted=frozenset(),
    )
    spec = measure_change(change)
    assert spec.probe_targets() == {
        "/base/a.py": [3],
        "/head/a.py": [3, 4],
        "/base/new.py": [],
        "/head/new.py": [1],
    }
    assert set(spec.include) == set(spec.probe_targets() or ())


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


@pytest.mark.parametrize("minor", [8, 9, 10])
def test_the_probes_measure_an_older_cpython_in_the_check(project: Path, minor: int) -> None:
    """The check's own interpreter runs the probes, whatever pytest-vgate runs on."""
    python = _other_python(minor)
    if python is None:
        pytest.skip(f"no python3.{minor} here")
    check = f"{shlex.quote(python)} -c {shlex.quote(CALLS)}"
    measured = run(project, check, ["pkg/mod.py"])
    assert measured.measured and measured.probed == 1, measured.reason
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
    docstring or ``__future__`` imports (more-itertools' tests/test_more.py): the probes
    must still compile there, or the test module goes unmeasured."""
    (project / "tests" / "test_mod.py").write_text(head + TEST)
    check = f"{PY} -m pytest -q -p no:cacheprovider tests/test_mod.py"
    measured = both(project, check, ["pkg/mod.py", "tests/test_mod.py"])
    assert tags(project, measured, "tests/test_mod.py") == {"test-assert", "test-values"}
