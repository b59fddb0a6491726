"""Files the session itself writes into the tree (junit XML, the JSON report, SARIF, the
page) never change the tree's identity, whether they are named on the command line or in
the ini file: a second run on the same commit is the same tree, not "+dirty"."""

from __future__ import annotations

import re

import pytest
from helpers.git_repo import git

GATES = "gates:\n  - id: ok\n    check: python -c pass\n"
WAYS = {
    "ini-sarif": ("vgate_sarif = out/vgate.sarif", ()),
    "ini-report": ("vgate_report = out/vgate.json", ()),
    "ini-junit": ("addopts = --junitxml=out/junit.xml", ()),
    "cli-sarif": ("", ("--vgate-sarif", "out/vgate.sarif")),
    "cli-report": ("", ("--vgate-report", "out/vgate.json")),
    "ini-html": ("vgate_html = out/vgate.html", ()),
    "cli-html": ("", ("--vgate-html", "out/vgate.html")),
}


@pytest.mark.parametrize("way", list(WAYS))
def test_a_second_run_on_the_same_commit_is_the_same_tree(
    pytester: pytest.Pytester, way: str
) -> None:
    ini, args = WAYS[way]
    pytester.makefile(".yaml", gates=GATES)
    pytester.makeini(f"[pytest]\nvgate = gates.yaml\n{ini}\n")
    # pytester's own files for each run (its output, its basetemp) are not the session's.
    (pytester.path / ".gitignore").write_text("stdout\nstderr\nrunpytest-*\n")
    git(pytester.path, "init", "-q", ".")
    git(pytester.path, "add", "-A")
    git(pytester.path, "commit", "-q", "-m", "gates")
    labels = []
    for _ in range(2):
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)
        assert result.ret == pytest.ExitCode.OK, result.stdout.str()
        found = re.search(r"\(now = (\S+)\)", result.stdout.str())
        assert found, result.stdout.str()
        labels.append(found[1])
    assert list((pytester.path / "out").iterdir()), "the session wrote its file"
    assert labels[0] == labels[1] and "dirty" not in labels[1], labels
