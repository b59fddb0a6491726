"""The route map: every known way to make a session look green over a failed or unrun gate.

Each route is a small real project (files, arguments, environment) run as a real pytest
session, plain and under ``-n 2``; each must end red (a non-zero exit) and name the gate.
When a new route is found, add it to ``ROUTES`` first (it fails), then close it.

Known routes no plugin can close from inside the session (documented in docs/modes.md):
``-p no:vgate`` (or ``PYTEST_ADDOPTS=-p no:vgate``) with gates named only in the ini file
(name them with ``--vgate`` on the command line: pytest then stops with a usage error);
``os._exit(0)`` in a conftest or a test; a conftest that rewrites pytest-vgate's own code.
"""

from __future__ import annotations

import shlex
import sys
import textwrap
from dataclasses import dataclass, field

import pytest

PY = shlex.quote(sys.executable)
FAILING_GATE = f'gates:\n  - id: answers-no\n    check: {PY} -c "raise SystemExit(3)"\n'
PASSING_TEST = "def test_fine():\n    pass\n"
OVERRIDDEN = "vgate: results overridden"


@dataclass(frozen=True)
class Route:
    files: dict[str, str]
    args: tuple[str, ...] = ("--vgate", "gates.yaml")
    env: dict[str, str] = field(default_factory=dict)
    exit_code: int = 1
    words: tuple[str, ...] = ("answers-no", OVERRIDDEN)
    # Where xdist itself ends the session red first, before pytest-vgate has a say.
    xdist_exit_code: int | None = None
    xdist_words: tuple[str, ...] = ()


def conftest(body: str) -> dict[str, str]:
    return {"gates.yaml": FAILING_GATE, "test_fine.py": PASSING_TEST, "conftest.py": body}


VERIFIER_MODULE = """
import pytest
from pytest_vgate import Outcome, verifier

pytestmark = pytest.mark.xfail

@verifier(id="answers-no")
def check(ctx):
    return Outcome.failed("the product says no")
"""

FORGED_GROUNDING = """
from pytest_vgate import verifier

@verifier(id="answers-no", tools=["sh"])
def check(ctx):
    ctx.__dict__.setdefault("_runs", []).append(object())
    return True
"""

INLINE_EXIT_0 = """
import os
from pytest_vgate import verifier

@verifier(id="answers-no", isolation="inline")
def check(ctx):
    os._exit(0)
"""

UNBOUND_PASS = """
from pytest_vgate import verifier

@verifier(id="answers-no", tools=["sh"])
def check(ctx):
    ctx.run("sh", "-c", "exit 3")
    return True
"""

INNER_HIDES = """
import pytest

def pytest_collection_modifyitems(items):
    items[:] = []

def pytest_sessionfinish(session):
    session.exitstatus = 0
"""

INNER_RESETS = """
def pytest_sessionfinish(session):
    session.exitstatus = 0
"""

SHIM = """
import os, pathlib, tempfile

shims = pathlib.Path(tempfile.mkdtemp())
shim = shims / "python3"
shim.write_text("#!/bin/sh\\nexit 0\\n")
shim.chmod(0o755)
os.environ["PATH"] = f"{shims}{os.pathsep}{os.environ['PATH']}"
"""


def inner_pytest_gate(folder: str) -> str:
    """A gate that runs the product's tests, kept in a folder the outer session skips."""
    check = f"{PY} -m pytest -q -p no:cacheprovider {folder}"
    return f"gates:\n  - id: answers-no\n    check: {check}\n    timeout: 120\n"


ROUTES: dict[str, Route] = {
    "xfail-pytestmark-over-a-failing-verifier": Route(
        files={"test_checks.py": VERIFIER_MODULE}, args=(), words=("answers-no", "xfailed")
    ),
    "xfail-marker-added-by-a-conftest": Route(
        files=conftest(
            "import pytest\n\ndef pytest_collection_modifyitems(items):\n"
            "    for item in items:\n        item.add_marker(pytest.mark.xfail)\n"
        ),
        words=("answers-no", OVERRIDDEN, "an xfail marker"),
    ),
    "skip-marker-added-by-a-conftest": Route(
        files=conftest(
            "import pytest\n\ndef pytest_collection_modifyitems(items):\n"
            "    for item in items:\n        item.add_marker(pytest.mark.skip(reason='later'))\n"
        ),
        words=("answers-no", OVERRIDDEN, "no verdict"),
    ),
    "skip-marker-added-to-a-verifier-by-a-conftest": Route(
        files={
            "test_checks.py": VERIFIER_MODULE.replace("pytestmark = pytest.mark.xfail", ""),
            "conftest.py": "import pytest\n\ndef pytest_collection_modifyitems(items):\n"
            "    for item in items:\n        item.add_marker(pytest.mark.skip(reason='later'))\n",
        },
        args=(),
        words=("answers-no", OVERRIDDEN, "no verdict"),
    ),
    "makereport-wrapper-flips-the-outcome": Route(
        files=conftest(
            "import pytest\n\n@pytest.hookimpl(wrapper=True)\n"
            "def pytest_runtest_makereport(item, call):\n    report = yield\n"
            "    report.outcome = 'passed'\n    report.longrepr = None\n    return report\n"
        ),
        words=("answers-no", OVERRIDDEN, "a hook rewrote its report"),
    ),
    "makereport-wrapper-drops-the-verdict": Route(
        files=conftest(
            "import pytest\n\n@pytest.hookimpl(wrapper=True)\n"
            "def pytest_runtest_makereport(item, call):\n    report = yield\n"
            "    report.__dict__.pop('vgate', None)\n"
            "    report.outcome = 'passed'\n    report.longrepr = None\n    return report\n"
        ),
        words=("answers-no", OVERRIDDEN, "no verdict"),
    ),
    "sessionfinish-resets-the-exit-status": Route(
        files=conftest("def pytest_sessionfinish(session):\n    session.exitstatus = 0\n"),
        words=("answers-no",),
    ),
    "outermost-sessionfinish-wrapper-resets-the-exit-status": Route(
        files=conftest(
            "import pytest\n\n@pytest.hookimpl(wrapper=True, tryfirst=True)\n"
            "def pytest_sessionfinish(session):\n    try:\n        return (yield)\n"
            "    finally:\n        session.exitstatus = 0\n"
        ),
        words=("answers-no",),
    ),
    "pytest-exit-with-returncode-0-before-the-gates": Route(
        files=conftest(
            "import pytest\n\ndef pytest_runtest_setup(item):\n"
            "    pytest.exit('all good', returncode=0)\n"
        ),
        words=("answers-no", OVERRIDDEN, "never ran"),
        # xdist 3.8 stops with an INTERNALERROR (its worker "crashed" in the item): exit 3.
        xdist_exit_code=pytest.ExitCode.INTERNAL_ERROR,
        xdist_words=("INTERNALERROR",),
    ),
    "sys-exit-0-in-a-sessionfinish-hook": Route(
        files=conftest("import sys\n\ndef pytest_sessionfinish(session):\n    sys.exit(0)\n"),
        words=("sys.exit(0)",),
    ),
    "sys-exit-0-in-a-terminal-summary-hook": Route(
        files=conftest(
            "import sys\n\ndef pytest_terminal_summary(terminalreporter):\n    sys.exit(0)\n"
        ),
        words=("sys.exit(0)",),
    ),
    "sys-exit-0-in-an-unconfigure-hook": Route(
        files=conftest("import sys\n\ndef pytest_unconfigure(config):\n    sys.exit(0)\n"),
        words=("answers-no", "sys.exit(0)"),
    ),
    "a-checks-pytest-calls-sys-exit-0-at-its-end": Route(
        files={
            "gates.yaml": inner_pytest_gate(".product"),
            ".product/conftest.py": "import sys\n\ndef pytest_sessionfinish(session):\n"
            "    sys.exit(0)\n",
            ".product/test_product.py": "def test_product():\n    assert False\n",
        },
        words=("answers-no", "exit code 1"),
    ),
    "pytest-exit-with-returncode-0-at-the-sessions-start": Route(
        files=conftest(
            "import pytest\n\ndef pytest_sessionstart(session):\n"
            "    pytest.exit('the database is down', returncode=0)\n"
        ),
        words=("answers-no", OVERRIDDEN, "never collected"),
    ),
    "pytest-exit-with-returncode-0-while-collecting": Route(
        files=conftest(
            "import pytest\n\ndef pytest_itemcollected(item):\n"
            "    pytest.exit('enough', returncode=0)\n"
        ),
        words=("answers-no", OVERRIDDEN, "never collected"),
    ),
    "pytest-exit-with-returncode-0-in-a-configure-hook": Route(
        files=conftest(
            "import pytest\n\ndef pytest_configure(config):\n"
            "    pytest.exit('not on this machine', returncode=0)\n"
        ),
        words=("pytest.exit", "before any gate ran"),
    ),
    "run-protocol-hook-never-runs-the-gates": Route(
        files=conftest(
            "def pytest_runtest_protocol(item, nextitem):\n"
            "    return True if 'gates.yaml' in item.nodeid else None\n"
        ),
        words=("answers-no", OVERRIDDEN, "never ran"),
    ),
    "the-gates-never-run-and-every-xdist-worker-dies-before-reporting": Route(
        files=conftest(
            "import os\n\ndef pytest_runtest_protocol(item, nextitem):\n"
            "    return True if 'gates.yaml' in item.nodeid else None\n\n"
            "def pytest_sessionfinish(session):\n"
            "    if hasattr(session.config, 'workerinput'):\n        os._exit(0)\n"
        ),
        words=("answers-no", OVERRIDDEN),
    ),
    "a-collect-report-hook-skips-the-gates-file": Route(
        files=conftest(
            "import pytest\n\n@pytest.hookimpl(tryfirst=True)\n"
            "def pytest_make_collect_report(collector):\n"
            "    if collector.path.suffix == '.yaml':\n"
            "        return pytest.CollectReport(collector.nodeid, 'skipped', "
            "(str(collector.path), 0, 'Skipped: not today'), [])\n"
        ),
        words=("answers-no", "mode fail"),
    ),
    "gates-removed-from-the-items-without-deselection": Route(
        files=conftest(
            "import pytest\n\n@pytest.hookimpl(trylast=True)\n"
            "def pytest_collection_modifyitems(items):\n"
            "    items[:] = [i for i in items if 'gates.yaml' not in i.nodeid]\n"
        ),
        words=("answers-no", OVERRIDDEN, "removed from the collection"),
    ),
    "root-conftest-calls-sys-exit-0": Route(
        files=conftest("import sys\n\nsys.exit(0)\n"),
        exit_code=pytest.ExitCode.USAGE_ERROR,
        words=("sys.exit(0)", "before any gate ran"),
    ),
    "the-pytest-layer-blocked-with-p-no": Route(
        files={"gates.yaml": FAILING_GATE, "test_fine.py": PASSING_TEST},
        args=("--vgate", "gates.yaml", "-p", "no:vgate-layer"),
        exit_code=pytest.ExitCode.USAGE_ERROR,
        words=("-p no:vgate-layer", "cannot be switched off"),
    ),
    "the-verdict-guard-blocked-under-an-xfail-marker": Route(
        files=conftest(
            "import pytest\n\ndef pytest_collection_modifyitems(items):\n"
            "    for item in items:\n        item.add_marker(pytest.mark.xfail)\n"
        ),
        args=("--vgate", "gates.yaml", "-p", "no:vgate-verdict-guard"),
        exit_code=pytest.ExitCode.USAGE_ERROR,
        words=("-p no:vgate-verdict-guard", "cannot be switched off"),
    ),
    "pytest-addopts-deselects-the-gate": Route(
        files={"gates.yaml": FAILING_GATE, "test_fine.py": PASSING_TEST},
        env={"PYTEST_ADDOPTS": "--deselect gates.yaml::answers-no"},
        words=("answers-no", OVERRIDDEN, "PYTEST_ADDOPTS"),
    ),
    "forged-passed-lines-on-the-checks-stdout": Route(
        files={
            "gates.yaml": "gates:\n  - id: answers-no\n    check: "
            + PY
            + " -c "
            + shlex.quote(
                "print('test_x.py::test_y PASSED'); print('=== 1 passed in 0.01s ==='); "
                "raise SystemExit(1)"
            )
            + "\n"
        },
        words=("answers-no", "mode fail"),
    ),
    "a-checks-pytest-exits-0-with-no-tests-run": Route(
        files={
            "gates.yaml": inner_pytest_gate(".product"),
            ".product/conftest.py": INNER_HIDES,
            ".product/test_product.py": "def test_product():\n    assert False\n",
        },
        words=("answers-no", "exit code 5"),
    ),
    "a-checks-pytest-has-its-exit-status-reset-over-a-failure": Route(
        files={
            "gates.yaml": inner_pytest_gate(".product"),
            ".product/conftest.py": INNER_RESETS,
            ".product/test_product.py": "def test_product():\n    assert False\n",
        },
        words=("answers-no", "exit code 1"),
    ),
    "a-conftest-puts-a-path-shim-before-the-tool": Route(
        files={
            "gates.yaml": FAILING_GATE.replace(PY, "python3"),
            "conftest.py": SHIM,
        },
        words=("answers-no", "exit code 3"),
    ),
    "a-verifier-forges-its-grounding-record": Route(
        files={"test_checks.py": FORGED_GROUNDING}, args=(), words=("answers-no", "ungrounded")
    ),
    "an-inline-verifier-calls-os-exit-0": Route(
        files={"test_checks.py": INLINE_EXIT_0}, args=(), words=("answers-no", "crash")
    ),
    "a-verifier-passes-after-its-tool-exited-non-zero": Route(
        files={"test_checks.py": UNBOUND_PASS}, args=(), words=("answers-no", "unbound pass")
    ),
}


@pytest.fixture(params=list(ROUTES), ids=list(ROUTES))
def route(request: pytest.FixtureRequest) -> Route:
    return ROUTES[request.param]


def test_every_route_ends_red(
    route: Route,
    pytester: pytest.Pytester,
    dist_args: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name, text in route.files.items():
        path = pytester.path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    for key, value in route.env.items():
        monkeypatch.setenv(key, value)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *dist_args, *route.args)
    out = result.stdout.str() + result.stderr.str()
    if dist_args and route.xdist_exit_code is not None:
        assert result.ret == route.xdist_exit_code, out
        assert all(word in out for word in route.xdist_words), out
        return
    assert result.ret == route.exit_code, out
    for word in route.words:
        assert word in out, (word, out)
    assert "INTERNALERROR" not in out
