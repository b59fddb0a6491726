"""Untrusted text in CI channels: under GitHub Actions, what a check prints, a claim's
lines and a verifier's message never start a workflow command, and the job summary
renders them as text.

The runner acts on a line that starts (after blanks) with ``::command``, unless commands
are stopped with ``::stop-commands::TOKEN`` until ``::TOKEN::``. ``runner_commands``
reads stdout the way the runner does and returns the commands it would act on.
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

import pytest

PY = shlex.quote(sys.executable)
HOSTILE = [
    "::error::pwned by the check",
    "::add-mask::hunter2",
    "  ::warning file=x.py,line=1::indented",
    "</td></tr></table><img src=https://evil.example/x.png>",
]
CHECK = "; ".join(f"print({line!r})" for line in HOSTILE) + "; raise SystemExit(1)"
GATES = f"""\
gates:
  - id: shouts
    claim: |
      a claim on several lines
      ::error::from the claim
      <b>bold</b>
    check: {PY} -c {shlex.quote(CHECK)}
  - id: verifier-shouts
    type: python
    claim: the verifier says no
    verifiers: ["hostile:says"]
"""
VERIFIER = (
    "from pytest_vgate import Outcome\n\n\ndef says(ctx):\n"
    "    return Outcome.failed('</td></tr></table><img src=https://evil.example/x.png> "
    "<script>alert(1)</script>\\n::error::from the verifier\\n::add-mask::again')\n"
)
OURS = re.compile(r"::(error|warning) (file=[^,:]*,)?(line=\d+,)?title=[^:]*::[^\r\n]*")


def runner_commands(stdout: str) -> tuple[list[str], list[str]]:
    """(commands the runner acts on, stop tokens seen), as the runner reads stdout."""
    acted: list[str] = []
    tokens: list[str] = []
    stopped: str | None = None
    for raw in stdout.splitlines():
        line = raw.strip()
        if stopped is not None:
            if line == f"::{stopped}::":
                stopped = None
            continue
        if line.startswith("::stop-commands::"):
            stopped = line.removeprefix("::stop-commands::")
            tokens.append(stopped)
        elif line.startswith("::") or line.startswith("##["):
            acted.append(line)
    return acted, tokens


@pytest.fixture
def github(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    summary = pytester.path / "summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_WORKSPACE", str(pytester.path))
    (pytester.path / "gates.yaml").write_text(GATES, encoding="utf-8")
    (pytester.path / "hostile.py").write_text(VERIFIER, encoding="utf-8")
    return summary


def test_untrusted_text_starts_no_workflow_command(
    pytester: pytest.Pytester, github: Path, dist_args: list[str]
) -> None:
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--vgate", "gates.yaml", "-rA", *dist_args
    )
    assert result.ret == 1
    out = result.stdout.str()
    assert "::add-mask::hunter2" in out and "::error::from the claim" in out  # printed, inert
    assert "::error::from the verifier" in out
    acted, tokens = runner_commands(out)
    assert acted, out  # our own annotations are acted on
    for line in acted:
        assert OURS.fullmatch(line), line  # nothing but our own annotations
    assert len(tokens) == len(set(tokens)) >= 2
    assert all(re.fullmatch(r"vgate-[0-9a-f]{32}", t) for t in tokens), tokens
    assert runner_commands(out + "\n::error::after the session")[0][-1].endswith("session")
    text = github.read_text(encoding="utf-8")
    for tag in ("<img", "</td>", "<script", "<b>"):
        assert tag not in text, text
    assert "&lt;/td&gt;&lt;/tr&gt;&lt;/table&gt;&lt;img src=" in text, text


def test_verify_prints_no_workflow_command_but_its_own(
    pytester: pytest.Pytester, github: Path
) -> None:
    import subprocess

    report = pytester.path / "report.json"
    pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--vgate", "gates.yaml", f"--vgate-report={report}"
    )
    github.write_text("")
    result = subprocess.run(
        [sys.executable, "-m", "pytest_vgate", "verify", str(report)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    acted, tokens = runner_commands(result.stdout)
    assert tokens and acted, result.stdout
    for line in acted:
        assert line.startswith("::error title=pytest-vgate verify::"), line
    assert all("\n" not in line for line in acted)
    text = github.read_text(encoding="utf-8")
    assert "## pytest-vgate verify" in text and "<script" not in text and "<img" not in text


def test_sarif_uris_resolve_to_the_file_meant(pytester: pytest.Pytester) -> None:
    """A folder named ``qa checks#1 100%``: each URI, resolved as RFC 3986 says against
    its base, names that folder's file (``#`` is no fragment, ``%`` no escape)."""
    from urllib.parse import unquote, urljoin, urlsplit

    from helpers.report import read_sarif

    folder = pytester.path / "qa checks#1 100%"
    folder.mkdir()
    (folder / "gates.yaml").write_text(
        f'gates:\n  - id: answers-no\n    check: {PY} -c "raise SystemExit(1)"\n', encoding="utf-8"
    )
    sarif = pytester.path / "out.sarif"
    pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--vgate", str(folder / "gates.yaml"), f"--vgate-sarif={sarif}"
    )
    run = read_sarif(sarif)["runs"][0]
    bases = {k: v["uri"] for k, v in run["originalUriBaseIds"].items()}
    (result,) = run["results"]
    artifact = result["locations"][0]["physicalLocation"]["artifactLocation"]
    uri = (
        urljoin(bases[artifact["uriBaseId"]], artifact["uri"])
        if "uriBaseId" in artifact
        else artifact["uri"]
    )
    parts = urlsplit(uri)
    assert parts.scheme == "file" and not parts.fragment and not parts.query, uri
    assert Path(unquote(parts.path)) == (folder / "gates.yaml").resolve()
