"""The page (``--vgate-html``), opened in a real headless browser: Debian's chromium driven
by Playwright, on a real ``--vgate-base`` session over the bug/fix repository.

The browser checks what a reviewer sees: a row per gate with its status, the filter, the
executed-line marks in a proven gate's diff, hostile text shown as text (no script of it
runs), and not one network request. The screenshot in docs/page.md is of the README's demo
page instead (tests/test_examples.py).
"""

from __future__ import annotations

import html.parser
import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.browser import OpenPage, chromium, open_page
from helpers.gated_repo import PY_DIR, make_gated_repo, run_session
from helpers.git_repo import BugFixRepo
from helpers.report import read_report

from pytest_vgate.exporters.html import build_html

HOSTILE = (
    '<script>window.__vgate_pwned = 1</script></td>"onerror=alert(1) '
    '<img src=x onerror="window.__vgate_pwned = 2">'
)
# Calls add only on the base (whose add subtracts): the red run executes the changed line,
# the green run does not.
BASE_ONLY = (
    "import pathlib; from pkg.mathx import add; "
    "add(1, 1) if 'a - b' in pathlib.Path('pkg/mathx.py').read_text() else None"
)
GATES = f"""\
    gates:
      - id: fix-add
        claim: add adds
        check: python -m pytest -q -p no:cacheprovider tests/test_fix.py::test_add
        env: {{set: {{PYTEST_DISABLE_PLUGIN_AUTOLOAD: "1"}}}}
        tools: [python]
        overlay: [tests/test_fix.py]
      - id: neg-never-red
        claim: neg negates
        check: python -c "from pkg.mathx import neg; assert neg(2) == -2"
        tools: [python]
      - id: base-only
        claim: runs add only where the bug is
        check: python -c "{BASE_ONLY}"
        tools: [python]
      - id: hostile-claim
        claim: {json.dumps(HOSTILE)}
        check: python -c "print('<script>window.__vgate_pwned = 3</script>'); raise SystemExit(1)"
        tools: [python]
        red: not-required
    citations: [answer.md]
"""
ANSWER = (
    "The function `add` is defined at pkg/mathx.py:1.\n"
    "The <script>window.__vgate_pwned = 4</script> `neg` function is at pkg/mathx.py:4.\n"
    "See pkg/mathx.py:90.\n"
)


@pytest.fixture
def page_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dist_args: list[str]
) -> tuple[BugFixRepo, Path, Path, int]:
    """A real session with a base: the page and the JSON report it was built from."""
    monkeypatch.setenv("PATH", PY_DIR + os.pathsep + os.environ["PATH"])
    repo = make_gated_repo(tmp_path, GATES, ANSWER)
    page, report = tmp_path / "out" / "page.html", tmp_path / "out" / "report.json"
    code, text, _ = run_session(
        repo, "page", f"--vgate-html={page}", f"--vgate-report={report}", *dist_args
    )
    assert page.is_file(), text
    return repo, page, report, code


@pytest.fixture
def browser() -> Iterator[Any]:
    with chromium() as launched:
        yield launched


def test_the_page_in_a_real_browser(
    page_session: tuple[BugFixRepo, Path, Path, int], browser: Any
) -> None:
    _, path, report_path, code = page_session
    assert code == 1  # neg-never-red fails under the base, the fabricated citation too
    report = read_report(report_path)
    states = {g["id"]: ("passed" if g["ok"] else "failed") for g in report["gates"]}
    assert states == {
        "fix-add": "passed",
        "neg-never-red": "failed",
        "base-only": "failed",
        "hostile-claim": "failed",
    }

    with open_page(browser, path) as opened:
        _check_the_page(opened, path, states)


def _check_the_page(opened: OpenPage, path: Path, states: dict[str, str]) -> None:
    page, requests = opened.page, opened.requests
    # Not one request beyond the file itself.
    assert set(requests) == {path.as_uri()}, requests

    # A row per gate, with its status; failing gates first.
    rows = page.locator("#verdicts tbody tr")
    shown = [
        (
            rows.nth(i).locator("td").nth(0).inner_text(),
            rows.nth(i).locator("td").nth(1).inner_text(),
        )
        for i in range(rows.count())
    ]
    assert sorted(shown) == sorted(states.items())
    assert [s for _, s in shown] == sorted((s for _, s in shown), key=lambda s: s != "failed")

    # Filtering by "failed" leaves only the failing gates (rows and sections).
    page.click("button[data-filter=failed]")
    visible = [r for r in rows.all() if r.is_visible()]
    assert sorted(r.locator("td").nth(0).inner_text() for r in visible) == [
        "base-only",
        "hostile-claim",
        "neg-never-red",
    ]
    assert all(
        a.get_attribute("data-state") == "failed"
        for a in page.locator("article.gate").all()
        if a.is_visible()
    )
    page.click("button[data-filter=all]")
    assert all(r.is_visible() for r in rows.all())

    # Sorting by a column reorders the rows.
    page.click("#verdicts th:text('gate')")
    assert [r.locator("td").nth(0).inner_text() for r in rows.all()] == sorted(states)

    # The proven gate's diff marks what each run executed: the fixed line by both runs
    # (red on the base side, green on the head side), `def neg` by neither.
    proven = page.locator("article.gate", has=page.locator("h3", has_text="fix-add"))
    base_line = proven.locator('tr.op-del[data-path="pkg/mathx.py"][data-base="2"]')
    head_line = proven.locator('tr.op-add[data-path="pkg/mathx.py"][data-head="2"]')
    assert base_line.locator("[data-red]").get_attribute("data-red") == "executed"
    assert head_line.locator("[data-green]").get_attribute("data-green") == "executed"
    assert head_line.inner_text().endswith("return a + b")
    assert base_line.locator("[data-green]").get_attribute("data-green") == ""  # no such line
    assert head_line.locator("[data-red]").get_attribute("data-red") == ""
    unchanged = proven.locator('tr.line[data-path="pkg/mathx.py"][data-head="5"]')
    assert unchanged.locator("[data-green]").get_attribute("data-green") == ""  # not a change
    # A gate whose red run executed the change and whose green run did not.
    one_sided = page.locator("article.gate", has=page.locator("h3", has_text="base-only"))
    base_line = one_sided.locator('tr.op-del[data-path="pkg/mathx.py"][data-base="2"]')
    head_line = one_sided.locator('tr.op-add[data-path="pkg/mathx.py"][data-head="2"]')
    assert base_line.locator("[data-red]").get_attribute("data-red") == "executed"
    assert head_line.locator("[data-green]").get_attribute("data-green") == "not-executed"

    # Hostile text is text: the claim, the check's output, the citation's words.
    hostile = page.locator("article.gate", has=page.locator("h3", has_text="hostile-claim"))
    assert HOSTILE in hostile.locator("dd").first.inner_text()
    assert "<script>window.__vgate_pwned = 3</script>" in hostile.inner_text()
    assert "<script>window.__vgate_pwned = 4</script>" in page.locator("#citations").inner_text()
    assert page.evaluate("typeof window.__vgate_pwned") == "undefined"
    assert page.locator("img").count() == 0
    assert page.locator("script").count() == 1  # the page's own
    assert opened.errors == []
    assert set(requests) == {path.as_uri()}, requests  # still none, after every click


def test_merge_writes_the_page_from_shard_reports(
    page_session: tuple[BugFixRepo, Path, Path, int], tmp_path: Path
) -> None:
    """The diff rides in the JSON report: merge, with no base worktree, shows it too."""
    repo, _, report, _ = page_session
    gates = {g["id"]: g for g in read_report(report)["gates"]}
    lines = gates["fix-add"]["diff"][0]["hunks"][0]["lines"]
    assert [(d["op"], d["text"]) for d in lines if d["op"] != " "] == [
        ("-", "    return a - b"),
        ("+", "    return a + b"),
    ]
    assert "red: not-required" in gates["neg-never-red"]["advice"]
    merged = tmp_path / "merged.html"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_vgate", "merge", str(report), "--vgate-html", str(merged),
         "--rootdir", str(repo.root)],
        capture_output=True, text=True, timeout=300, cwd=repo.root,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr
    text = merged.read_text(encoding="utf-8")
    assert 'data-path="pkg/mathx.py" data-base="2"' in text
    assert text.count('class="gate-row') == 4


class _Tags(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs += [name for name, _ in attrs]


def test_untrusted_text_never_becomes_markup() -> None:
    """Every text field of a report, hostile, adds no element and no attribute."""
    evil = (
        "<script>alert(1)</script></td></tr>\"onerror=alert(2) 'x' "
        "<img src=x onerror=alert(3)>&amp;"
    )
    report: dict[str, Any] = {
        "gates": [
            {
                "id": evil, "claim": evil, "mode": evil, "cause": evil, "rbg": evil,
                "rbg_reason": evil, "detail": evil, "advice": evil, "source": evil,
                "command": [evil], "stdout": evil, "stderr": evil, "exit_code": 1,
                "duration": 0.5, "ok": False,
                "coverage": {"status": evil, "head_executed": {evil: [1]}},
                "red": {"mode": evil, "stdout": evil, "red_reason": evil},
                "diff": [{"path": evil, "status": evil, "cut": evil, "hunks": [
                    {"base_start": evil, "head_start": evil, "lines": [
                        {"op": evil, "base": evil, "head": 1, "text": evil}]}]}],
                "discrimination": {"status": evil, "killed": evil, "planted": evil,
                    "pseudo_tested": [evil], "mutants": [
                        {"path": evil, "line": 1, "kind": evil, "operator": evil,
                         "before": evil, "after": evil, "killed": False, "mode": evil}]},
            }
        ],
        "citations": [
            {"source": evil, "citation": evil, "location": evil, "status": evil,
             "reason": evil, "corrected_to": evil, "ok": False, "root": "",
             "result": {"citation": {"description": evil}, "cited_text": evil,
                        "corrected_text": evil}}
        ],
    }  # fmt: skip
    clean = dict(report, gates=[{"id": "g", "mode": "fail", "ok": False}], citations=[])
    hostile, plain = _Tags(), _Tags()
    hostile.feed(build_html(report))
    plain.feed(build_html(clean))
    assert "script" in hostile.tags and hostile.tags.count("script") == 1
    assert "img" not in hostile.tags
    assert "onerror" not in hostile.attrs
    assert set(hostile.attrs) <= set(plain.attrs) | {"data-path", "data-base", "data-head",
        "data-red", "data-green", "title", "data-status", "data-value"}  # fmt: skip


def test_the_page_tolerates_a_report_without_optional_fields() -> None:
    """A gate entry with no coverage, diff or discrimination still renders."""
    page = build_html({"gates": [{"id": "bare", "mode": "pass", "ok": True}]})
    assert "bare" in page and "passed" in page


def test_surviving_mutants_show_at_their_line() -> None:
    gate = {
        "id": "g", "mode": "fail", "ok": False,
        "coverage": {"status": "covers", "head_executed": {"m.py": [2]}},
        "diff": [{"path": "m.py", "status": "modified", "hunks": [{"base_start": 1,
            "head_start": 1, "lines": [{"op": "+", "base": None, "head": 2,
            "text": "    return price * 0.9"}]}]}],
        "discrimination": {"status": "undiscriminating", "killed": 0, "planted": 2,
            "reason": "the check passes when `discount` does nothing",
            "pseudo_tested": ["m.py:discount"], "mutants": [
                {"path": "m.py", "line": 2, "kind": "value", "operator": "*->/",
                 "before": "price * 0.9", "after": "price / 0.9", "killed": False, "mode": "pass"},
                {"path": "m.py", "line": 7, "kind": "extreme", "operator": "return None",
                 "before": "body", "after": "return None", "killed": True, "mode": "fail"}]},
    }  # fmt: skip
    page = build_html({"gates": [gate]})
    after_line = page.split('data-head="2"', 1)[1]
    assert 'class="mutant survived"' in after_line.split("</table>", 1)[0]
    assert "mutant survived  m.py:2  price * 0.9 \u2192 price / 0.9" in page
    assert "mutant killed  m.py:7  body \u2192 return None" in page
    assert "0/2 undiscriminating" in page
    assert "0/2 undiscriminating: the check passes when `discount` does nothing" in page


def test_only_changed_lines_that_are_code_carry_marks() -> None:
    """A blank line or a docstring the change added is no code a run could execute: no mark."""
    lines = [
        {"op": "+", "base": None, "head": n, "text": text}
        for n, text in enumerate(['    """Ten percent off."""', "    return price * 0.9", ""], 1)
    ]
    coverage = {"status": "covers", "head_changed": {"m.py": [2]}, "head_executed": {"m.py": [2]}}
    diff = [{"path": "m.py", "status": "modified", "hunks": [{"base_start": 1, "head_start": 1,
             "lines": lines}]}]  # fmt: skip
    page = build_html({"gates": [{"id": "g", "mode": "pass", "ok": True, "coverage": coverage,
                                  "diff": diff}]})  # fmt: skip
    marks = re.findall(r'data-head="(\d)".*?data-green="([^"]*)"', page)
    assert marks == [("1", ""), ("2", "executed"), ("3", "")]


def test_a_session_without_a_base_writes_the_page(pytester: pytest.Pytester) -> None:
    """No base, no coverage: the page still holds the table; the report has no diff."""
    pytester.makefile(
        ".yaml",
        gates=textwrap.dedent(
            """\
            gates:
              - id: passes
                check: python -c "pass"
              - id: fails
                claim: a </td> claim
                check: python -c "raise SystemExit(3)"
            """
        ),
    )
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--vgate", "gates.yaml", "--vgate-html", "page.html",
        "--vgate-report", "report.json",
    )  # fmt: skip
    assert result.ret == 1
    text = (pytester.path / "page.html").read_text(encoding="utf-8")
    assert text.count('class="gate-row') == 2
    assert "a &lt;/td&gt; claim" in text
    assert all("diff" not in g for g in read_report(pytester.path / "report.json")["gates"])


PLAIN_GATES = """\
gates:
  - id: ok-gate
    check: python -c "pass"
  - id: bad-gate
    claim: "<b>bold</b> claim"
    check: python -c "raise SystemExit(2)"
"""


def _pytest_html_rows(path: Path) -> dict[str, list[str]]:
    """pytest-html 4 keeps its rows as JSON in the page's ``data-jsonblob`` attribute."""
    import html as markup

    text = path.read_text(encoding="utf-8")
    found = re.search(r'data-jsonblob="([^"]*)"', text)
    assert found, "not a pytest-html 4 report"
    data = json.loads(markup.unescape(found[1]))
    return {nodeid: runs[-1]["resultsTableRow"] for nodeid, runs in data["tests"].items()}


@pytest.mark.all_plugins
def test_pytest_html_gains_the_vgate_columns(run_vgate: Any, pytester: pytest.Pytester) -> None:
    pytest.importorskip("pytest_html")
    pytester.makefile(".yaml", gates=PLAIN_GATES)
    result, _ = run_vgate("--vgate", "gates.yaml", "--html=report.html", "--self-contained-html")
    assert result.ret == 1
    text = (pytester.path / "report.html").read_text(encoding="utf-8")
    for title in (
        "vgate mode",
        "vgate cause",
        "vgate rbg",
        "vgate coverage",
        "vgate discrimination",
    ):
        assert f">{title}</th>" in text, title
    rows = _pytest_html_rows(pytester.path / "report.html")
    assert '<td class="col-vgate_mode">pass</td>' in rows["gates.yaml::ok-gate"]
    bad = rows["gates.yaml::bad-gate"]
    assert '<td class="col-vgate_mode">fail</td>' in bad
    assert '<td class="col-vgate_cause">product</td>' in bad
    assert '<td class="col-vgate_rbg">unproven</td>' in bad


def test_an_unwritable_page_is_a_warning_never_a_verdict(
    run_vgate: Any, pytester: pytest.Pytester
) -> None:
    """The page is a record: a page that cannot be written leaves the verdicts alone."""
    pytester.makefile(".yaml", gates='gates:\n  - id: ok-gate\n    check: python -c "pass"\n')
    (pytester.path / "a-file").write_text("")
    result, _ = run_vgate("--vgate", "gates.yaml", "--vgate-html", "a-file/page.html")
    assert result.ret == 0, result.stdout.str()
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(["*vgate warning: the pytest_vgate_report hook of 'vgate-html'*"])


# -- the diff the report carries -------------------------------------------------------


def test_file_diff_numbers_each_side_and_says_added_and_deleted() -> None:
    from pytest_vgate.exporters.change import file_diff

    base = "".join(f"line {n}\n" for n in range(1, 21))
    head = base.replace("line 10\n", "line ten\n")
    diff = file_diff("a.py", base, head)
    assert diff["status"] == "modified" and diff["cut"] == 0
    (hunk,) = diff["hunks"]
    assert (hunk["base_start"], hunk["head_start"]) == (7, 7)  # three lines of context
    changed = [(d["op"], d["base"], d["head"], d["text"]) for d in hunk["lines"] if d["op"] != " "]
    assert changed == [("-", 10, None, "line 10"), ("+", None, 10, "line ten")]
    assert file_diff("new.py", None, "x = 1\n")["status"] == "added"
    assert file_diff("old.py", "x = 1\n", None)["status"] == "deleted"


def test_a_huge_diff_is_cut_and_says_so() -> None:
    from pytest_vgate.exporters.change import MAX_HUNK_LINES, file_diff

    head = "".join(f"x{n} = {n}\n" for n in range(MAX_HUNK_LINES + 50))
    diff = file_diff("big.py", None, head)
    shown = sum(len(h["lines"]) for h in diff["hunks"])
    assert shown == MAX_HUNK_LINES and diff["cut"] == 50


def test_the_diff_reads_nothing_outside_the_repository(tmp_path: Path) -> None:
    from pytest_vgate.exporters.change import ChangeDiff

    (tmp_path / "secret.py").write_text("token = 1\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True, timeout=60)
    diff = ChangeDiff(repo, "HEAD").file("../secret.py")
    assert diff["hunks"] == [] and "token" not in json.dumps(diff)
