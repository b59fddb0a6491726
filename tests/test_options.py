"""Option values: a bad ``--vgate-timeout`` is a usage error that names where it came from."""

from __future__ import annotations

import pytest

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
