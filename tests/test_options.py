"""Option values: a bad ``--vgate-timeout`` is a usage error that names where it came from."""

from __future__ import annotations

import pytest

from pytest_vgate.defaults import DEFAULT_BATCH
from pytest_vgate.plugin.options import OPTIONS, Option

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


# A value for every ini twin; flags are "true" in the ini file and bare on the command line.
SAMPLES = {
    "vgate": "gates.yaml",
    "vgate_cite": "answer.md",
    "vgate_base": "HEAD",
    "vgate_coverage": "off",
    "vgate_repeat": "3",
    "vgate_mutate": "off",
    "vgate_batch": "off" if DEFAULT_BATCH == "auto" else "auto",  # not the default
    "vgate_mutants": "3",
    "vgate_timeout": "7",
    "vgate_ledger": "ledger",
    "vgate_report": "report.json",
    "vgate_isolation": "off",
    "vgate_sarif": "out.sarif",
    "vgate_html": "out.html",
}


def _resolved(config: pytest.Config) -> tuple[object, ...]:
    """Everything the session reads from its options (the settings and the exporters')."""
    from pytest_vgate.plugin.extending import github_enabled
    from pytest_vgate.plugin.settings import option_path, read_settings

    return (
        read_settings(config),
        option_path(config, "vgate_sarif"),
        option_path(config, "vgate_html"),
        github_enabled(config, {}),
    )


@pytest.mark.parametrize("option", [o for o in OPTIONS if o.ini], ids=lambda o: o.dest)
def test_every_ini_twin_does_what_its_option_does(
    pytester: pytest.Pytester, option: Option
) -> None:
    """From the real registry: setting the ini twin resolves to the same session settings
    as giving the option, and to something else than giving neither."""
    pytester.makefile(".yaml", gates=GATES)
    pytester.makefile(".md", answer="See `gates.yaml:1`.\n")
    value = SAMPLES.get(option.dest, "true")
    cli = [option.flag] if option.kind == "flag" else [option.flag, value]
    neither = _resolved(pytester.parseconfig())
    given = _resolved(pytester.parseconfig(*cli))
    pytester.makeini(f"[pytest]\n{option.dest} = {value}\n")
    from_ini = _resolved(pytester.parseconfig())
    assert from_ini == given != neither


@pytest.mark.parametrize(
    "option",
    ["--vgate", "--vgate-cite", "--vgate-report", "--vgate-ledger", "--vgate-sarif", "--junitxml"],
)
def test_a_path_in_a_symlink_loop_is_a_usage_error(pytester: pytest.Pytester, option: str) -> None:
    """Python 3.11's ``Path.resolve`` raises RuntimeError in a symlink loop: it was an
    INTERNALERROR."""
    pytester.makefile(".yaml", gates=GATES)
    (pytester.path / "loop-a").symlink_to("loop-b")
    (pytester.path / "loop-b").symlink_to("loop-a")
    given = ("--vgate", "gates.yaml") if option != "--vgate" else ()
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *given, option, "loop-a")
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out
    assert "INTERNALERROR" not in out and "Traceback" not in out
    assert "loop-a" in result.stderr.str() and "symlink" in result.stderr.str()


@pytest.mark.parametrize(
    ("option", "target"),
    [
        ("--vgate-report", "gates.yaml"),
        ("--vgate-sarif", "gates.yaml"),
        ("--junitxml", "gates.yaml"),
        ("--vgate-report", "answer.md"),
        ("--vgate-sarif", "cited.md"),
    ],
)
def test_an_output_over_an_input_is_a_usage_error(
    pytester: pytest.Pytester, option: str, target: str
) -> None:
    """A report written over the gates file or a cited document destroyed it."""
    gates = GATES + "citations: [cited.md]\n"
    pytester.makefile(".yaml", gates=gates)
    pytester.makefile(".md", answer="- gates.yaml:1 starts the gates\n", cited="no citation\n")
    before = {p.name: p.read_bytes() for p in pytester.path.iterdir() if p.is_file()}
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--vgate", "gates.yaml", "--vgate-cite", "answer.md",
        option, target,
    )  # fmt: skip
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out
    assert f"{option} {target}" in result.stderr.str(), out
    assert {name: (pytester.path / name).read_bytes() for name in before} == before


@pytest.mark.parametrize(
    ("how", "named"),
    [
        ("option", "--timeout (pytest-timeout, command line)"),
        ("ini", "timeout in "),
        ("env", "PYTEST_TIMEOUT (pytest-timeout)"),
    ],
)
def test_a_pytest_timeout_beyond_the_platform_timer_is_a_usage_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, how: str, named: str
) -> None:
    """pytest-timeout's value becomes a gate's deadline: 1e20 s overflowed a timer."""
    import shlex
    import sys

    pytester.makefile(
        ".yaml", gates=f"gates:\n  - id: g\n    check: {shlex.quote(sys.executable)} -c pass\n"
    )
    args = ["-p", "no:cacheprovider", "-p", "timeout", "--vgate", "gates.yaml"]
    if how == "option":
        args += ["--timeout", "1e20"]
    elif how == "ini":
        pytester.makeini("[pytest]\ntimeout = 1e20\n")
    else:
        monkeypatch.setenv("PYTEST_TIMEOUT", "1e20")
    result = pytester.runpytest_subprocess(*args)
    text = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, text
    assert named in text and "OverflowError" not in text, text
