"""Memory and process-count caps per worker slot through cgroups (v1 ``memory`` + ``pids`` controllers, or v2).

The parent creates one cgroup per worker slot under its own cgroup and sets the caps; the worker's zygote writes
each child into its sub-slot's cgroup right after the fork, before the program is sent (``zygote.py``). RLIMIT_AS is
not used: it breaks OpenBLAS and solver thread creation.

cgroup v2 (a pure cgroup2 mount at /sys/fs/cgroup; a hybrid host, v1 controllers plus an empty unified tree, uses
v1): the kernel offers a child cgroup only the controllers its parent enabled in ``cgroup.subtree_control``, and a
non-root cgroup that enables any there may hold no process itself. So ``delegate_v2`` moves this process (and the
others of its cgroup) into a leaf, ``flywheel-leaf``, enables ``+memory +pids`` in its cgroup's subtree_control, and
the slots are leaves beside it: ``memory.max``, ``memory.swap.max`` 0, ``memory.oom.group`` 1, ``pids.max``; OOM kills
are read from ``memory.events`` (``oom_kill``), refused forks from ``pids.events`` (``max``). ``probe`` says whether
(and why not) caps can be made here; ``tests/test_sandbox_cgroups.py`` runs all of it against a fake cgroup2 tree
that enforces the kernel's rules, and against the kernel's own cgroup2 where the host has one.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import signal
import time
from dataclasses import dataclass

ROOT = "/sys/fs/cgroup"


def _own_path(controller: str) -> str | None:
    """This process's cgroup path for a v1 controller ('' for v2), from /proc/self/cgroup."""
    try:
        with open("/proc/self/cgroup") as fh:
            for line in fh:
                _, ctrls, path = line.rstrip("\n").split(":", 2)
                if controller in ctrls.split(",") or (controller == "" and ctrls == ""):
                    return path
    except OSError:
        return None
    return None


@dataclass(frozen=True)
class SlotCgroup:
    """The directories of one slot: v1 (memory dir, pids dir) or v2 (one dir)."""

    version: int
    dirs: tuple[str, ...]

    @functools.cached_property
    def _procs(self) -> str:
        """The slot's process list. One controller's suffices (v1 has two): the zygote writes every child into
        all of them and a program's processes inherit its cgroups, which an unprivileged uid cannot leave."""
        return os.path.join(self.dirs[-1], "cgroup.procs")

    @functools.cached_property
    def _oom_file(self) -> str:
        return os.path.join(self.dirs[0], "memory.oom_control" if self.version == 1 else "memory.events")

    def pids(self) -> list[int]:
        return sorted(int(x) for x in _read(self._procs).split())

    def kill_all(self, wait_s: float = 2.0) -> bool:
        """SIGKILL everything in the slot (escaped daemons included); True when the slot ended up empty."""
        deadline = time.monotonic() + wait_s
        while True:
            pids = self.pids()
            if not pids:
                return True
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            if time.monotonic() > deadline:
                return False
            time.sleep(0.005)

    def oom_kills(self) -> int:
        """OOM kills so far (v1 memory.oom_control / v2 memory.events)."""
        for line in _read(self._oom_file).splitlines():
            key, _, val = line.partition(b" ")
            if key == b"oom_kill":
                return int(val)
        return 0

    def pids_max_hits(self) -> int:
        """Forks the slot's ``pids.max`` refused so far (``pids.events``: "max N", v1 and v2)."""
        for line in _read(os.path.join(self.dirs[-1], "pids.events")).splitlines():
            key, _, val = line.partition(b" ")
            if key == b"max":
                return int(val)
        return 0

    def remove(self) -> None:
        self.kill_all(1.0)
        for d in self.dirs:
            with contextlib.suppress(OSError):
                os.rmdir(d)


class CgroupUnavailable(OSError):
    """Why this host gives the sandbox no memory/pids caps (said by ``probe`` and ``flywheel sandbox doctor``)."""


class RealFS:
    """The cgroup file operations of the set-up path (the hot path reads with ``_read``). Tests pass a fake cgroup2
    tree with the kernel's rules instead (``tests/cgroup2_fake.py``)."""

    def read(self, path: str) -> str:
        with open(path) as fh:
            return fh.read()

    def write(self, path: str, value: str) -> None:
        with open(path, "w") as fh:
            fh.write(value)

    def mkdir(self, path: str) -> None:
        with contextlib.suppress(FileExistsError):
            os.mkdir(path)

    def exists(self, path: str) -> bool:
        return os.path.exists(path)


REAL_FS = RealFS()
V2_CONTROLLERS = ("memory", "pids")
# The leaf that holds the processes of a v2 cgroup whose children get controllers (the kernel's "no internal
# processes" rule: a non-root cgroup that enables controllers in cgroup.subtree_control may hold no process itself).
V2_LEAF = "flywheel-leaf"


def v2_base(root: str = ROOT, fs: RealFS = REAL_FS, proc_cgroup: str | None = None) -> str | None:
    """This process's cgroup directory on a pure cgroup2 host (``root`` is a cgroup2 mount), else None. When it is
    our own leaf (``V2_LEAF``, from an earlier delegation in this process), its parent."""
    if not fs.exists(os.path.join(root, "cgroup.controllers")):
        return None
    own = proc_cgroup if proc_cgroup is not None else (_own_path("") or "/")
    base = os.path.join(root, own.lstrip("/")).rstrip("/") or "/"
    if os.path.basename(base) == V2_LEAF:
        base = os.path.dirname(base)
    return base


def delegate_v2(base: str, root: str = ROOT, fs: RealFS = REAL_FS, controllers: tuple[str, ...] = V2_CONTROLLERS,
                own_pid: int | None = None) -> None:
    """Make ``base`` able to hold capped leaf cgroups, as the kernel requires (cgroup v2, "Top-down constraint" and
    "No internal process constraint"): the controllers must be offered to ``base`` (its ``cgroup.controllers``, which
    its parent's ``subtree_control`` decides: if they are not there, only whoever manages the parent can delegate
    them, e.g. systemd's ``Delegate=yes``), then enabled in ``base``'s ``cgroup.subtree_control``, which a non-root
    cgroup may do only while it holds no process: so its processes move first into the leaf ``V2_LEAF`` (this
    process first). Raises ``CgroupUnavailable`` saying what is missing."""
    available = fs.read(os.path.join(base, "cgroup.controllers")).split()
    missing = [c for c in controllers if c not in available]
    if missing:
        raise CgroupUnavailable(f"cgroup2 controller(s) {', '.join(missing)} not offered to {base} (its "
                                f"cgroup.controllers: {' '.join(available) or 'none'}); the parent cgroup must enable "
                                f"them in its cgroup.subtree_control (delegation)")
    enabled = fs.read(os.path.join(base, "cgroup.subtree_control")).split()
    need = [c for c in controllers if c not in enabled]
    if not need:
        return
    if os.path.normpath(base) != os.path.normpath(root):  # the root cgroup is exempt from the no-internal rule
        leaf = os.path.join(base, V2_LEAF)
        fs.mkdir(leaf)
        me = os.getpid() if own_pid is None else own_pid
        pids = [int(x) for x in fs.read(os.path.join(base, "cgroup.procs")).split()]
        for pid in sorted(pids, key=lambda p: p != me):  # this process first
            try:
                fs.write(os.path.join(leaf, "cgroup.procs"), str(pid))
            except ProcessLookupError:
                continue  # exited meanwhile
            except OSError as exc:
                raise CgroupUnavailable(f"cannot move process {pid} out of {base} into its leaf {leaf} ({exc}): "
                                        "controllers cannot be enabled while it holds processes") from exc
    try:
        fs.write(os.path.join(base, "cgroup.subtree_control"), " ".join(f"+{c}" for c in need))
    except OSError as exc:
        raise CgroupUnavailable(f"enabling {' '.join(need)} in {base}/cgroup.subtree_control failed: {exc}") from exc


def create_v2_slot(name: str, memory_mb: int, max_pids: int, base: str, root: str = ROOT,
                   fs: RealFS = REAL_FS) -> SlotCgroup:
    """A leaf slot cgroup under ``base`` (delegated first) with ``memory.max``, ``memory.swap.max`` 0 (where swap
    accounting exists), ``memory.oom.group`` (an OOM kills the whole slot) and ``pids.max``."""
    delegate_v2(base, root, fs)
    d = os.path.join(base, name)
    fs.mkdir(d)
    fs.write(os.path.join(d, "memory.max"), str(memory_mb * 2**20))
    for knob, value in (("memory.swap.max", "0"), ("memory.oom.group", "1")):
        if fs.exists(os.path.join(d, knob)):  # absent without swap accounting / before Linux 4.19
            fs.write(os.path.join(d, knob), value)
    fs.write(os.path.join(d, "pids.max"), str(max_pids))
    return SlotCgroup(2, (d,))


def create_slot(name: str, memory_mb: int, max_pids: int) -> SlotCgroup | None:
    """Create the slot's cgroup(s) with the caps; None when cgroups are not writable here (``probe`` says why)."""
    try:
        return _create_slot(name, memory_mb, max_pids)
    except OSError:
        return None


def _create_slot(name: str, memory_mb: int, max_pids: int) -> SlotCgroup:
    limit = str(memory_mb * 2**20)
    v1_mem, v1_pids = os.path.join(ROOT, "memory"), os.path.join(ROOT, "pids")
    base = v2_base()
    if base is not None:
        return create_v2_slot(name, memory_mb, max_pids, base)
    if os.path.isdir(v1_mem) and os.path.isdir(v1_pids):
        mem = os.path.join(v1_mem + (_own_path("memory") or "/"), name)
        pids = os.path.join(v1_pids + (_own_path("pids") or "/"), name)
        for d in (mem, pids):
            os.makedirs(d, exist_ok=True)
        _write(os.path.join(mem, "memory.limit_in_bytes"), limit)
        with contextlib.suppress(OSError):  # without swap accounting the file is absent
            _write(os.path.join(mem, "memory.memsw.limit_in_bytes"), limit)
        _write(os.path.join(pids, "pids.max"), str(max_pids))
        return SlotCgroup(1, (mem, pids))
    raise CgroupUnavailable(f"no cgroup2 mount at {ROOT} and no v1 memory + pids controllers under it")


def probe(memory_mb: int = 64, max_pids: int = 8) -> tuple[str, str]:
    """(layer, reason): ``cgroup-v1`` / ``cgroup-v2`` when a capped slot can be made here (one is made and removed),
    else ('', why not)."""
    if os.geteuid() != 0:
        return "", "not root: the pool makes its slot cgroups only as root (uid drop, cgroup writes)"
    try:
        slot = _create_slot(f"flywheel-{os.getpid()}-probe", memory_mb, max_pids)
    except OSError as exc:
        return "", str(exc)
    slot.remove()
    return f"cgroup-v{slot.version}", ""


_SLOT_NAME = re.compile(r"^flywheel-(\d+)-")


def _parents() -> list[str]:
    """The directories that hold this process's slot cgroups (where create_slot makes them)."""
    base = v2_base()
    if base is not None:
        return [base]
    return [os.path.join(ROOT, c) + (_own_path(c) or "/") for c in ("memory", "pids")]


def sweep_orphans() -> list[str]:
    """Remove the empty slot cgroups of pool processes that died without cleaning up (SIGKILL, a killed Ray
    actor): a slot's name starts with its pool process's pid, so a slot whose process is gone is an orphan. A
    non-empty one is left alone (rmdir refuses it anyway). Returns what was removed."""
    removed = []
    for parent in _parents():
        with contextlib.suppress(OSError):
            for name in os.listdir(parent):
                m = _SLOT_NAME.match(name)
                if m is None or os.path.exists(f"/proc/{m.group(1)}"):
                    continue
                path = os.path.join(parent, name)
                with contextlib.suppress(OSError):
                    os.rmdir(path)
                    removed.append(path)
    return removed


def _read(path: str) -> bytes:
    """A small control file's content (b"" if it cannot be read): plain system calls, read twice per program by
    the worker, where ``open``'s text layer cost more than the kernel's work."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return b""
    chunks = []
    try:
        while chunk := os.read(fd, 1 << 16):  # a seq_file may hand out its content a page at a time
            chunks.append(chunk)
    except OSError:
        return b""
    finally:
        os.close(fd)
    return b"".join(chunks)


def _write(path: str, value: str) -> None:
    with open(path, "w") as fh:
        fh.write(value)
