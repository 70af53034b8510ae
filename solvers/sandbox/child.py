"""The forked child of a warm worker: lock itself down, run one program, report over the signed channel.

Order matters: set rlimits while still privileged, drop the uid, install seccomp, hide the
sandbox's own modules, and only then run user code. Every solve call is reported the moment it returns, so a
program killed later keeps its record; the ``done`` message says how the program ended.
"""

from __future__ import annotations

import builtins
import contextlib
import ctypes
import errno
import os
import re
import resource
import signal
import sys
import time
import traceback
import types
from typing import Any

from solvers.sandbox import capture, seccomp
from solvers.sandbox.channel import make_sender, read_msg
from solvers.sandbox.given import GivenConfig, GivenProgram

PROGRAM_NAME = "program.py"
# Bound when the worker imports this module: a program that replaces resource.getrusage does not change these.
_getrusage, _RUSAGE_SELF, _RUSAGE_CHILDREN = resource.getrusage, resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN
_IMPORT_ERRORS = (ImportError, ModuleNotFoundError)


def child_main(config: GivenConfig, workdir: str, out_fd: int, err_fd: int, chan_fd: int, prog_fd: int,
               key: bytes, uid: int | None) -> None:
    """Lock down, say ready, wait for the program on ``prog_fd``, run it. Never returns: ends with os._exit.

    The worker forks this child *before* the program arrives (while its parent is still busy with the previous
    result), so fork and lock-down are off the program's critical path."""
    try:
        os.setsid()
        with contextlib.suppress(Exception):
            _libc().prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: die with the worker
            _libc().prctl(15, b"flywheel-prog", 0, 0, 0)  # PR_SET_NAME: tell programs from workers in ps / perf
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        # The channel moves to a descriptor far from the usual ones; everything else the worker holds is closed.
        hidden = 1000 + (int.from_bytes(key[:2], "big") % 8000)
        os.dup2(chan_fd, hidden)
        inbox = hidden + 1
        os.dup2(prog_fd, inbox)
        _close_others(hidden, inbox)
        _set_rlimits(config)
        os.chdir(workdir)
        if uid is not None:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
        seccomp_on = False
        if seccomp.supported():
            seccomp.install()
            seccomp_on = True
        # The worker's environment is already the programs' (worker.child_env); only these two are per program.
        os.environ["HOME"] = os.environ["TMPDIR"] = workdir
        reseed()
        fresh_temp_dirs()
        send = make_sender(hidden, key, _TRUSTED or _trusted_senders())
        # Everything that does not need the program is done before it arrives (off the program's critical path):
        # the capture's sink, the sandbox's modules out of sight, the audit hook.
        counter = _Counter(send)
        flags: list[str] = []
        capture.configure(counter, workdir, config.capture_mps, config.max_solution_values, config.solver_threads)
        _hide_sandbox_modules()
        sys.addaudithook(_make_audit(flags, send, _COUNTS))
    except BaseException as exc:  # noqa: BLE001 - setup failed: infrastructure, reported as sandbox_error
        with contextlib.suppress(Exception):
            os.write(2, f"sandbox setup failed: {type(exc).__name__}: {exc}\n".encode())
        os._exit(71)
    # JSON by hand: the first use of json's encoder would touch ~100 shared pages before the program even arrives
    send(b'{"type": "ready", "seccomp": %s, "t": %.9f}' % (b"true" if seccomp_on else b"false", time.monotonic()))
    try:
        message = read_msg(inbox)
        received = time.perf_counter()
        os.close(inbox)
        if message is None:  # the worker discarded this child (it is shutting down)
            os._exit(0)
        program = GivenProgram(**message["program"])  # validated by the parent when the Program was made
    except BaseException as exc:  # noqa: BLE001
        with contextlib.suppress(Exception):
            send({"type": "done", "outcome": "sandbox_error", "message": f"program hand-off failed: {exc}"[:500]})
        os._exit(0)
    _run(program, config, workdir, send, counter, flags, received)


def reseed() -> None:
    """What ``random``'s after-fork hook does, which the zygote's raw fork skips: a fresh seed per program, so that
    programs do not share their unseeded random sequence (as ``os.fork`` children would not)."""
    rnd = sys.modules.get("random")
    if rnd is not None:
        rnd._inst.seed()


def fresh_temp_dirs() -> None:
    """Temporary directories that a preloaded module settled before the fork point at the worker's, which the program
    cannot write: ``tempfile``'s cached ``gettempdir()``, and the solver object PuLP makes at import
    (``LpSolverDefault``, what ``prob.solve()`` uses: its files went to /tmp, PermissionError)."""
    tf = sys.modules.get("tempfile")
    if tf is not None:
        tf.tempdir = None  # recomputed from TMPDIR on next use
    pulp = sys.modules.get("pulp")
    default = getattr(pulp, "LpSolverDefault", None) if pulp is not None else None
    if default is not None and hasattr(default, "setTmpDir"):
        with contextlib.suppress(Exception):
            default.setTmpDir()


def _libc() -> ctypes.CDLL:
    lib = seccomp._prepared.get("libc")
    return lib if isinstance(lib, ctypes.CDLL) else ctypes.CDLL(None)


def _close_others(hidden: int, inbox: int) -> None:
    """Close every descriptor but 0-2 and the two given (adjacent): with close_range(2) (Linux 5.9+, which
    ``os.closerange`` uses), two system calls; elsewhere only what /proc lists as open (a plain closerange over 64k
    descriptors costs milliseconds)."""
    if _HAS_CLOSE_RANGE:
        os.closerange(3, hidden)
        os.closerange(inbox + 1, MAX_FD)
        return
    try:
        fds = [int(fd) for fd in os.listdir("/proc/self/fd")]
    except OSError:
        fds = list(range(3, 1024))
    for fd in fds:
        if fd > 2 and fd not in (hidden, inbox):
            with contextlib.suppress(OSError):
                os.close(fd)


def _kernel_at_least(major: int, minor: int) -> bool:
    try:
        release = tuple(int(x) for x in re.findall(r"\d+", os.uname().release)[:2])
    except ValueError:
        return False
    return release >= (major, minor)


MAX_FD = 1 << 20
_HAS_CLOSE_RANGE = _kernel_at_least(5, 9)


def _write(path: str, text: str) -> None:
    """A file for the program, written without ``open``'s text layer (a TextIOWrapper and its codec touch ~70 pages
    of the shared image; see zygote.py for why pages count)."""
    data = memoryview(text.encode("utf-8"))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        while data:
            data = data[os.write(fd, data):]
    finally:
        os.close(fd)


def _set_rlimits(config: GivenConfig) -> None:
    cpu = config.cpu_limit
    limits = {resource.RLIMIT_CPU: (cpu, cpu + 1), resource.RLIMIT_FSIZE: (config.max_file_mb * 2**20,) * 2,
              resource.RLIMIT_NOFILE: (config.max_open_files,) * 2, resource.RLIMIT_CORE: (0, 0),
              resource.RLIMIT_NPROC: (config.max_pids,) * 2}
    for which, (soft, hard) in limits.items():
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(which, (soft, hard))


class _Counter:
    """Counts solve records as they are sent: decides model_build_error vs runtime_error for an exception."""

    def __init__(self, send: Any) -> None:
        self.n = 0
        self.send = send

    def __call__(self, record: dict[str, Any]) -> None:
        if not capture.called_by_wrapper():  # a program that found the sink and fed it a record of its own
            self.send({"type": "tamper", "why": "a solve record was sent by program code, not by a solve hook"})
            return
        self.n += 1
        self.send({"type": "solve", "record": record})


def _run(program: GivenProgram, config: GivenConfig, workdir: str, send: Any, counter: _Counter, flags: list[str],
         received: float) -> None:
    done: dict[str, Any] = {"type": "done", "outcome": "finished"}
    try:
        path = os.path.join(workdir, PROGRAM_NAME)
        for name, text in program.files.items():
            target = os.path.join(workdir, name)
            os.makedirs(os.path.dirname(target) or workdir, exist_ok=True)
            _write(target, text)
        _write(path, program.code)
        if config.solver_threads > 0 and "gurobi" in program.code and "gurobi.env" not in program.files:
            # Gurobi reads parameters from gurobi.env in the working directory: its default uses every core. (Only
            # for programs that name it: every file written is a page to allocate and free.)
            _write(os.path.join(workdir, "gurobi.env"), f"Threads {config.solver_threads}\n")
        if not program.code.strip():
            send({"type": "done", "outcome": "no_code"})
            os._exit(0)
        try:  # straight from source: building Python AST objects first costs ~half as much again
            # dont_inherit: none of this module's __future__ flags (``python prog.py`` compiles with none)
            code_obj = compile(program.code, path, "exec", dont_inherit=True)
        except (SyntaxError, ValueError) as exc:
            if isinstance(exc, SyntaxError):
                exc.filename = PROGRAM_NAME  # the message names the program, not the sandbox's path
            send({"type": "done", "outcome": "syntax_error", "message": f"{type(exc).__name__}: {exc}"[:500]})
            os._exit(0)
        if all(not line.strip() or line.lstrip().startswith("#") for line in program.code.splitlines()):
            send({"type": "done", "outcome": "no_code"})  # comments only: no statement to run
            os._exit(0)
        module_name = "__main__" if program.entry is None else "__flywheel_program__"
        # A real module in sys.modules, as ``python prog.py`` has: pickling the program's own functions by reference
        # (multiprocessing) finds them there, and ``import __main__`` is the program, not the sandbox's worker.
        module = types.ModuleType(module_name)
        module.__file__, module.__builtins__ = path, builtins  # type: ignore[attr-defined]
        sys.modules[module_name] = module
        namespace: dict[str, Any] = module.__dict__
        sys.argv = [path]
        sys.path.insert(0, workdir)
        started = time.perf_counter()
        try:
            exec(code_obj, namespace)  # noqa: S102 - running the program is the point; isolation is around it
            entry = program.entry
            if entry is None and counter.n == 0 and _callable_without_args(namespace.get("main"), path):
                entry = "main"  # a program that defines main() but never calls it
            if entry is not None:
                fn = namespace.get(entry)
                if not callable(fn):
                    raise NameError(f"entry function {entry!r} is not defined by the program")
                args = program.args
                if args is None:
                    value = fn()
                elif isinstance(args, list | tuple):
                    value = fn(*args)
                elif isinstance(args, dict):
                    value = fn(**args)
                else:
                    value = fn(args)
                done["returned"] = _jsonable(value)
        except SystemExit as exc:
            code = exc.code
            if code not in (None, 0):
                done = {"type": "done", "outcome": "exit", "exit_code": code if isinstance(code, int) else 1,
                        "message": f"SystemExit({code!r})"[:500], "solves_before": counter.n}
        except BaseException as exc:  # noqa: BLE001 - the program's own failure, classified by the worker
            done = {"type": "done", "outcome": "exception", "exc_type": type(exc).__name__,
                    "message": f"{type(exc).__name__}: {exc}"[:500], "kind": _kind(exc),
                    "errno": _limit_kind(exc)[1], "spawns": _COUNTS[0], "sockets": _COUNTS[1],
                    "solves_before": counter.n,
                    "traceback": "".join(traceback.format_exception(exc, limit=-6))[-3000:]}
        done["exec_s"] = max(0.0, time.perf_counter() - started - capture.overhead_s())
        # the sandbox's own parts of the program's time: writing files, parsing, compiling; capturing the solves
        done["prep_s"], done["capture_s"] = started - received, capture.overhead_s()
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        done["tamper"] = flags + capture.verify()
        # What the worker reports when it takes this result before the child is reaped (see worker._supervise).
        me, kids = _getrusage(_RUSAGE_SELF), _getrusage(_RUSAGE_CHILDREN)
        done["cpu_s"] = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
        done["max_rss_kb"] = max(me.ru_maxrss, kids.ru_maxrss)
        done["t"] = time.monotonic()
        send(done)
    except BaseException as exc:  # noqa: BLE001
        with contextlib.suppress(Exception):
            send({"type": "done", "outcome": "sandbox_error", "message": f"{type(exc).__name__}: {exc}"[:500]})
    os._exit(0)


# A solver the program asks for that is not installed (pyomo: "No executable found for solver 'glpk'") is an
# import error: something missing from the environment, not a fault of the model.
_MISSING_SOLVER = re.compile(r"No executable found for solver|solver .{0,40} (is )?not available", re.IGNORECASE)


# Audit events that make a process or a thread (counted by the audit hook into _COUNTS[0]).
_SPAWN_EVENTS = frozenset({"os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.system", "subprocess.Popen",
                           "_thread.start_new_thread", "os.exec"})
_COUNTS = [0, 0]  # [spawns attempted, network sockets attempted], this child's own (reset by fork: a fresh child)
_NETWORK_ERRNOS = frozenset({errno.ENETUNREACH, errno.ENETDOWN, errno.EHOSTUNREACH, errno.EAFNOSUPPORT})


def _limit_kind(exc: BaseException) -> tuple[str | None, int | None]:
    """(kind, errno) when the sandbox's own rule stopped the program: ``fsize`` (EFBIG: RLIMIT_FSIZE), ``pids``
    (a thread or process that could not be made: CPython's "can't start new thread", or EAGAIN right after a
    process/thread creation was attempted), ``denied`` (EPERM, which seccomp and the uid drop answer; EROFS of the
    read-only system; the network: no route, no such address family, a name that cannot be resolved without one).
    Looks through the exception's causes and contexts (``requests`` wraps the socket's error). Only called when the
    program failed: nothing of this is on a succeeding program's path."""
    seen: set[int] = set()
    e: BaseException | None = exc
    found_errno = None
    while e is not None and id(e) not in seen and len(seen) < 16:
        seen.add(id(e))
        if isinstance(e, OSError) and isinstance(e.errno, int):
            code = e.errno
            found_errno = found_errno if found_errno is not None else code
            if code == errno.EFBIG:
                return "fsize", code
            if code == errno.EAGAIN and _COUNTS[0]:
                return "pids", code
            if code in (errno.EPERM, errno.EROFS) or code in _NETWORK_ERRNOS:
                return "denied", code
            if type(e).__name__ == "gaierror" or (code == errno.EACCES and _COUNTS[1]):
                return "denied", code
        if isinstance(e, RuntimeError) and "can't start new thread" in str(e):
            return "pids", errno.EAGAIN
        e = e.__cause__ or e.__context__
    return None, found_errno


def _kind(exc: BaseException) -> str:
    limit, _ = _limit_kind(exc)
    if limit is not None:
        return limit
    if isinstance(exc, _IMPORT_ERRORS) or _MISSING_SOLVER.search(str(exc)):
        return "import"
    if isinstance(exc, MemoryError):
        return "memory"
    if capture.is_license_error(exc):
        return "license"
    if isinstance(exc, RecursionError):
        return "runtime"
    return "runtime"


def _callable_without_args(fn: Any, path: str) -> bool:
    import inspect

    if not callable(fn) or getattr(getattr(fn, "__code__", None), "co_filename", None) != path:
        return False
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return False
    return all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               for p in sig.parameters.values())


def _jsonable(value: Any) -> Any:
    import json

    try:
        json.dumps(value, allow_nan=False)
        return value
    except (TypeError, ValueError):
        try:
            return float(value)
        except (TypeError, ValueError):
            return repr(value)[:2000]


_SANDBOX_MODULES: list[str] = []


_TRUSTED: frozenset[Any] = frozenset()


def remember_sandbox_modules() -> None:
    """List the sandbox's own modules (and the sender's trusted callers) once, in the warm worker. Scanning
    ``sys.modules`` in every child would touch (refcount) thousands of shared module-name objects: a copy-on-write
    page fault per page, ~600 per program."""
    global _TRUSTED
    _SANDBOX_MODULES[:] = [n for n in sys.modules if n.startswith("solvers.sandbox")]
    _TRUSTED = _trusted_senders()


def _hide_sandbox_modules() -> None:
    """Drop the sandbox's modules from sys.modules: a program importing them gets fresh copies with no channel
    (and the import is flagged by the audit hook), not the live sink."""
    if not _SANDBOX_MODULES:
        remember_sandbox_modules()
    for name in _SANDBOX_MODULES:
        sys.modules.pop(name, None)


def _make_audit(flags: list[str], send: Any, counts: list[int]) -> Any:
    """The audit hook. Each alarm is also sent at once, as its own frame: a program that then steals the sender, or
    leaves through os._exit before the final report, cannot take it back. ``counts``: [process/thread creations
    attempted, network sockets attempted] (the evidence ``_limit_kind`` weighs an error against)."""

    def audit(event: str, args: tuple[Any, ...]) -> None:
        why = None
        if event == "import" and args and isinstance(args[0], str) and args[0].startswith("solvers.sandbox"):
            why = f"program imported {args[0]}"
        elif event in ("gc.get_referrers", "gc.get_objects", "gc.get_referents", "sys._current_frames"):
            why = f"program called {event}"
        elif event == "object.__getattr__" and len(args) > 1 and args[1] == "__code__":
            module = getattr(args[0], "__module__", "") or ""
            if isinstance(module, str) and module.startswith("solvers.sandbox"):
                why = "program inspected sandbox internals (__code__)"
        elif event in _SPAWN_EVENTS:
            counts[0] += 1  # a process or thread about to be made: EAGAIN after it is the processes cap
        elif event == "socket.__new__" and len(args) > 1 and args[1] in seccomp.DENIED_FAMILIES:
            counts[1] += 1  # a network socket, which seccomp refuses
        elif event == "open" and args and isinstance(args[0], str) and (
                args[0].startswith(("/proc/self/fd", "/dev/fd", "/proc/self/mem", "/proc/thread-self/fd"))
                or (args[0].startswith("/proc/") and args[0].endswith(("/mem", "/fd")))):
            why = f"program opened {args[0]}"
        if why is not None:
            flags.append(why)
            with contextlib.suppress(Exception):
                send({"type": "tamper", "why": why})

    return audit


def _trusted_senders() -> frozenset[Any]:
    """The only code allowed to call the channel's sender: this module's own functions (see make_sender)."""
    audit_code = next(c for c in _make_audit.__code__.co_consts if hasattr(c, "co_name") and c.co_name == "audit")
    return frozenset({child_main.__code__, _run.__code__, _Counter.__call__.__code__, audit_code})
