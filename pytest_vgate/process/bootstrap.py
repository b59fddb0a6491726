"""Measure what a check's Python process executes, without the check seeing it.

Copied as ``sitecustomize.py`` into a private folder that ``measure.start`` puts first on
the check's ``PYTHONPATH``, so every Python process of the check runs it at startup. It
runs inside the check's own interpreter, any CPython from 3.8, and uses only ``sys`` and
``os``: importing anything else would show in the check's ``sys.modules``. For the same
reason there is no ``from __future__ import annotations``: annotations are strings, and
type-only imports sit under a false ``TYPE_CHECKING``.

The engines (a ``sys.monitoring`` tool on 3.12+, coverage.py's C tracer or a
``sys.settrace`` tracer before), what stays invisible to the check, the stack sample at a
base run's deadline and what is reported as not measured are described in
docs/red-before-green.md ("How a run is measured").

Records go to ``lines.<pid>.<random>`` in the run's folder the moment they happen (open,
append, close: nothing is lost at ``os._exit`` or a kill): ``s ENGINE EXE`` when measuring
starts, ``p N PATH`` when a measured file first runs, ``l N LINE`` for each line once,
``x WHY`` for what could not be measured and ``w WHY`` for why there is no stack sample
(texts hex-encoded).
"""

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # for mypy only: importing them here would show in sys.modules
    import types
    from collections.abc import Callable

DIR_ENV = "PYTEST_VGATE_COVERAGE_DIR"  # the run's data folder
SPEC_NAME = "spec"  # beside the data folder: what to record and with which engine
DATA_PREFIX = "lines."
STACK_PREFIX = "stack."  # a process's stack sample at its deadline (faulthandler's text)
HIGH_FDS = (1023, 511, 255)  # below the usual limit of 1024: where a sample's file waits
CODE_NAME = "<pytest-vgate measure>"
TOOL_IDS = (4, 3)  # free by convention: 0 debugger, 1 coverage, 2 profiler, 5 optimizer
TOOL_NAME = "pytest-vgate"
SITE_PARTS = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)
SPAWN_EVENTS = frozenset({"subprocess.Popen", "os.exec", "os.posix_spawn", "os.spawn"})
IGNORED_FLAGS = frozenset("IES")  # python flags that skip PYTHONPATH or sitecustomize
THREADING = os.sep + "threading.py"
NO_LINES = (-1, -1)  # to coverage.py's C tracer: record nothing (the line is recorded here)
CTRACER_MEMBERS = ("should_trace", "check_include", "should_trace_cache", "data", "warn",
                   "file_tracers", "trace_arcs", "concur_id_func", "should_start_context",
                   "switch_context", "disable_plugin")  # fmt: skip


class _Run:
    """One measured process: what to record, and the records made so far."""

    def __init__(self, folder: str, home: str, spec: str) -> None:
        self.out = os.path.join(folder, f"{DATA_PREFIX}{os.getpid()}.{os.urandom(4).hex()}")
        self.folder = folder
        self.home = home
        self.engine = "auto"
        self.sample_at: float | None = None  # time.monotonic() of the stack sample
        self.exact: set[str] = set()
        self.stop = False  # stop tracing once every watched line ran
        self.watch: dict[str, set[int]] = {}  # real path -> lines that must all run
        self.groups: dict[str, frozenset[int]] = {}  # real path -> lines of which one must
        self.on_done: Callable[[], None] | None = None
        prefixes: list[str] = []
        for row in spec.splitlines():
            kind, _, value = row.partition(" ")
            if kind == "engine":
                self.engine = value
            elif kind == "file":
                self.exact.add(os.fsdecode(bytes.fromhex(value)))
            elif kind == "folder":
                prefixes.append(os.fsdecode(bytes.fromhex(value)))
            elif kind == "stop":
                self.stop = True
            elif kind == "sample":
                self.sample_at = float(value)
            elif kind in ("watch", "any"):
                path, _, numbers = value.partition(" ")
                real = os.fsdecode(bytes.fromhex(path))
                lines = {int(n) for n in numbers.split(",") if n}
                if kind == "watch":
                    self.watch.setdefault(real, set()).update(lines)
                elif lines:
                    self.groups[real] = frozenset(lines)
        self.remaining = sum(map(len, self.watch.values())) + len(self.groups)
        self.prefixes = tuple(prefixes)
        self.paths: list[str] = []  # file number -> real path
        self.watched: dict[types.CodeType, bool] = {}
        self.numbers: dict[str, int | None] = {}  # co_filename -> file number, or None
        self.count = 0
        self.seen: set[tuple[int, int]] = set()
        self.said: set[str] = set()
        self.busy = False  # our own writes raise audit events too
        self.stopped = False  # the tracer was taken off: it has seen all it must
        self.begin: Callable[[], None] | None = None  # start tracing: a measured file loads
        self.starting: set[int] = set()  # threads starting a tracer of ours
        self.hook_threads: Callable[[], None] = _nothing  # threading's hook, once loaded

    def put(self, text: str) -> None:
        try:
            fd = os.open(self.out, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                os.write(fd, text.encode("ascii"))
            finally:
                os.close(fd)
        except OSError:
            pass

    def say(self, why: str) -> None:
        """Record what this process could not measure, once per reason."""
        if why not in self.said:
            self.said.add(why)
            self.put(f"x {_hex(why)}\n")

    def note(self, why: str) -> None:
        """Record why this process has no stack sample (its lines are measured all the
        same)."""
        self.put(f"w {_hex(why)}\n")

    def number(self, filename: str) -> "int | None":
        """The file number of a measured file (recording it the first time), else None."""
        try:
            return self.numbers[filename]
        except KeyError:
            pass
        found = None
        if self.wanted(filename):
            real = os.path.realpath(filename)
            found = self.count
            self.count += 1
            self.paths.append(real)
            self.put(f"p {found} {_hex(real)}\n")
        self.numbers[filename] = found
        return found

    def wanted(self, filename: str) -> bool:
        """Whether ``filename`` is one of the measured files."""
        if not filename or filename[0] == "<":
            return False
        real = os.path.realpath(filename)
        return real in self.exact or (
            real.startswith(self.prefixes) and not any(p in real for p in SITE_PARTS)
        )

    def hit(self, number: int, line: int) -> None:
        key = (number, line)
        if key not in self.seen:
            self.seen.add(key)
            self.put(f"l {number} {line}\n")
            if self.remaining:
                self.tick(self.paths[number], line)

    def watches(self, number: int, code: "types.CodeType") -> bool:
        """Whether ``code`` holds a line still asked about (its frames need a line
        tracer); answered once per code object."""
        try:
            return self.watched[code]
        except KeyError:
            pass
        real = self.paths[number]
        wanted = self.watch.get(real, set()) | self.groups.get(real, frozenset())
        lines = getattr(code, "co_lines", None)  # None before 3.10: trace it if anything
        answer = bool(wanted) if lines is None else any(n in wanted for _, _, n in lines())
        self.watched[code] = answer
        return answer

    def tick(self, real: str, line: int) -> None:
        """A watched line ran: once none is left, tracing may stop."""
        pending = self.watch.get(real)
        if pending and line in pending:
            pending.discard(line)
            self.remaining -= 1
        group = self.groups.get(real)
        if group is not None and line in group:
            del self.groups[real]
            self.remaining -= 1
        if not self.remaining and self.on_done is not None:
            self.on_done()


class _Sink:
    """The file object faulthandler's watchdog writes to: it holds a reference to it while
    the watchdog is armed, so the reference count tells whether the watchdog is ours."""

    __slots__ = ("fd",)

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def fileno(self) -> int:
        return self.fd

    def flush(self) -> None:
        pass


class _Sampler:
    """faulthandler's watchdog, armed to dump every thread's stack at ``at``."""

    def __init__(self, run: _Run, at: float, handler: "types.ModuleType", clock: object) -> None:
        self.run = run
        self.at = at
        self.handler = handler
        self.clock = clock
        self.sink: _Sink | None = None
        self.held = 0  # the sink's reference count while faulthandler holds it
        self.paused = False  # cancelled for a fork, to be armed again after it

    def arm(self, sink: "_Sink | None" = None) -> None:
        left = self.at - self.clock.monotonic()  # type: ignore[attr-defined]
        if left <= 0:
            return
        if sink is None:
            name = f"{STACK_PREFIX}{os.getpid()}.{os.urandom(4).hex()}"
            path = os.path.join(self.run.folder, name)
            sink = _Sink(_out_of_the_way(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)))
        self.sink, sink = sink, None  # counted as ``ours`` counts it: held here and there
        self.handler.dump_traceback_later(left, file=self.sink)
        self.held = sys.getrefcount(self.sink)

    def ours(self) -> bool:
        return self.sink is not None and sys.getrefcount(self.sink) == self.held

    # The fork hooks run in the check's os.fork: a failure is noted, never raised there.
    def before_fork(self) -> None:
        try:
            if self.ours():
                self.handler.cancel_dump_traceback_later()
                self.paused = True
        except Exception as exc:  # noqa: BLE001
            self.run.note(f"{type(exc).__name__}: {exc}")

    def after_in_parent(self) -> None:
        try:
            if self.paused:
                self.paused = False
                self.arm(self.sink)
        except Exception as exc:  # noqa: BLE001
            self.run.note(f"{type(exc).__name__}: {exc}")

    def after_in_child(self) -> None:
        """A forked child samples into a file of its own."""
        try:
            if self.paused:
                self.paused = False
                if self.sink is not None:
                    os.close(self.sink.fd)
                self.sink = None
                self.arm()
        except Exception as exc:  # noqa: BLE001
            self.run.note(f"{type(exc).__name__}: {exc}")


def _out_of_the_way(fd: int) -> int:
    """``fd`` moved to a high free descriptor (the check's next file keeps its number)."""
    for high in HIGH_FDS:
        if high <= fd:
            break
        try:
            os.fstat(high)
            continue  # taken
        except OSError:
            pass
        try:
            os.dup2(fd, high, inheritable=False)
        except OSError:
            continue
        os.close(fd)
        return high
    return fd


def _sample(run: _Run, at: float) -> None:
    """Arm the stack sample at ``at`` (``time.monotonic()``)."""
    clock = sys.modules.get("time")
    if clock is None:
        run.note("the time module is not loaded")
        return
    handler = sys.modules.get("faulthandler")
    if handler is None:
        import faulthandler  # built in: no file is read

        handler = faulthandler
        del sys.modules["faulthandler"]  # plain Python has not loaded it: neither have we
    sampler = _Sampler(run, at, handler, clock)
    sampler.arm()
    fork_hooks = getattr(os, "register_at_fork", None)
    if fork_hooks is not None:
        fork_hooks(
            before=sampler.before_fork,
            after_in_parent=sampler.after_in_parent,
            after_in_child=sampler.after_in_child,
        )


def _hex(text: str) -> str:
    return os.fsencode(text).hex()


def _text(value: object) -> str:
    if isinstance(value, bytes):
        return os.fsdecode(value)
    return str(value) if value is not None else ""


def _lost(run: _Run, program: object, argv: object, env: object) -> "str | None":
    """Why a process being started is out of reach of the measurement, or None."""
    args = [_text(a) for a in argv] if isinstance(argv, (list, tuple)) else [_text(argv)]
    if program is not None and (not args or _text(program) != args[0]):
        args.insert(0, _text(program))
    if not args or (not any("python" in a.lower() for a in args) and not _shebang(args[0], env)):
        return None  # not a Python process, as far as can be told
    shown = " ".join(args)[:200]
    mapping = os.environ if env is None else env
    try:
        folder = _text(mapping.get(DIR_ENV) or mapping.get(DIR_ENV.encode()))  # type: ignore[attr-defined]
        path = _text(mapping.get("PYTHONPATH") or mapping.get(b"PYTHONPATH"))  # type: ignore[attr-defined]
    except (AttributeError, TypeError):  # an environment we cannot read: out of reach
        folder = path = ""
    if folder != run.folder or run.home not in path.split(os.pathsep):
        return "a Python process started with an environment that drops the measurement: " + shown
    for arg in args[1:]:
        if not arg.startswith("-") or arg.startswith("--") or arg[1:2] in ("c", "m", "W", "X"):
            break
        if IGNORED_FLAGS & set(arg[1:]):
            return f"a Python process started with {arg}, which skips the measurement: {shown}"
    return None


def _shebang(program: str, env: object) -> bool:
    """Whether ``program`` (found on the child's PATH) is a script run by Python."""
    where = [program]
    if os.sep not in program:
        mapping = os.environ if env is None else env
        try:
            found = _text(mapping.get("PATH") or mapping.get(b"PATH"))  # type: ignore[attr-defined]
        except (AttributeError, TypeError):
            found = ""
        where = [os.path.join(d, program) for d in found.split(os.pathsep) if d]
    for candidate in where:
        try:
            fd = os.open(candidate, os.O_RDONLY)
        except OSError:
            continue
        try:
            head = os.read(fd, 256)
        except OSError:
            head = b""
        finally:
            os.close(fd)
        return head.startswith(b"#!") and b"python" in head.split(b"\n", 1)[0]
    return False


def _audit(
    run: _Run, tracer: "Callable[..., object] | None", entries: bool
) -> "Callable[[str, tuple[object, ...]], None]":
    """The audit hook: processes started out of reach, tracers that replace ours, files
    that start executing where no tracer sees them (``entries``), the first measured
    file that loads (tracing starts then), and threading's hook for new threads."""
    spawn = SPAWN_EVENTS
    starts = ("exec", "cpython.run_file", "compile") if entries else ()
    get_ident = sys.modules["_thread"].get_ident

    def hook(event: str, args: "tuple[object, ...]") -> None:
        if run.hook_threads is not _nothing:
            run.hook_threads()
        if run.busy or (event not in spawn and event not in starts and event != "sys.settrace"):
            return
        run.busy = True
        try:
            why = None
            if event == "exec":
                measured = run.number(_text(getattr(args[0], "co_filename", ""))) is not None
                if measured and run.begin is not None:
                    run.begin()
            elif event in starts:  # a main script (cpython.run_file), a compile
                path = _text(args[0] if event == "cpython.run_file" else args[1])
                if event == "cpython.run_file" and os.path.isfile(path):
                    run.number(path)
                if run.begin is not None and run.wanted(path):
                    run.begin()
            elif event == "sys.settrace":
                if tracer is not None and not run.stopped and get_ident() not in run.starting:
                    _settrace_seen(run, tracer)
            elif event == "subprocess.Popen":
                why = _lost(run, args[0], args[1], args[3])
            elif event == "os.spawn":
                why = _lost(run, None, args[2], args[3])
            else:  # os.exec, os.posix_spawn: (path, argv, env)
                why = _lost(run, None, args[1], args[2])
            if why:
                run.say(why)
        # An interpreter callback in the check: a failure is recorded, never raised there.
        except Exception as exc:  # noqa: BLE001
            run.say(f"the measurement failed: {type(exc).__name__}: {exc}")
        finally:
            run.busy = False

    return hook


def _settrace_seen(run: _Run, tracer: "Callable[..., object]") -> None:
    """``sys.settrace`` is being called: by us (in a new thread), or by another tracer."""
    caller = sys._getframe(2)
    threading = sys.modules.get("threading")
    if (
        caller.f_code.co_name == "_bootstrap_inner"
        and getattr(threading, "_trace_hook", None) is tracer
    ):
        return
    where = f"{caller.f_code.co_filename}:{caller.f_lineno}"
    run.say(f"a tracer we could not share replaced ours (sys.settrace at {where})")


def _monitor(run: _Run) -> None:
    """Python 3.12+: a ``sys.monitoring`` tool of our own."""
    mon = sys.monitoring  # type: ignore[attr-defined,unused-ignore]
    tool = next((t for t in TOOL_IDS if mon.get_tool(t) is None), None)
    if tool is None:
        raise RuntimeError(f"no free sys.monitoring tool id among {TOOL_IDS}")
    mon.use_tool_id(tool, TOOL_NAME)
    disable = mon.DISABLE
    line_event = mon.events.LINE

    def py_start(code: "types.CodeType", offset: int) -> object:
        try:
            if run.number(code.co_filename) is not None:
                mon.set_local_events(tool, code, line_event)
        except Exception as exc:  # noqa: BLE001 - never break the check: say it instead
            run.say(f"the measurement failed: {type(exc).__name__}: {exc}")
        return disable

    def line(code: "types.CodeType", number: int) -> object:
        try:
            found = run.number(code.co_filename)
            if found is not None:
                run.hit(found, number)
        except Exception as exc:  # noqa: BLE001
            run.say(f"the measurement failed: {type(exc).__name__}: {exc}")
        return disable

    mon.register_callback(tool, mon.events.PY_START, py_start)
    mon.register_callback(tool, line_event, line)
    mon.set_events(tool, mon.events.PY_START)


class _Lines:
    """The file tracer coverage.py's C tracer calls back for the measured files' frames
    only: which of them to trace (``dynamic_source_filename``, at each call) and each line
    they run (``line_number_range``: recorded here, nothing left in the tracer's data)."""

    _coverage_plugin_name = TOOL_NAME

    def __init__(self, run: _Run) -> None:
        self.run = run
        self._coverage_plugin = self
        self.threading: object = None  # threading.py's disposition until its hook is set

    def dynamic_source_filename(self, filename: str, frame: "types.FrameType") -> "str | None":
        try:
            found = self.run.numbers.get(filename)
            if found is None:  # threading's first call since it loaded: its hook, once
                self.run.hook_threads()
                if self.threading is not None and self.run.hook_threads is _nothing:
                    self.threading.trace = False  # type: ignore[attr-defined]
                return None
            if self.run.stop and not self.run.watches(found, frame.f_code):
                return None  # not measured, or none of the lines asked about is here
            return filename
        except Exception as exc:  # noqa: BLE001 - an interpreter callback: said, never raised
            self.run.say(f"the measurement failed: {type(exc).__name__}: {exc}")
            return None

    def line_number_range(self, frame: "types.FrameType") -> "tuple[int, int]":
        try:
            found = self.run.numbers.get(frame.f_code.co_filename)
            if found is not None:
                self.run.hit(found, frame.f_lineno)
        except Exception as exc:  # noqa: BLE001
            self.run.say(f"the measurement failed: {type(exc).__name__}: {exc}")
        return NO_LINES


class _Spec:
    """What ``_imp.create_dynamic`` reads of a module spec."""

    name = "coverage.tracer"

    def __init__(self, origin: str) -> None:
        self.origin = origin


def _c_module(run: _Run) -> "types.ModuleType | None":
    """coverage.py's C tracer built for this interpreter (the session's copy beside this
    file, else the check's own coverage.py), loaded from a copy of its own and with no
    name left in ``sys.modules``: the check's own ``import coverage`` stays as it was.
    None when there is none with the members used here."""
    import _imp  # built in, loaded at every start: nothing new in sys.modules

    names = ["tracer" + suffix for suffix in _imp.extension_suffixes()]
    places = [run.home, *(os.path.join(d, "coverage") for d in sys.path if d and d != run.home)]
    path = next((os.path.join(p, n) for p in places for n in names if _isfile(p, n)), None)
    if path is None:
        return None
    if os.path.dirname(path) != run.home:  # the check's: a copy, loaded apart from theirs
        fd = os.open(path, os.O_RDONLY)
        try:
            data = os.read(fd, 1 << 26)
        finally:
            os.close(fd)
        path = os.path.join(run.folder, f"tracer.{os.getpid()}.{os.urandom(4).hex()}{names[0][6:]}")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
    before = sys.modules.get(_Spec.name)
    try:
        module = _imp.create_dynamic(_Spec(path))  # type: ignore[arg-type]
        _imp.exec_dynamic(module)  # multi-phase init (coverage.py 7.10+); nothing before
    finally:
        if before is None:
            sys.modules.pop(_Spec.name, None)
        else:
            sys.modules[_Spec.name] = before
    tracer = module.CTracer()
    if all(hasattr(tracer, a) for a in CTRACER_MEMBERS):
        return module
    return None


def _isfile(folder: str, name: str) -> bool:
    return os.path.isfile(os.path.join(folder, name))


def _c_tracer(run: _Run, module: "types.ModuleType", started: list) -> "Callable[[], object]":  # type: ignore[type-arg]
    """Before Python 3.12: coverage.py's C tracer, which decides for every frame in C and
    calls back (``_Lines``) for the measured files' frames only."""
    lines = _Lines(run)
    cache: dict[str, object] = {}
    data: dict[str, object] = {}

    def should_trace(filename: str, frame: object) -> object:
        found = None
        try:
            found = run.number(filename)
        except Exception as exc:  # noqa: BLE001
            run.say(f"the measurement failed: {type(exc).__name__}: {exc}")
        disposition = module.CFileDisposition()
        disposition.original_filename = disposition.canonical_filename = filename
        disposition.source_filename = filename
        disposition.reason = ""
        disposition.file_tracer = lines
        disposition.has_dynamic_filename = True
        # threading.py too, until its first call: new threads must start with our tracer.
        disposition.trace = found is not None or (
            filename.endswith(THREADING) and lines.threading is None
        )
        if found is None and disposition.trace:
            lines.threading = disposition
        return disposition

    def failed(*args: object, **kwargs: object) -> None:
        run.say(f"the measurement failed: coverage.py's tracer: {args!r}")

    def make() -> object:
        tracer = module.CTracer()
        tracer.should_trace = should_trace
        tracer.check_include = failed  # never asked: a traced frame keeps its file's name
        tracer.should_trace_cache = cache
        tracer.data = data
        tracer.file_tracers = {}
        tracer.trace_arcs = False
        tracer.warn = tracer.disable_plugin = failed
        tracer.concur_id_func = tracer.should_start_context = tracer.switch_context = None
        if hasattr(tracer, "lock_data"):  # coverage.py 7.6+
            tracer.lock_data = tracer.unlock_data = _nothing
        started.append(tracer)
        return tracer.start()

    return make


def _nothing() -> None:
    pass


def _py_tracer(run: _Run) -> "Callable[[], object]":
    """Without coverage.py's C tracer: a global tracer that traces only the measured
    files' frames, in Python."""
    local_for: dict[int, Callable[..., object]] = {}

    def local_of(found: int) -> "Callable[..., object]":
        def local(frame: "types.FrameType", event: str, arg: object) -> object:
            if event == "line":
                try:
                    run.hit(found, frame.f_lineno)
                except Exception as exc:  # noqa: BLE001
                    run.say(f"the measurement failed: {type(exc).__name__}: {exc}")
            return local

        return local

    def trace(frame: "types.FrameType", event: str, arg: object) -> object:
        if event != "call":
            return None
        try:
            if run.hook_threads is not _nothing:
                run.hook_threads()
            found = run.number(frame.f_code.co_filename)
            if found is None or (run.stop and not run.watches(found, frame.f_code)):
                return None  # not measured, or none of the lines asked about is here
            if found not in local_for:
                local_for[found] = local_of(found)
            return local_for[found]
        except Exception as exc:  # noqa: BLE001
            run.say(f"the measurement failed: {type(exc).__name__}: {exc}")
            return None

    def make() -> object:
        sys.settrace(trace)  # type: ignore[arg-type]
        return trace

    return make


def _tracing(run: _Run, module: "types.ModuleType | None") -> "Callable[..., object]":
    """Before Python 3.12: the tracer of each thread, and the hook threading starts new
    threads with (returned). The main thread's tracer starts only when a measured file's
    code is loaded (``run.begin``): no line of it can run before."""
    started: list[object] = []
    make = _c_tracer(run, module, started) if module is not None else _py_tracer(run)
    traced: set[int] = set()  # the threads tracing (their idents)
    get_ident = sys.modules["_thread"].get_ident

    def here(first: "tuple[object, ...] | None" = None) -> object:
        """Start tracing this thread (``first``: its first event, handed to the tracer)."""
        if sys.gettrace() not in (None, install):  # the check's own (coverage run) keeps it
            run.say(f"a tracer we could not share was already running ({sys.gettrace()!r})")
            return None
        ident = get_ident()
        run.starting.add(ident)  # our own sys.settrace is no other tracer's
        try:
            tracer = make()
            traced.add(ident)
            return tracer(*first) if first else tracer  # type: ignore[operator]
        finally:
            run.starting.discard(ident)

    def install(frame: "types.FrameType", event: str, arg: object) -> object:
        try:  # threading's hook: the first event of a new thread
            return here((frame, event, arg))
        except Exception as exc:  # noqa: BLE001
            run.say(f"the measurement failed: {type(exc).__name__}: {exc}")
            return None

    def hook_threads() -> None:
        """Once threading is loaded: its new threads start with our tracer."""
        threading = sys.modules.get("threading")
        if threading is not None and hasattr(threading, "_trace_hook"):
            run.hook_threads = _nothing
            if threading._trace_hook is None and not run.stopped:
                threading._trace_hook = install  # type: ignore[attr-defined]

    def begin() -> None:
        run.begin = None
        here()
        threading = sys.modules.get("threading")
        for thread in list(getattr(threading, "_active", {}).values()):
            if thread.ident not in traced and type(thread).__name__ == "Thread":
                run.say(f"a thread started before measuring could follow it: {thread.name}")

    def done() -> None:
        run.stopped = True
        for tracer in started:
            tracer.stop()  # type: ignore[attr-defined]
        if not started:
            sys.settrace(None)
        threading = sys.modules.get("threading")
        if getattr(threading, "_trace_hook", None) is install:
            threading._trace_hook = None  # type: ignore[union-attr]

    run.on_done, run.begin, run.hook_threads = done, begin, hook_threads
    return install


def _unseen() -> None:
    """Give the code of every function here (nested ones included) a file name that is no
    file, so the check's own coverage never counts this module's work, and tracebacks
    never show a path of ours."""

    def renamed(code: "types.CodeType") -> "types.CodeType":
        consts = tuple(renamed(c) if isinstance(c, type(code)) else c for c in code.co_consts)
        return code.replace(co_filename=CODE_NAME, co_consts=consts)

    kind = type(_unseen)
    for space in (globals(), vars(_Run), vars(_Sink), vars(_Sampler), vars(_Lines), vars(_Spec)):
        for value in list(space.values()):
            if isinstance(value, kind):
                value.__code__ = renamed(value.__code__)


def _start(folder: str, home: str) -> None:
    """Start measuring this process; any failure is recorded as such, never raised."""
    run = None
    try:
        _unseen()
        fd = os.open(os.path.join(os.path.dirname(folder), SPEC_NAME), os.O_RDONLY)
        try:
            spec = os.read(fd, 1 << 24).decode("ascii")
        finally:
            os.close(fd)
        run = _Run(folder, home, spec)
        monitoring = sys.version_info >= (3, 12) and run.engine != "settrace"
        tracer = None
        engine = "monitoring" if monitoring else "settrace"
        if monitoring:
            _monitor(run)
        elif run.stop and not run.remaining:
            pass  # no line to watch: the files that start are all it records
        elif sys.gettrace() is not None:  # coverage.py started by a .pth file, say
            run.say(f"a tracer we could not share was already running ({sys.gettrace()!r})")
            return
        else:
            module = None
            if run.engine != "settrace":
                try:
                    module = _c_module(run)
                except (ImportError, OSError):  # none loads here: the Python tracer measures
                    module = None
            tracer = _tracing(run, module)
            engine = "ctracer" if module is not None else "settrace"
        run.put(f"s {engine} {_hex(sys.executable or '?')}\n")
        sys.addaudithook(_audit(run, tracer, not monitoring))
        loaded = [getattr(m, "__file__", None) for m in list(sys.modules.values())]
        if run.begin is not None and any(run.number(f) is not None for f in loaded if f):
            run.begin()  # a measured module loaded before us (a .pth file): trace now
        if run.sample_at is not None:
            try:
                _sample(run, run.sample_at)
            except Exception as exc:  # noqa: BLE001 - no sample, noted: never a broken check
                run.note(f"{type(exc).__name__}: {exc}")
    # This process's boundary: a broken start is "not measured", never a broken check.
    except Exception as exc:  # noqa: BLE001
        if run is None:
            run = _Run(folder, home, "")
        run.say(f"measuring could not start: {type(exc).__name__}: {exc}")


def start(folder: str, home: str) -> None:
    """Measure this process from now on, into the run's data folder ``folder`` (its spec
    beside it): for a process of ours that is already running and is about to run the
    check's code (a verifier's zygote, before it imports the verifier's module)."""
    _start(folder, home)


def _main() -> None:
    home = os.path.dirname(os.path.abspath(__file__))
    folder = os.environ.get(DIR_ENV, "")
    if folder and os.path.isdir(folder):
        _start(folder, home)
    # Leave no trace in the check's import state: our folder out of sys.path, and the
    # name ``sitecustomize`` to the one this one shadows, or to none.
    while home in sys.path:
        sys.path.remove(home)
    sys.path_importer_cache.pop(home, None)
    del sys.modules[__name__]
    __import__("sitecustomize")  # ImportError when there is none: site ignores it silently


if __name__ == "sitecustomize":
    _main()
