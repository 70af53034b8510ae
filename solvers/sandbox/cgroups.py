"""Memory and process-count caps per worker slot through cgroups (v1 ``memory`` + ``pids`` controllers, or v2).

The parent creates one cgroup per worker slot under its own cgroup and sets the caps; the worker's zygote writes
each child into its sub-slot's cgroup right after the fork, before the program is sent (``zygote.py``). RLIMIT_AS is not used: it breaks OpenBLAS and solver thread creation.
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


def create_slot(name: str, memory_mb: int, max_pids: int) -> SlotCgroup | None:
    """Create the slot's cgroup(s) with the caps; None when cgroups are not writable here."""
    limit = str(memory_mb * 2**20)
    v1_mem, v1_pids = os.path.join(ROOT, "memory"), os.path.join(ROOT, "pids")
    try:
        if os.path.isdir(v1_mem) and os.path.isdir(v1_pids) and not os.path.exists(os.path.join(ROOT,
                                                                                                "cgroup.controllers")):
            mem = os.path.join(v1_mem + (_own_path("memory") or "/"), name)
            pids = os.path.join(v1_pids + (_own_path("pids") or "/"), name)
            for d in (mem, pids):
                os.makedirs(d, exist_ok=True)
            _write(os.path.join(mem, "memory.limit_in_bytes"), limit)
            with contextlib.suppress(OSError):  # without swap accounting the file is absent
                _write(os.path.join(mem, "memory.memsw.limit_in_bytes"), limit)
            _write(os.path.join(pids, "pids.max"), str(max_pids))
            return SlotCgroup(1, (mem, pids))
        if os.path.exists(os.path.join(ROOT, "cgroup.controllers")):
            base = os.path.join(ROOT, (_own_path("") or "/").lstrip("/"))
            d = os.path.join(base, name)
            os.makedirs(d, exist_ok=True)
            _write(os.path.join(d, "memory.max"), limit)
            with contextlib.suppress(OSError):
                _write(os.path.join(d, "memory.swap.max"), "0")
            _write(os.path.join(d, "pids.max"), str(max_pids))
            return SlotCgroup(2, (d,))
    except OSError:
        return None
    return None


_SLOT_NAME = re.compile(r"^flywheel-(\d+)-")


def _parents() -> list[str]:
    """The directories that hold this process's slot cgroups (where create_slot makes them)."""
    if os.path.exists(os.path.join(ROOT, "cgroup.controllers")):
        return [os.path.join(ROOT, (_own_path("") or "/").lstrip("/"))]
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
