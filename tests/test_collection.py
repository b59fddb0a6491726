"""Collection never drops anything: gates files join the ordinary tests, never replace them.

Run under the newest pytest and, in CI, the oldest supported one (8.0): pytest's handling
of overlapping collection arguments differs between them, and each version once lost
something here (8.0-8.4 the ordinary suite, 9 a gates file under ``.ci/``).
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys

import pytest

PY = shlex.quote(sys.executable)
GATES = f"gates:\n  - id: alpha\n    check: {PY} -c pass\n  - id: beta\n    check: {PY} -c pass\n"


def write(pytester: pytest.Pytester, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = pytester.path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_with_vgate_every_ordinary_test_still_runs(
    pytester: pytest.Pytester, dist_args: list[str]
) -> None:
    """``pytest --vgate gates.yaml`` (no paths, no testpaths) ran only the gates on 8.0-8.4."""
    write(
        pytester,
        {
            "gates.yaml": GATES,
            "test_product.py": "def test_product():\n    assert False, 'the product is broken'\n",
            "tests/test_more.py": "def test_more():\n    pass\n",
        },
    )
    without = pytester.runpytest_subprocess("-p", "no:cacheprovider", *dist_args)
    without.assert_outcomes(passed=1, failed=1)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--vgate", "gates.yaml", *dist_args
    )
    result.assert_outcomes(passed=3, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED


@pytest.mark.parametrize("folder", [".ci", ".github/vgate", "build", "dist", "venv"])
def test_gates_files_and_documents_in_skipped_folders_are_collected(
    pytester: pytest.Pytester, dist_args: list[str], folder: str
) -> None:
    write(
        pytester,
        {
            f"{folder}/gates.yaml": GATES.replace("root: .", ""),
            f"{folder}/answer.md": "- test_plain.py:1 — `test_plain` is the product test\n",
            "test_plain.py": "def test_plain():\n    pass\n",
        },
    )
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--vgate",
        f"{folder}/gates.yaml",
        "--vgate-cite",
        f"{folder}/answer.md",
        "-v",
        *dist_args,
    )
    result.assert_outcomes(passed=4)
    out = result.stdout.str()
    assert f"vgate: {folder}/gates.yaml (2 gates)" in out
    assert f"{folder}/gates.yaml::alpha" in out
    assert f"{folder}/answer.md::L1:test_plain.py:1" in out


def test_ini_gates_under_testpaths_and_norecursedirs(pytester: pytest.Pytester) -> None:
    write(
        pytester,
        {
            "ci/gates.yaml": GATES,
            "tests/test_a.py": "def test_a():\n    pass\n",
            "test_outside.py": "def test_outside():\n    pass\n",
        },
    )
    pytester.makeini("[pytest]\ntestpaths = tests\nnorecursedirs = ci\nvgate = ci/gates.yaml\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--collect-only", "-q")
    assert [line for line in result.stdout.lines if "::" in line] == [
        "ci/gates.yaml::alpha",
        "ci/gates.yaml::beta",
        "tests/test_a.py::test_a",
    ]


def test_a_gates_file_named_as_an_argument_selects_by_node_id(pytester: pytest.Pytester) -> None:
    write(pytester, {"gates.yaml": GATES, "test_plain.py": "def test_plain():\n    pass\n"})
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--vgate", "gates.yaml", "gates.yaml::beta", "-v"
    )
    result.assert_outcomes(passed=1)
    assert "gates.yaml::beta PASSED" in result.stdout.str()


BROKEN = {
    "test_syntax.py": "def test_(:\n    pass\n",
    "tests/test_import.py": "import no_such_module_for_vgate\n\ndef test_x():\n    pass\n",
}


def test_vgate_only_runs_the_gates_next_to_broken_test_modules(
    pytester: pytest.Pytester, dist_args: list[str]
) -> None:
    write(pytester, {"gates.yaml": GATES, **BROKEN})
    broken = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--vgate", "gates.yaml", *dist_args
    )
    # Plain pytest stops at collection errors; xdist runs the rest and counts 2 errors.
    assert broken.ret in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.TESTS_FAILED)
    assert "ERROR test_syntax.py" in broken.stdout.str()
    only = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--vgate", "gates.yaml", "--vgate-only", *dist_args
    )
    only.assert_outcomes(passed=2)
    assert only.ret == pytest.ExitCode.OK


def test_vgate_only_ini_twin_and_the_root_conftest(pytester: pytest.Pytester) -> None:
    """A root conftest still loads (pytest loads it before any plugin can choose);
    ``--noconftest`` is the way past a broken one."""
    write(pytester, {"gates.yaml": GATES, **BROKEN})
    pytester.makeini("[pytest]\nvgate = gates.yaml\nvgate_only = true\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    pytester.makeconftest("import no_such_module_for_vgate\n")
    aborted = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert aborted.ret == pytest.ExitCode.USAGE_ERROR
    past = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--noconftest")
    past.assert_outcomes(passed=2)


def test_vgate_only_without_gates_warns(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_ok():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--vgate-only")
    result.assert_outcomes(passed=1, warnings=1)
    assert "--vgate-only has no effect without --vgate" in result.stdout.str()


MODULES_CONFTEST = """
import sys

import pytest


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    with open({log!r}, "w", encoding="utf-8") as fh:
        fh.write("\\n".join(sorted(m for m in sys.modules if m.startswith("pytest_vgate"))))
"""
# What runs checks: a session that only collects loads none of it.
CHECK_MACHINERY = [
    "pytest_vgate.baseline",
    "pytest_vgate.citations",
    "pytest_vgate.evidence",
    "pytest_vgate.gate.result",
    "pytest_vgate.plugin.judging",
    "pytest_vgate.evidence.proof",
    "pytest_vgate.gate.runner",
    "pytest_vgate.gate.session",
    "pytest_vgate.verifiers",
]


def test_collect_only_runs_no_process_and_loads_no_check_machinery(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--collect-only`` checks nothing: no git (the tree's identity is for evidence), no
    shepherd or verifier process, and the runner, evidence and citation checker stay
    unimported. The same session without it runs git and loads them: the probes work."""
    from helpers.git_repo import git

    shim = pytester.path / "shim"
    shim.mkdir()
    calls = pytester.path / "git-calls.log"
    real_git = shutil.which("git")
    assert real_git is not None
    (shim / "git").write_text(f'#!/bin/sh\necho "$*" >> {calls}\nexec {real_git} "$@"\n')
    (shim / "git").chmod(0o755)
    modules = pytester.path / "modules.log"
    write(
        pytester,
        {
            "repo/gates.yaml": GATES,
            "repo/conftest.py": MODULES_CONFTEST.format(log=str(modules)),
        },
    )
    repo = pytester.path / "repo"
    git(repo, "init", "-q")
    monkeypatch.setenv("PATH", f"{shim}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.chdir(repo)

    collected = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--vgate", "gates.yaml", "--collect-only", "-q"
    )
    assert collected.ret == pytest.ExitCode.OK
    assert [line for line in collected.stdout.lines if "::" in line] == [
        "gates.yaml::alpha",
        "gates.yaml::beta",
    ]
    assert not calls.exists(), calls.read_text()
    loaded = modules.read_text().split()
    assert "pytest_vgate.gatesfile" in loaded
    assert [m for m in loaded if m.startswith(tuple(CHECK_MACHINERY))] == []

    ran = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--vgate", "gates.yaml")
    ran.assert_outcomes(passed=2)
    assert "rev-parse" in calls.read_text()
    loaded = modules.read_text().split()
    assert {"pytest_vgate.gate.runner", "pytest_vgate.evidence", "pytest_vgate.gate.session"} <= {
        *loaded
    }


def test_collect_only_makes_no_base_worktree(pytester: pytest.Pytester) -> None:
    """``--vgate-base`` with ``--collect-only`` lists the gates; it checks out nothing.

    The header names every base worktree made (``vgate: base REF (sha, ...) at PATH``)."""
    from helpers.git_repo import git

    write(pytester, {"gates.yaml": GATES})
    git(pytester.path, "init", "-q")
    for message in ("one", "two"):
        (pytester.path / "change.txt").write_text(message)
        git(pytester.path, "add", "-A")
        git(pytester.path, "commit", "-qm", message)
    args = ("-p", "no:cacheprovider", "--vgate", "gates.yaml", "--vgate-base", "HEAD~1")

    collected = pytester.runpytest_subprocess(*args, "--collect-only")
    assert collected.ret == pytest.ExitCode.OK, collected.stdout.str()
    assert "<GateItem alpha>" in collected.stdout.str()
    assert "vgate: base HEAD~1" not in collected.stdout.str()
    # The same session that runs the gates makes one: the probe works.
    checked = pytester.runpytest_subprocess(*args)
    assert "vgate: base HEAD~1" in checked.stdout.str(), checked.stdout.str()


def test_collect_only_runs_no_import_origin_probe(pytester: pytest.Pytester) -> None:
    """The report header's warning about which copy of a package a Python check imports
    comes from running that Python: a session that only collects (``--collect-only``
    without ``-q`` prints the header) starts none. A run does: the probe works."""
    site = pytester.path / "site"
    site.mkdir()
    starts = pytester.path / "python-starts.log"
    (site / "sitecustomize.py").write_text(
        f"import sys\nwith open({str(starts)!r}, 'a') as f:\n    f.write(repr(sys.argv) + '\\n')\n"
    )
    gates = f"""
gates:
  - id: py
    check: python -c "pass"
    env:
      set: {{PYTHONPATH: {site}}}
"""
    write(pytester, {"gates.yaml": gates, "mypkg/__init__.py": ""})
    args = ("-p", "no:cacheprovider", "--vgate", "gates.yaml")

    collected = pytester.runpytest_subprocess(*args, "--collect-only")
    assert collected.ret == pytest.ExitCode.OK, collected.stdout.str()
    assert "<GateItem py>" in collected.stdout.str()
    assert not starts.exists(), starts.read_text()

    checked = pytester.runpytest_subprocess(*args)
    checked.assert_outcomes(passed=1)
    assert len(starts.read_text().splitlines()) == 2, starts.read_text()  # probe, check


FLIPS = (
    f"gates:\n  - id: alpha\n    check: {PY} -c "
    + shlex.quote("import os, sys; sys.exit(3 if os.path.exists('broken') else 0)")
    + f"\n  - id: beta\n    check: {PY} -c pass\n"
)


@pytest.mark.parametrize("alpha_failed_before", [False, True], ids=["file-passed", "one-failed"])
def test_last_failed_deselects_gates_in_sight_never_drops_them(
    pytester: pytest.Pytester, dist_args: list[str], alpha_failed_before: bool
) -> None:
    """``--lf`` skipped a gates file with no earlier failure unseen (exit 0 over a gate that
    fails now), and dropped a gate that passed before without a word; its gates are now
    collected and deselected like any item, and the summary names them."""
    write(
        pytester,
        {
            "gates.yaml": FLIPS,
            "test_product.py": "def test_product():\n    assert False\n",
            "answer.md": "- test_product.py:1 — `test_product` is the product test\n",
        },
    )
    if alpha_failed_before:
        (pytester.path / "broken").write_text("")
    args = ("--vgate", "gates.yaml", "--vgate-cite", "answer.md", *dist_args)
    first = pytester.runpytest_subprocess(*args)
    assert first.ret == pytest.ExitCode.TESTS_FAILED
    (pytester.path / "test_product.py").write_text("def test_product():\n    pass\n")
    (pytester.path / "broken").write_text("")  # alpha fails from now on
    result = pytester.runpytest_subprocess(*args, "--lf")
    out = result.stdout.str()
    shown = out.split("not run and not verified: ")[-1].splitlines()[0]
    not_run = ["gates.yaml::beta", "answer.md::L1:test_product.py:1"]
    if alpha_failed_before:  # alpha is rerun, and fails
        assert result.ret == pytest.ExitCode.TESTS_FAILED, out
        assert "FAILED gates.yaml::alpha" in out
    else:  # nothing of the gates failed last time: they are deselected, in sight
        assert result.ret == pytest.ExitCode.OK, out
        not_run.append("gates.yaml::alpha")
    assert f"{len(not_run)} deselected, not run and not verified" in out, out
    assert all(nodeid in shown for nodeid in not_run), out


# The project's own collection settings ignore the gates file, the cited document and a
# legacy test module of its own; each way pytest offers.
IGNORING = {
    "collect_ignore_glob": {
        "tests/conftest.py": 'collect_ignore_glob = ["*.yaml", "*.md", "test_legacy.py"]\n'
    },
    "addopts --ignore": {
        "pytest.ini": "[pytest]\naddopts = --ignore=tests/gates.yaml --ignore=tests/answer.md"
        " --ignore=tests/test_legacy.py\n"
    },
    "pytest_ignore_collect": {
        "conftest.py": "def pytest_ignore_collect(collection_path, config):\n"
        "    if collection_path.name in ('gates.yaml', 'answer.md', 'test_legacy.py'):\n"
        "        return True\n"
    },
    "norecursedirs": {"pytest.ini": "[pytest]\nnorecursedirs = qa\n"},
}
ARGS = {  # besides --vgate and --vgate-cite: none, the tests, the root and our files
    "none": [],
    "tests": ["tests"],
    "root and files": [".", "{folder}/gates.yaml", "{folder}/answer.md"],
}


@pytest.mark.parametrize("args", list(ARGS))
@pytest.mark.parametrize("ignoring", list(IGNORING))
def test_the_projects_ignore_rules_keep_its_tests_and_never_drop_ours(
    pytester: pytest.Pytester, ignoring: str, args: str
) -> None:
    """Named by ``--vgate``/``--vgate-cite``, the gates file and the document run, and the
    project's tests run beside them as its own rules say: the ignored module stays out.
    Their files named as arguments too lost the whole folder's tests on pytest 8.0-8.4."""
    folder = "qa" if ignoring == "norecursedirs" else "tests"
    write(
        pytester,
        {
            **IGNORING[ignoring],
            "tests/test_product.py": "def test_product():\n    pass\n",
            f"{folder}/test_legacy.py": "def test_legacy():\n    assert False, 'ignored'\n",
            f"{folder}/gates.yaml": "root: ..\n" + GATES,
            f"{folder}/answer.md": "- tests/test_product.py:1 — `test_product` is the test\n",
        },
    )
    named = [a.format(folder=folder) for a in ARGS[args]]
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-v", "--vgate", f"{folder}/gates.yaml",
        "--vgate-cite", f"{folder}/answer.md", *named,
    )  # fmt: skip
    out = result.stdout.str()
    assert "tests/test_product.py::test_product PASSED" in out
    assert (
        f"{folder}/gates.yaml::alpha PASSED" in out and f"{folder}/gates.yaml::beta PASSED" in out
    )
    assert f"{folder}/answer.md::L1:tests/test_product.py:1 PASSED" in out
    assert "test_legacy" not in out
    result.assert_outcomes(passed=4)
