"""The shipped examples are the README's demo: run them for real and check every verdict."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import types
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers.browser import chromium, open_page
from helpers.git_repo import git
from helpers.junit import junit_cases
from helpers.report import read_report

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
ROOT = EXAMPLES.parent
SCREENSHOT = ROOT / "docs" / "img" / "report.png"


def run_demo(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict]:  # type: ignore[type-arg]
    junit = Path.cwd() / "junit.xml"
    result = pytester.run(
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        f"--junitxml={junit}",
        *args,
        timeout=300,
    )
    return result, junit_cases(junit)


def test_demo_gates_pass(examples: Path, pytester: pytest.Pytester, dist_args: list[str]) -> None:
    result, cases = run_demo(pytester, "--vgate", "gates.yaml", *dist_args)
    assert result.ret == 0, result.stdout.str()
    gates = yaml.safe_load((examples / "gates.yaml").read_text())["gates"]
    for gate in gates:
        expected = "skipped" if gate.get("type") == "semantic" else "passed"
        assert cases[gate["id"]]["outcome"] == expected, gate["id"]
    assert cases["longest-word-is-a-word"]["vgate_mode"] == "pass"
    assert cases["test_word_count_of_nothing"]["outcome"] == "passed"
    assert "- FABRICATIONS CAUGHT: N" in result.stdout.str()


def claimed(gate: dict[str, Any]) -> tuple[str, str]:
    """The mode and cause a failure-modes.yaml gate says, in its claim, that it fails with."""
    found = re.match(r"mode (\w+), cause (\w+)", gate["claim"])
    assert found, gate["claim"]
    return found[1], found[2]


def test_failure_modes_fail_as_their_claims_say(
    examples: Path, pytester: pytest.Pytester, dist_args: list[str]
) -> None:
    result, cases = run_demo(pytester, "--vgate", "failure-modes.yaml", *dist_args)
    assert result.ret == 1
    gates = yaml.safe_load((examples / "failure-modes.yaml").read_text())["gates"]
    for gate in gates:
        case = cases[gate["id"]]
        got = (case["outcome"], case["vgate_mode"], case["vgate_cause"])
        assert got == ("failure", *claimed(gate)), gate["id"]
    out = result.stdout.str()
    assert "- Total citations: 3" in out
    assert "- FABRICATIONS CAUGHT: Y — " in out
    assert "INTERNALERROR" not in out


# -- the README's demo, as written, in a clean checkout --------------------------------


def readme_quickstart() -> list[str]:
    """The README's quickstart commands (its first bash block after ``## Quickstart``)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8").split("## Quickstart", 1)[1]
    block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip() and not line.startswith("#")]


def readme_demo() -> tuple[str, list[str]]:
    """The setup both quickstart commands share, and the demo's pytest arguments."""
    demo, tests = readme_quickstart()
    setup = tests.removesuffix("pytest -n 2")
    assert demo.startswith(setup) and tests != setup
    found = re.fullmatch(r"\(cd examples && pytest (.*)\)", demo.removeprefix(setup))
    assert found, demo
    return setup, shlex.split(found[1])


def clean_checkout(dest: Path) -> Path:
    """This tree as a clean checkout: the files git would commit here (tracked and new, not
    ignored), committed in a repository of their own."""
    try:
        listed = git(ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    except RuntimeError as exc:
        pytest.skip(f"not a git work tree: {exc}")
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():  # a file deleted but not staged is no longer in the tree
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    git(dest, "init", "-q")
    git(dest, "add", "-A")
    git(dest, "commit", "-q", "-m", "a clean checkout")
    return dest


@dataclass(frozen=True)
class Demo:
    """One run of the README's demo command, as written, from a clean checkout."""

    checkout: Path
    ret: int
    out: str
    seconds: float
    report: dict[str, Any]
    cases: dict[str, dict[str, object]]
    page: Path


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    checkout = clean_checkout(tmp_path_factory.mktemp("checkout"))
    _, args = readme_demo()
    out = tmp_path_factory.mktemp("demo-outputs")
    # The command as written, with a user's plugins; PYTEST_ADDOPTS adds only the JSON
    # report and the junit XML.
    addopts = f"--vgate-report={out / 'report.json'} --junitxml={out / 'junit.xml'}"
    env = {**os.environ, "COLUMNS": "120", "PYTEST_ADDOPTS": addopts}
    start = time.monotonic()
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "pytest"), *args],
        cwd=checkout / "examples", env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    seconds = time.monotonic() - start
    page = checkout / "examples" / args[args.index("--vgate-html") + 1]
    try:
        yield Demo(
            checkout=checkout,
            ret=proc.returncode,
            out=proc.stdout + proc.stderr,
            seconds=seconds,
            report=read_report(out / "report.json"),
            cases=junit_cases(out / "junit.xml"),
            page=page,
        )
    finally:  # the scratch repository the demo made in the temp dir, and nothing else
        link = checkout / "examples" / ".vgate-demo" / "tinyshop"
        if link.is_symlink():
            shutil.rmtree(Path(os.readlink(link)).parent, ignore_errors=True)


def test_the_readme_demo_proves_a_change_next_to_the_failure_modes(demo: Demo) -> None:
    """The README's demo command, as written, from a clean checkout: a proven gate that
    kills mutants, a never-red and an undiscriminating gate caught, a corrected and a
    fabricated citation, and one failing gate per failure mode; exit status 1."""
    print(f"the README's demo took {demo.seconds:.1f}s")
    assert demo.ret == 1, demo.out
    assert "INTERNALERROR" not in demo.out
    gates = {g["id"]: g for g in demo.report["gates"]}
    proven = gates["coupon-capped"]
    assert (proven["ok"], proven["rbg"]) == (True, "proven"), proven.get("rbg_reason")
    killed, planted = proven["discrimination"]["killed"], proven["discrimination"]["planted"]
    assert proven["discrimination"]["status"] == "discriminating" and killed >= 1
    assert demo.cases["coupon-capped"]["vgate_mutants"] == f"{killed}/{planted}"
    never = gates["totals-unchanged"]
    assert (never["ok"], never["rbg"], never["cause"]) == (False, "never-red", "broken_test")
    assert demo.cases["totals-unchanged"]["vgate_rbg"] == "never-red"
    weak = gates["shipping-computed"]
    assert (weak["ok"], weak["rbg"], weak["cause"]) == (False, "proven", "broken_test")
    assert weak["discrimination"]["status"] == "undiscriminating"
    assert weak["discrimination"]["killed"] == 0 < weak["discrimination"]["planted"]
    assert demo.cases["shipping-computed"]["vgate_discrimination"] == "undiscriminating"
    # The summary shows surviving mutants as `path:line  before → after`.
    survivors = [
        f"{m['path']}:{m['line']}  {m['before']} \u2192 {m['after']}"
        for m in weak["discrimination"]["mutants"]
        if not m["killed"]
    ]
    assert any(f"survived {s}" in demo.out for s in survivors), demo.out
    # The description of the change: a drifted citation corrected, a fabrication caught.
    statuses = {c["status"] for c in demo.report["citations"] if "pr-description.md" in c["source"]}
    assert {"corrected", "fabricated"} <= statuses
    assert re.search(
        r"FABRICATIONS CAUGHT: Y .*pr-description\.md:\d+ tests/test_cart\.py:40", demo.out
    )
    # Next to them, failure-modes.yaml: each gate fails with the mode and cause it claims.
    listed = yaml.safe_load((EXAMPLES / "failure-modes.yaml").read_text())["gates"]
    for gate in listed:
        entry = gates[gate["id"]]
        assert (entry["ok"], entry["mode"], entry["cause"]) == (False, *claimed(gate)), gate["id"]


def test_the_readme_says_what_the_demo_shows(demo: Demo) -> None:
    """The README's claims about the demo hold: the modes and causes its summary names,
    why it exits 1, and .ci/run runs the same commands."""
    from pytest_vgate.verdict import Cause, Mode

    setup, args = readme_demo()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    for command in [*setup.split(" && ")[:-1], "pytest -n 2"]:
        assert command in ci, command
    assert f"(cd examples && pytest {shlex.join(args)})" in " ".join(ci)
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    (mode_but,) = re.findall(r"every mode but `(\w+)`", readme)
    (cause_but,) = re.findall(r"every cause but `(\w+)`", readme)
    shown = re.search(r"^gates: \d+ \((.*)\)$", demo.out, re.M)
    assert shown, demo.out
    modes = {part.split()[1] for part in shown[1].split(", ")}
    assert modes == {m.value for m in Mode} - {mode_but}
    section = demo.out.split("= vgate =")[1]
    causes = {c.value for c in Cause if re.search(rf"\b{c.value}\b", section)}
    assert causes == {c.value for c in Cause} - {cause_but}
    assert "VERIFICATION GATE RESULT:" in demo.out
    # What it says of the change's gates is what the demo printed.
    (mutants,) = re.findall(r"`vgate_mutants (\d+/\d+)`", readme)
    assert demo.cases["coupon-capped"]["vgate_mutants"] == mutants
    raw = (ROOT / "README.md").read_text(encoding="utf-8")
    (survivor,) = re.findall(r"`(tinyshop/cart\.py:\d+  [^`]+ \u2192 [^`]+)`", raw)
    assert f"survived {survivor}" in demo.out
    said = re.search(r"exits with status 1 on purpose[^.]*\.", readme)
    assert said, "the README says why the demo exits 1"
    for failing in ("never-red", "undiscriminating", "fabricat", "failure-modes.yaml"):
        assert failing in readme.split("on purpose", 1)[1][:1200], failing


def test_the_demo_leaves_the_checkout_clean(demo: Demo) -> None:
    """The scratch repository lives in the temp dir; the checkout gains nothing git sees."""
    assert git(demo.checkout, "status", "--porcelain", "--ignored=no") == ""
    link = demo.checkout / "examples" / ".vgate-demo" / "tinyshop"
    repo = Path(os.readlink(link))
    assert not repo.is_relative_to(demo.checkout)
    assert git(repo, "log", "--format=%s") == "tinyshop 1.0"  # the base: HEAD there
    assert "M  tinyshop/cart.py" in git(repo, "status", "--porcelain")  # the change, staged


def test_the_demo_page_in_a_real_browser(demo: Demo) -> None:
    """The demo's page, as a reviewer opens it: the statuses in the table, the surviving
    mutants under their lines of the diff, the citations; no request leaves the file.
    ``VGATE_UPDATE_SCREENSHOT=1`` writes docs/img/report.png from it."""
    with chromium() as browser, open_page(browser, demo.page) as opened:
        page = opened.page
        rows = page.locator("#verdicts tbody tr")
        table = {
            r.locator("td").nth(0).inner_text(): [c.inner_text() for c in r.locator("td").all()]
            for r in rows.all()
        }
        assert table["coupon-capped"][1:5] == ["passed", "pass", "-", "proven"]
        assert re.fullmatch(r"[1-9]\d*/\d+ discriminating", table["coupon-capped"][6])
        assert table["totals-unchanged"][1:5] == ["failed", "fail", "broken_test", "never-red"]
        assert re.fullmatch(r"0/[1-9]\d* undiscriminating", table["shipping-computed"][6])
        for gate in yaml.safe_load((EXAMPLES / "failure-modes.yaml").read_text())["gates"]:
            assert table[gate["id"]][1:4] == ["failed", *claimed(gate)], gate["id"]
        # The undiscriminating gate's diff: the surviving mutants under the lines they
        # changed, `path:line  before → after`; the proven gate's changed line executed by
        # both runs.
        weak = page.locator("article.gate", has=page.locator("h3", has_text="shipping-computed"))
        survived = weak.locator("tr.mutant.survived")
        assert survived.count() >= 1
        assert re.search(r"tinyshop/cart\.py:\d+  .+ \u2192 .+", survived.first.inner_text())
        proven = page.locator("article.gate", has=page.locator("h3", has_text="coupon-capped"))
        fixed = proven.locator('tr.op-add[data-path="tinyshop/cart.py"]', has_text="min(")
        assert fixed.locator("[data-green]").get_attribute("data-green") == "executed"
        removed = proven.locator('tr.op-del[data-path="tinyshop/cart.py"]', has_text="return")
        assert removed.locator("[data-red]").get_attribute("data-red") == "executed"
        cited = page.locator("#citations article", has_text="pr-description.md")
        assert {"corrected", "fabricated"} <= {a.get_attribute("data-status") for a in cited.all()}
        assert opened.errors == []
        assert set(opened.requests) == {demo.page.as_uri()}, opened.requests
        # The screenshot: the verdict table and the first gate (the undiscriminating one,
        # failing gates come first) with its surviving mutants.
        first = page.locator("article.gate").first
        assert first.locator("h3").inner_text().startswith("shipping-computed")
        box = first.bounding_box()
        shot = (
            SCREENSHOT
            if os.environ.get("VGATE_UPDATE_SCREENSHOT")
            else demo.page.with_suffix(".png")
        )
        page.screenshot(
            path=str(shot), full_page=True,
            clip={"x": 0, "y": 0, "width": 1200, "height": box["y"] + box["height"] + 8},
        )  # fmt: skip
        assert shot.stat().st_size > 10_000


# -- the scratch repository the demo builds --------------------------------------------


def scratch_module(folder: Path) -> types.ModuleType:
    """examples/scratch_repo.py with tinyshop's sources, copied to ``folder``."""
    shutil.copy(EXAMPLES / "scratch_repo.py", folder)
    shutil.copytree(EXAMPLES / "tinyshop", folder / "tinyshop")
    spec = importlib.util.spec_from_file_location("scratch_repo_copy", folder / "scratch_repo.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def scratch(tmp_path: Path) -> Iterator[tuple[types.ModuleType, Path]]:
    folder = tmp_path / "examples"
    folder.mkdir()
    yield scratch_module(folder), folder
    link = folder / ".vgate-demo" / "tinyshop"
    if link.is_symlink():
        shutil.rmtree(Path(os.readlink(link)).parent, ignore_errors=True)


def test_the_scratch_repository_is_reused_then_rebuilt_when_tinyshop_changes(
    scratch: tuple[types.ModuleType, Path],
) -> None:
    module, folder = scratch
    first = module.link_scratch_repository(folder)
    assert not first.is_relative_to(folder.parent)  # in the temp dir, never in the tree
    assert (folder / ".vgate-demo" / "tinyshop").resolve() == first.resolve()
    assert git(first, "log", "--format=%s") == "tinyshop 1.0"
    staged = git(first, "diff", "--cached", "--name-status").splitlines()
    assert "M\ttinyshop/cart.py" in staged and "A\ttests/test_shipping.py" in staged
    assert (folder / ".vgate-demo" / ".gitignore").read_text().splitlines()[-1] == "*"
    made = (first / ".git").stat().st_mtime_ns
    again = module.link_scratch_repository(folder)
    assert again == first and (first / ".git").stat().st_mtime_ns == made  # reused as is
    cart = folder / "tinyshop" / "after" / "tinyshop" / "cart.py"
    cart.write_text(cart.read_text() + "# edited\n")
    rebuilt = module.link_scratch_repository(folder)
    assert rebuilt != first and not first.parent.exists()  # the old one, ours, is gone
    assert (rebuilt / "tinyshop" / "cart.py").read_text().endswith("# edited\n")


def test_the_scratch_repository_never_touches_what_it_did_not_make(
    scratch: tuple[types.ModuleType, Path], tmp_path: Path
) -> None:
    module, folder = scratch
    links = folder / ".vgate-demo"
    links.mkdir()
    (links / "tinyshop").mkdir()  # a real folder where the demo's link goes: refused
    (links / "tinyshop" / "keep.txt").write_text("mine")
    with pytest.raises(module.DemoError, match="not the demo's link"):
        module.link_scratch_repository(folder)
    assert (links / "tinyshop" / "keep.txt").read_text() == "mine"
    shutil.rmtree(links / "tinyshop")
    # A link to a folder that is not ours (no marker): pointed elsewhere, the folder kept.
    foreign = tmp_path / "vgate-demo-foreign" / "tinyshop"
    foreign.mkdir(parents=True)
    (links / "tinyshop").symlink_to(foreign)
    made = module.link_scratch_repository(folder)
    assert made.parent != foreign.parent and foreign.is_dir()
    assert json.loads((made.parent / "owner.json").read_text())["source"] == str(folder)
