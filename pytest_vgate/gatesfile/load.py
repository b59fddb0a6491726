"""Loading and validating ``gates.yaml`` into the typed model (``load_gates_file``).

Every problem a user can fix is a ``GatesFileError`` naming ``FILE:LINE`` and the key.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

from pytest_vgate.gatesfile import values
from pytest_vgate.gatesfile.kinds import GateKind, kind_of
from pytest_vgate.gatesfile.model import (
    ALIASES,
    DEFAULT_KEYS,
    GATE_KEYS,
    TOP_LEVEL_KEYS,
    EnvSpec,
    Gate,
    GatesFile,
    GatesFileError,
    GateType,
    RedPolicy,
)
from pytest_vgate.gatesfile.yamlnodes import YamlError, gc_paused, load_yaml
from pytest_vgate.process.regular import read_regular

_SAME_VALUE = {**ALIASES, "verifier": "verifiers"}  # keys that may not be given together
# Built once, not per gate: the keys a gate may have and the hint for top-level keys in one.
_GATE_KNOWN = GATE_KEYS | ALIASES.keys()
_TOP_HINT = dict.fromkeys(TOP_LEVEL_KEYS, "it belongs at the top level of the file. ")
_NO_ENV = EnvSpec()  # frozen, so one instance serves every gate without `env`


class _Where:
    """Where a mapping came from, so every problem names FILE:LINE and the key."""

    def __init__(self, shown: Path | str, data: Mapping[Any, Any], line: int) -> None:
        self.shown = shown
        self.data = data
        self.line = getattr(data, "line", line) or line

    def key_line(self, key: Any) -> int:
        return int(getattr(self.data, "key_lines", {}).get(key, self.line))

    def value_line(self, key: Any) -> int:
        return int(getattr(self.data, "value_lines", {}).get(key, self.key_line(key)))

    def fail(self, line: int | None, key: str | None, message: str) -> NoReturn:
        raise GatesFileError(self.shown, line, key, message)

    def parse(self, key: str, func: Any, *args: Any, **kwargs: Any) -> Any:
        """Run a value rule on ``data[key]``; its BadValue becomes a GatesFileError."""
        try:
            return func(key, self.data[key], *args, **kwargs)
        except values.BadValue as exc:
            self.bad_value(key, exc)

    def bad_value(self, key: str, exc: values.BadValue) -> NoReturn:
        """A value rule's refusal of ``data[key]`` as a GatesFileError at its line."""
        self.fail(exc.line or self.value_line(key), key, exc.message)

    def check_keys(self, known: frozenset[str], what: str, misplaced: Mapping[str, str]) -> None:
        if known.issuperset(self.data):  # the usual case: every key known (and so text)
            return
        for key in self.data:
            if not isinstance(key, str):
                self.fail(
                    self.line, None, f"{what} has a key that is not text ({key!r:.40}); quote it"
                )
            if key in known:
                continue
            hint = misplaced.get(key, "")
            if not hint:
                close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.6)
                hint = f"did you mean `{close[0]}`? " if close else ""
            self.fail(
                self.key_line(key),
                key,
                f"unknown key `{key[:60]}` in {what}; {hint}known keys: {', '.join(sorted(known))}",
            )


def _check_cwd(shown: Path | str, root: Path, cwd: str, line: int | None, key: str) -> None:
    """A ``cwd`` that reaches outside the root through a symlink is refused here, at load.

    ``values.rel_path`` already refused `..`, `/` and `~`; what remains is a symlink in
    the path. A folder that does not exist yet is judged by its existing part.
    """
    if cwd == ".":
        return
    real = os.path.realpath(os.path.join(root, cwd))
    root_real = os.path.realpath(root)
    if os.path.commonpath([real, root_real]) != root_real:
        raise GatesFileError(
            shown,
            line,
            key,
            f"`{key}` {cwd!r} leads outside the root through a symbolic link (it resolves to "
            f"{real}, the root is {root_real}); a check runs inside the root: point `{key}` "
            "at a real folder inside it",
        )


def _resolve(shown: Path | str, path: Path, key: str | None, line: int | None = None) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError, ValueError) as exc:  # loops (< 3.13), NUL in the path
        raise GatesFileError(shown, line, key, f"cannot resolve {path!r}: {exc}") from None


def load_gates_file(path: Path | str) -> GatesFile:
    """Read, validate and normalise a gates file; every problem is a GatesFileError."""
    shown = Path(path)
    try:
        raw = read_regular(shown)  # a named pipe or device is refused, never read
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        raise GatesFileError(
            shown, None, None, f"cannot read the gates file ({exc}); check the path"
        ) from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise GatesFileError(
            shown, line, None, f"the file is not UTF-8 text ({exc.reason}); save it as UTF-8"
        ) from None
    with gc_paused():
        return _load_text(shown, text)


def _load_text(shown: Path, text: str) -> GatesFile:
    try:
        data = load_yaml(text)
    except YamlError as exc:
        raise GatesFileError(shown, exc.line, exc.key, exc.message) from None
    if data is None:
        raise GatesFileError(shown, 1, None, "the gates file is empty; write `gates:` with a list")
    if not isinstance(data, Mapping):
        hint = " (put the list under a `gates:` key)" if isinstance(data, list) else ""
        line = getattr(data, "line", 1)
        raise GatesFileError(
            shown, line, None, f"the top level must be a mapping with `gates:`{hint}"
        )
    top = _Where(shown, data, 1)
    gate_hint = dict.fromkeys(GATE_KEYS, "this key belongs to one gate, inside `gates:`. ")
    top.check_keys(TOP_LEVEL_KEYS, "the top level", {**gate_hint, **_alias_hints(gate_hint)})
    source = _resolve(shown, shown, None)
    folder = source.parent
    root = folder
    if "root" in data:
        root_text = top.parse("root", values.text)
        line = top.value_line("root")
        root = _resolve(shown, folder / root_text, "root", line) if root_text.strip() else folder
        if not root.is_dir():
            top.fail(
                top.value_line("root"),
                "root",
                f"root {root_text!r} is not a folder (resolved to {root}); the root is "
                "relative to the gates file's folder",
            )
    defaults = _parse_defaults(shown, data.get("defaults", {}), top.value_line("defaults"))
    if "cwd" in defaults:
        located = data.get("defaults")
        line = getattr(located, "value_lines", {}).get("cwd", top.value_line("defaults"))
        _check_cwd(shown, root, defaults["cwd"], line, "cwd")
    gates = _parse_gates(top, root=root, source=source, defaults=defaults)
    citations = _parse_citations(top, folder=folder, root=root)
    if not gates and not citations:
        top.fail(1, "gates", "the file declares nothing to check; add gates under `gates:`")
    return GatesFile(source, root, gates, citations, defaults.get("tools", ()))


def _alias_hints(hints: Mapping[str, str]) -> dict[str, str]:
    return {alias: hints[canonical] for alias, canonical in ALIASES.items()}


def _parse_gates(
    top: _Where, *, root: Path, source: Path, defaults: Mapping[str, Any]
) -> tuple[Gate, ...]:
    entries = top.data.get("gates", [])
    if not isinstance(entries, list):
        top.fail(top.value_line("gates"), "gates", "`gates` must be a list of gates (`- id: ...`)")
    gates: list[Gate] = []
    first_line: dict[str, int] = {}
    item_lines = getattr(entries, "item_lines", [])
    for index, entry in enumerate(entries):
        line = item_lines[index] if index < len(item_lines) else top.value_line("gates")
        gate = _build_gate(
            entry, shown=top.shown, line=line, root=root, source=source, defaults=defaults
        )
        if gate.id in first_line:
            top.fail(
                gate.line,
                "id",
                f"duplicate gate id {gate.id!r} on lines {first_line[gate.id]} and {gate.line}; "
                "gate ids must be unique: rename one",
            )
        first_line[gate.id] = gate.line
        gates.append(gate)
    return tuple(gates)


def _parse_citations(top: _Where, *, folder: Path, root: Path) -> tuple[Path, ...]:
    patterns = top.data.get("citations", [])
    if not isinstance(patterns, list):
        top.fail(
            top.value_line("citations"),
            "citations",
            f"`citations` must be a list of file names or globs, got {values.describe(patterns)}; "
            "e.g. `citations: [answer.md]`",
        )
    found: set[Path] = set()
    item_lines = getattr(patterns, "item_lines", [])
    for index, pattern in enumerate(patterns):
        line = item_lines[index] if index < len(item_lines) else top.value_line("citations")
        if not isinstance(pattern, str) or not pattern.strip() or "\x00" in pattern:
            top.fail(
                line,
                "citations",
                f"each citation entry must be a file name or glob, got {values.describe(pattern)}",
            )
        if os.path.isabs(pattern) or pattern.startswith("~"):
            top.fail(
                line,
                "citations",
                f"citation {pattern!r} is absolute; write it relative to the gates file's folder",
            )
        # Not glob.glob: its ``**`` follows directory symlinks and never ends on a link
        # back up the tree. Special files stay in, to be reported (and never read).
        from pytest_vgate.citations.documents import expand

        documents = expand(pattern, folder)
        if not documents:
            top.fail(
                line,
                "citations",
                f"citation pattern {pattern!r} matches no file (looked in {folder}); "
                "fix the name or remove the entry",
            )
        for document in documents:
            if not (document.is_relative_to(root) or document.is_relative_to(folder)):
                top.fail(
                    line,
                    "citations",
                    f"citation document {document} lies outside the root and the gates "
                    "file's folder (after symlinks); move it inside",
                )
        found.update(documents)
    return tuple(sorted(found))


def _parse_defaults(shown: Path | str, data: Any, line: int) -> dict[str, Any]:
    """Validate ``defaults``; returns the normalised values by key (absent keys absent)."""
    if not isinstance(data, Mapping):
        raise GatesFileError(
            shown, line, "defaults", f"`defaults` must be a mapping, got {values.describe(data)}"
        )
    where = _Where(shown, data, line)
    gate_only = dict.fromkeys(GATE_KEYS - DEFAULT_KEYS, "it can only be set per gate. ")
    where.check_keys(DEFAULT_KEYS, "`defaults`", {**gate_only, **_alias_hints(gate_only)})
    # In file order (a frozenset's order changes with the hash seed): the first wrong
    # value in the file is the one reported, the same on every run.
    return {key: _COMMON[key](where, key) for key in data if key in DEFAULT_KEYS}


_COMMON: dict[str, Any] = {
    "timeout": lambda w, k: w.parse(k, values.timeout),
    "env": lambda w, k: EnvSpec(*w.parse(k, values.env)),
    "tools": lambda w, k: w.parse(k, values.names, what="tool names", example="`tools: [python]`"),
    "expect": lambda w, k: w.parse(k, values.exit_codes),
    "cwd": lambda w, k: w.parse(k, values.rel_path),
    "red": lambda w, k: _enum(w, k, RedPolicy),
}


def _enum(where: _Where, key: str, kind: type[GateType] | type[RedPolicy]) -> Any:
    value = where.data[key]
    choices = [member.value for member in kind]
    if isinstance(value, str) and value in choices:
        return kind(value)
    close = difflib.get_close_matches(value, choices, n=1) if isinstance(value, str) else []
    hint = f"did you mean `{close[0]}`? " if close else ""
    where.fail(
        where.value_line(key),
        key,
        f"`{key}` must be one of {' | '.join(choices)}, got {values.describe(value)}; {hint}"
        "write it exactly",
    )


def _merge_env(base: EnvSpec | None, own: EnvSpec | None) -> EnvSpec:
    """Defaults and gate env united: pass lists joined, set mappings merged (gate wins)."""
    if base is None or own is None:
        return own or base or _NO_ENV
    passed = tuple(dict.fromkeys((*base.pass_names, *own.pass_names)))
    return EnvSpec(passed, tuple({**dict(base.set_values), **dict(own.set_values)}.items()))


def gate_from_mapping(
    data: Mapping[str, Any],
    *,
    root: Path,
    source: Path | None = None,
    line: int = 0,
    defaults: Mapping[str, Any] | None = None,
) -> Gate:
    """Validate one gate given as plain data, exactly as inside a gates file."""
    shown: Path | str = source if source is not None else "<gate>"
    merged = _parse_defaults(shown, defaults if defaults is not None else {}, line)
    resolved = _resolve(shown, Path(root), "root")
    return _build_gate(data, shown=shown, line=line, root=resolved, source=source, defaults=merged)


def _canonical_keys(where: _Where) -> dict[str, str]:
    """Canonical key -> the spelling the user used; two spellings of one key are refused."""
    if _SAME_VALUE.keys().isdisjoint(where.data):  # the usual case: no alias, no `verifier`
        return {key: key for key in where.data}
    given: dict[str, str] = {}
    for key in map(str, where.data):  # check_keys made sure every key is text
        canonical = _SAME_VALUE.get(key, key)
        if canonical in given:
            where.fail(
                where.key_line(key),
                key,
                f"`{key}` and `{given[canonical]}` both give `{canonical}`; keep one",
            )
        given[canonical] = key
    return given


def _check_kind_keys(where: _Where, kind: GateKind, given: Mapping[str, str]) -> None:
    """The keys a gate kind needs, then the keys it refuses (its row in ``spec.kinds``)."""
    for key, message in kind.required.items():
        if key not in given:
            where.fail(where.line, key, message)
    for key, message in kind.refused.items():
        if key in given:
            where.fail(where.key_line(given[key]), given[key], message)


def _build_gate(
    data: Any,
    *,
    shown: Path | str,
    line: int,
    root: Path,
    source: Path | None,
    defaults: Mapping[str, Any],
) -> Gate:
    if not isinstance(data, Mapping):
        raise GatesFileError(
            shown,
            line,
            None,
            f"a gate must be a mapping with at least `id` and `check`, got {values.describe(data)}",
        )
    where = _Where(shown, data, line)
    where.check_keys(_GATE_KNOWN, "a gate", _TOP_HINT)
    given = _canonical_keys(where)
    if "id" not in data:
        where.fail(
            where.line,
            "id",
            "this gate has no `id`; add `id: <name>` (letters, digits, `.`, `_`, `-`)",
        )
    # Every value in file order, so the first wrong one in the file is the one reported
    # (the same on every run); rules that join keys (the kind's keys) come after.
    kind = _kind_hint(data, given)
    own: dict[str, Any] = {}
    claim = check = ""
    argv: tuple[str, ...] = ()
    gate_type = GateType.COMMAND
    parsed: dict[str, Any] = {}
    for key in data:
        canonical = _SAME_VALUE.get(key, key)
        if canonical == "id":
            parsed["id"] = where.parse(key, values.gate_id)
        elif canonical in _COMMON:
            own[canonical] = _COMMON[canonical](where, key)
        elif canonical == "type":
            gate_type = _enum(where, key, GateType)
        elif canonical == "claim":
            claim = _text(where, key)
        elif canonical == "check":
            check = _text(where, key)
            if kind is not None and kind.runs_argv:
                try:
                    argv = values.argv(key, check)
                except values.BadValue as exc:
                    where.bad_value(key, exc)
        elif canonical in _LIST_RULES:
            parsed[canonical] = where.parse(key, _LIST_RULES[canonical])
    gate_id = parsed["id"]
    common = defaults
    env = defaults.get("env") or _NO_ENV
    if own:  # keys of its own that `defaults` may also give
        if "cwd" in own:
            _check_cwd(shown, root, own["cwd"], where.value_line("cwd"), "cwd")
        common = {**defaults, **own}
        env = _merge_env(defaults.get("env"), own.get("env"))
    kind = kind_of(gate_type)
    _check_kind_keys(where, kind, given)
    return _new_gate(
        {
            "id": gate_id,
            "type": gate_type,
            "claim": claim,
            "check": check,
            "argv": argv,
            "expect": common.get("expect", (0,)),
            "timeout": common.get("timeout"),
            "cwd": common.get("cwd", "."),
            "env": env,
            "tools": common.get("tools", ()),
            "red": common.get("red", RedPolicy.REQUIRED),
            "red_exit": parsed.get("red_exit"),
            "overlay": parsed.get("overlay", ()),
            "inputs": parsed.get("inputs", ()),
            "stale_at": parsed.get("stale_at"),
            "verifiers": parsed.get("verifiers", ()),
            "root": root,
            "source": source,
            "line": where.line,
        }
    )


# Keys no `defaults` gives, with their value rule (``verifier`` arrives as ``verifiers``).
_LIST_RULES: dict[str, Any] = {
    "red_exit": values.exit_codes,
    "overlay": values.rel_paths,
    "inputs": values.rel_paths,
    "stale_at": values.stale_at,
    "verifiers": values.verifier_refs,
}


_TYPES = frozenset(member.value for member in GateType)


def _kind_hint(data: Mapping[str, Any], given: Mapping[str, str]) -> GateKind | None:
    """The gate's kind, read ahead so that ``check`` is split where it stands in the file;
    None when ``type`` is wrong (the loop reports it at its own line)."""
    if "type" not in given:
        return kind_of(GateType.COMMAND)
    value = data[given["type"]]
    if isinstance(value, str) and value in _TYPES:
        return kind_of(GateType(value))
    return None


def _text(where: _Where, key: str) -> str:
    """``values.text`` (nullable) of ``data[key]``, without its call for plain text."""
    value = where.data[key]
    if isinstance(value, str):
        return value
    text: str = where.parse(key, values.text, nullable=True)
    return text


def _new_gate(fields: dict[str, Any]) -> Gate:
    """``Gate(**fields)`` without the frozen dataclass's ``__init__`` (one
    ``object.__setattr__`` per field, ~2 us of the ~9 us a gate takes to load): the same
    object, with every field given (tests/test_spec.py compares them)."""
    gate: Gate = object.__new__(Gate)
    gate.__dict__.update(fields)
    return gate
