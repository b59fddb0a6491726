"""The reporter inside a batch's pytest process: what each node did and executed, and the
mutants forked from the collected session.

Loaded by the batch with ``-p`` from a private folder (``batch.py`` copies this file there
under ``MODULE``, with ``spec.json``); once loaded it takes that folder off ``sys.path``.
It imports the standard library, and coverage.py when it measures. Records are JSON lines
appended to ``records`` in the folder (open, append, close: a crash or a kill keeps every
record made so far): the rootdir, each node's start, reports and finish, each collection
failure, the exit status, the lines each segment executed (``""``: collection), what the
measurement could not see, and each mutant's runs.

**Measuring.** coverage.py, limited to the spec's files, started when this module loads
(before conftest files and other plugins): its C tracer before Python 3.12, its
``sys.monitoring`` core from 3.12. Nodes are told apart by a dynamic context per node (C
tracer) or by reading and clearing the data at each node's start (``sys.monitoring``).
Nothing is measured where another tracer holds the slot; a process a node starts, a fork,
or a tracer set later makes that node's lines (collection's: every node's) unseen.

**Mutants.** With ``fork`` in the spec, a *zygote* is forked once collection is done:
it holds the collected session before any test ran, stops measuring and waits. After the
last node, this process writes ``ready`` and the caller writes the plan into the ``plan``
FIFO; the zygote forks a child per entry that swaps functions' code objects (compiled
from the sent source at the file's own path and line numbers), runs the entry's nodes
through ``item.ihook.pytest_runtest_protocol`` and writes what they did, under the entry's
deadline. A gate's control entry (the unmutated code recompiled) comes first: if it does
not pass, that gate's mutants are left to solo runs.
"""

from __future__ import annotations
import __future__

import contextlib
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
SPAWNS = frozenset({"subprocess.Popen", "os.exec", "os.posix_spawn", "os.spawn", "os.fork"})
WATCHED = SPAWNS | {"os.forkpty", "sys.settrace"}
FUTURE = 0
for _name in __future__.all_feature_names:
    FUTURE |= getattr(__future__, _name).compiler_flag

_here = os.path.dirname(os.path.abspath(__file__))
while _here in sys.path:  # the check's own imports never see our folder
    sys.path.remove(_here)


class _Batch:
    """This batch process: its folder, spec, measurement and the node running."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        self.pid = os.getpid()
        self.started = time.monotonic()
        with open(os.path.join(folder, "spec.json"), encoding="utf-8") as fh:
            self.spec: dict[str, Any] = json.load(fh)
        self.node = ""  # the segment running: "" until the first node starts
        self.busy = False  # our own calls raise audit events too
        self.cov: Any = None
        self.tracer: Any = None  # the C tracer's trace function, while it is ours
        self.hook: Any = None  # the C tracer's hook for new threads
        self.zygote: tuple[int, int] | None = None  # (pid, write end of its lifeline)
        self.items: list[Any] = []
        self.child: list[Any] | None = None  # in a mutant's child: its reports

    def put(self, record: dict[str, Any]) -> None:
        fd = os.open(os.path.join(self.folder, "records"), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            os.write(fd, (json.dumps(record) + "\n").encode())
        finally:
            os.close(fd)

    def unseen(self, why: str) -> None:
        self.put({"unseen": why, "seg": self.node})

    def measure(self, include: list[str]) -> None:
        """Start coverage.py on ``include``, unless another tracer holds the slot."""
        import glob

        monitoring = sys.version_info >= (3, 12)
        held = sys.gettrace()
        if held is not None:
            return self.put({"unmeasured": f"a tracer we could not share was running ({held!r})"})
        saved = os.environ.get("COVERAGE_CORE")
        self.busy = True
        try:
            import coverage

            if coverage.Coverage.current() is not None or (
                monitoring and sys.monitoring.get_tool(1) is not None  # type: ignore[attr-defined,unused-ignore]
            ):
                return self.put({"unmeasured": "coverage.py was already measuring this process"})
            if monitoring:  # coverage.py reads its core from the environment, once
                os.environ["COVERAGE_CORE"] = "sysmon"
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cov = coverage.Coverage(
                    data_file=None, include=[glob.escape(p) for p in include], config_file=False
                )
                cov.start()
            self.cov = cov
            if not monitoring:
                self.tracer = sys.gettrace()
                import threading

                self.hook = threading.gettrace()
        # This process's measurement boundary: what fails is "unmeasured", never the check.
        except Exception as exc:  # noqa: BLE001
            self.put({"unmeasured": f"coverage.py could not start: {type(exc).__name__}: {exc}"})
        finally:
            self.busy = False
            if saved is None:
                os.environ.pop("COVERAGE_CORE", None)
            else:
                os.environ["COVERAGE_CORE"] = saved
        return None

    def switch(self, node: str) -> None:
        """The next segment starts: the C tracer labels lines by node; ``sys.monitoring``
        reports each line once, so its data is read, cleared and its events restarted."""
        if self.cov is None:
            self.node = node
            return
        self.busy = True
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if self.tracer is not None and sys.gettrace() is not self.tracer:
                    self.unseen("a tracer we could not share replaced ours")
                if self.tracer is None:
                    self.flush()
                    sys.monitoring.restart_events()  # type: ignore[attr-defined,unused-ignore]
                else:
                    self.cov.switch_context(node)
        except Exception as exc:  # noqa: BLE001 - the measurement's boundary, as above
            self.unseen(f"the measurement failed: {type(exc).__name__}: {exc}")
        finally:
            self.busy = False
        self.node = node

    def flush(self) -> None:
        data = self.cov.get_data()
        lines = {f: sorted(data.lines(f) or ()) for f in data.measured_files()}
        data.erase()
        if lines:
            self.put({"lines": lines, "seg": self.node})

    def finish(self) -> None:
        """Stop measuring and record what each segment executed."""
        if self.cov is None:
            return
        self.busy = True
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if self.tracer is None:
                    self.flush()
                    self.cov.stop()
                    return
                if sys.gettrace() is not self.tracer:
                    self.unseen("a tracer we could not share replaced ours")
                self.cov.stop()
                by_node: dict[str, dict[str, list[int]]] = {}
                data = self.cov.get_data()
                for path in data.measured_files():
                    for line, nodes in data.contexts_by_lineno(path).items():
                        for node in nodes:
                            by_node.setdefault(node, {}).setdefault(path, []).append(line)
                for node, lines in by_node.items():
                    self.put({"lines": lines, "seg": node})
        except Exception as exc:  # noqa: BLE001 - the measurement's boundary, as above
            self.unseen(f"the measurement failed: {type(exc).__name__}: {exc}")
        finally:
            self.cov = None
            self.busy = False

    def settrace_seen(self) -> str:
        """Why a ``sys.settrace`` call takes the slot from our tracer, or "" (ours)."""
        caller = sys._getframe(2)
        code = caller.f_code
        if self.tracer is None:  # sys.monitoring: only another coverage.py pauses ours
            return "another coverage.py paused ours" if "coverage" in code.co_filename else ""
        import threading

        ours = threading.gettrace() == self.hook
        starts = ("_bootstrap_inner", "_installation_trace", "_start_tracer")
        if ours and code.co_name in starts and "threading" in code.co_filename + code.co_name:
            return ""  # a new thread installing our tracer
        if ours and code.co_name in starts[1:] and "coverage" in code.co_filename:
            return ""
        return f"a tracer we could not share replaced ours ({code.co_filename}:{caller.f_lineno})"


def _python(argv: Any, env: Any) -> str:
    """The command line, when ``argv`` starts a Python process; else ""."""
    args = [os.fsdecode(a) for a in argv] if isinstance(argv, (list, tuple)) else [str(argv)]
    if not args:
        return ""
    shown = " ".join(args)[:200]
    if any("python" in a.lower() for a in args):
        return shown
    program = args[0]
    path = (env if env is not None else os.environ).get("PATH", "")
    for candidate in (
        [program]
        if os.sep in program
        else [os.path.join(d, program) for d in path.split(os.pathsep) if d]
    ):
        try:
            with open(candidate, "rb") as fh:
                head = fh.read(256)
        except OSError:
            continue
        return shown if head.startswith(b"#!") and b"python" in head.split(b"\n", 1)[0] else ""
    return ""


def _audit(event: str, args: tuple[Any, ...]) -> None:
    """Processes a node starts out of the measurement's sight, and tracers that take the
    slot: the segment running is unseen, with the reason."""
    batch = _BATCH
    if event not in WATCHED or batch is None or batch.busy or os.getpid() != batch.pid:
        return
    if batch.cov is None and event == "sys.settrace":
        return
    batch.busy = True
    try:
        why = ""
        if event == "sys.settrace":
            why = batch.settrace_seen()
        elif event in ("os.fork", "os.forkpty"):
            why = "a node forked this process: the child's lines are not measured"
        elif event == "subprocess.Popen":
            shown = _python(args[1] or args[0], args[3] if len(args) > 3 else None)
            why = f"a node started a Python process, not measured: {shown}" if shown else ""
        elif event in SPAWNS:
            shown = _python(args[1] if event != "os.spawn" else args[2], None)
            why = f"a node started a Python process, not measured: {shown}" if shown else ""
        if why:
            batch.unseen(why)
    # An interpreter callback in the check: a failure is recorded, never raised there.
    except Exception as exc:  # noqa: BLE001
        batch.unseen(f"the measurement failed: {type(exc).__name__}: {exc}")
    finally:
        batch.busy = False


_BATCH: _Batch | None = None
if os.environ.get(FOLDER_ENV):
    _BATCH = _Batch(os.environ[FOLDER_ENV])
    if _BATCH.spec.get("include") is not None:
        sys.addaudithook(_audit)
        _BATCH.measure(list(_BATCH.spec["include"]))


def _put(record: dict[str, Any]) -> None:
    if _BATCH is not None and _BATCH.child is None and os.getpid() == _BATCH.pid:
        _BATCH.put(record)


_SKIPS: list[str] = []  # where pytest, printing a line per skip (-rs, -ra, -rA), starts


def pytest_configure(config: Any) -> None:
    if any(c in str(config.getoption("reportchars", "") or "") for c in "saA"):
        _SKIPS.append(str(config.invocation_params.dir))
    _put({"rootdir": str(config.rootpath), "pid": os.getpid()})


def pytest_collection_finish(session: Any) -> None:
    batch = _BATCH
    if batch is not None and batch.spec.get("fork") and hasattr(os, "fork"):
        batch.items = list(session.items)
        _start_zygote(batch)


def pytest_runtest_logstart(nodeid: str, location: Any) -> None:
    if _BATCH is not None and _BATCH.child is None and os.getpid() == _BATCH.pid:
        _BATCH.switch(nodeid)
    _put({"start": nodeid})


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
    if _BATCH is not None and _BATCH.child is not None:
        _BATCH.child.append(record)
    _put(record)


def pytest_runtest_logfinish(nodeid: str, location: Any) -> None:
    _put({"finish": nodeid})


def pytest_collectreport(report: Any) -> None:
    if report.outcome != "passed":
        text = "" if report.longrepr is None else str(report.longrepr)
        _put({"collect_error": report.nodeid, "longrepr": text})


def pytest_sessionfinish(session: Any, exitstatus: Any) -> None:
    batch = _BATCH
    if batch is None or os.getpid() != batch.pid:
        return
    batch.finish()
    _put({"exit": int(exitstatus), "t": time.monotonic() - batch.started})
    if batch.zygote is not None:
        _mutants(batch)


# -- mutants --------------------------------------------------------------------------------


def _start_zygote(batch: _Batch) -> None:
    """Fork the zygote: the collected session, before any test ran."""
    plan = os.open(os.path.join(batch.folder, "plan"), os.O_RDWR)  # never blocks, nor EOFs
    life_r, life_w = os.pipe()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    batch.busy = True
    try:
        with warnings.catch_warnings():  # 3.12 warns when other threads exist
            warnings.simplefilter("ignore")
            pid = os.fork()
    finally:
        batch.busy = False
    if pid == 0:
        code = 0
        try:
            os.close(life_w)
            if batch.cov is not None:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    batch.cov.stop()
                batch.cov = None
            _Zygote(batch, plan, life_r).serve()
        except BaseException:  # noqa: BLE001 - the zygote's boundary: it ends, quietly
            code = 70
        os._exit(code)
    os.close(life_r)
    os.close(plan)
    batch.zygote = (pid, life_w)


def _mutants(batch: _Batch) -> None:
    """Tell the caller the nodes ran, and wait while the zygote runs the plan it sends."""
    assert batch.zygote is not None
    pid, life = batch.zygote
    try:
        ready = os.open(os.path.join(batch.folder, "ready"), os.O_WRONLY | os.O_NONBLOCK)
        os.write(ready, b"1")
        os.close(ready)
        os.waitpid(pid, 0)
    except OSError as exc:  # no caller listening, or the zygote is gone: no mutants
        _put({"zygote": f"{type(exc).__name__}: {exc}"})
    finally:
        os.close(life)


class _Zygote:
    """Runs the plan: one fork per entry's attempt, under its deadline."""

    def __init__(self, batch: _Batch, plan: int, life: int) -> None:
        self.batch = batch
        self.plan = plan
        self.life = life  # EOF: the batch process is gone
        self.items = {item.nodeid: item for item in batch.items}
        self.modules: dict[str, Any] = {}
        for module in list(sys.modules.values()):
            where = getattr(module, "__file__", None)
            if isinstance(where, str):
                self.modules.setdefault(os.path.realpath(where), module)

    def serve(self) -> None:
        entries: list[dict[str, Any]] = []
        buffer = b""
        while True:
            readable, _, _ = select.select([self.plan, self.life], [], [])
            if self.life in readable and not os.read(self.life, 1):
                return
            buffer += os.read(self.plan, 1 << 16)
            *lines, buffer = buffer.split(b"\n")
            entries += [json.loads(line) for line in lines if line]
            if entries and entries[-1].get("end"):
                break
        failed: set[str] = set()
        for entry in entries[:-1]:
            if entry["gate"] in failed:
                self.batch.put({"m": entry["m"], "solo": failed_control(entry)})
                continue
            passed = self.run(entry)
            if entry.get("control") and not passed:
                failed.add(entry["gate"])

    def run(self, entry: dict[str, Any]) -> bool:
        """Run one entry's attempts; whether its first attempt passed cleanly."""
        try:
            swaps = [self.prepare(swap) for swap in entry["swaps"]]
            items = [self.items[node] for node in entry["nodes"]]
        except (LookupError, ValueError, SyntaxError, TypeError, AttributeError) as exc:
            self.batch.put({"m": entry["m"], "solo": str(exc) or type(exc).__name__})
            return False
        for attempt in range(entry.get("attempts", 1)):
            started = time.monotonic()
            pid = os.fork()
            if pid == 0:
                _child(self.batch, entry, attempt, swaps, items)
            record = self.wait(pid, started + float(entry["deadline"]))
            record.update(m=entry["m"], a=attempt, elapsed=time.monotonic() - started)
            name = os.path.join(self.batch.folder, f"r{entry['m']}.{attempt}")
            try:
                with open(name, encoding="utf-8") as fh:
                    record["result"] = json.load(fh)
                os.unlink(name)
            except (OSError, ValueError):
                record["result"] = None
            self.batch.put(record)
            result = record["result"]
            if result is not None:
                return attempt == 0 and result.get("exit") == 0
        return False

    def wait(self, pid: int, deadline: float) -> dict[str, Any]:
        """Reap ``pid``; kill its process group at ``deadline`` (or when the batch died)."""
        with contextlib.suppress(OSError):  # the child does it too: whoever is first
            os.setpgid(pid, pid)
        watch = None
        if hasattr(os, "pidfd_open"):
            try:
                watch = os.pidfd_open(pid)
            except OSError:
                watch = None
        timed_out = False
        try:
            while True:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    break
                left = deadline - time.monotonic()
                fds = [self.life] + ([watch] if watch is not None else [])
                readable = select.select(
                    fds, [], [], max(0.0, min(left, 0.005 if watch is None else left))
                )[0]
                gone = self.life in readable and not os.read(self.life, 1)
                if left <= 0 or gone:
                    timed_out = not gone
                    for kill in (os.killpg, os.kill):
                        with contextlib.suppress(OSError):
                            kill(pid, signal.SIGKILL)
                    _, status = os.waitpid(pid, 0)
                    if gone:
                        os._exit(0)
                    break
        finally:
            if watch is not None:
                os.close(watch)
        if timed_out:
            return {"timeout": True}
        if os.WIFSIGNALED(status):
            return {"signal": os.WTERMSIG(status)}
        return {"exit": os.waitstatus_to_exitcode(status)}

    def prepare(self, swap: dict[str, Any]) -> tuple[Any, Any, str, list[str]]:
        """The live function a swap replaces the code of, and the code compiled for it."""
        path, qualname, first = swap["path"], swap["qualname"], int(swap["first"])
        module = self.modules.get(os.path.realpath(path))
        if module is None:
            raise LookupError(f"{path} is not imported when collection ends")
        *classes, name = qualname.split(".")
        owner: Any = module
        for cls in classes:
            owner = vars(owner)[cls]
        function = _function(vars(owner).get(name), path, name, first)
        source: str = swap["source"]
        lines = source.splitlines(keepends=True)
        if first - 1 < len(classes) or not lines:
            raise ValueError(f"{qualname} cannot be recompiled alone")
        head = "".join(" " * depth + f"class {cls}:\n" for depth, cls in enumerate(classes))
        text = "\n" * (first - 1 - len(classes)) + head + source
        flags = function.__code__.co_flags & FUTURE
        compiled = compile(text, function.__code__.co_filename, "exec", flags, dont_inherit=True)
        code = _find_code(compiled, name, function.__code__.co_firstlineno)
        if code is None:
            raise LookupError(f"{qualname} not found in its recompiled source")
        if code.co_freevars != function.__code__.co_freevars:
            raise ValueError(f"{qualname}'s free variables differ once recompiled alone")
        return function, code, path, lines


def failed_control(entry: dict[str, Any]) -> str:
    return (
        "the check does not pass in a fork with the unmutated code recompiled: "
        "it sees the fork or the swap"
    )


def _function(found: Any, path: str, name: str, first: int) -> Any:
    """The function object among what a class or module holds under ``name``
    (``staticmethod``, ``classmethod``, ``property``, ``__wrapped__`` unwrapped)."""
    todo = [found]
    seen: set[int] = set()
    while todo:
        candidate = todo.pop()
        if candidate is None or id(candidate) in seen:
            continue
        seen.add(id(candidate))
        code = getattr(candidate, "__code__", None)
        if (
            type(candidate).__name__ == "function"
            and code is not None
            and code.co_name == name
            and code.co_firstlineno == first
            and os.path.realpath(code.co_filename) == os.path.realpath(path)
        ):
            return candidate
        todo += [getattr(candidate, a, None) for a in ("__func__", "fget", "fset", "fdel")]
        todo.append(vars(candidate).get("__wrapped__") if hasattr(candidate, "__dict__") else None)
    raise LookupError(f"{name} (line {first}) is not reachable from its module")


def _find_code(code: Any, name: str, first: int) -> Any:
    for const in code.co_consts:
        if hasattr(const, "co_consts"):
            if const.co_name == name and const.co_firstlineno == first:
                return const
            found = _find_code(const, name, first)
            if found is not None:
                return found
    return None


def _child(
    batch: _Batch, entry: dict[str, Any], attempt: int, swaps: list[Any], items: list[Any]
) -> None:
    """A mutant's child: swap, run the entry's nodes, write what they did, exit."""
    import linecache

    result: dict[str, Any] = {}
    try:
        os.setpgid(0, 0)
        for function, code, path, lines in swaps:
            first = code.co_firstlineno
            text = linecache.getlines(path)
            linecache.cache[path] = (
                0,
                None,
                [*text[: first - 1], *lines, *text[first - 1 + len(lines) :]],
                path,
            )
            function.__code__ = code
        option = items[0].config.option if items else None
        if getattr(option, "tbstyle", None) in ("auto", "long", "short"):
            # These styles parse each traceback file's whole source (a third of a second
            # for a large module, in every child): the native one shows the same places
            # where each exception of the chain was raised, which is what is read.
            option.tbstyle = "native"
        batch.child = []
        try:
            for i, item in enumerate(items):
                after = items[i + 1] if i + 1 < len(items) else None
                item.ihook.pytest_runtest_protocol(item=item, nextitem=after)
            failed = any(r["outcome"] == "failed" for r in batch.child)
            result["exit"] = 1 if failed else 0
        except BaseException as exc:  # noqa: BLE001 - what pytest would end the session with
            result["exit"] = getattr(exc, "returncode", None) or (
                2 if isinstance(exc, KeyboardInterrupt) else 3
            )
            result["raised"] = traceback.format_exc(limit=20)
        result["reports"] = batch.child
    except BaseException:  # noqa: BLE001 - the child's boundary: no result, judged by its exit
        os._exit(70)
    name = os.path.join(batch.folder, f"r{entry['m']}.{attempt}")
    with open(name + ".tmp", "w", encoding="utf-8") as fh:
        json.dump(result, fh)
    os.replace(name + ".tmp", name)
    os._exit(0)
