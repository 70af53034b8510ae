"""The parent side: a pool of warm workers (each in its own bubblewrap sandbox where available), fed in order.

``run_batch`` keeps the input order, reads its input lazily, retries ``sandbox_error`` (infrastructure, never
the program's fault) on a fresh worker, and replaces a worker after ``recycle_after`` programs or any anomaly.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import itertools
import os
import select
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import solvers
from solvers.records import ExecStatus, Execution, SolveCall
from solvers.sandbox import cgroups
from solvers.sandbox.channel import read_msg, write_msg
from solvers.sandbox.classify import Observed, classify
from solvers.sandbox.flavour import flavour
from solvers.sandbox.program import Program, SandboxConfig

READY_TIMEOUT_S = 180.0  # importing every solver library on a loaded 2-core machine can take a while


@functools.cache
def bwrap_works() -> bool:
    """bubblewrap is installed and can create the namespaces we need here."""
    exe = shutil.which("bwrap")
    if exe is None:
        return False
    try:
        res = subprocess.run([exe, "--ro-bind", "/", "/", "--unshare-net", "--unshare-pid", "--dev", "/dev",
                              "--proc", "/proc", "true"], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return res.returncode == 0


def _repo_paths() -> list[str]:
    """Host paths a worker needs read-only: the interpreter, the virtualenv and the ``solvers`` package."""
    paths = {os.path.realpath(sys.base_prefix), os.path.realpath(sys.prefix), sys.prefix,
             os.path.dirname(os.path.abspath(solvers.__file__))}
    exe = os.path.realpath(sys.executable)
    paths.add(os.path.dirname(os.path.dirname(exe)))
    return sorted(p for p in paths if os.path.exists(p))


def _package_root() -> str:
    """The directory the parent imported ``solvers`` from: the worker imports the same copy (a second checkout run
    with ``PYTHONPATH`` must not hand its programs to the installed checkout's worker, nor find it unmounted)."""
    return os.path.dirname(os.path.dirname(os.path.abspath(solvers.__file__)))


def bwrap_command(slot_cgroups: list[cgroups.SlotCgroup], licenses: dict[str, str], caps: bool) -> list[str]:
    cmd = ["bwrap", "--die-with-parent", "--new-session", "--unshare-net", "--unshare-pid", "--unshare-ipc",
           "--unshare-uts", "--hostname", "sandbox", "--clearenv"]
    for path in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc"):
        if os.path.islink(path):
            cmd += ["--symlink", os.readlink(path), path]
        elif os.path.exists(path):
            cmd += ["--ro-bind", path, path]
    # The private /tmp and /run come before the repository binds: a checkout (or its venv) that lives under /tmp, as
    # a CI clone may, must stay visible on top of the tmpfs instead of being hidden by it.
    # /dev/shm: a private tmpfs any uid may write (POSIX semaphores live there: multiprocessing's locks), emptied by
    # the worker after every program (worker.clear_shm) so that nothing passes from one program to the next.
    cmd += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/dev/shm", "--tmpfs", "/tmp",
            "--tmpfs", "/run"]
    made: set[str] = set()
    for path in _repo_paths():
        # bwrap creates missing parents 0700 (e.g. /root for a pyenv interpreter); the unprivileged child must
        # traverse them, so create each parent 0755 first.
        parent = os.path.dirname(path)
        parents = []
        while parent not in ("/", "") and not any(parent == p or parent.startswith(p + "/") for p in
                                                   ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc")):
            parents.append(parent)
            parent = os.path.dirname(parent)
        for d in reversed(parents):
            if d not in made:
                made.add(d)
                cmd += ["--perms", "0755", "--dir", d]
        cmd += ["--ro-bind", path, path]
    for slot_cgroup in slot_cgroups:
        for d in slot_cgroup.dirs:
            cmd += ["--bind", d, d]
    if licenses:
        cmd += ["--perms", "0755", "--dir", "/run/licenses"]  # bwrap would create it 0700: unreadable to programs
    for env_name, host_path in licenses.items():
        cmd += ["--ro-bind", host_path, f"/run/licenses/{env_name}"]
    cmd += ["--cap-drop", "ALL"]  # as root bwrap would otherwise keep every capability
    if caps:  # root: the worker keeps what it needs to hand each child a fresh, unprivileged uid
        for cap in ("CAP_SETUID", "CAP_SETGID", "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_KILL"):
            cmd += ["--cap-add", cap]
    cmd += ["--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin", "--setenv", "HOME", "/tmp",
            "--setenv", "LANG", "C.UTF-8", "--setenv", "PYTHONDONTWRITEBYTECODE", "1", "--chdir", "/tmp"]
    return cmd


def _world_traversable(path: str) -> bool:
    """Every directory from / down to ``path`` lets others in (x bit)."""
    path = os.path.realpath(path)
    while path not in ("/", ""):
        try:
            if not os.stat(path).st_mode & 0o001:
                return False
        except OSError:
            return False
        path = os.path.dirname(path)
    return True


SUBSLOTS = 2  # a worker alternates two (uid, cgroup) pairs: the next child is prepared while the last one exits
MAX_WORKERS = 32  # worker indices per pool: each gets SUBSLOTS uids
UIDS_PER_POOL = MAX_WORKERS * SUBSLOTS
POOL_NUMBERS = 64  # uid blocks per process: the pools one process creates take them in turn
_pool_numbers = itertools.count()


def slot_uid(config: SandboxConfig, index: int, sub: int = 0, pool: int = 0) -> int:
    """The uid of slot ``index``'s programs (sub-slot ``sub``) in the process's pool number ``pool``: distinct per
    pool process, pool, slot and sub-slot, so that concurrent pools (other processes on the machine, or several
    pools in one process) never share a uid, a prepared child never shares one with the previous program's
    leftovers, and RLIMIT_NPROC counts one program's processes only."""
    block = (os.getpid() % 65536) * POOL_NUMBERS + pool % POOL_NUMBERS
    return config.uid_base + block * UIDS_PER_POOL + index * SUBSLOTS + sub


def process_uids(config: SandboxConfig, pid: int) -> range:
    """Every uid that the pools of process ``pid`` can hand out (to find a dead process's leftovers)."""
    start = config.uid_base + (pid % 65536) * POOL_NUMBERS * UIDS_PER_POOL
    return range(start, start + POOL_NUMBERS * UIDS_PER_POOL)


def _execution(fields: dict[str, Any]) -> tuple[Execution, bool]:
    """Classify what a worker observed and validate its fields into an ``Execution``; also whether the worker must
    be replaced (tampering, a set-up failure). A solve record that does not validate (a describer bug) is dropped,
    not allowed to fail the whole execution."""
    started = time.perf_counter()
    obs = Observed(**fields.pop("observed"))
    status, reason = classify(obs)
    solves = []
    records = [m.get("record") for m in obs.messages if m.get("type") == "solve"]
    for record, verification in zip(records, obs.verifications, strict=True):
        if isinstance(record, dict):
            with contextlib.suppress(TypeError, ValueError):
                solves.append(SolveCall(**{k: v for k, v in record.items() if k not in ("error", "verification")},
                                        verification=verification))
    fields["phases"] = dict(fields.get("phases") or {}) | {"classify_s": round(time.perf_counter() - started, 5)}
    execution = Execution(**fields, status=status, error=reason or "", solves=tuple(solves))
    return execution, status in (ExecStatus.TAMPERED, ExecStatus.SANDBOX_ERROR)


class WorkerProcess:
    """One warm worker subprocess and its slot (uid, cgroup)."""

    def __init__(self, config: SandboxConfig, index: int, preload: tuple[str, ...] | None = None,
                 pool: int = 0) -> None:
        self.config = config
        self.index = index
        self.preload = config.preload if preload is None else preload
        self.served = 0
        use_bwrap = config.isolation == "bwrap" or (config.isolation == "auto" and bwrap_works())
        if config.isolation == "bwrap" and not bwrap_works():
            from solvers.errors import SandboxError

            raise SandboxError("bubblewrap is required by the config but does not work here", culprit="isolation")
        is_root = os.geteuid() == 0
        made = [cgroups.create_slot(f"flywheel-{os.getpid()}-w{index}-{id(self):x}-{sub}", config.memory_mb,
                                    config.max_pids) if is_root else None for sub in range(SUBSLOTS)]
        self.cgroups = [c for c in made if c is not None]
        if len(self.cgroups) != SUBSLOTS:  # all or nothing
            for c in self.cgroups:
                c.remove()
            self.cgroups = []
        layers: list[str] = []
        if use_bwrap:
            layers += ["bwrap", "netns", "pidns", "ro-system", "tmpfs-workdir"]
            licenses = {name: f"/run/licenses/{name}" for name in config.license_files}
            # The worker (not every bwrap user: the contracts jail keeps its exact environment) imports the
            # parent's copy of ``solvers``; it clears its environment after its imports, so programs never see it.
            cmd = bwrap_command(self.cgroups, config.license_files, caps=is_root) + [
                "--setenv", "PYTHONPATH", _package_root()]
            workroot = "/tmp/work"
        else:
            layers += ["process"]
            licenses = dict(config.license_files)
            cmd = []
            workroot = None
        # Without bwrap the program sees the host's files: an interpreter under a private directory (pyenv under
        # /root) is unreadable to an unprivileged uid, so the uid drop is skipped there (and the layer not claimed).
        drop_uid = is_root and (use_bwrap or all(_world_traversable(p) for p in _repo_paths()))
        if drop_uid:
            layers.append("uid")
        if self.cgroups:
            layers.append(f"cgroup-v{self.cgroups[0].version}")
        layers.append("rlimits")
        cmd += [sys.executable, "-m", "solvers.sandbox.worker"]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": "/tmp", "LANG": "C.UTF-8",
               "PYTHONPATH": _package_root()}
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=env, cwd="/tmp", start_new_session=True)
        slot: dict[str, Any] = {"uids": [slot_uid(config, index, sub, pool) for sub in range(SUBSLOTS)] if drop_uid
                                else None, "licenses": licenses,
                                "layers": layers, "workroot": workroot, "unshare_net": not use_bwrap and is_root,
                                "private_shm": use_bwrap,
                                "cgroups": [{"version": c.version, "dirs": list(c.dirs)} for c in self.cgroups]}
        hello = {"config": config.model_copy(update={"preload": self.preload}).model_dump(mode="json"), "slot": slot}
        try:
            write_msg(self.proc.stdin.fileno(), hello)
        except OSError:  # bubblewrap exited at once (e.g. a licence file to mount that is missing): no worker
            ready = None
        else:
            ready = self._read(READY_TIMEOUT_S)
        if ready is None or ready.get("type") != "ready":
            self.close()
            raise RuntimeError("sandbox worker failed to start")
        self.hooks = ready.get("hooks", [])

    def _read(self, timeout: float) -> dict[str, Any] | None:
        fd = self.proc.stdout.fileno()
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            return None
        try:
            return read_msg(fd)
        except (OSError, ValueError):
            return None

    def run(self, program: Program) -> tuple[Execution | None, bool]:
        """(execution, anomaly); execution is None when the worker itself broke."""
        try:
            write_msg(self.proc.stdin.fileno(), {"program": program.model_dump(mode="json")})
        except OSError:
            return None, True
        # The worker enforces the program's limits; this outer guard only catches a wedged worker.
        reply = self._read(self.config.timeout_s + 60.0)
        self.served += 1
        if reply is None or reply.get("type") != "result":
            return None, True
        try:
            execution, suspect = _execution(reply["execution"] | {"program_id": program.program_id})
        except (TypeError, ValueError, KeyError):  # a worker speaking another version of the protocol
            return None, True
        return execution, suspect or bool(reply.get("anomaly"))

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, 9)
            self.proc.wait()
        with contextlib.suppress(Exception):
            self.proc.stdout.close()
        for c in self.cgroups:
            c.remove()


WORKERS_PER_SLOT = 4  # warm workers kept per unit of concurrency: one per flavour of the recent programs
# A program whose flavour's workers are all busy waits this long for one before a new worker is started: a start
# costs ~0.5-1 s of CPU (interpreter, solver imports), a program of a mixed batch frees its worker in tens of ms.
# A batch that keeps one flavour busy on every slot pays the wait once per extra worker.
FLAVOUR_WAIT_S = 0.25


class Pool:
    """``workers`` programs at a time on warm workers; thread-safe ``run``. Each program runs on a worker of its
    flavour (the preload modules it imports, see ``flavour.py``); workers start lazily, the least recently used
    idle one makes way when the pool holds ``WORKERS_PER_SLOT`` per slot, and workers are recycled as configured."""

    def __init__(self, config: SandboxConfig, workers: int) -> None:
        self.config = config
        self.size = max(1, workers)
        self.max_workers = min(MAX_WORKERS, max(self.size, self.size * WORKERS_PER_SLOT))
        self.number = next(_pool_numbers) % POOL_NUMBERS  # this pool's uid block within the process
        if self.number == 0:  # once per process: slots that dead pool processes left behind
            cgroups.sweep_orphans()
        self._idle: list[WorkerProcess] = []  # least recently used first
        self._lock = threading.Lock()
        self._released = threading.Condition(self._lock)  # notified when a worker goes back to the idle list
        self._busy: dict[tuple[str, ...], int] = {}  # running workers per flavour
        self._sem = threading.BoundedSemaphore(self.size)
        self._free_indices = list(range(self.max_workers))
        self.closed = False
        # Workers are started from these long-lived threads (one per slot: the flavours of a mixed batch start side
        # by side): bwrap's --die-with-parent (PR_SET_PDEATHSIG) fires when the *thread* that started it exits, so
        # a worker started from a short-lived batch thread would die with it.
        self._spawner = ThreadPoolExecutor(self.size, thread_name_prefix="sandbox-spawn")

    def _acquire(self, preload: tuple[str, ...]) -> WorkerProcess:
        """An idle worker of this flavour (waiting up to ``FLAVOUR_WAIT_S`` for a busy one), else a new one
        (closing the least recently used idle worker when every index is taken; with at most ``size`` programs
        running, one is always idle then)."""
        worker = self._take(preload)
        with self._lock:
            self._busy[preload] = self._busy.get(preload, 0) + 1
        return worker

    def _take(self, preload: tuple[str, ...]) -> WorkerProcess:
        deadline = time.monotonic() + FLAVOUR_WAIT_S
        while True:
            retired: WorkerProcess | None = None
            with self._lock:
                match = next((w for w in reversed(self._idle) if w.preload == preload), None)
                while match is None and self._busy.get(preload) and time.monotonic() < deadline:
                    self._released.wait(max(0.0, deadline - time.monotonic()))
                    match = next((w for w in reversed(self._idle) if w.preload == preload), None)
                if match is not None:
                    self._idle.remove(match)
                    if match.proc.poll() is None:
                        return match
                    retired = match  # died while idle: replace it
                elif self._free_indices:
                    index = self._free_indices.pop(0)
                    break
                else:
                    retired = self._idle.pop(0)
            retired.close()
            with self._lock:
                self._free_indices.append(retired.index)
        try:
            return self._spawner.submit(WorkerProcess, self.config, index, preload, self.number).result()
        except BaseException:
            with self._lock:
                self._free_indices.append(index)
            raise

    def _release(self, worker: WorkerProcess, recycle: bool) -> None:
        with self._lock:
            self._busy[worker.preload] -= 1
        if recycle or worker.served >= self.config.recycle_after or self.closed:
            worker.close()
            with self._lock:
                self._free_indices.append(worker.index)
                self._released.notify_all()
        else:
            with self._lock:
                self._idle.append(worker)
                self._released.notify_all()

    def run(self, program: Program) -> Execution:
        last: Execution | None = None
        preload = flavour(self.config.preload, program.code)
        for _ in range(self.config.retries + 1):
            with self._sem:
                try:
                    worker = self._acquire(preload)
                except RuntimeError as exc:
                    last = Execution(program_id=program.program_id, status=ExecStatus.SANDBOX_ERROR, error=str(exc))
                    continue
                execution, anomaly = worker.run(program)
                self._release(worker, recycle=anomaly or execution is None)
            if execution is None:
                last = Execution(program_id=program.program_id, status=ExecStatus.SANDBOX_ERROR,
                                 error="sandbox worker died")
                continue
            if execution.status != ExecStatus.SANDBOX_ERROR:
                return execution
            last = execution
        assert last is not None
        return last

    def map(self, programs: Iterable[Program], progress: Any = None) -> Iterator[Execution]:
        """Order-preserving parallel map with a bounded look-ahead (the input is read lazily)."""
        it = iter(enumerate(programs))
        results: dict[int, Execution] = {}
        cond = threading.Condition()
        state = {"next_yield": 0, "exhausted": False, "error": None, "taken": 0}
        lookahead = self.size * 4

        def feeder() -> None:
            while True:
                with cond:
                    while state["taken"] - state["next_yield"] >= lookahead and state["error"] is None:
                        cond.wait()
                    if state["error"] is not None:
                        return
                    try:
                        idx, program = next(it)
                    except StopIteration:
                        state["exhausted"] = True
                        cond.notify_all()
                        return
                    except BaseException as exc:  # noqa: BLE001 - re-raised in the consumer
                        state["error"] = exc
                        cond.notify_all()
                        return
                    state["taken"] += 1
                try:
                    execution = self.run(program)
                except BaseException as exc:  # noqa: BLE001
                    with cond:
                        state["error"] = exc
                        cond.notify_all()
                    return
                with cond:
                    results[idx] = execution
                    cond.notify_all()

        threads = [threading.Thread(target=feeder, daemon=True) for _ in range(self.size)]
        for t in threads:
            t.start()
        try:
            while True:
                with cond:
                    while state["next_yield"] not in results and state["error"] is None and not (
                            state["exhausted"] and state["next_yield"] >= state["taken"]):
                        cond.wait()
                    if state["error"] is not None:
                        raise state["error"]
                    if state["next_yield"] not in results:
                        return
                    execution = results.pop(state["next_yield"])
                    state["next_yield"] += 1
                    cond.notify_all()
                if progress is not None:
                    progress(execution)
                yield execution
        finally:
            with cond:
                if state["error"] is None:
                    state["error"] = GeneratorExit()
                cond.notify_all()

    def uids(self) -> list[int]:
        return [slot_uid(self.config, i, sub, self.number) for i in range(self.max_workers) for sub in range(SUBSLOTS)]

    def close(self) -> None:
        self.closed = True
        with self._lock:
            idle, self._idle = self._idle, []
        for w in idle:
            w.close()
        # The spawner thread is left to idle: a batch still running on an evicted pool may need a fresh worker.


_pools: dict[tuple[str, int], Pool] = {}
_pools_lock = threading.Lock()


MAX_SHARED_POOLS = 2  # idle warm workers hold a few hundred MB each: keep only the most recently used pools


def shared_pool(config: SandboxConfig, workers: int) -> Pool:
    """One pool per (config, size) per process, reused across calls, closed at exit (or when it becomes the least
    recently used of more than MAX_SHARED_POOLS; a closed pool's in-flight batch still finishes)."""
    key = (config.model_dump_json(), workers)
    evicted = []
    with _pools_lock:
        pool = _pools.pop(key, None)
        if pool is None or pool.closed:
            pool = Pool(config, workers)
        _pools[key] = pool  # re-inserted last: dict order is the recency order
        while len(_pools) > MAX_SHARED_POOLS:
            evicted.append(_pools.pop(next(iter(_pools))))
    for old in evicted:
        old.close()
    return pool


def close_pools() -> None:
    with _pools_lock:
        pools = list(_pools.values())
        _pools.clear()
    for p in pools:
        p.close()


atexit.register(close_pools)
