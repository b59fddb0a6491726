"""The reporter inside a batch's pytest process: what each node did and executed, and
the mutants forked from the session.

Loaded with ``-p`` from a private folder (``batch.py`` copies this file there under
``MODULE``, beside ``spec.json``), it leaves ``sys.path`` as it found it. Records are JSON
lines appended to ``records`` there (open, append, close: a kill keeps what was written).
It measures each node with coverage.py (``include`` in the spec; docs/batch.md) and, with
``fork`` in the spec, runs the mutants in forks of the collected session: two zygotes, one
forked before collection (a mutant of module or class code is imported from its text),
one after it (a function's code object is swapped); docs/discrimination.md, "Where
mutants live".
"""

from __future__ import annotations
import __future__

import ast
import contextlib
import gc
import json
import os
import select
import signal
import sys
import time
import traceback
import warnings
from typing import Any

FOLDER_ENV = "PYTEST_VGATE_BATCH"
MODULE = "_pytest_vgate_batch_reporter"
SPAWNS = frozenset({"subprocess.Popen", "os.exec", "os.posix_spawn", "os.spawn"})
FORKS = frozenset({"os.fork", "os.forkpty"})
CONTROL = "the check does not pass in a fork of the unmutated code: it sees the fork or swap"
FUTURE = 0
for _feature in __future__.all_feature_names:
    FUTURE |= getattr(__future__, _feature).compiler_flag

_here = os.path.dirname(os.path.abspath(__file__))
while _here in sys.path:  # the check's own imports never see our folder
    sys.path.remove(_here)


class _Batch:
    """This batch process: its folder, spec, measurement, the segment running, and in a
    mutant's fork what it is there for."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.pid = os.getpid()
        with open(os.path.join(folder, "spec.json"), encoding="utf-8") as fh:
            self.spec: dict[str, Any] = json.load(fh)
        self.node = ""
        self.busy = False  # our own calls raise audit events too
        self.cov: Any = None
        self.tracer: Any = None  # the C tracer, while it is ours (None: sys.monitoring)
        self.zygotes: list[int] = []
        self.life, self.keep = -1, -1  # a pipe only this process writes to: EOF, it is gone
        self.go = (-1, -1)  # EOF: the swapping zygote is done, the importing one may start
        self.reports: list[dict[str, Any]] | None = None  # a mutant's run: its reports
        self.serving: dict[str, Any] | None = None  # an import fork: its entry
        self.errors: list[str] = []  # an import fork: what failed to collect

    def put(self, record: dict[str, Any]) -> None:
        fd = os.open(os.path.join(self.folder, "records"), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            os.write(fd, (json.dumps(record) + "\n").encode())
        finally:
            os.close(fd)

    def measure(self, include: list[str]) -> None:
        """Start coverage.py on ``include``, unless another tracer holds the slot."""
        import glob

        monitoring = sys.version_info >= (3, 12)
        saved = os.environ.get("COVERAGE_CORE")
        self.busy = True
        try:
            import coverage

            held = sys.gettrace() if not monitoring else sys.monitoring.get_tool(1)  # type: ignore[attr-defined,unused-ignore]
            if held is not None or coverage.Coverage.current() is not None:
                self.put({"unmeasured": f"another tracer holds the slot ({held!r})"})
                return
            if monitoring:  # coverage.py reads its core from the environment
                os.environ["COVERAGE_CORE"] = "sysmon"
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                patterns = [
                    glob.escape(p.removesuffix("*")) + p[-1:] * p.endswith("*") for p in include
                ]
                cov = coverage.Coverage(data_file=None, include=patterns, config_file=False)
                cov.start()
            self.cov, self.tracer = cov, None if monitoring else sys.gettrace()
        # This process's measurement boundary: a failure is "unmeasured", never the check's.
        except Exception as exc:  # noqa: BLE001
            self.put({"unmeasured": f"coverage.py could not start: {type(exc).__name__}: {exc}"})
        finally:
            self.busy = False
            os.environ.pop("COVERAGE_CORE", None)
            if saved is not None:
                os.environ["COVERAGE_CORE"] = saved

    def switch(self, node: str | None) -> None:
        """The segment running ends (``node``: the next one's start; None: the last)."""
        if self.cov is not None:
            self.busy = True
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    self.segment(node)
            except Exception as exc:  # noqa: BLE001 - the measurement's boundary, as above
                self.put({"unseen": f"the measurement failed: {exc!r}", "seg": self.node})
            finally:
                self.busy = False
        self.node = node or ""

    def segment(self, node: str | None) -> None:
        import coverage

        replaced = self.tracer is not None and sys.gettrace() is not self.tracer
        if replaced or coverage.Coverage.current() is not self.cov:
            self.put({"unseen": "another tracer took the slot (coverage.py?)", "seg": self.node})
        if self.tracer is None:  # sys.monitoring: read and clear this segment's lines
            data = self.cov.get_data()
            lines = {f: sorted(data.lines(f) or ()) for f in data.measured_files()}
            data.erase()
            self.put({"lines": lines, "seg": self.node})
            sys.monitoring.restart_events()  # type: ignore[attr-defined,unused-ignore]
        elif node is not None:
            self.cov.switch_context(node)
        if node is None:
            self.cov.stop()
            by_node: dict[str, dict[str, list[int]]] = {}
            data = self.cov.get_data()
            for path in data.measured_files() if self.tracer is not None else ():
                for line, nodes in data.contexts_by_lineno(path).items():
                    for seg in nodes:
                        by_node.setdefault(seg, {}).setdefault(path, []).append(line)
            for seg, lines in by_node.items():
                self.put({"lines": lines, "seg": seg})
            self.put({"measured": True})  # every segment's lines are written
            self.cov = None


def _python(argv: Any, env: Any) -> str:
    """The command line, when it starts a Python process (by name or ``#!``); else ""."""
    args = [os.fsdecode(a) for a in argv] if isinstance(argv, (list, tuple)) else [str(argv)]
    shown = " ".join(args)[:200]
    if any("python" in a.lower() for a in args):
        return shown
    folders = (env if env is not None else os.environ).get("PATH", "").split(os.pathsep)
    for where in [args[0]] if os.sep in args[0] else [os.path.join(d, args[0]) for d in folders]:
        with contextlib.suppress(OSError), open(where, "rb") as fh:
            head = fh.read(256).split(b"\n", 1)[0]
            return shown if head.startswith(b"#!") and b"python" in head else ""
    return ""


def _audit(event: str, args: tuple[Any, ...]) -> None:
    """A node that starts a Python process or forks: its segment is unseen."""
    batch = _BATCH
    if (event not in SPAWNS and event not in FORKS) or batch is None or batch.busy:
        return
    if os.getpid() != batch.pid or batch.cov is None:
        return
    batch.busy = True
    try:
        why = "a node forked this process (the child's lines are not seen)"
        if event in SPAWNS:
            shown = _python(args[2] if event == "os.spawn" else args[1] or args[0], None)
            why = f"a node started a Python process, not measured: {shown}" if shown else ""
        if why:
            batch.put({"unseen": why, "seg": batch.node})
    # An interpreter callback in the check: a failure is recorded, never raised there.
    except Exception as exc:  # noqa: BLE001
        batch.put({"unseen": f"the measurement failed: {exc!r}", "seg": batch.node})
    finally:
        batch.busy = False


_BATCH: _Batch | None = None
if os.environ.get(FOLDER_ENV):
    _BATCH = _Batch(os.environ[FOLDER_ENV])
    if _BATCH.spec.get("include") is not None:
        sys.addaudithook(_audit)
        _BATCH.measure(list(_BATCH.spec["include"]))
_SKIPS: list[str] = []  # where pytest, printing a line per skip (-rs, -ra, -rA), starts


def _main() -> _Batch | None:
    """The batch, in its own process (not in a zygote or a mutant's fork)."""
    batch = _BATCH
    return batch if batch is not None and os.getpid() == batch.pid else None


def pytest_configure(config: Any) -> None:
    if any(c in str(config.getoption("reportchars", "") or "") for c in "saA"):
        _SKIPS.append(str(config.invocation_params.dir))
    if _main() is not None:
        _BATCH.put({"rootdir": str(config.rootpath)})  # type: ignore[union-attr]


def pytest_sessionstart(session: Any) -> None:
    batch = _main()
    if batch is not None and batch.spec.get("fork") and hasattr(os, "fork"):
        batch.life, batch.keep = os.pipe()
        batch.go = os.pipe()
        batch.zygotes.append(_fork(batch, "plan0"))  # an import fork returns here: collects


def pytest_collectreport(report: Any) -> None:
    if report.outcome != "passed" and _BATCH is not None:
        text = "" if report.longrepr is None else str(report.longrepr)
        _BATCH.errors.append(text)
        if _main() is not None:
            _BATCH.put({"collect_error": report.nodeid, "longrepr": text})


def pytest_collection_finish(session: Any) -> None:
    batch = _BATCH
    if batch is not None and batch.serving is not None:  # an import fork: run, never return
        _Zygote(batch, -1, session.items).served(batch.serving)
    if _main() is not None and batch is not None and batch.zygotes:
        batch.zygotes.append(_fork(batch, "plan", session.items))


def pytest_runtest_logstart(nodeid: str, location: Any) -> None:
    if _main() is not None:
        _BATCH.switch(nodeid)  # type: ignore[union-attr]
        _BATCH.put({"start": nodeid})  # type: ignore[union-attr]


def pytest_runtest_logreport(report: Any) -> None:
    record = {
        "report": report.nodeid,
        "when": report.when,
        "outcome": report.outcome,
        "xfail": hasattr(report, "wasxfail"),
        "longrepr": "" if report.longrepr is None else str(report.longrepr),
        "duration": float(getattr(report, "duration", 0.0)),
    }
    where = report.longrepr
    if report.skipped and _SKIPS and isinstance(where, tuple) and len(where) == 3:
        path, reason = os.path.relpath(where[0], _SKIPS[0]), str(where[2])
        record["skip"] = f"SKIPPED [1] {path}:{where[1]}: {reason.removeprefix('Skipped: ')}"
    if _BATCH is not None and _BATCH.reports is not None:
        _BATCH.reports.append(record)
    elif _main() is not None:
        _BATCH.put(record)  # type: ignore[union-attr]


def pytest_runtest_logfinish(nodeid: str, location: Any) -> None:
    if _main() is not None:
        _BATCH.put({"finish": nodeid})  # type: ignore[union-attr]


def pytest_sessionfinish(session: Any, exitstatus: Any) -> None:
    batch = _main()
    if batch is None:
        return
    batch.switch(None)
    batch.put({"exit": int(exitstatus)})
    if batch.zygotes:
        try:  # the caller plans the mutants now and hands them to the zygotes
            ready = os.open(os.path.join(batch.folder, "ready"), os.O_WRONLY | os.O_NONBLOCK)
            os.write(ready, b"1")
            os.close(ready)
            for pid in reversed(batch.zygotes):  # one after the other: they share the cores
                if pid == batch.zygotes[0]:
                    os.close(batch.go[1])
                os.waitpid(pid, 0)
        except OSError as exc:  # no caller listening, or a zygote gone: no mutants
            batch.put({"zygote": repr(exc)})
        finally:
            for fd in (batch.keep, batch.go[1]):
                with contextlib.suppress(OSError):
                    os.close(fd)


# -- mutants --------------------------------------------------------------------------------


def _fork(batch: _Batch, fifo: str, items: Any = None) -> int:
    """A zygote reading its entries from ``fifo`` (``items``: the collected session's)."""
    plan = os.open(os.path.join(batch.folder, fifo), os.O_RDWR)  # never blocks nor EOFs
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    batch.busy = True
    with warnings.catch_warnings():  # 3.12 warns of a fork while other threads run
        warnings.simplefilter("ignore")
        pid = os.fork()
    batch.busy = False
    if pid:
        os.close(plan)
        return pid
    try:
        os.close(batch.keep)
        os.close(batch.go[1])
        gc.freeze()  # its forks then leave the session's objects' pages unwritten
        if batch.cov is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                batch.cov.stop()
            batch.cov = None
        _Zygote(batch, plan, items).serve(batch.go[0] if items is None else -1)
    except BaseException:  # noqa: BLE001 - the zygote's boundary: it ends, its runs said
        os._exit(70)
    if batch.serving is None:
        os._exit(0)
    return 0  # an import fork: back into pytest, to collect its mutant


class _Zygote:
    """Runs entries: per attempt a fork that runs the entry's nodes under its deadline."""

    def __init__(self, batch: _Batch, plan: int, items: Any) -> None:
        self.batch = batch
        self.plan = plan
        self.items = {item.nodeid: item for item in items or ()}
        self.modules: dict[str, Any] = {}
        for module in list(sys.modules.values()):
            where = getattr(module, "__file__", None)
            if isinstance(where, str):
                self.modules.setdefault(os.path.realpath(where), module)

    def serve(self, go: int) -> None:
        """Read the entries (and wait for ``go`` to end, if given), then run them."""
        entries: list[dict[str, Any]] = []
        buffer = b""
        while not entries or not entries[-1].get("end"):
            readable = select.select([self.plan, self.batch.life], [], [])[0]
            if self.batch.life in readable and not os.read(self.batch.life, 1):
                return
            buffer += os.read(self.plan, 1 << 20)
            *lines, buffer = buffer.split(b"\n")
            entries += [json.loads(line) for line in lines if line]
        if go >= 0:
            os.read(go, 1)
        failed: dict[str, str] = {}  # gates whose control did not pass: why
        for entry in entries[:-1]:
            subs = entry.get("subs", [entry])
            for sub in subs:
                if sub["gate"] in failed:
                    self.batch.put({"m": sub["m"], "solo": failed[sub["gate"]]})
            subs = [s for s in subs if s["gate"] not in failed]
            if not subs:
                continue
            if "text" in entry and self.fork_import({**entry, "subs": subs}):
                return  # this is the import fork: collect, run the subs
            if "text" not in entry:
                self.run(entry)
            for sub in (s for s in subs if s.get("control")):
                found = self.records(sub["m"])
                if not any(_passed(r) for r in found):
                    failed[sub["gate"]] = next(
                        (str(r["solo"]) for r in found if "solo" in r), CONTROL
                    )

    def fork_import(self, entry: dict[str, Any]) -> bool:
        """Fork the process that imports ``entry``'s mutated file from its text; True in
        it. Here, wait for it; subs it left unanswered time out, or run solo."""
        path = os.path.realpath(entry["path"])
        if path in self.modules:
            for sub in entry["subs"]:
                self.batch.put({"m": sub["m"], "solo": "its file is imported before collection"})
            return False
        started = time.monotonic()
        pid = os.fork()
        if pid == 0:
            os.setpgid(0, 0)
            sys.meta_path.insert(0, _Served(path, entry["text"]))
            self.batch.serving, self.batch.errors = {**entry, "t0": started}, []
            return True
        ended = self.wait(pid, started + float(entry["deadline"]))
        lost = {"a": 0, "elapsed": time.monotonic() - started, **ended}  # a hang: timeout
        if "timeout" not in ended:
            lost = {"solo": f"its import fork ended without its answer ({ended})"}
        for sub in entry["subs"]:
            if not self.records(sub["m"]):
                self.batch.put({"m": sub["m"], **lost})
        return False

    def records(self, m: int) -> list[dict[str, Any]]:
        with open(os.path.join(self.batch.folder, "records"), encoding="utf-8") as fh:
            return [r for line in fh if (r := json.loads(line)).get("m") == m]

    def served(self, entry: dict[str, Any]) -> None:
        """In the import fork, once collected: run each gate's nodes, or say what failed to
        collect as pytest would (exit 2); then exit."""
        collected = time.monotonic() - entry["t0"]  # counted in each of its mutants' time
        for sub in entry["subs"]:
            if self.batch.errors:
                result = {"exit": 2, "reports": [], "raised": "\n".join(self.batch.errors)}
                self.batch.put({"m": sub["m"], "a": 0, "elapsed": collected, "result": result})
            else:
                self.run(sub, collected)
        os._exit(0)

    def run(self, entry: dict[str, Any], before: float = 0.0) -> None:
        """Each attempt of one entry in a fork of its own (a second only after a crash)."""
        try:
            swaps = [self.prepare(swap) for swap in entry.get("swaps", ())]
            items = [self.items[node] for node in entry["nodes"]]
        except (LookupError, ValueError, SyntaxError, TypeError, AttributeError) as exc:
            self.batch.put({"m": entry["m"], "solo": str(exc) or type(exc).__name__})
            return
        for attempt in range(entry.get("attempts", 1)):
            started = time.monotonic()
            pid = os.fork()
            if pid == 0:
                _child(self.batch, entry, attempt, swaps, items)
            record = self.wait(pid, started + float(entry["deadline"]))
            record.update(m=entry["m"], a=attempt, elapsed=time.monotonic() - started + before)
            name = os.path.join(self.batch.folder, f"r{entry['m']}.{attempt}")
            with contextlib.suppress(OSError, ValueError), open(name, encoding="utf-8") as fh:
                record["result"] = json.load(fh)
            self.batch.put(record)
            if record.get("result") is not None or record.get("timeout"):
                return

    def wait(self, pid: int, deadline: float) -> dict[str, Any]:
        """Reap ``pid``; at ``deadline``, or when the batch is gone, kill its group."""
        with contextlib.suppress(OSError):  # the child does it too: whoever is first
            os.setpgid(pid, pid)
        watch = os.pidfd_open(pid) if hasattr(os, "pidfd_open") else None
        try:
            while not (found := os.waitpid(pid, os.WNOHANG))[0]:
                left = deadline - time.monotonic()
                fds = [self.batch.life] + ([watch] if watch is not None else [])
                pause = max(0.0, left if watch is not None else min(left, 0.005))
                gone = self.batch.life in select.select(fds, [], [], pause)[0]
                if left <= 0 or (gone and not os.read(self.batch.life, 1)):
                    for kill in (os.killpg, os.kill):
                        with contextlib.suppress(OSError):
                            kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    if left > 0:
                        os._exit(0)  # the batch is gone: so are we
                    return {"timeout": True}
        finally:
            if watch is not None:
                os.close(watch)
        status = found[1]
        if os.WIFSIGNALED(status):
            return {"signal": os.WTERMSIG(status)}
        return {"exit": os.waitstatus_to_exitcode(status)}

    def prepare(self, swap: dict[str, Any]) -> tuple[Any, Any]:
        """The live function a swap replaces the code of, and that code, compiled from the
        sent source at its own file and lines (inside its classes, for ``super()``)."""
        path, qualname, first = swap["path"], swap["qualname"], int(swap["first"])
        module = self.modules.get(os.path.realpath(path))
        if module is None:
            raise LookupError(f"{path} is not imported once collection is done")
        *classes, name = qualname.split(".")
        owner: Any = module
        for cls in classes:
            owner = vars(owner)[cls]
        function = _function(vars(owner).get(name), path, name, first)
        source: str = swap["source"]
        indented = not classes and source[:1] in (" ", "\t")
        head = (
            ["if 1:\n"] if indented else [" " * i + f"class {c}:\n" for i, c in enumerate(classes)]
        )
        if first - 1 < len(head):
            raise ValueError(f"{qualname} cannot be recompiled alone")
        text = "\n" * (first - 1 - len(head)) + "".join(head) + source
        old = function.__code__
        flags = old.co_flags & FUTURE
        tree = compile(text, old.co_filename, "exec", flags | ast.PyCF_ONLY_AST, dont_inherit=True)
        for node in ast.walk(tree) if "__class__" in old.co_freevars else ():
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                # a mutant without super() still needs the method's __class__ cell
                cell = ast.Expr(ast.Name("__class__", ast.Load()))
                node.body.append(ast.fix_missing_locations(ast.copy_location(cell, node.body[-1])))
        compiled = compile(tree, old.co_filename, "exec", flags, dont_inherit=True)
        code = _find_code(compiled, name, old.co_firstlineno)
        if code is None or code.co_freevars != old.co_freevars:
            raise ValueError(f"{qualname}'s free variables differ once recompiled alone")
        return function, code


def _passed(record: dict[str, Any]) -> bool:
    return record.get("a") == 0 and (record.get("result") or {}).get("exit") == 0


def _function(found: Any, path: str, name: str, first: int) -> Any:
    """The function among what a class or module holds under ``name`` (``staticmethod``,
    ``classmethod``, ``property`` and ``__wrapped__`` unwrapped), defined at ``first``."""
    todo, seen = [found], set()
    while todo:
        candidate = todo.pop()
        if candidate is None or id(candidate) in seen:
            continue
        seen.add(id(candidate))
        code: Any = getattr(candidate, "__code__", None)
        if (
            type(candidate).__name__ == "function"
            and (code.co_name, code.co_firstlineno) == (name, first)
            and os.path.realpath(code.co_filename) == os.path.realpath(path)
        ):
            return candidate
        todo += [getattr(candidate, a, None) for a in ("__func__", "fget", "fset", "fdel")]
        todo.append(getattr(candidate, "__dict__", {}).get("__wrapped__"))
    raise LookupError(f"{name} (line {first}) is not reachable from its module")


def _find_code(code: Any, name: str, first: int) -> Any:
    for const in code.co_consts:
        if hasattr(const, "co_consts"):
            if (const.co_name, const.co_firstlineno) == (name, first):
                return const
            if (found := _find_code(const, name, first)) is not None:
                return found
    return None


class _Served:
    """A finder that imports one file from the text it was given (its mutant)."""

    def __init__(self, path: str, text: str) -> None:
        self.path, self.text = path, text

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        from importlib.machinery import PathFinder

        spec = PathFinder.find_spec(name, path)
        if spec is None or not spec.origin or os.path.realpath(spec.origin) != self.path:
            return None
        spec.loader = self  # type: ignore[assignment]
        return spec

    def create_module(self, spec: Any) -> None:
        return None

    def exec_module(self, module: Any) -> None:
        origin = module.__spec__.origin
        exec(compile(self.text, origin, "exec", dont_inherit=True), vars(module))


def _child(batch: _Batch, entry: dict[str, Any], attempt: int, swaps: Any, items: Any) -> None:
    """A mutant's fork: swap, run the entry's nodes, write what they did, exit. (Its
    tracebacks show the file's unmutated lines: only where each exception rose is read.)"""
    result: dict[str, Any] = {}
    try:
        os.setpgid(0, 0)
        gc.unfreeze()  # what the tests drop is freed as in a plain process
        for function, code in swaps:
            function.__code__ = code
        option = items[0].config.option if items else None
        if getattr(option, "tbstyle", None) in ("auto", "long", "short"):
            # These parse each traceback file's whole source, a third of a second for a
            # large module in every fork; the native style shows the same places where
            # each exception of the chain was raised, which is all that is read.
            option.tbstyle = "native"  # type: ignore[union-attr]
        batch.reports = []
        try:
            for i, item in enumerate(items):
                after = items[i + 1] if i + 1 < len(items) else None
                item.ihook.pytest_runtest_protocol(item=item, nextitem=after)
            result["exit"] = int(any(r["outcome"] == "failed" for r in batch.reports))
        except BaseException as exc:  # noqa: BLE001 - the exit status pytest would give
            code = getattr(exc, "returncode", None)
            result["exit"] = (
                code if code is not None else 2 if isinstance(exc, KeyboardInterrupt) else 3
            )
            result["raised"] = traceback.format_exc(limit=20)
        result["reports"] = batch.reports
        name = os.path.join(batch.folder, f"r{entry['m']}.{attempt}")
        with open(name + ".tmp", "w", encoding="utf-8") as fh:
            json.dump(result, fh)
        os.replace(name + ".tmp", name)
    except BaseException:  # noqa: BLE001 - the fork's boundary: no result, judged by its exit
        os._exit(70)
    os._exit(0)
