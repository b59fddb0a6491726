"""End to end: a declared tool is its inventory identity however a check reaches it.

Real pytest sessions, plain and ``-n 2``. ``mytool`` is declared by every gate; the
checks start it through ``sh -c``, ``env`` or a script of the tree, and a verifier through
a script it runs with ``ctx.run``. An earlier gate of the session writes a forged
``.toolchain/bin/mytool`` (the genuine one is on PATH), or rewrites the pinned one.
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

GENUINE = "#!/bin/sh\necho genuine\n"
FORGED = "#!/bin/sh\necho forged\n"
# Each later gate waits for the forgery (under -n 2 it may start on the other worker).
WAIT = "while [ ! -e .toolchain/bin/done ]; do sleep 0.05; done; "
ASK = '[ "$(mytool)" = genuine ]'


def _write(path: Path, text: str, mode: int = 0o755) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)


def _gates(pytester: pytest.Pytester, forge: str) -> None:
    _write(pytester.path / "forge.sh", f"#!/bin/sh\n{forge}\ntouch .toolchain/bin/done\n")
    _write(pytester.path / "scripts" / "ask.sh", f"#!/bin/sh\n{WAIT}{ASK}\n")
    (pytester.path / "checks.py").write_text(
        textwrap.dedent("""\
        def ask(ctx):
            return ctx.run("sh", "scripts/ask.sh").exit_code == 0
        """),
        encoding="utf-8",
    )
    (pytester.path / "gates.yaml").write_text(
        textwrap.dedent(f"""\
        gates:
          - {{id: forge, check: ./forge.sh, tools: [./forge.sh, mytool]}}
          - id: through-sh
            check: sh -c '{WAIT}{ASK}'
            tools: [sh, mytool]
          - id: through-env
            check: sh -c '{WAIT}env mytool | grep -qx genuine'
            tools: [sh, mytool]
          - {{id: through-script, check: ./scripts/ask.sh, tools: [./scripts/ask.sh, mytool]}}
          - {{id: verifier, type: python, tools: [sh, mytool], verifiers: ['checks:ask']}}
        """),
        encoding="utf-8",
    )


def _run(pytester: pytest.Pytester, run_vgate, monkeypatch: pytest.MonkeyPatch, path: str):  # type: ignore[no-untyped-def]
    """The session's gate entries by id; ``path`` goes first on the session's PATH."""
    report = pytester.path / "report.json"
    monkeypatch.setenv("PATH", f"{path}{os.pathsep}{os.environ['PATH']}")
    run_vgate("--vgate", "gates.yaml", f"--vgate-report={report}")
    return {g["id"]: g for g in json.loads(report.read_text())["gates"]}


def test_a_toolchain_entry_written_by_an_earlier_gate_never_answers_for_a_declared_tool(
    pytester: pytest.Pytester,
    run_vgate,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    genuine = pytester.path / "vendor" / "mytool"
    _write(genuine, GENUINE)
    _gates(pytester, f"printf '{FORGED}' > .toolchain/bin/mytool; chmod +x .toolchain/bin/mytool")
    (pytester.path / ".toolchain" / "bin").mkdir(parents=True)
    gates = _run(pytester, run_vgate, monkeypatch, str(genuine.parent))
    assert (pytester.path / ".toolchain/bin/mytool").read_text() == FORGED  # it was written
    modes = {gid: g["mode"] for gid, g in gates.items()}
    assert modes == dict.fromkeys(gates, "pass"), modes  # each ran the genuine mytool
    [tool] = [t for t in gates["through-sh"]["tools"] if t["id"] == "mytool"] or [None]
    assert tool is None or tool["path"] == str(genuine)


def test_a_pinned_tool_rewritten_by_an_earlier_gate_is_sandbox_when_reached_indirectly(
    pytester: pytest.Pytester,
    run_vgate,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _write(pytester.path / ".toolchain" / "bin" / "mytool", GENUINE)
    _gates(pytester, f"printf '{FORGED}' > .toolchain/bin/mytool")  # same inode, new bytes
    gates = _run(pytester, run_vgate, monkeypatch, os.defpath)
    modes = {gid: (g["mode"], g["cause"]) for gid, g in gates.items()}
    indirect = {gid: m for gid, m in modes.items() if gid != "forge"}
    assert indirect == dict.fromkeys(indirect, ("sandbox", "environment")), modes
    assert "mytool" in gates["through-env"]["detail"]


def test_a_shim_rewritten_by_an_earlier_check_never_answers_for_a_later_one(
    pytester: pytest.Pytester,
    run_vgate,  # type: ignore[no-untyped-def]
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The folder of shims first on a check's PATH serves the next checks too: one that
    a check rewrote is made anew before another check gets it."""
    genuine = pytester.path / "vendor" / "mytool"
    _write(genuine, GENUINE)
    (pytester.path / ".toolchain" / "bin").mkdir(parents=True)
    _write(
        pytester.path / "forge.sh",
        f"""#!/bin/sh
        d=${{PATH%%:*}}
        chmod u+w "$d" "$d/mytool" && printf '{FORGED}' > "$d/mytool"
        [ "$(mytool)" = forged ] && touch .toolchain/bin/done
        """.replace("        ", ""),
    )
    (pytester.path / "gates.yaml").write_text(
        textwrap.dedent(f"""\
        gates:
          - {{id: forge, check: sh forge.sh, tools: [sh, mytool]}}
          - id: through-sh
            check: sh -c '{WAIT}{ASK}'
            tools: [sh, mytool]
        """),
        encoding="utf-8",
    )
    gates = _run(pytester, run_vgate, monkeypatch, str(genuine.parent))
    modes = {gid: g["mode"] for gid, g in gates.items()}
    assert modes == {"forge": "pass", "through-sh": "pass"}, modes  # forged, then genuine
