"""The gates file: every kind of bad file is a GatesFileError naming FILE:LINE and the key;
good files (all keys, aliases, defaults, root, citations) normalise as documented."""

from __future__ import annotations

import dataclasses
import gc
import json
import math
import os
import pickle
import re
import shlex
import subprocess
import sys
import textwrap
import time
from datetime import date, datetime
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers.docs_examples import materialise, write, yaml_blocks
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from pytest_vgate.gatesfile import (
    ALIASES,
    DEFAULT_KEYS,
    ENV_KEYS,
    GATE_KEYS,
    TOP_LEVEL_KEYS,
    EnvSpec,
    Gate,
    GatesFile,
    GatesFileError,
    GateType,
    RedPolicy,
    gate_from_mapping,
    load_gates_file,
    values,
    yamlnodes,
)
from pytest_vgate.gatesfile.located import LocatedList, LocatedMap

DOCS_PAGE = Path(__file__).resolve().parent.parent / "docs" / "gates-file.md"

FULL = """\
root: .
defaults: {timeout: 60, env: [LANG], tools: []}
gates:
  - id: empty-reversed
    type: command
    claim: reversed(numeric_range(0)) is empty
    check: python -m pytest -q "tests/test more.py::T::test_empty" --tb=no
    expect: [0, 5, 0]
    timeout: 30
    cwd: ./sub/
    env: {pass: [HOME], set: {PYTHONHASHSEED: "0"}}
    tools: [python, python]
    red: not-required
    red_exit: 1
    overlay: [tests/, src/mod.py]
    inputs: ["src/**/*.py"]
    stale_at: 2026-11-20T10:00:00Z
  - id: parser-verifiers
    type: python
    verifiers: [checks:first, pkg.checks:second]
citations: [answer.md]
"""


def load_error(folder: Path, text: str) -> GatesFileError:
    path = write(folder, text)
    with pytest.raises(GatesFileError) as info:
        load_gates_file(path)
    return info.value


def one_gate(folder: Path, body: str, **files: str) -> Gate:
    for name, content in files.items():
        write(folder, content, name)
    gates = load_gates_file(write(folder, "gates:\n" + textwrap.indent(body, "  "))).gates
    assert len(gates) == 1
    return gates[0]


# -- bad files: FILE:LINE and the key --------------------------------------------------------

BAD_FILES = [
    # (name, yaml, line, key, fragment of the message)
    ("syntax", "gates:\n  - id: a\n    check: a: b\n", 3, None, "YAML syntax error"),
    ("unclosed-quote", 'gates:\n  - id: a\n    check: "x\n', 4, None, "from line 3"),
    ("tab-indent", "gates:\n\t- id: a\n", 2, None, "YAML syntax error"),
    ("two-documents", "gates: []\n---\ngates: []\n", 2, None, "single document"),
    ("control-char", "gates:\n  - id: a\n    check: x\x01\n", 3, None, "U+0001"),
    (
        "control-after-utf8",
        "gates:\n  - id: a\n    claim: \u00e9\u00e9\u00e9\n    check: \x1f\n",
        4,
        None,
        "U+001F",
    ),
    ("top-list", "- id: a\n  check: x\n", 1, None, "under a `gates:` key"),
    ("top-scalar", "just text\n", 1, None, "top level must be a mapping"),
    ("unknown-top", "gates: []\ncitation: [a.md]\n", 2, "citation", "did you mean `citations`"),
    ("gate-key-at-top", "check: x\ngates: []\n", 1, "check", "inside `gates:`"),
    ("unknown-default", "defaults:\n  timout: 3\ngates: []\n", 2, "timout", "`timeout`"),
    ("gate-only-default", "defaults:\n  red_exit: 1\n", 2, "red_exit", "per gate"),
    ("defaults-not-map", "defaults: [1]\ngates: []\n", 1, "defaults", "must be a mapping"),
    ("unknown-gate-key", "gates:\n  - id: a\n    comand: x\n", 3, "comand", "`command`"),
    ("top-key-in-gate", "gates:\n  - id: a\n    root: .\n", 3, "root", "top level"),
    ("dup-yaml-key", "gates:\n  - id: a\n    check: x\n    check: y\n", 4, "check", "line 3"),
    ("dup-id", "gates:\n  - id: a\n    check: x\n  - id: a\n", 4, "id", "lines 2 and 4"),
    (
        "shell-pipe",
        "gates:\n  - id: a\n    check: python -c 'print(1)' | grep -q 2\n",
        3,
        "check",
        "shell operator `|` outside quotes",
    ),
    ("shell-and", "gates:\n  - id: a\n    check: make&&make test\n", 3, "check", "`&&`"),
    (
        "shell-two-lines",
        "gates:\n  - id: a\n    check: |\n      python -c 'open()'\n      grep -q x o\n",
        3,
        "check",
        "more than one line",
    ),
    (
        "shell-continued",
        "gates:\n  - id: a\n    check: |\n      python -m pytest \\\n        -q tests\n",
        3,
        "check",
        "continues a line with `\\`",
    ),
    ("missing-id", "gates:\n  - check: x\n", 2, "id", "no `id`"),
    ("id-colons", "gates:\n  - id: a::b\n", 2, "id", "node id"),
    ("id-brackets", "gates:\n  - id: a[1]\n", 2, "id", "node id"),
    ("id-newline", 'gates:\n  - id: "a\\nb"\n', 2, "id", "node id"),
    ("id-space", "gates:\n  - id: a b\n", 2, "id", "node id"),
    ("id-number", "gates:\n  - id: 12\n", 2, "id", "must be text"),
    ("id-slash", "gates:\n  - id: a/b\n", 2, "id", "node id"),
    ("expect-text", "gates:\n  - id: a\n    expect: zero\n", 3, "expect", "0 to 255"),
    ("expect-bool", "gates:\n  - id: a\n    expect: true\n", 3, "expect", "boolean"),
    ("expect-256", "gates:\n  - id: a\n    expect:\n      - 0\n      - 256\n", 5, "expect", "256"),
    ("expect-empty", "gates:\n  - id: a\n    expect: []\n", 3, "expect", "empty list"),
    ("expect-negative", "gates:\n  - id: a\n    expect: -9\n", 3, "expect", "0 to 255"),
    ("red-exit-text", "gates:\n  - id: a\n    red_exit: [1, x]\n", 3, "red_exit", "'x'"),
    ("timeout-negative", "gates:\n  - id: a\n    timeout: -1\n", 3, "timeout", "above 0"),
    ("timeout-zero", "gates:\n  - id: a\n    timeout: 0\n", 3, "timeout", "above 0"),
    ("timeout-inf", "gates:\n  - id: a\n    timeout: .inf\n", 3, "timeout", "above 0"),
    ("timeout-text", "gates:\n  - id: a\n    timeout: 10s\n", 3, "timeout", "seconds"),
    ("timeout-huge", "gates:\n  - id: a\n    timeout: 1e400\n", 3, "timeout", "at most"),
    ("tools-string", "gates:\n  - id: a\n    tools: python\n", 3, "tools", "[python]"),
    ("tools-string-below", "gates:\n  - id: a\n    tools:\n      python\n", 4, "tools", "[python]"),
    (
        "unknown-key-list-below",
        "gates:\n  - id: a\n    comand:\n      - x\n",
        3,
        "comand",
        "`command`",
    ),
    ("tools-item", "gates:\n  - id: a\n    tools:\n      - python\n      - 3\n", 5, "tools", "3"),
    ("type-unknown", "gates:\n  - id: a\n    type: shell\n", 3, "type", "command | code"),
    ("type-case", "gates:\n  - id: a\n    type: Command\n", 3, "type", "did you mean `command`"),
    ("type-dash", "gates:\n  - id: a\n    type: self-review\n", 3, "type", "`self_review`"),
    ("alias-type", "gates:\n  - id: a\n    verification_type: bash\n", 3, "verification_type", ""),
    ("red-bool", "gates:\n  - id: a\n    red: true\n", 3, "red", "required | not-required"),
    ("red-typo", "gates:\n  - id: a\n    red: not_required\n", 3, "red", "`not-required`"),
    ("check-quote", "gates:\n  - id: a\n    check: echo 'oops\n", 3, "check", "quotation"),
    ("command-quote", 'gates:\n  - id: a\n    command: echo "x\n', 3, "command", "quotation"),
    ("check-number", "gates:\n  - id: a\n    check: 42\n", 3, "check", "quote it"),
    ("check-list", "gates:\n  - id: a\n    check: [ls, -l]\n", 3, "check", "must be text"),
    ("claim-list", "gates:\n  - id: a\n    claim: [x]\n", 3, "claim", "must be text"),
    ("stale-text", "gates:\n  - id: a\n    stale_at: yesterday\n", 3, "stale_at", "ISO 8601"),
    ("stale-bad-date", "gates:\n  - id: a\n    stale_at: 2026-13-45\n", 3, None, "2026-13-45"),
    ("stale-quoted-bad", 'gates:\n  - id: a\n    stale_at: "2026-02-30"\n', 3, "stale_at", "ISO"),
    ("cwd-absolute", "gates:\n  - id: a\n    cwd: /etc\n", 3, "cwd", "leaves the root"),
    ("cwd-dotdot", "gates:\n  - id: a\n    cwd: sub/../../x\n", 3, "cwd", "without `..`"),
    ("cwd-home", "gates:\n  - id: a\n    cwd: ~/x\n", 3, "cwd", "leaves the root"),
    ("cwd-empty", 'gates:\n  - id: a\n    cwd: ""\n', 3, "cwd", "non-empty"),
    (
        "overlay-item",
        "gates:\n  - id: a\n    overlay:\n      - t/\n      - ../x\n",
        5,
        "overlay",
        "",
    ),
    ("overlay-string", "gates:\n  - id: a\n    overlay: tests/\n", 3, "overlay", "list"),
    ("inputs-abs", 'gates:\n  - id: a\n    inputs: ["/src/**"]\n', 3, "inputs", "leaves the root"),
    ("inputs-windows", 'gates:\n  - id: a\n    inputs: ["C:/x"]\n', 3, "inputs", "leaves"),
    ("python-no-verifiers", "gates:\n  - id: a\n    type: python\n", 2, "verifiers", "needs"),
    (
        "python-with-check",
        "gates:\n  - id: a\n    type: python\n    verifier: m:f\n    check: x\n",
        5,
        "check",
        "remove it",
    ),
    (
        "verifier-form",
        "gates:\n  - id: a\n    type: python\n    verifiers: [checks]\n",
        4,
        "verifiers",
        "module:function",
    ),
    (
        "verifier-keyword",
        "gates:\n  - id: a\n    type: python\n    verifier: class:f\n",
        4,
        "verifier",
        "module:function",
    ),
    (
        "verifiers-string",
        "gates:\n  - id: a\n    type: python\n    verifiers: m:f\n",
        4,
        "verifiers",
        "non-empty list",
    ),
    (
        "verifiers-on-command",
        "gates:\n  - id: a\n    check: x\n    verifiers: [m:f]\n",
        4,
        "verifiers",
        "type: python",
    ),
    (
        "both-type-and-alias",
        "gates:\n  - id: a\n    type: code\n    verification_type: code\n",
        4,
        "verification_type",
        "keep one",
    ),
    (
        "both-check-aliases",
        "gates:\n  - id: a\n    command: x\n    evidence_shape: y\n",
        4,
        "evidence_shape",
        "`command`",
    ),
    (
        "both-verifier-forms",
        "gates:\n  - id: a\n    type: python\n    verifier: m:f\n    verifiers: [m:g]\n",
        5,
        "verifiers",
        "keep one",
    ),
    ("env-string", "gates:\n  - id: a\n    env: HOME\n", 3, "env", "list of variable names"),
    ("env-bad-name", "gates:\n  - id: a\n    env:\n      - HOME\n      - 1X\n", 5, "env", "1X"),
    ("env-unknown-sub", "gates:\n  - id: a\n    env:\n      pas: [HOME]\n", 4, "env", "`pass`"),
    (
        "env-set-int",
        "gates:\n  - id: a\n    env:\n      set:\n        SEED: 0\n",
        5,
        "env",
        "quote",
    ),
    ("env-set-list", "gates:\n  - id: a\n    env: {set: [A]}\n", 3, "env", "mapping"),
    ("env-set-name", "gates:\n  - id: a\n    env: {set: {A-B: x}}\n", 3, "env", "A-B"),
    ("gates-not-list", "gates:\n  id: a\n", 2, "gates", "must be a list"),
    ("gate-not-map", "gates:\n  - id: a\n  - just-text\n", 3, None, "must be a mapping"),
    ("bool-key", "gates:\n  - id: a\n    yes: 1\n", 3, None, "quote it"),
    ("complex-key", "gates:\n  - id: a\n    ? [x]\n    : 1\n", 3, None, "plain text"),
    ("python-tag", "gates:\n  - !!python/object/apply:os.system [touch pwned]\n", 2, None, "tag"),
    ("python-tag-scalar", "gates:\n  - id: !!python/name:os.system x\n", 2, None, ""),
    ("cycle", "gates: &a\n  - *a\n", 1, None, "cycle"),
    ("merge-scalar", "gates:\n  - id: a\n    <<: 3\n", 3, "<<", "merges a mapping"),
    ("nothing", "gates: []\n", 1, "gates", "declares nothing"),
    ("nothing-comments", "# only a comment\n", 1, None, "empty"),
    ("root-missing", "root: nowhere\ngates: [{id: a}]\n", 1, "root", "not a folder"),
    ("root-number", "root: 3\ngates: [{id: a}]\n", 1, "root", "must be text"),
    ("root-nul", 'gates: [{id: a}]\nroot: "a\\0b"\n', 2, "root", "cannot resolve"),
    ("citations-miss", "citations:\n  - answer.md\n  - nope/*.md\n", 3, "citations", "no file"),
    ("citations-abs", "citations: [/etc/passwd]\n", 1, "citations", "absolute"),
    ("citations-string", "citations: answer.md\n", 1, "citations", "must be a list"),
    ("citations-number", "citations: [1]\n", 1, "citations", "file name or glob"),
    ("claim-surrogate", 'gates:\n  - id: a\n    claim: "\\ud800"\n', 3, "claim", "lone surrogate"),
    (
        "claim-surrogate-folded",
        'gates:\n  - id: a\n    claim: "one\n      two \\uDFFF"\n',
        4,
        "claim",
        "\\uDFFF",
    ),
    ("key-surrogate", 'gates:\n  - id: a\n    "\\ud801": x\n', 3, None, "surrogate"),
    ("check-beyond-unicode", 'gates:\n  - id: a\n    check: "\\U00110000"\n', 3, None, "U+10FFFF"),
    ("timeout-nan", "gates:\n  - id: a\n    timeout: .nan\n", 3, "timeout", "above 0"),
    ("timeout-1e300", "gates:\n  - id: a\n    timeout: 1.0e300\n", 3, "timeout", "at most"),
    ("timeout-bool", "gates:\n  - id: a\n    timeout: true\n", 3, "timeout", "seconds"),
    ("default-timeout-huge", "defaults:\n  timeout: 86401\ngates: []\n", 2, "timeout", "at most"),
]


@pytest.mark.parametrize(
    ("text", "line", "key", "fragment"),
    [pytest.param(*case[1:], id=case[0]) for case in BAD_FILES],
)
def test_bad_file_names_file_line_and_key(
    tmp_path: Path, text: str, line: int, key: str | None, fragment: str
) -> None:
    (tmp_path / "answer.md").write_text("x\n")
    error = load_error(tmp_path, text)
    path = tmp_path / "gates.yaml"
    assert (error.path, error.line, error.key) == (path, line, key), str(error)
    assert str(error).startswith(f"{path}:{line}:")
    if key is not None:
        assert f"[{key}]" in str(error)
    assert fragment in error.message
    assert not (tmp_path / "pwned").exists()


def test_unreadable_undecodable_and_missing_files(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(GatesFileError, match="cannot read") as info:
        load_gates_file(missing)
    assert info.value.path == missing
    with pytest.raises(GatesFileError, match="cannot read"):
        load_gates_file(tmp_path)  # a folder
    with pytest.raises(GatesFileError, match="cannot read"):
        load_gates_file(tmp_path / "nul\x00.yaml")
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"gates:\n  - id: a\n    claim: caf\xe9\n")
    with pytest.raises(GatesFileError, match=r"latin\.yaml:3: the file is not UTF-8"):
        load_gates_file(latin)
    empty = write(tmp_path, "")
    with pytest.raises(GatesFileError, match="empty"):
        load_gates_file(empty)
    bom = tmp_path / "bom.yaml"
    bom.write_bytes(b"\xef\xbb\xbfgates: [{id: a, check: x}]\n")
    assert load_gates_file(bom).gates[0].id == "a"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_file(tmp_path: Path) -> None:
    path = write(tmp_path, "gates: [{id: a}]\n")
    path.chmod(0)
    with pytest.raises(GatesFileError, match="cannot read"):
        load_gates_file(path)


def test_hostile_yaml_stays_bounded(tmp_path: Path) -> None:
    """Alias bombs are read in linear time; absurd nesting is an error, not a crash."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 12)]
    bomb = write(tmp_path, "\n".join(lines) + "\ngates: *a11\n")
    started = time.monotonic()
    with pytest.raises(GatesFileError):
        load_gates_file(bomb)
    merges = ["m0: &m0 {x: 1}"]
    merges += [f"m{i}: &m{i} {{<<: [" + ", ".join([f"*m{i - 1}"] * 9) + "]}" for i in range(1, 30)]
    with pytest.raises(GatesFileError, match="unknown key `m0`"):
        load_gates_file(write(tmp_path, "\n".join(merges) + "\n", "merge.yaml"))
    assert time.monotonic() - started < 30  # generous: exponential expansion would never end
    deep = write(tmp_path, "gates: " + "[" * 20000 + "]" * 20000 + "\n", "deep.yaml")
    with pytest.raises(GatesFileError, match="nested too deeply"):
        load_gates_file(deep)


def test_error_pickles_and_keeps_its_fields(tmp_path: Path) -> None:
    error = load_error(tmp_path, "gates:\n  - id: a\n    tools: python\n")
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.path, copy.line, copy.key, str(copy)) == (
        error.path,
        error.line,
        error.key,
        str(error),
    )


# -- good files normalise -------------------------------------------------------------------


def test_full_file_normalises_every_key(tmp_path: Path) -> None:
    (tmp_path / "answer.md").write_text("see a.py:1\n")
    path = write(tmp_path, FULL)
    loaded = load_gates_file(path)
    first, second = loaded.gates
    assert loaded.path == path.resolve()
    assert loaded.root == tmp_path.resolve()
    assert loaded.citations == ((tmp_path / "answer.md").resolve(),)
    assert loaded.default_tools == ()
    assert first == Gate(
        id="empty-reversed",
        type=GateType.COMMAND,
        claim="reversed(numeric_range(0)) is empty",
        check='python -m pytest -q "tests/test more.py::T::test_empty" --tb=no',
        argv=("python", "-m", "pytest", "-q", "tests/test more.py::T::test_empty", "--tb=no"),
        expect=(0, 5),
        timeout=30.0,
        cwd="sub",
        env=EnvSpec(("LANG", "HOME"), (("PYTHONHASHSEED", "0"),)),
        tools=("python",),
        red=RedPolicy.NOT_REQUIRED,
        red_exit=(1,),
        overlay=("tests", "src/mod.py"),
        inputs=("src/**/*.py",),
        stale_at="2026-11-20T10:00:00Z",
        root=tmp_path.resolve(),
        source=path.resolve(),
        line=4,
    )
    assert second.type is GateType.PYTHON
    assert second.verifiers == ("checks:first", "pkg.checks:second")
    assert (second.argv, second.timeout, second.env.pass_names) == ((), 60.0, ("LANG",))
    assert second.line == 18
    assert GatesFile.from_dict(json.loads(json.dumps(loaded.to_dict()))) == loaded


def test_loaded_gates_are_whole_gates(tmp_path: Path) -> None:
    """The loader sets a gate's fields at once, not through ``Gate.__init__``: every field
    is there, and the gate equals (and hashes like) the one ``Gate(...)`` makes."""
    (tmp_path / "answer.md").write_text("see a.py:1\n")
    names = [f.name for f in dataclasses.fields(Gate)]
    gates = [*load_gates_file(write(tmp_path, FULL)).gates]
    gates.append(gate_from_mapping({"id": "bare"}, root=tmp_path))
    for gate in gates:
        assert list(vars(gate)) == names
        made = Gate(**vars(gate))
        assert (gate == made, hash(gate) == hash(made)) == (True, True)
        with pytest.raises(dataclasses.FrozenInstanceError):
            gate.id = "other"  # type: ignore[misc]


def test_seed_aliases(tmp_path: Path) -> None:
    gate = one_gate(
        tmp_path,
        """\
        - id: seed
          verification_type: code
          evidence_type: the linter is clean
          evidence_shape: ruff check src
          stale_at: 2026-01-02
        """,
    )
    assert (gate.type, gate.claim, gate.check) == (
        GateType.CODE,
        "the linter is clean",
        "ruff check src",
    )
    assert gate.argv == ("ruff", "check", "src")
    assert gate.stale_at == "2026-01-02T00:00:00Z"
    envelope = gate_from_mapping(
        {"verification_type": "command", "command": "true"} | {"id": "env"}, root=tmp_path
    )
    assert (envelope.check, envelope.argv, envelope.type) == ("true", ("true",), GateType.COMMAND)


def test_defaults_merge_under_each_gate(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        defaults:
          timeout: 5
          env: {pass: [LANG, HOME], set: {A: "1", B: "2"}}
          tools: [python]
          expect: [0, 1]
          cwd: src
          red: not-required
        gates:
          - id: inherits
            check: python -V
          - id: overrides
            check: make
            timeout: 7.5
            env: {pass: [HOME, TERM], set: {B: "3"}}
            tools: [make]
            expect: 2
            cwd: .
            red: required
        """,
    )
    loaded = load_gates_file(path)
    inherits, overrides = loaded.gates
    assert loaded.default_tools == ("python",)
    assert (inherits.timeout, inherits.tools, inherits.expect) == (5.0, ("python",), (0, 1))
    assert (inherits.cwd, inherits.red) == ("src", RedPolicy.NOT_REQUIRED)
    assert inherits.env == EnvSpec(("LANG", "HOME"), (("A", "1"), ("B", "2")))
    assert (overrides.timeout, overrides.tools, overrides.expect) == (7.5, ("make",), (2,))
    assert (overrides.cwd, overrides.red) == (".", RedPolicy.REQUIRED)
    assert overrides.env == EnvSpec(("LANG", "HOME", "TERM"), (("A", "1"), ("B", "3")))


def test_unset_keys_take_documented_defaults(tmp_path: Path) -> None:
    gate = one_gate(tmp_path, "- id: bare\n  check: 'true'\n")
    assert (gate.type, gate.claim, gate.expect, gate.timeout, gate.cwd) == (
        GateType.COMMAND,
        "",
        (0,),
        None,
        ".",
    )
    assert (gate.env, gate.tools, gate.red, gate.red_exit) == (
        EnvSpec(),
        (),
        RedPolicy.REQUIRED,
        None,
    )
    assert (gate.overlay, gate.inputs, gate.stale_at, gate.verifiers) == ((), (), None, ())


@pytest.mark.parametrize("check", ["", "   \t ", None])
def test_blank_check_loads_with_empty_argv(tmp_path: Path, check: str | None) -> None:
    gate = gate_from_mapping({"id": "blank", "check": check}, root=tmp_path)
    assert (gate.check.strip(), gate.argv) == ("", ())
    assert one_gate(tmp_path, "- id: no-check\n").argv == ()


def test_judgment_gates_keep_prose_checks_unsplit(tmp_path: Path) -> None:
    gate = one_gate(
        tmp_path, "- id: rubric\n  type: semantic\n  check: the user's name isn't shown\n"
    )
    assert (gate.type, gate.argv, gate.check) == (
        GateType.SEMANTIC,
        (),
        "the user's name isn't shown",
    )
    with pytest.raises(GatesFileError, match="quotation"):
        gate_from_mapping({"id": "cmd", "check": "the user's name"}, root=tmp_path)


@pytest.mark.parametrize(
    ("written", "normalised"),
    [
        ("2026-11-20T10:00:00Z", "2026-11-20T10:00:00Z"),
        ("2026-11-20T12:00:00+02:00", "2026-11-20T10:00:00Z"),
        ("2026-11-20 10:00:00", "2026-11-20T10:00:00Z"),
        ("2026-11-20t10:00:00.5-01:30", "2026-11-20T11:30:00.500000Z"),
        ("2026-11-20", "2026-11-20T00:00:00Z"),
        ('"2026-11-20T10:00Z"', "2026-11-20T10:00:00Z"),
        ('"2026-11-20T10:00:00.123+0100"', "2026-11-20T09:00:00.123000Z"),
        ("null", None),
    ],
)
def test_stale_at_normalises_to_utc(tmp_path: Path, written: str, normalised: str | None) -> None:
    assert one_gate(tmp_path, f"- id: a\n  stale_at: {written}\n").stale_at == normalised


def test_stale_at_accepts_python_dates(tmp_path: Path) -> None:
    for value in (date(2026, 1, 2), datetime(2026, 1, 2, 3, 4, 5)):
        gate = gate_from_mapping({"id": "a", "stale_at": value}, root=tmp_path)
        assert gate.stale_at is not None
        assert gate.stale_at.startswith("2026-01-02T")


def test_paths_are_normalised_relative_to_root(tmp_path: Path) -> None:
    gate = one_gate(
        tmp_path,
        "- id: a\n  cwd: ./a//b/./\n  overlay: [tests/, ./tests, x\\\\y]\n  inputs: ['*.py']\n",
    )
    assert (gate.cwd, gate.overlay, gate.inputs) == ("a/b", ("tests", "x/y"), ("*.py",))


def test_merge_keys_share_settings_and_explicit_keys_win(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        gates:
          - &base {id: one, check: make test, timeout: 9, tools: [make]}
          - <<: *base
            id: two
            timeout: 3
        """,
    )
    one, two = load_gates_file(path).gates
    assert (two.id, two.check, two.timeout, two.tools) == ("two", "make test", 3.0, ("make",))
    assert (one.line, two.line) == (2, 3)


def test_root_resolution(tmp_path: Path) -> None:
    (tmp_path / "repo" / "ci").mkdir(parents=True)
    nested = write(tmp_path / "repo" / "ci", "root: ..\ngates: [{id: a, check: x}]\n")
    assert load_gates_file(nested).root == (tmp_path / "repo").resolve()
    assert load_gates_file(nested).gates[0].root == (tmp_path / "repo").resolve()
    default = write(tmp_path / "repo" / "ci", "gates: [{id: a}]\n", "plain.yaml")
    assert load_gates_file(default).root == (tmp_path / "repo" / "ci").resolve()
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "repo")
    via_link = load_gates_file(link / "ci" / "gates.yaml")
    assert via_link.root == (tmp_path / "repo").resolve()
    assert via_link.path == nested.resolve()
    old = Path.cwd()
    os.chdir(tmp_path / "repo")
    try:  # a relative path is relative to the working directory, the root to the file
        assert load_gates_file("ci/gates.yaml").root == (tmp_path / "repo").resolve()
    finally:
        os.chdir(old)


def test_citations_globbing(tmp_path: Path) -> None:
    for name in ("docs/b.md", "docs/a.md", "docs/deep/c.md", "notes.txt", "docs/dir.md/x"):
        write(tmp_path, "x\n", name)
    path = write(tmp_path, "citations: [docs/*.md, docs/a.md, 'docs/**/*.md', notes.txt]\n")
    docs = tmp_path.resolve() / "docs"
    assert load_gates_file(path).citations == (
        docs / "a.md",
        docs / "b.md",
        docs / "deep" / "c.md",
        tmp_path.resolve() / "notes.txt",
    )
    assert load_gates_file(path).gates == ()


def test_citations_relative_to_file_and_kept_inside(tmp_path: Path) -> None:
    write(tmp_path, "x\n", "answer.md")
    write(tmp_path / "ci", "root: ..\ncitations: [../answer.md]\n")
    assert load_gates_file(tmp_path / "ci" / "gates.yaml").citations == (
        (tmp_path / "answer.md").resolve(),
    )
    outside = tmp_path / "outside.md"
    outside.write_text("x\n")
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "leak.md").symlink_to(outside)
    path = write(tmp_path / "repo", "citations:\n  - leak.md\n")
    with pytest.raises(GatesFileError, match="outside") as info:
        load_gates_file(path)
    assert (info.value.line, info.value.key) == (2, "citations")


def test_gate_from_mapping_errors_name_the_source(tmp_path: Path) -> None:
    with pytest.raises(GatesFileError, match=r"^<gate>: \[id\]"):
        gate_from_mapping({"check": "x"}, root=tmp_path)
    source = tmp_path / "g.yaml"
    with pytest.raises(GatesFileError, match=re.escape(f"{source}:7: [tools]")):
        gate_from_mapping({"id": "a", "tools": "x"}, root=tmp_path, source=source, line=7)
    with pytest.raises(GatesFileError, match=r"\[timout\].*`timeout`"):
        gate_from_mapping({"id": "a"}, root=tmp_path, defaults={"timout": 1})
    with pytest.raises(GatesFileError, match="must be a mapping"):
        gate_from_mapping(["id", "a"], root=tmp_path)  # type: ignore[arg-type]
    with pytest.raises(GatesFileError, match="not text"):
        gate_from_mapping({"id": "a", 3: "x"}, root=tmp_path)  # type: ignore[dict-item]
    gate = gate_from_mapping(
        {"id": "a", "check": "x"},
        root=tmp_path,
        source=source,
        line=7,
        defaults={"timeout": 2, "env": ["LANG"]},
    )
    assert (gate.source, gate.line, gate.timeout, gate.env.pass_names) == (
        source,
        7,
        2.0,
        ("LANG",),
    )
    assert gate.root == tmp_path.resolve()


# -- property: gate_from_mapping never raises anything but GatesFileError --------------------

JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
WORDS = st.sampled_from(
    ["a", "x::y", "", " ", "python", "m:f", "pkg.m:f", "class:f", "../x", "/abs", "tests/",
     "2026-01-01", "2026-11-20T10:00:00+02:00", "self_review", "python", "semantic",
     "not-required", "echo 'x", "echo hi", "HOME", "1X", "~/x"]
)  # fmt: skip
NAMES = st.lists(WORDS, max_size=3)
CODES = st.integers(-2, 300) | st.lists(st.integers(-2, 300), max_size=3)
ENV_SETS = st.dictionaries(WORDS, WORDS | st.integers())
ENV_MAPS = st.fixed_dictionaries({}, optional={"pass": NAMES, "set": ENV_SETS})
NEAR_VALID: dict[str, st.SearchStrategy[Any]] = {
    "type": st.sampled_from([t.value for t in GateType]),
    "claim": st.text(max_size=10) | st.none(),
    "check": st.text(max_size=10) | WORDS | st.none(),
    "expect": CODES,
    "red_exit": CODES,
    "timeout": st.floats() | st.integers(),
    "cwd": WORDS,
    "env": NAMES | ENV_MAPS,
    "tools": NAMES,
    "red": st.sampled_from(["required", "not-required"]) | WORDS,
    "overlay": NAMES,
    "inputs": NAMES,
    "stale_at": WORDS | st.none() | st.datetimes() | st.dates(),
    "verifier": WORDS | NAMES,
    "verifiers": NAMES,
}
NEAR_VALID.update({alias: NEAR_VALID[canonical] for alias, canonical in ALIASES.items()})
JUNK_VALUES = JSONISH | WORDS | st.lists(WORDS | st.integers(-2, 300), max_size=3)
KEYS = st.sampled_from(sorted(GATE_KEYS | ALIASES.keys() | ENV_KEYS | {"junk", "root"}))
JUNK_GATES = st.dictionaries(KEYS | st.text(max_size=6), JUNK_VALUES, max_size=8)
NEAR_VALID_GATES = st.fixed_dictionaries(
    {"id": st.sampled_from(["a", "gate-1.b"]) | WORDS},
    optional={key: strategy | JUNK_VALUES for key, strategy in NEAR_VALID.items()},
)
DEFAULTS = (
    st.none()
    | JSONISH
    | st.fixed_dictionaries({}, optional={key: NEAR_VALID[key] for key in sorted(DEFAULT_KEYS)})
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=JUNK_GATES | NEAR_VALID_GATES, defaults=DEFAULTS)
def test_gate_from_mapping_returns_a_gate_or_a_gates_file_error(
    tmp_path_factory: pytest.TempPathFactory, data: dict[str, Any], defaults: Any
) -> None:
    root = tmp_path_factory.getbasetemp()
    try:
        gate = gate_from_mapping(data, root=root, defaults=defaults)
    except GatesFileError:
        return
    assert isinstance(gate, Gate)
    assert json.loads(json.dumps(gate.to_dict())) == gate.to_dict()
    assert gate.timeout is None or math.isfinite(gate.timeout)


# -- the JSON Schema and the docs page agree with the loader ---------------------------------


def load_schema() -> dict[str, Any]:
    text = resources.files("pytest_vgate").joinpath("gates.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def test_schema_keys_equal_the_loader_keys() -> None:
    schema = load_schema()
    defs = schema["$defs"]
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert set(schema["properties"]) == TOP_LEVEL_KEYS
    assert set(defs["defaults"]["properties"]) == DEFAULT_KEYS
    assert set(defs["gate"]["properties"]) == GATE_KEYS | set(ALIASES)
    assert set(defs["env"]["oneOf"][1]["properties"]) == ENV_KEYS
    assert set(ALIASES.values()) <= GATE_KEYS
    assert defs["type"]["enum"] == [t.value for t in GateType]
    assert defs["red"]["enum"] == [r.value for r in RedPolicy]
    assert schema["additionalProperties"] is False
    assert defs["gate"]["additionalProperties"] is defs["defaults"]["additionalProperties"] is False


DOC_BLOCKS = yaml_blocks(DOCS_PAGE) if DOCS_PAGE.exists() else []


def test_docs_page_has_examples() -> None:
    assert len([b for b in DOC_BLOCKS if b[1]]) >= 5
    assert len([b for b in DOC_BLOCKS if not b[1]]) >= 2


@pytest.mark.parametrize(
    ("line", "valid", "text"), DOC_BLOCKS, ids=[f"L{b[0]}" for b in DOC_BLOCKS]
)
def test_docs_examples_load(tmp_path: Path, line: int, valid: bool, text: str) -> None:
    path = materialise(tmp_path / "project", text)
    if valid:
        assert load_gates_file(path).gates or load_gates_file(path).citations
    else:
        with pytest.raises(GatesFileError):
            load_gates_file(path)


def as_json(value: Any) -> Any:
    """What an editor's YAML-to-JSON view gives: dates as their ISO text."""
    if isinstance(value, dict):
        return {key: as_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [as_json(item) for item in value]
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, date):
        return value.isoformat()
    return value


def test_valid_examples_validate_against_the_schema() -> None:
    jsonschema = pytest.importorskip(
        "jsonschema", reason="jsonschema is not installed (it is not a dependency)"
    )
    validator = jsonschema.Draft202012Validator(load_schema())
    jsonschema.Draft202012Validator.check_schema(load_schema())
    examples = [FULL] + [text for _, valid, text in DOC_BLOCKS if valid]
    for text in examples:
        errors = [e.message for e in validator.iter_errors(as_json(yaml.safe_load(text)))]
        assert errors == [], text
    rejected = [yaml.safe_load(case[1]) for case in BAD_FILES if case[0] in SCHEMA_REJECTS]
    assert len(rejected) == len(SCHEMA_REJECTS)
    for data in rejected:
        assert not validator.is_valid(as_json(data)), data


SCHEMA_REJECTS = {
    "unknown-top",
    "unknown-gate-key",
    "missing-id",
    "id-colons",
    "expect-text",
    "expect-256",
    "timeout-negative",
    "tools-string",
    "type-unknown",
    "red-typo",
    "cwd-absolute",
    "cwd-dotdot",
    "overlay-item",
    "python-no-verifiers",
    "python-with-check",
    "verifier-form",
    "verifiers-on-command",
    "both-type-and-alias",
    "both-check-aliases",
    "env-bad-name",
    "env-set-int",
    "gates-not-list",
    "citations-string",
}


# -- the fast paths (libyaml, plain argv) agree with the slow ones -------------------------


def located(value: Any) -> Any:
    """Data with every line the loader kept, for comparing two loaders."""
    if isinstance(value, LocatedMap):
        return (
            "map",
            value.line,
            sorted(
                (
                    (k, value.key_lines[k], value.value_lines[k], located(v))
                    for k, v in value.items()
                ),
                key=repr,
            ),
        )
    if isinstance(value, LocatedList):
        return ("seq", value.line, value.item_lines, [located(v) for v in value])
    return (type(value).__name__, value)


def both_loaders(text: str) -> tuple[Any, Any]:
    """What libyaml and the pure loader give: located data or (line, key) of the error."""
    results = []
    for pure in (False, True):
        try:
            results.append(located(yamlnodes.load_yaml(text, pure=pure)))
        except yamlnodes.YamlError as exc:
            results.append(("error", exc.line, exc.key))
    return results[0], results[1]


SURROGATES = [case[1] for case in BAD_FILES if "surrogate" in case[0] or "unicode" in case[0]]


@pytest.mark.parametrize("text", SURROGATES)
def test_both_loaders_refuse_escapes_that_name_no_character_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    """libyaml refuses a lone surrogate, the pure loader kept it (or crashed on chr()):
    whichever loader the spec package picks, the error is the same, to the letter."""
    errors = []
    for pure in (False, True):
        with pytest.raises(yamlnodes.YamlError) as info:
            yamlnodes.load_yaml(text, pure=pure)
        errors.append((info.value.message, info.value.line, info.value.key))
    assert errors[0] == errors[1]
    path = write(tmp_path, text)
    messages = []
    for chosen in (yamlnodes._loader_class(), yamlnodes._PureLoader):
        monkeypatch.setattr(yamlnodes, "_loader_class", lambda c=chosen: c)
        with pytest.raises(GatesFileError) as failed:
            load_gates_file(path)
        messages.append(str(failed.value))
    assert messages[0] == messages[1]
    assert messages[0].startswith(f"{path}:{errors[0][1]}:")


def test_libyaml_is_used_when_installed() -> None:
    if not getattr(yaml, "__with_libyaml__", False):
        pytest.skip("PyYAML is built without libyaml here")
    assert issubclass(yamlnodes._loader_class(), yaml.CSafeLoader)


MERGES = """\
base: &base {timeout: 9, tools: [make]}
other: &other {tools: [ruff], cwd: sub}
gates:
  - &one
    id: one
    check: 'make test'
    <<: [*base, *other]
  - <<: *one
    id: two
    expect:
      - 0
      - 1
  - {id: three, stale_at: 2026-11-20, timeout: 1e3, red_exit: ~, claim: !!str 12}
"""


@pytest.mark.parametrize(
    "text",
    [pytest.param(FULL, id="full"), pytest.param(MERGES, id="merges")]
    + [pytest.param(case[1], id=case[0]) for case in BAD_FILES]
    + [pytest.param(text, id=f"docs-L{line}") for line, _, text in DOC_BLOCKS],
)
def test_libyaml_and_pure_loader_agree(text: str) -> None:
    fast, pure = both_loaders(text)
    assert fast == pure


YAML_DATA = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12) | st.dates(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(data=YAML_DATA, flow=st.sampled_from([None, True, False]), width=st.integers(20, 200))
def test_libyaml_and_pure_loader_agree_on_any_document(data: Any, flow: Any, width: int) -> None:
    text = yaml.safe_dump(data, default_flow_style=flow, width=width, allow_unicode=True)
    fast, pure = both_loaders(text)
    assert fast == pure


TRICKY_SCALARS = [
    *"abxyz_-?:,[]{}#&*!|>'\"%@`~=<.+0\\é",
    "yes",
    "No",
    "on",
    "OFF",
    "true",
    "null",
    "Null",
    "~",
    "1",
    "-1",
    "+1",
    "0x1F",
    "0o17",
    "1_000",
    "1:20",
    "1.5",
    ".inf",
    "-.Inf",
    ".nan",
    "1e3",
    "2026-11-20",
    "2026-13-45",
    "2026-11-20T10:00:00Z",
    "2026-11-20 10:00:00.5 +01:00",
    "=",
    "<<",
    "a: b",
    "a:",
    "a:b",
    "a #b",
    "a#b",
    "it's",
    "a ",
    " a",
    "--x",
    "- x",
    "[x]",
    "x [y]",
    "{a: 1}",
    "*a",
    "&a b",
    "!x",
    "!!str 1",
    "|",
    ">",
    "%x",
    "@x",
    "`x`",
    '"q"',
    "'q'",
    "\\u00e9",
    "a\\b",
    "é é",
    "\u2028",
    "\x85",
    "\ufeff",
    "\t",
    "\r",
    "...",
    "---",
]
BLOCK_KEYS = ["id", "check", "gates", "env", "_a", "a1", "k", "yes", "on", "null", "x y", "<<"]


def scalar_text(value: str, style: str) -> str:
    if style == "single":
        return "'" + value.replace("'", "''") + "'"
    if style == "double":
        return '"' + value + '"'
    return value


WORDS = st.from_regex(r"[a-z][a-z0-9 ./_-]{0,10}[a-z0-9]", fullmatch=True)
SCALARS = st.builds(
    scalar_text,
    WORDS
    | WORDS
    | WORDS
    | st.sampled_from(TRICKY_SCALARS)
    | st.text(st.characters(blacklist_categories=["Cc", "Cs"]), max_size=6),
    st.sampled_from(["plain", "plain", "single", "double"]),
)


@st.composite
def block_documents(draw: st.DrawFn) -> str:
    """Block mappings and sequences of one-line scalars, with comments, blank lines,
    compact sequences and odd indentation -- and now and then a line that breaks them."""
    lines: list[str] = []

    def mapping(indent: int, depth: int, first_prefix: str | None = None) -> None:
        common = st.sampled_from(BLOCK_KEYS[:7])
        keys = common | common | st.sampled_from(BLOCK_KEYS)
        unique = draw(st.booleans()) or draw(st.booleans())
        for n, key in enumerate(draw(st.lists(keys, min_size=1, max_size=4, unique=unique))):
            pad = first_prefix if n == 0 and first_prefix is not None else " " * indent
            entry(pad + key + ":", indent, depth)

    def sequence(indent: int, depth: int) -> None:
        for _ in range(draw(st.integers(1, 3))):
            dash = "-" + " " * draw(st.integers(1, 3))
            if depth < 3 and draw(st.booleans()):
                mapping(indent + len(dash), depth + 1, first_prefix=" " * indent + dash)
            else:
                lines.append(" " * indent + dash + draw(SCALARS) + draw(TAILS))

    def entry(head: str, indent: int, depth: int) -> None:
        kind = draw(st.sampled_from(["scalar", "scalar", "map", "seq", "compact", "map", "empty"]))
        if depth >= 3 or kind == "scalar":
            lines.append(head + " " * draw(st.integers(1, 2)) + draw(SCALARS) + draw(TAILS))
            return
        lines.append(head + draw(st.sampled_from(["", "", " ", "  # c"])))
        if draw(st.booleans()):
            lines.append(draw(st.sampled_from(["", "  ", "# note", "    # note"])))
        inner = indent + draw(st.integers(1, 3))
        if kind == "map":
            mapping(inner, depth + 1)
        elif kind == "seq":
            sequence(inner, depth + 1)
        elif kind == "compact":
            sequence(indent, depth + 1)

    mapping(draw(st.sampled_from([0, 0, 2])), 0)
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 2]))):  # break it now and then
        where = draw(st.integers(0, len(lines)))
        if where < len(lines) and draw(st.booleans()):
            lines[where] = " " * draw(st.integers(0, 5)) + lines[where].lstrip(" ")
        else:
            lines.insert(where, draw(st.sampled_from(JUNK)))
    return "\n".join(lines) + draw(st.sampled_from(["\n", "", "\n\n"]))


TAILS = st.sampled_from(["", "", "", "", " ", "  # c", " #", "#x", " # a: b"])
JUNK = ["  more words", "x", "- x", "---", "...", "%YAML 1.1", "  - ", "-", "k:v", "? a"]


@settings(
    max_examples=500,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(text=block_documents())
def test_libyaml_and_pure_loader_agree_on_block_documents(text: str) -> None:
    """The common block shape, with every tricky scalar: the same data and lines.

    Tabs are left out: on a value of only a tab (``id: \t``) PyYAML's pure loader refuses
    what libyaml reads, and on broken documents the two may name different lines. So are
    tags: a bare ``!`` (the non-specific tag) is ``""`` to libyaml and None to the pure
    loader. So is a comment glued to a block scalar's header (``check: |#x``): libyaml reads
    an empty scalar (a ``blank`` gate), the pure loader a syntax error; either fails. So are
    complex keys (``? a``), whose columns the two count apart. Derandomized: the same
    examples on every run.
    """
    assume("\t" not in text and "!" not in text)
    assume(not re.search(r"[|>][-+0-9]*#", text) and "?" not in text)
    fast, pure = both_loaders(text)
    if not (isinstance(fast, tuple) and fast[:1] == ("error",)):
        assert fast == pure


def reference_argv(check: str) -> tuple[str, ...] | None:
    """The rule the fast paths must equal: shlex.split, blank gives (), failures None.

    Blank is also what a shell would run nothing for: a comment (`# TODO`) or only empty
    words (`''`).
    """
    if "\x00" in check:
        return None
    if not check.strip():
        return ()
    try:
        words = tuple(shlex.split(check, posix=True))
    except ValueError:
        return None
    if check.lstrip(" \t\r\n").startswith("#") or not any(words):
        return ()
    return None if has_unquoted_operator(check) else words


def has_unquoted_operator(check: str) -> bool:
    """A POSIX shell's reading, one character at a time: is `|&;<>` outside quotes, or a
    line break that a shell would act on (a second line of words, a `\\` continuing one)?"""
    quote, escaped, broken, seen = "", False, False, False
    for char in check:
        if escaped:
            escaped = False
            if char in "\r\n" and not quote:
                return True  # a continued line
        elif quote:
            if char == "\\" and quote == '"':
                escaped = True
            elif char == quote:
                quote = ""
        elif char in "\r\n":
            broken = seen
        elif char in " \t":
            continue
        elif broken or char in "|&;<>":
            return True  # words on a next line, or an operator
        else:
            seen = True
            if char == "\\":
                escaped = True
            elif char in "'\"":
                quote = char
    return False


SHELL_CHARS = [*"ab- =$*;|&()<>#~", " ", "\t", "\r", "\n", "'", '"', "\\", "é", "\x00"]
OTHER_SPACES = ["\x0b", "\x0c", "\x1c", "\x85", "\xa0", "\u2003", "\u2028", "\u3000"]
SHELLISH = st.text(alphabet=st.sampled_from(SHELL_CHARS + OTHER_SPACES), max_size=24)


@settings(max_examples=2000, deadline=None)
@given(check=st.text(alphabet="ab '\"\\", max_size=12) | SHELLISH | st.text(max_size=24))
@example(check="python -c 'raise SystemExit(1)'")
@example(check="a'b'\"c\"d \"'\" '\"' '' x\"\"y")
@example(check="echo '\\' \"a'b\"")
@example(check="x\x0by")
@example(check="a\xa0b 'c\u2003d'")
@example(check="# a comment runs nothing")
@example(check="'#' is a program")
@example(check="'' \"\"")
@example(check="'a'b'c' \"''\"''")
@example(check="a\nb")
@example(check="\n a b \n\n")
@example(check="a \\\n b")
@example(check="a 'x\ny' \"p\\\nq\"")
def test_argv_splits_exactly_like_shlex(check: str) -> None:
    expected = reference_argv(check)
    try:
        got: tuple[str, ...] | None = values.argv("check", check)
    except values.BadValue:
        got = None
    assert got == expected


def test_common_checks_skip_shlex() -> None:
    """The fast paths cover the checks people write (the property above proves them)."""
    assert values._NOT_PLAIN.search("python -m pytest -q tests/test_a.py --tb=no") is None
    for check in ["python -c 'raise SystemExit(1)'", 'pytest "tests/test more.py::T"', "''"]:
        assert values._QUOTED_WORDS.fullmatch(check), check
    for check in ["echo a\\ b", "echo 'x", 'echo "a\\"b"']:
        assert not values._QUOTED_WORDS.fullmatch(check), check


def test_loading_leaves_the_garbage_collector_as_it_was(tmp_path: Path) -> None:
    good = write(tmp_path, "gates: [{id: a, check: x}]\n")
    bad = write(tmp_path, "gates: [{id: a, check: x}, 3]\n", "bad.yaml")
    assert gc.isenabled()
    load_gates_file(good)
    with pytest.raises(GatesFileError):
        load_gates_file(bad)
    assert gc.isenabled()
    gc.disable()
    try:
        load_gates_file(good)
        assert not gc.isenabled()
    finally:
        gc.enable()


# -- cwd stays inside the root (symlinks resolved) -----------------------------------------


@pytest.mark.parametrize(
    ("body", "line"),
    [
        ("gates:\n  - id: a\n    check: make\n    cwd: out\n", 4),
        ("gates:\n  - id: a\n    check: make\n    cwd: sub/out/deeper\n", 4),
        ("defaults:\n  cwd: out\ngates:\n  - id: a\n    check: make\n", 2),
        ("gates:\n  - id: a\n    check: make\n    cwd:\n      sub/up\n", 5),
    ],
)
def test_a_cwd_that_leaves_the_root_through_a_symlink_is_refused(
    tmp_path: Path, body: str, line: int
) -> None:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (root / "out").symlink_to(tmp_path / "outside")
    (root / "sub" / "out").symlink_to(tmp_path / "outside")
    (root / "sub" / "up").symlink_to("..", target_is_directory=True)  # up to root: inside
    (root / "sub" / "up2").symlink_to("../..", target_is_directory=True)
    body = body.replace("sub/up\n", "sub/up2\n")
    error = load_error(root, body)
    assert (error.path, error.line, error.key) == (root / "gates.yaml", line, "cwd"), str(error)
    assert "outside the root through a symbolic link" in error.message
    assert str(tmp_path) in error.message


def test_a_cwd_through_a_symlink_that_stays_inside_is_fine(tmp_path: Path) -> None:
    (tmp_path / "real" / "deep").mkdir(parents=True)
    (tmp_path / "link").symlink_to("real/deep")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "up").symlink_to("..")
    gate = one_gate(tmp_path, "- id: a\n  check: make\n  cwd: link\n")
    assert gate.cwd == "link"
    gate = one_gate(tmp_path, "- id: a\n  check: make\n  cwd: sub/up/not-yet\n")
    assert gate.cwd == "sub/up/not-yet"


# -- the first wrong value in file order is the one reported, whatever the hash seed ---------

# One wrong value per key a gate may hold, each on its own line.
WRONG_VALUES = {
    "type": "[1]",
    "claim": "[1]",
    "check": "[1]",
    "expect": "x",
    "timeout": "x",
    "cwd": "/abs",
    "env": "x",
    "tools": "x",
    "red": "x",
    "red_exit": "x",
    "overlay": "x",
    "inputs": "x",
    "stale_at": "x",
}
WRONG_DEFAULTS = {key: WRONG_VALUES[key] for key in sorted(DEFAULT_KEYS)}


def _rotations(keys: list[str]) -> list[list[str]]:
    return [keys[index:] + keys[:index] for index in range(len(keys))]


@pytest.mark.parametrize("keys", _rotations(sorted(WRONG_VALUES)), ids=lambda keys: keys[0])
def test_a_gate_reports_its_first_wrong_value_in_file_order(
    tmp_path: Path, keys: list[str]
) -> None:
    body = "".join(f"    {key}: {WRONG_VALUES[key]}\n" for key in keys)
    path = write(tmp_path, "gates:\n  - id: many\n" + body)
    with pytest.raises(GatesFileError) as caught:
        load_gates_file(path)
    assert (caught.value.line, caught.value.key) == (3, keys[0]), caught.value


@pytest.mark.parametrize("keys", _rotations(sorted(WRONG_DEFAULTS)), ids=lambda keys: keys[0])
def test_defaults_report_their_first_wrong_value_in_file_order(
    tmp_path: Path, keys: list[str]
) -> None:
    body = "".join(f"  {key}: {WRONG_DEFAULTS[key]}\n" for key in keys)
    path = write(tmp_path, "defaults:\n" + body + "gates:\n  - id: g\n    check: python -V\n")
    with pytest.raises(GatesFileError) as caught:
        load_gates_file(path)
    assert (caught.value.line, caught.value.key) == (2, keys[0]), caught.value


def test_the_error_reported_does_not_depend_on_the_hash_seed(tmp_path: Path) -> None:
    """Key sets iterate in an order that changes with PYTHONHASHSEED; the loader's must not."""
    path = write(tmp_path, "gates:\n  - id: g\n    expect: x\n    timeout: x\n    tools: x\n")
    probe = (
        "from pytest_vgate.gatesfile import load_gates_file as f\n"
        "try: f(%r)\nexcept Exception as e: print(e.key)"
    )
    keys = {
        subprocess.run(
            [sys.executable, "-c", probe % str(path)],
            capture_output=True, text=True, timeout=120,
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
        ).stdout.strip()
        for seed in range(8)
    }  # fmt: skip
    assert keys == {"expect"}


# A wrong value for each key no other; a key added to the vocabulary must add its own.
WRONG_ELSEWHERE = {
    "id": "[1]",
    "verifier": "[1]",
    "verifiers": "x",
    **{alias: WRONG_VALUES[canonical] for alias, canonical in ALIASES.items()},
}
WRONG_TOP = {"root": "[1]", "defaults": "[1]", "gates": "x", "citations": "x"}


def _every_key_case() -> list[tuple[str, str, int]]:
    """(where, text, line of the wrong value) for every key of the real vocabulary."""
    wrong = {**WRONG_VALUES, **WRONG_ELSEWHERE}
    assert GATE_KEYS | ALIASES.keys() <= wrong.keys(), "a new gate key needs a wrong value"
    assert WRONG_TOP.keys() >= TOP_LEVEL_KEYS, "a new top-level key needs a wrong value"
    cases = []
    for key in sorted(GATE_KEYS | ALIASES.keys()):
        if key == "id":
            cases.append(("gate.id", f"gates:\n  - id: {wrong[key]}\n", 2))
            continue
        python = "    type: python\n" if key.startswith("verifier") else ""
        text = f"gates:\n  - id: g\n{python}    {key}: {wrong[key]}\n"
        cases.append((f"gate.{key}", text, len(text.splitlines())))
    for key in sorted(DEFAULT_KEYS):
        text = f"defaults:\n  {key}: {wrong[key]}\ngates:\n  - id: g\n    check: python -V\n"
        cases.append((f"defaults.{key}", text, 2))
    for key in sorted(TOP_LEVEL_KEYS):
        rest = "" if key == "gates" else "gates:\n  - id: g\n    check: python -V\n"
        cases.append((key, f"{key}: {WRONG_TOP[key]}\n{rest}", 1))
    return cases


@pytest.mark.parametrize(("where", "text", "line"), _every_key_case(), ids=lambda v: str(v)[:20])
def test_a_wrong_value_of_every_key_names_file_line_and_key(
    tmp_path: Path, where: str, text: str, line: int
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(GatesFileError) as caught:
        load_gates_file(path)
    key = where.rsplit(".", 1)[-1]
    assert (caught.value.path, caught.value.line, caught.value.key) == (path, line, key)
    assert str(caught.value).startswith(f"{path}:{line}: [{key}] ")
