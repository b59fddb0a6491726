"""One fail-closed boundary per process, and nothing else that catches everything unsaid.

The contract is read from the source (tests/helpers/catch_all.py): every ``except
Exception``/``except BaseException``/``suppress(...)`` of them that does not re-raise is
either the named boundary of its process or listed here with the reason it must catch
everything. Then real faults, injected at points whose own catch-all was removed, end as
a failed item or a warning with a mode -- never a pass, never INTERNALERROR.
"""

from __future__ import annotations

import json
import textwrap
from collections import Counter
from collections.abc import Iterator, Mapping

import pytest
from helpers.catch_all import catch_all_sites, site_counts

from pytest_vgate.gate import boundary
from pytest_vgate.gate.boundary import fail_closed, fail_closed_step
from pytest_vgate.gate.runner import run_oracle_check
from pytest_vgate.verdict import Cause, Mode, Verdict

# The one boundary of each kind of process: (module:function, handlers there).
BOUNDARIES = {
    "the pytest process": ("pytest_vgate.gate.boundary:fail_closed", 2),  # error, panic
    # + its last send, + the rehearsal of the spare (an optimisation, never a call's cost)
    "a verifier child": ("pytest_vgate.verifiers.child:child_main", 2),
    "a verifier zygote": ("pytest_vgate.verifiers.zygote:_import", 1),
    "the shepherd": ("pytest_vgate.process.shepherd:main", 1),
    "the measurement in a check's Python": ("pytest_vgate.process.bootstrap:_start", 1),
    # + what escapes pytest's protocol: the exit status a solo pytest would give
    "a batch's pytest, its zygotes and forks": ("pytest_vgate.process.batch_reporter:_child", 2),
}

# Every other catch-all, and why it must catch everything where it is.
JUSTIFIED = {
    "pytest_vgate.baseline.worktree:BaseWorktree.remove": (
        "atexit.unregister compares others' callables"
    ),
    "pytest_vgate.citations.check:CitationChecker.check": "library API: never raises",
    "pytest_vgate.citations.syntax:_text": "unparsing any code for a message's detail",
    "pytest_vgate.plugin.extending:_Recorder.guard.guarded": "a hook's plugin code: a verdict",
    "pytest_vgate.process.statements:executable_lines": "parsing any text; None fails closed",
    "pytest_vgate.process.statements:_by_coverage": "coverage.py parsing any text: None",
    "pytest_vgate.plugin.judging:call_with_deadline.target": "plugin code on a thread",
    "pytest_vgate.plugin.judging:describe": "a plugin's __repr__",
    "pytest_vgate.verifiers.api:find_verifier_spec": "getattr on any object met at collection",
    "pytest_vgate.verifiers.child:flush_streams": "the verifier may have replaced sys.stdout",
    "pytest_vgate.verifiers.child:rehearse": "an optimisation never costs a call",
    "pytest_vgate.verifiers.fanout:run_verifiers.in_thread": "a thread: no boundary above it",
    "pytest_vgate.verifiers.invoke:describe": "the verifier's __repr__",
    "pytest_vgate.verifiers.invoke:_message": "the verifier's exception's __str__",
    "pytest_vgate.verifiers.invoke:_exception_text": "formatting the verifier's traceback",
    "pytest_vgate.verifiers.invoke:classify_return": "closing its coroutine runs its code",
    "pytest_vgate.verifiers.invoke:_files_of": "an odd callable's attributes",
    "pytest_vgate.verifiers.invoke:execute": "the verifier's own exception is its answer",
    "pytest_vgate.verifiers.call:Call._serve": "a thread the waiting child needs answered",
    "pytest_vgate.verifiers.control:stop_base": "stopping goes on whatever one step raised",
    "pytest_vgate.verifiers.spawner:ZygoteHost.shutdown": "a cell left at shutdown is a warning",
    "pytest_vgate.verifiers.zygote:base_main": "a preload is an optimisation: any import",
    "pytest_vgate.process.bootstrap:_audit.hook": "an audit hook in the check: says, never raises",
    "pytest_vgate.process.bootstrap:_monitor.py_start": "monitoring callback: says, never raises",
    "pytest_vgate.process.bootstrap:_monitor.line": "monitoring callback: says, never raises",
    "pytest_vgate.process.bootstrap:_py_tracer.local_of.local": "a tracer: says, never raises",
    "pytest_vgate.process.bootstrap:_py_tracer.trace": "a tracer: says, never raises",
    "pytest_vgate.process.bootstrap:_Lines.dynamic_source_filename": "C tracer's callback: says",
    "pytest_vgate.process.bootstrap:_Lines.line_number_range": "C tracer's callback: says",
    "pytest_vgate.process.bootstrap:_c_tracer.should_trace": "C tracer's callback: says",
    "pytest_vgate.process.bootstrap:_tracing.install": "a new thread's tracer: says, never raises",
    # beside its boundary's own: no stack sample is a note, never "not measured"
    "pytest_vgate.process.bootstrap:_start": "arming the stack sample at the deadline",
    "pytest_vgate.process.bootstrap:_Sampler.before_fork": "a fork hook: notes, never raises",
    "pytest_vgate.process.bootstrap:_Sampler.after_in_parent": "a fork hook: notes",
    "pytest_vgate.process.bootstrap:_Sampler.after_in_child": "a fork hook: notes",
    "pytest_vgate.process.origin._PROBE:<module>": "find_spec imports parent packages: user code",
    "pytest_vgate.process.batch_reporter:_Batch.measure": "the measurement: 'unmeasured'",
    "pytest_vgate.process.batch_reporter:_Batch.switch": "a node's start in the check: says",
    "pytest_vgate.process.batch_reporter:_fork": "a zygote ends: its mutants run solo",
    "pytest_vgate.process.batch_reporter:_audit": "an audit hook in the check: says, never raises",
}
JUSTIFIED_COUNTS = {
    "pytest_vgate.verifiers.invoke:execute": 2,
    "pytest_vgate.verifiers.control:stop_base": 2,
}


def allowed() -> Counter[str]:
    counts = Counter(dict(BOUNDARIES.values()))
    counts.update({site: JUSTIFIED_COUNTS.get(site, 1) for site in JUSTIFIED})
    return counts


# -- the contract, read from the source --------------------------------------------------


def test_every_catch_all_is_a_boundary_or_listed_with_its_reason() -> None:
    found, expected = site_counts(), allowed()
    new = {site: n for site, n in found.items() if n > expected.get(site, 0)}
    gone = {site: n for site, n in expected.items() if found.get(site, 0) < n}
    assert not new, (
        f"new catch-all(s) {new}: let the exception reach the process's boundary "
        "(pytest_vgate/gate/boundary.py), narrow it, or list it in JUSTIFIED with the reason"
    )
    assert not gone, f"listed catch-alls no longer in the source (remove them here): {gone}"


def test_each_process_kind_has_exactly_one_named_boundary() -> None:
    sites = [site for site, _ in BOUNDARIES.values()]
    assert len(set(sites)) == len(sites)
    found = site_counts()
    assert all(found[site] for site in sites)
    modules = {site.split(":")[0] for site in sites}
    assert len(modules) == len(BOUNDARIES), "two process kinds share a boundary module"
    named = " ".join((boundary.__doc__ or "").split())
    for site in sites:  # the boundary module names every process's boundary
        module, function = site.split(":")
        assert f"{module.removeprefix('pytest_vgate.')}" in named, site
        assert function.split(".")[-1] in named, site


def test_every_kept_catch_all_says_why_in_a_comment() -> None:
    silent = [f"{site} (line {line})" for site, line, why in catch_all_sites() if not why]
    assert not silent, f"a catch-all without a comment saying why: {silent}"


# -- the pytest process's boundary ---------------------------------------------------------


def test_fail_closed_turns_an_exception_into_error_and_an_exit_into_panic() -> None:
    def raises() -> Verdict:
        raise LookupError("ours")

    def exits() -> Verdict:
        raise SystemExit(0)  # exit status 0 must never read as a pass

    error = fail_closed(raises, "a step", ("prog",))
    assert (error.mode, error.cause, error.command) == (Mode.ERROR, Cause.BROKEN_TEST, ("prog",))
    assert "LookupError: ours" in error.detail
    assert fail_closed(exits, "a step").mode is Mode.PANIC


def test_fail_closed_lets_the_users_interrupt_through() -> None:
    def interrupted() -> Verdict:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        fail_closed(interrupted, "a step")


def test_a_step_that_raises_is_a_warning_with_its_mode() -> None:
    def boom() -> None:
        raise OSError("disk full")

    assert fail_closed_step(lambda: None, "nothing") is None
    warning = fail_closed_step(boom, "the ledger")
    assert warning is not None
    assert warning.startswith("(mode error) internal error in pytest-vgate while running the")
    assert "OSError: disk full" in warning


class HostileMapping(Mapping[str, object]):
    """A gate given to the library API whose every read raises (formerly a catch-all of
    run_oracle_check's own; now its exception reaches the boundary)."""

    def __getitem__(self, key: str) -> object:
        raise RuntimeError("hostile mapping")

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("hostile mapping")

    def __len__(self) -> int:
        return 1


def test_run_oracle_check_never_raises_on_a_hostile_gate() -> None:
    verdict = run_oracle_check(HostileMapping())
    assert verdict.mode is Mode.ERROR
    assert "RuntimeError: hostile mapping" in verdict.detail


# -- real faults in real sessions (plain and -n 2) -----------------------------------------

GATES = """
gates:
  - id: passes
    check: python -c "pass"
"""

VERIFIER_TEST = """
from pytest_vgate import verifier

@verifier
def answers_yes():
    return True
"""

# Injected into the pytest process(es) of the session by its conftest: the named function
# raises. This is the fault, not a stand-in for what is tested (the boundary around it).
INJECT = """
import {module} as target

def injected(*args, **kwargs):
    raise RuntimeError("injected fault in {name}")

setattr(target, "{name}", injected)
"""


def inject(pytester: pytest.Pytester, module: str, name: str) -> None:
    pytester.makeconftest(INJECT.format(module=module, name=name))


def assert_no_internal_error(result: pytest.RunResult) -> str:
    text = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in text, text
    return text


def test_a_fault_in_the_verifier_fan_out_fails_the_item_with_mode_error(
    pytester: pytest.Pytester, run_vgate
) -> None:  # type: ignore[no-untyped-def]
    # fanout.run_verifiers used to catch this itself; now runner.fail_closed does.
    pytester.makepyfile(test_verifiers=VERIFIER_TEST)
    inject(pytester, "pytest_vgate.verifiers.fanout", "call_verifier")
    result, cases = run_vgate("test_verifiers.py")
    text = assert_no_internal_error(result)
    assert result.ret == 1, text
    case = cases["answers_yes"]
    assert (case["outcome"], case["vgate_mode"]) == ("failure", "error"), case
    assert "injected fault in call_verifier" in text


def test_a_fault_in_the_summary_writer_is_a_warning_and_the_verdicts_stand(
    pytester: pytest.Pytester, run_vgate
) -> None:  # type: ignore[no-untyped-def]
    pytester.makefile(".yaml", gates=GATES)
    inject(pytester, "pytest_vgate.plugin.summary", "write_summary")
    result, cases = run_vgate("--vgate", "gates.yaml", "--vgate-report", "report.json")
    text = assert_no_internal_error(result)
    assert result.ret == 0, text
    assert cases["passes"]["vgate_mode"] == "pass"
    assert (
        "vgate warning: (mode error) internal error in pytest-vgate while running the vgate "
        "summary: RuntimeError: injected fault in write_summary" in text
    )
    assert json.loads((pytester.path / "report.json").read_text())["gates"][0]["ok"] is True


def test_a_fault_in_the_ledger_write_is_a_warning_and_the_report_is_written(
    pytester: pytest.Pytester, run_vgate
) -> None:  # type: ignore[no-untyped-def]
    pytester.makefile(".yaml", gates=GATES)
    pytester.makeconftest(
        textwrap.dedent(
            """
            from pytest_vgate.evidence import Ledger

            def append(self, records):
                raise RuntimeError("injected fault in the ledger")

            Ledger.append = append
            """
        )
    )
    result, cases = run_vgate("--vgate", "gates.yaml", "--vgate-report", "report.json")
    text = assert_no_internal_error(result)
    assert result.ret == 0, text
    assert cases["passes"]["vgate_mode"] == "pass"
    assert "vgate warning: (mode error) internal error in pytest-vgate while running the " in text
    assert "ledger: RuntimeError: injected fault in the ledger" in text
    assert (pytester.path / "report.json").is_file()


def test_a_fault_building_the_report_is_a_warning_and_the_ledger_is_still_written(
    pytester: pytest.Pytester, run_vgate
) -> None:  # type: ignore[no-untyped-def]
    pytester.makefile(".yaml", gates=GATES)
    inject(pytester, "pytest_vgate.exporters.report", "build_report")
    result, cases = run_vgate("--vgate", "gates.yaml")
    text = assert_no_internal_error(result)
    assert result.ret == 0, text
    assert cases["passes"]["vgate_mode"] == "pass"
    assert "while running the JSON report: RuntimeError: injected fault in build_report" in text
    ledger = pytester.path / ".vgate" / "ledger.jsonl"
    assert ledger.is_file() and ledger.read_text().strip(), "the ledger was not written"


def test_a_fault_in_a_command_check_fails_the_gate_with_mode_error(
    pytester: pytest.Pytester, run_vgate
) -> None:  # type: ignore[no-untyped-def]
    pytester.makefile(".yaml", gates=GATES)
    inject(pytester, "pytest_vgate.gate.runner", "build_env")
    result, cases = run_vgate("--vgate", "gates.yaml")
    text = assert_no_internal_error(result)
    assert result.ret == 1, text
    assert (cases["passes"]["outcome"], cases["passes"]["vgate_mode"]) == ("failure", "error")


def test_a_fault_in_the_citation_checker_fails_the_citation_with_mode_error(
    pytester: pytest.Pytester, run_vgate
) -> None:  # type: ignore[no-untyped-def]
    pytester.makepyfile(mod="def f():\n    return 1\n")
    pytester.makefile(".md", answer="`f` is defined in mod.py:1.\n")
    pytester.makeconftest(
        textwrap.dedent(
            """
            from pytest_vgate.citations import CitationChecker

            def _check(self, citation):
                raise RuntimeError("injected fault in the checker")

            CitationChecker._check = _check
            """
        )
    )
    result, cases = run_vgate("--vgate-cite", "answer.md")
    text = assert_no_internal_error(result)
    assert result.ret == 1, text
    modes = {str(c.get("vgate_mode")) for c in cases.values()}
    assert modes == {"error"}, cases
