"""The entry point: cheap where vgate is not used, the whole layer where it is.

Each session here is a real pytest run in a subprocess; a conftest reports, at the end of
the session, whether the pytest layer was registered and which of our modules were
imported. The layer must load for every way a session uses vgate, including the ones only
collection reveals (a ``@verifier`` function, a test marked ``vgate``), and must not load
for a session that does not.
"""

from __future__ import annotations

import json

import pytest

REPORTER = """
import json, sys

def pytest_unconfigure(config):
    ours = sorted(m for m in sys.modules if m.startswith("pytest_vgate"))
    with open("entry.json", "w") as fh:
        json.dump({"layer": config.pluginmanager.has_plugin("vgate-layer"), "modules": ours}, fh)
"""


def _entry(pytester: pytest.Pytester) -> dict[str, object]:
    data = json.loads((pytester.path / "entry.json").read_text())
    assert isinstance(data, dict)
    return data


@pytest.fixture
def reporting(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(REPORTER)
    return pytester


def test_a_session_without_vgate_loads_only_the_entry(reporting: pytest.Pytester) -> None:
    reporting.makepyfile(test_plain="def test_one():\n    assert True\n")
    result = reporting.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    entry = _entry(reporting)
    assert entry["layer"] is False
    assert "pytest_vgate.gate.runner" not in entry["modules"]
    assert "pytest_vgate.plugin.hooks" not in entry["modules"]


def test_a_verifier_found_while_collecting_brings_the_layer(reporting: pytest.Pytester) -> None:
    reporting.makepyfile(
        test_checks="""
        from pytest_vgate import verifier

        def test_plain():
            assert True

        @verifier(id="answer-is-wrong")
        def answer_is_wrong():
            return False
        """
    )
    junit = reporting.path / "junit.xml"
    result = reporting.runpytest_subprocess("-p", "no:cacheprovider", f"--junitxml={junit}")
    result.assert_outcomes(passed=1, failed=1)
    assert _entry(reporting)["layer"] is True
    assert 'name="vgate_mode" value="fail"' in junit.read_text()


def test_a_test_marked_vgate_brings_the_layer(reporting: pytest.Pytester) -> None:
    reporting.makepyfile(
        test_marked="""
        import pytest

        @pytest.mark.vgate
        def test_crashes():
            raise KeyError("boom")
        """
    )
    junit = reporting.path / "junit.xml"
    result = reporting.runpytest_subprocess("-p", "no:cacheprovider", f"--junitxml={junit}")
    result.assert_outcomes(failed=1)
    assert _entry(reporting)["layer"] is True
    assert 'name="vgate_mode" value="error"' in junit.read_text()


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["--vgate-report", "r.json"], id="an-option"),
        pytest.param(["-n", "1"], id="xdist"),
    ],
)
def test_an_option_or_xdist_brings_the_layer(reporting: pytest.Pytester, args: list[str]) -> None:
    reporting.makepyfile(test_plain="def test_one():\n    assert True\n")
    result = reporting.runpytest_subprocess("-p", "no:cacheprovider", *args)
    result.assert_outcomes(passed=1)
    assert _entry(reporting)["layer"] is True


def test_an_ini_setting_brings_the_layer(reporting: pytest.Pytester) -> None:
    reporting.makeini("[pytest]\nvgate_isolation = off\n")
    reporting.makepyfile(test_plain="def test_one():\n    assert True\n")
    result = reporting.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert _entry(reporting)["layer"] is True


def test_gates_files_still_run_and_fail_closed(reporting: pytest.Pytester) -> None:
    reporting.makefile(
        ".yaml",
        gates="gates:\n  - id: red\n    claim: fails\n    check: 'false'\n",
    )
    result = reporting.runpytest_subprocess("-p", "no:cacheprovider", "--vgate", "gates.yaml")
    result.assert_outcomes(failed=1)
    assert result.ret == 1
    assert _entry(reporting)["layer"] is True


def test_no_vgate_disables_the_plugin_entirely(reporting: pytest.Pytester) -> None:
    reporting.makepyfile(test_plain="def test_one():\n    assert True\n")
    result = reporting.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:vgate")
    result.assert_outcomes(passed=1)
    assert _entry(reporting) == {"layer": False, "modules": []}


def test_in_process_sessions_one_after_another_each_run_their_gates(
    pytester: pytest.Pytester,
) -> None:
    """pytester drops the modules an in-process session imported; the next session must
    load the layer afresh, not reuse the first session's copy (a KeyError on its stash)."""
    pytester.makefile(
        ".yaml",
        gates="gates:\n  - id: red\n    claim: fails\n    check: 'false'\n"
        "  - id: green\n    claim: passes\n    check: 'true'\n",
    )
    for _ in range(3):
        result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--vgate", "gates.yaml")
        result.assert_outcomes(passed=1, failed=1)


@pytest.mark.parametrize("dist", [[], ["-n", "2"]], ids=["plain", "xdist"])
def test_a_layer_found_while_collecting_still_keeps_the_exit_status_honest(
    reporting: pytest.Pytester, dist: list[str]
) -> None:
    """The layer (and its verdict guard) registered mid-collection must still see a failed
    verifier that a marker turned into an expected failure: the session is not green."""
    reporting.makepyfile(
        test_checks="""
        import pytest
        from pytest_vgate import verifier

        @pytest.mark.xfail(reason="hides the failure")
        @verifier(id="hidden-failure")
        def hidden_failure():
            return False
        """
    )
    result = reporting.runpytest_subprocess("-p", "no:cacheprovider", *dist)
    assert result.ret != 0, result.stdout.str()
    assert "hidden-failure" in result.stdout.str()


# A valid value for every ini twin (a new option must add its own here).
INI_VALUES = {
    "vgate": "gates.yaml",
    "vgate_cite": "answer.md",
    "vgate_base": "HEAD",
    "vgate_coverage": "on",
    "vgate_repeat": "2",
    "vgate_timeout": "30",
    "vgate_ledger": "ledger",
    "vgate_report": "report.json",
    "vgate_isolation": "off",
    "vgate_sarif": "out.sarif",
}


def test_no_vgate_with_every_ini_twin_set_leaves_nothing_behind(
    reporting: pytest.Pytester,
) -> None:
    """``-p no:vgate``: every ini twin is an unknown key as pytest says it, every option an
    unrecognized argument, no marker, no help, no file written."""
    from pytest_vgate.plugin.options import OPTIONS

    values = {o.dest: INI_VALUES.get(o.dest, "true") for o in OPTIONS if o.ini}
    assert set(INI_VALUES) <= set(values)
    reporting.makeini("[pytest]\n" + "".join(f"{k} = {v}\n" for k, v in values.items()))
    reporting.makefile(".yaml", gates="gates:\n  - id: ok\n    check: python -c pass\n")
    reporting.makefile(".md", answer="See `test_plain.py:1`.\n")
    reporting.makepyfile(test_plain="def test_one():\n    assert True\n")
    before = [p.name for p in reporting.path.iterdir()]
    result = reporting.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:vgate")
    result.assert_outcomes(passed=1)
    warned = result.stdout.str()
    assert all(f"Unknown config option: {name}" in warned for name in values), warned
    assert "INTERNALERROR" not in warned and "Traceback" not in result.stderr.str()
    pytester_own = {"entry.json", "stdout", "stderr"}
    made = {p.name for p in reporting.path.iterdir()} - set(before) - pytester_own
    assert {name for name in made if not name.startswith("runpytest-")} == set(), made
    assert _entry(reporting) == {"layer": False, "modules": []}
    shown = reporting.runpytest_subprocess("-p", "no:vgate", "--help").stdout.str()
    shown += reporting.runpytest_subprocess("-p", "no:vgate", "--markers").stdout.str()
    assert "vgate" not in shown.replace("Unknown config option: vgate", "")
    for option in OPTIONS:
        args = [option.flag] if option.kind == "flag" else [option.flag, "x"]
        refused = reporting.runpytest_subprocess("-p", "no:vgate", *args)
        assert refused.ret == pytest.ExitCode.USAGE_ERROR, option.flag
        refused.stderr.fnmatch_lines([f"*unrecognized arguments: {option.flag}*"])


def test_every_part_the_plugin_registers_is_refused_to_p_no() -> None:
    """``-p no:NAME`` is refused for every name pytest-vgate registers a plugin under."""
    import ast
    from pathlib import Path

    from pytest_vgate.plugin import LAYER_NAME, OWN_PLUGINS

    registered = {LAYER_NAME}
    for path in (Path(__file__).parent.parent / "pytest_vgate").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "register"
                and len(node.args) == 2
                and isinstance(node.args[1], ast.Constant)
            ):
                registered.add(node.args[1].value)
    assert len(registered) == 10, registered
    assert registered == set(OWN_PLUGINS)
