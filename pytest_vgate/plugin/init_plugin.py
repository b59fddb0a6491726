"""The pytest layer of ``--vgate-init BASE``: the run, and the collection probe.

It runs no tests: it reads the diff, has pytest collect the changed test files in a child
process (this module, loaded there with ``-p``, writes what was collected as JSON), writes
the gates file, prints it and exits.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_vgate.defaults import NESTED_ENV
from pytest_vgate.evidence.init import (
    CollectedTest,
    InitError,
    changed_doctests,
    changed_lines,
    import_folders,
    inexpressible,
    is_test_file,
    render_gates_file,
    select_tests,
    support_files,
    write_gates_file,
)
from pytest_vgate.paths import relative
from pytest_vgate.process import run_process

PROBE_ENV = "PYTEST_VGATE_INIT_COLLECT"  # where the child writes what it collected
PROBE_TIMEOUT = 600.0


def run_init(config: pytest.Config) -> int:
    """The whole ``--vgate-init`` run; returns the session's exit status."""
    base = str(config.getoption("vgate_init"))
    out = Path(config.getoption("vgate_init_out") or "gates.yaml")
    out = out if out.is_absolute() else config.invocation_params.dir / out
    force = bool(config.getoption("vgate_init_force"))
    try:
        if out.exists() and not force:
            raise InitError(
                f"{out} exists; pass --vgate-init-force to overwrite it, or "
                "--vgate-init-out to write elsewhere"
            )
        root = config.rootpath
        change = changed_lines(root, base)
        patterns = config.getini("python_files")
        inside = [p for p in change.files if _inside(p, root)]
        test_files = [p for p in inside if is_test_file(p, patterns)]
        # A changed module that is not a test file (tests/__init__.py, a helper, a mixin)
        # may define tests that classes in unchanged files inherit: only collecting the
        # whole suite sees them.
        others = [p for p in inside if p.endswith(".py") and p not in test_files]
        for path, line in changed_doctests(change, root):
            flag = "--doctest-modules" if path.endswith(".py") else "--doctest-glob='*'"
            _say(
                f"vgate-init: note: the change touches a doctest at {path}:{line}, which "
                "init does not gate; give it a gate of its own with "
                f"`check: python -m pytest -q {flag} {shlex.quote(path)}`"
            )
        if not test_files and not others:
            _say(
                f"vgate-init: no test file changed since {base} ({change.sha[:12]})"
                f"{_test_data_note(change.files, root)}; no gates file written"
            )
            return int(pytest.ExitCode.NO_TESTS_COLLECTED)
        pythonpath = ini_pythonpath(config)
        whole = bool(others)
        collected, errors, found = collect_tests(config, [] if whole else test_files, pythonpath)
        if found:
            pythonpath = [*pythonpath, *(p for p in found if p not in pythonpath)]
            _say(
                f"vgate-init: the tests import the project from {', '.join(found)} (it is "
                f"not installed): every gate sets PYTHONPATH={os.pathsep.join(pythonpath)}, "
                "so the base runs import the base's copy"
            )
        fatal = [e for e in errors if not whole or _names_any(e.path, test_files)]
        for error in errors:
            if error in fatal:
                _say(f"vgate-init: could not collect: {error.text}", red=True)
            else:
                _say(
                    f"vgate-init: note: could not collect {error.path}; tests there that "
                    "inherit the change get no gate",
                    red=True,
                )
        if fatal:
            _say(
                "vgate-init: fix the collection errors above (run `pytest --collect-only` on "
                "those files) and run --vgate-init again; no gates file written",
                red=True,
            )
            return int(pytest.ExitCode.INTERRUPTED)
        chosen = []
        for test in select_tests(collected, change):
            why = inexpressible(test)
            if why:
                _say(f"vgate-init: note: no gate for {test.base_nodeid!a}: {why}", red=True)
            else:
                chosen.append(test)
        if not chosen and not test_files:
            _say(
                f"vgate-init: no test file changed since {base} ({change.sha[:12]}), and no "
                f"test the suite collects is defined in the changed code"
                f"{_test_data_note(change.files, root)}; no gates file written"
            )
            return int(pytest.ExitCode.NO_TESTS_COLLECTED)
        if not chosen:
            _say(
                f"vgate-init: {_count(len(test_files), 'test file')} changed since {base}, "
                "but no test function in them did; no gates file written"
            )
            return int(pytest.ExitCode.NO_TESTS_COLLECTED)
        modules = sorted({t.file for t in chosen if t.file and _inside(t.file, root)})
        carried = [p for p in inside if p in set(test_files) or p in _sources(chosen)]
        overlay = sorted({*carried, *support_files(change, [*test_files, *modules], root)})
        command = next_command(config, _shown(out, config.invocation_params.dir), base)
        text = render_gates_file(
            chosen,
            change=change,
            root=root,
            folder=out.parent,
            overlay=overlay,
            pythonpath=pythonpath,
            command=command,
        )
        write_gates_file(out, text, force=force)
    except InitError as exc:
        _say(f"vgate-init: {exc}", red=True)
        return int(pytest.ExitCode.USAGE_ERROR)
    shown = _shown(out, config.invocation_params.dir)
    _say(
        f"vgate-init: wrote {shown} ({_count(len(chosen), 'gate')}, one per test added or "
        f"changed since {base})"
    )
    _say(text, end="")
    _say(f"next: {command}")
    written = os.path.realpath(out)  # an earlier run's gates file is not the change
    changed = [p for p in change.files if os.path.realpath(p) != written]
    note = _tests_only_note(changed, overlay, root, base)
    if note:
        _say(note)
    return int(pytest.ExitCode.OK)


def next_command(config: pytest.Config, shown: str, base: str) -> str:
    """The one command that proves the file: only the gates (no ordinary test module is
    imported), in parallel when pytest-xdist is there."""
    parallel = " -n auto" if config.pluginmanager.hasplugin("xdist") else ""
    return f"pytest --vgate {_word(shown)} --vgate-base {_word(base)} --vgate-only{parallel}"


def _word(text: str) -> str:
    """A shell word: as is when the shell reads it so (``HEAD~1``), else quoted."""
    return text if re.fullmatch(r"[\w@%+=:,./^~-]+", text) and text[0] != "~" else shlex.quote(text)


def ini_pythonpath(config: pytest.Config) -> list[str]:
    """The project's ``pythonpath`` ini entries inside its rootdir, relative to it."""
    rels = [relative(entry, config.rootpath, resolve=True) for entry in config.getini("pythonpath")]
    return list(dict.fromkeys(rel for rel in rels if rel is not None))


def _sources(tests: list[CollectedTest]) -> set[str]:
    return {os.path.realpath(t.path) for t in tests} | {t.path for t in tests}


def _names_any(path: str, files: list[str]) -> bool:
    real = os.path.realpath(path) if path else ""
    return not path or any(os.path.realpath(f) == real for f in files)


def _tests_only_note(files: list[str], overlay: list[str], root: Path, base: str) -> str:
    """A change the overlay carries whole (tests only) leaves the base running the same
    code: its gates cannot be red there. "" when Python code outside the overlay changed."""
    carried = set(overlay)
    outside = [p for p in files if p not in carried]
    if any(p.endswith((".py", ".pyw")) for p in outside):
        return ""
    head = "vgate-init: note: "
    if outside:
        top = Path(os.path.realpath(root))
        names = ", ".join(_shown(Path(p), top) for p in outside[:3])
        more = f" and {len(outside) - 3} more" if len(outside) > 3 else ""
        head += (
            f"outside these tests only files that are not Python changed since {base} "
            f"({names}{more}): unless the tests read them, "
        )
    else:
        head += f"nothing outside these tests changed since {base}: "
    return (
        head + "the tests run against the same code on the base, so they cannot be red there "
        "(never-red); a test that only guards behaviour belongs in a gate with "
        "`red: not-required`"
    )


_TEST_FOLDERS = frozenset({"tests", "test", "testing"})


def _test_data_note(files: list[str], root: Path) -> str:
    """A data-driven test's new cases are files its folder gained (tomli's
    tests/data/**/*.toml): name them, since no test function changed to gate."""
    data = []
    for path in files:
        rel = relative(path, root, resolve=True)
        if rel is not None and _TEST_FOLDERS.intersection(rel.split("/")[:-1]):
            data.append(rel)
    if not data:
        return ""
    shown = ", ".join(data[:3]) + (f" and {len(data) - 3} more" if len(data) > 3 else "")
    return (
        f", but {_count(len(data), 'other file')} under test folders did ({shown}): a test "
        "that reads them (parametrized over data files) has no changed lines to find; "
        "write its gate by hand with those files in `overlay`"
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _say(text: str, *, end: str = "\n", red: bool = False) -> None:
    """Plain text on stdout (uncoloured): this runs before pytest's terminal reporter exists."""
    sys.stdout.write(text + end)
    sys.stdout.flush()


def _inside(path: str, root: Path) -> bool:
    return relative(path, root, resolve=True) is not None


def _shown(path: Path, here: Path) -> str:
    try:
        return str(path.relative_to(here))
    except ValueError:
        return str(path)


@dataclass(frozen=True)
class CollectError:
    """A collection error: the file it is in ("" when unknown) and pytest's words."""

    path: str
    text: str


_MISSING = re.compile(r"No module named '([A-Za-z_][\w]*)")


def collect_tests(
    config: pytest.Config,
    files: list[str],
    pythonpath: list[str] = (),  # type: ignore[assignment]
) -> tuple[list[CollectedTest], list[CollectError], list[str]]:
    """Collect ``files`` (no files: the whole suite, as a plain ``pytest`` would) with
    pytest in a child process (the session's interpreter, the project's configuration).

    Returns the tests, the collection errors, and the folders the project had to be
    imported from: when modules the tests import are missing but a folder of the rootdir
    (``src/``) holds them, the collection is made again with that folder on PYTHONPATH."""
    tests, errors = _collect_once(config, files, pythonpath)
    missing = [m for e in errors for m in _MISSING.findall(e.text)]
    found = [f for f in import_folders(config.rootpath, missing) if f not in pythonpath]
    if not found:
        return tests, errors, []
    again, still = _collect_once(config, files, [*pythonpath, *found])
    if len(still) >= len(errors):
        return tests, errors, []
    return again, still, found


def _collect_once(
    config: pytest.Config, files: list[str], pythonpath: Sequence[str]
) -> tuple[list[CollectedTest], list[CollectError]]:
    with tempfile.TemporaryDirectory(prefix="vgate-init-") as scratch:
        target = Path(scratch) / "collected.json"
        env = dict(os.environ)
        env[PROBE_ENV] = str(target)
        env[NESTED_ENV] = "1"  # ini-configured gates stay out of the child
        if pythonpath:
            paths = [str(config.rootpath / p) for p in pythonpath]
            env["PYTHONPATH"] = os.pathsep.join([*paths, *filter(None, [env.get("PYTHONPATH")])])
        argv = [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "pytest_vgate.plugin.init_plugin",
            "-p",
            "no:cacheprovider",
            f"--rootdir={config.rootpath}",
            # pytest reads `::` in an argument as a node id: such a file is found by its folder.
            *dict.fromkeys(os.path.dirname(f) if "::" in f else f for f in files),
        ]
        if config.inipath is not None:
            argv[4:4] = ["-c", str(config.inipath)]
        result = run_process(argv, cwd=config.rootpath, env=env, timeout=PROBE_TIMEOUT)
        try:
            data = json.loads(target.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            output = (result.stdout + result.stderr).strip()[-2000:]
            what = result.spawn_error or f"exit {result.exit_code}"
            text = f"pytest --collect-only on the changed test files ({what}):\n{output}"
            return [], [CollectError("", text)]
    tests = [CollectedTest.from_dict(t) for t in data.get("tests", ())]
    errors = [CollectError(str(e[0]), str(e[1])) for e in data.get("errors", ())]
    return tests, errors


# -- the probe: active only in the child started by collect_tests -------------------------


@functools.cache
def _spans(filename: str) -> dict[Any, tuple[int, int]]:
    """Line spans (decorators included) of the functions and classes of a file, parsed once:
    by first line for functions (``co_firstlineno``), by qualified name for classes."""
    import ast

    try:
        tree = ast.parse(Path(filename).read_bytes())
    except (OSError, SyntaxError, ValueError):
        return {}
    spans: dict[Any, tuple[int, int]] = {}

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                span = (first, node.end_lineno or node.lineno)
                if isinstance(node, ast.ClassDef):
                    spans[prefix + node.name] = span
                    visit(node.body, f"{prefix}{node.name}.")
                else:
                    spans[first] = span
                    spans[node.lineno] = span

    visit(tree.body, "")
    return spans


def describe_item(item: pytest.Item) -> dict[str, Any] | None:
    """What ``--vgate-init`` needs of one collected test, or None for other items.

    The path is where the test's source is (an inherited test method lives in its base
    class's file), so the diff is matched against the lines that define the test."""
    import inspect

    function = getattr(item, "function", None) or getattr(item, "obj", None)
    code = getattr(inspect.unwrap(function), "__code__", None) if callable(function) else None
    if code is None:
        return None
    filename = code.co_filename
    start, end = _spans(filename).get(code.co_firstlineno, (code.co_firstlineno,) * 2)
    cls = getattr(item, "cls", None)
    class_start = class_end = 0
    if cls is not None:
        module = sys.modules.get(cls.__module__)
        class_file = getattr(module, "__file__", None)
        if class_file:
            class_start, class_end = _spans(class_file).get(cls.__qualname__, (0, 0))
            if os.path.realpath(class_file) != os.path.realpath(filename):
                class_start = class_end = 0  # the class is elsewhere: its body is not ours
    name = str(getattr(item, "originalname", None) or item.name.split("[", 1)[0])
    params = item.name[len(name) :] if item.name.startswith(name) else ""
    plain = item.nodeid[: len(item.nodeid) - len(params)] if params else item.nodeid
    return CollectedTest(
        nodeid=item.nodeid,
        unparametrized=plain if item.nodeid.endswith(params) else "",
        file=str(getattr(item, "path", "") or ""),
        path=filename,
        name=name,
        cls=cls.__name__ if cls is not None else None,
        start=start,
        end=end,
        class_start=class_start,
        class_end=class_end,
        doc=inspect.getdoc(function) or "",
    ).to_dict()


class _Probe:
    def __init__(self, target: Path) -> None:
        self.target = target
        self.errors: list[tuple[str, str]] = []

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            where = str(report.fspath) if report.fspath else ""
            self.errors.append((where, f"{report.nodeid or where}: {report.longreprtext}"))

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        tests = [d for d in (describe_item(i) for i in session.items) if d is not None]
        self.target.write_text(json.dumps({"tests": tests, "errors": self.errors}))


def pytest_configure(config: pytest.Config) -> None:
    """Loaded with ``-p`` in the child only: register the probe that writes the JSON."""
    target = os.environ.get(PROBE_ENV)
    if target:
        config.pluginmanager.register(_Probe(Path(target)), "vgate-init-probe")
