"""The vgate options of one session resolved once into plain ``Settings``.

Bad values are usage errors naming where they came from (the command line or the ini
file). Loaded only when vgate is in use (the entry point declares the options alone).
"""

from __future__ import annotations

import contextlib
import errno
import math
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_vgate.defaults import (
    BATCH_CHOICES,
    COVERAGE_CHOICES,
    DEFAULT_BATCH,
    DEFAULT_MUTANTS,
    DEFAULT_TIMEOUT,
    ISOLATION_CHOICES,
    MAX_TIMEOUT,
    MUTATE_CHOICES,
    NESTED_ENV,
)
from pytest_vgate.process import contain


@dataclass(frozen=True)
class Settings:
    """The resolved vgate options of one session (command line wins over ini)."""

    gates_files: tuple[Path, ...] = ()
    cite_files: tuple[Path, ...] = ()
    base: str | None = None
    require_red: bool = False
    strict: bool = False
    timeout: float = DEFAULT_TIMEOUT
    timeout_given: bool = False
    ledger: Path | None = None
    report: Path | None = None
    fix: bool = False
    isolation: str = "auto"
    nested: bool = False  # inside a check: every gates file and document is ignored
    coverage: str = "auto"
    repeat: int = 1
    only: bool = False
    mutate: str = "auto"
    mutants: int = DEFAULT_MUTANTS
    batch: str = DEFAULT_BATCH

    @property
    def enabled(self) -> bool:
        return bool(self.gates_files or self.cite_files)

    @property
    def measure(self) -> bool:
        """Whether red and green runs are measured (``auto``: whenever a base is given)."""
        return self.coverage == "on" or (self.coverage == "auto" and self.base is not None)

    @property
    def mutants_per_gate(self) -> int:
        """Mutants to plant per proven gate: 0 when off (``auto``: on under a base, which
        mutants need, with the change measured)."""
        on = self.mutate == "on" or (self.mutate == "auto" and self.base is not None)
        return self.mutants if on and self.base is not None and self.measure else 0


def inside_a_check() -> bool:
    """Whether this pytest runs inside a check of an outer session (a gate running pytest).

    Then no gates run, however ``--vgate`` was given (command line, ``addopts``,
    ``PYTEST_ADDOPTS``, ini ``vgate``): a gate must never start the gates again.
    """
    return bool(os.environ.get(NESTED_ENV)) or contain.under_a_shepherd()


def resolved(path: Path, name: str) -> Path:
    """``path.resolve()``; a path in a symlink loop is a usage error naming the option
    (Python 3.11's ``resolve`` raises RuntimeError there, 3.13's returns the path)."""
    try:
        real: Path | None = path.resolve()
    except RuntimeError:  # Python < 3.13: a symlink loop
        real = None
    if real is not None:
        try:
            os.stat(real)
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                return real  # not there (yet): an output, or a usage error of its own
        else:
            return real
    raise pytest.UsageError(
        f"pytest-vgate: --{name.replace('_', '-')} {path}: the path is a symlink loop (too "
        "many levels of symbolic links); name a real file"
    )


def _paths(config: pytest.Config, name: str) -> tuple[Path, ...]:
    if inside_a_check():
        return ()
    given = config.getoption(name)
    if given:
        base = config.invocation_params.dir
        found = [resolved(base / p, name) for p in given]
    elif _ini_gates_apply(config):
        found = [resolved(Path(p), name) for p in config.getini(name)]
    else:
        found = []
    unique: dict[Path, None] = dict.fromkeys(found)
    return tuple(unique)


def _ini_gates_apply(config: pytest.Config) -> bool:
    """Ini-configured gates join a session like ``testpaths``: only when no test paths or
    node ids were named, and never inside a check (a gate running pytest would otherwise
    run the gates again, and again)."""
    return config.args_source != pytest.Config.ArgsSource.ARGS


def _value(config: pytest.Config, name: str) -> str | None:
    given = config.getoption(name)
    if given is not None:
        return str(given)
    ini = str(config.getini(name) or "").strip()
    return ini or None


def _flag(config: pytest.Config, name: str) -> bool:
    given = config.getoption(name)
    return bool(given) if given is not None else bool(config.getini(name))


def option_path(config: pytest.Config, name: str) -> Path | None:
    """A path option: from the command line, relative to where pytest was started; from the
    ini file, relative to the rootdir; None when neither gives it."""
    given = config.getoption(name)
    if given:
        return resolved(config.invocation_params.dir / str(given), name)
    ini = str(config.getini(name) or "").strip()
    return resolved(config.rootpath / ini, name) if ini else None


def _timeout(config: pytest.Config) -> float | None:
    """``--vgate-timeout`` / ``vgate_timeout`` as seconds; None when not given."""
    raw = _value(config, "vgate_timeout")
    if raw is None:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and 0 < seconds <= MAX_TIMEOUT):
        raise pytest.UsageError(
            f"pytest-vgate: {_where(config, 'vgate_timeout')} must be a number of seconds above "
            f"0 and at most {MAX_TIMEOUT:g}, not {raw[:40]!r}; e.g. --vgate-timeout 60"
        )
    return seconds


def check_seconds(raw: object, where: str) -> None:
    """A deadline from ``where`` that a gate would get must be one the platform's timers
    take: a usage error naming the source, never an ``OverflowError`` in a run."""
    try:
        seconds = float(raw)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return  # not a number: its owner (pytest-timeout) reports it
    if seconds > MAX_TIMEOUT or math.isnan(seconds):
        raise pytest.UsageError(
            f"pytest-vgate: {where} is {str(raw)[:40]!r} seconds, more than a gate's deadline "
            f"can be ({MAX_TIMEOUT:g}); give at most {MAX_TIMEOUT:g}, or 0 for no timeout"
        )


def _check_pytest_timeout(config: pytest.Config) -> None:
    """pytest-timeout's value becomes our items' default deadline: check it where it came
    from (its option, its ini key, ``PYTEST_TIMEOUT``)."""
    if not config.pluginmanager.hasplugin("timeout"):
        return
    given = config.getoption("timeout", default=None)
    if given is not None:
        check_seconds(given, "--timeout (pytest-timeout, command line)")
    with contextlib.suppress(ValueError):
        ini = config.getini("timeout")
        if ini not in (None, ""):
            check_seconds(ini, f"timeout in {config.inipath or 'the ini file'} (pytest-timeout)")
    env = os.environ.get("PYTEST_TIMEOUT")
    if env:
        check_seconds(env, "PYTEST_TIMEOUT (pytest-timeout)")


def _require_red(config: pytest.Config, base: str | None) -> bool:
    """Command line, else an ini value that is set, else: required under a base."""
    given = config.getoption("vgate_require_red")
    if given is not None:
        return bool(given)
    ini = config.getini("vgate_require_red")
    if ini is not None:  # the ini twin was set
        return bool(ini)
    return base is not None


def _where(config: pytest.Config, name: str) -> str:
    """Where a value came from, for its usage error: the command line or the ini file."""
    if config.getoption(name) is not None:
        return f"--{name.replace('_', '-')} (command line)"
    return f"{name} in {config.inipath or 'the ini file'}"


def _choice(config: pytest.Config, name: str, choices: tuple[str, ...], default: str) -> str:
    """A closed-vocabulary option (command line, else ini, else ``default``); a value
    outside ``choices`` is a usage error naming where it came from."""
    value = (_value(config, name) or default).strip().lower()
    if value not in choices:
        raise pytest.UsageError(
            f"pytest-vgate: {_where(config, name)} must be one of "
            f"{', '.join(choices)}, not {value[:40]!r}"
        )
    return value


def _count(config: pytest.Config, name: str, default: int, lowest: int) -> int:
    """A whole-number option from ``lowest`` to 1000 (``default`` when not given)."""
    raw = _value(config, name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = lowest - 1
    if value < lowest or value > 1000:
        raise pytest.UsageError(
            f"pytest-vgate: {_where(config, name)} must be a whole number from {lowest} "
            f"to 1000, not {raw[:40]!r}"
        )
    return value


def read_settings(config: pytest.Config) -> Settings:
    """Resolve options and ini into ``Settings``; bad values are usage errors."""
    given_timeout = _timeout(config)
    timeout = DEFAULT_TIMEOUT if given_timeout is None else given_timeout
    _check_pytest_timeout(config)
    isolation = _value(config, "vgate_isolation") or "auto"
    if isolation not in ISOLATION_CHOICES:  # the command line's choices are argparse's
        raise pytest.UsageError(
            f"pytest-vgate: vgate_isolation in {config.inipath or 'the ini file'} must be "
            f"one of {', '.join(ISOLATION_CHOICES)}, not {isolation[:40]!r}"
        )
    base = _value(config, "vgate_base")
    gates_files = _paths(config, "vgate")
    cite_files = _paths(config, "vgate_cite")
    return Settings(
        isolation=isolation,
        nested=inside_a_check(),
        gates_files=gates_files,
        cite_files=cite_files,
        base=base,
        require_red=_require_red(config, base),
        strict=_flag(config, "vgate_strict"),
        timeout=timeout,
        timeout_given=given_timeout is not None,
        ledger=option_path(config, "vgate_ledger"),
        report=option_path(config, "vgate_report"),
        fix=_flag(config, "vgate_fix"),
        coverage=_choice(config, "vgate_coverage", COVERAGE_CHOICES, "auto"),
        repeat=_count(config, "vgate_repeat", 1, 1),
        mutate=_choice(config, "vgate_mutate", MUTATE_CHOICES, "auto"),
        mutants=_count(config, "vgate_mutants", DEFAULT_MUTANTS, 0),
        batch=_choice(config, "vgate_batch", BATCH_CHOICES, DEFAULT_BATCH),
        only=_flag(config, "vgate_only"),
    )
