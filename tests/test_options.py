"""Option values: a bad ``--vgate-timeout`` is a usage error that names where it came from."""

from __future__ import annotations

import pytest

from pytest_vgate.plugin.options import OPTIONS

GATES = "gates:\n  - id: ok\n    check: python -c pass\n"


@pytest.mark.parametrize("value", ["1e300", "nan", "inf", "-inf", "-1", "0", "86401", "soon"])
def test_a_bad_command_line_timeout_is_a_usage_error(pytester: pytest.Pytester, value: str) -> None:
    pytester.makefile(".yaml", gates=GATES)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "gates.yaml", "--vgate", "gates.yaml", f"--vgate-timeout={value}"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines(
        [f"ERROR: pytest-vgate: --vgate-timeout (command line) must be a number of seconds "
         f"above 0 and at most 86400, not {value!r}*"]
    )  # fmt: skip
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert "Traceback" not in result.stderr.str()


def test_a_bad_ini_timeout_names_the_ini_file(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", gates=GATES)
    ini = pytester.makeini("[pytest]\nvgate_timeout = 1e300\n")
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "gates.yaml", "--vgate", "gates.yaml"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines([f"ERROR: pytest-vgate: vgate_timeout in {ini} must be *'1e300'*"])


def test_the_command_line_wins_over_a_bad_ini_value(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", gates=GATES)
    pytester.makeini("[pytest]\nvgate_timeout = nan\n")
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "gates.yaml", "--vgate", "gates.yaml", "--vgate-timeout", "86400"
    )
    assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()


INI_FLAGS = [o.dest for o in OPTIONS if o.ini and o.kind == "flag"]


@pytest.mark.parametrize("name", INI_FLAGS)
def test_a_bad_ini_flag_names_the_key_and_the_ini_file(
    pytester: pytest.Pytester, name: str
) -> None:
    """Every flag's ini twin, from the real registry: a value that is not a boolean is a
    usage error naming the key and the file, not pytest's bare "invalid truth value"."""
    pytester.makefile(".yaml", gates=GATES)
    ini = pytester.makeini(f"[pytest]\nvgate = gates.yaml\n{name} = maybe\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines(
        [f"ERROR: pytest-vgate: {name} in {ini} must be true or false, not 'maybe'*"]
    )
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


@pytest.mark.parametrize(("name", "value"), [("vgate_repeat", "many"), ("vgate_coverage", "x")])
def test_a_bad_ini_value_names_the_ini_file(
    pytester: pytest.Pytester, name: str, value: str
) -> None:
    pytester.makefile(".yaml", gates=GATES)
    ini = pytester.makeini(f"[pytest]\nvgate = gates.yaml\n{name} = {value}\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines([f"ERROR: pytest-vgate: {name} in {ini} must be *{value!r}*"])


def test_a_bad_command_line_repeat_names_the_command_line(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", gates=GATES)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--vgate", "gates.yaml", "--vgate-repeat", "0"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines(
        ["ERROR: pytest-vgate: --vgate-repeat (command line) must be a whole number *'0'*"]
    )


@pytest.mark.parametrize("flag", ["--vgate-require-red", "--no-vgate-require-red"])
def test_an_idle_option_is_named_as_it_was_given(pytester: pytest.Pytester, flag: str) -> None:
    pytester.makepyfile(test_plain="def test_one():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", flag)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines([f"*pytest-vgate: {flag} has no effect without --vgate*"])
