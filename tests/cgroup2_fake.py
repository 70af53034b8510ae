"""A fake cgroup2 tree: real files in a temp directory, and the kernel's rules enforced on every operation the
sandbox's set-up makes (``solvers.sandbox.cgroups.RealFS``'s interface), with the errno the kernel gives.

Rules (Documentation/admin-guide/cgroup-v2.rst; each also checked against the kernel's own cgroup2 in
tests/test_sandbox_cgroups.py where the host has one):
- a new cgroup has the core files; a controller's interface files exist only when the parent enabled it in its
  ``cgroup.subtree_control`` (its ``cgroup.controllers`` lists what the parent offers);
- ``+ctrl`` in ``cgroup.subtree_control`` needs ``ctrl`` in the cgroup's own ``cgroup.controllers`` (ENOENT), and a
  non-root cgroup may enable controllers only while it holds no process (EBUSY);
- a process may not be moved into a non-root cgroup that has controllers enabled in its subtree_control (EBUSY);
  moving a pid takes it out of the cgroup it was in (a process is in exactly one cgroup); an unknown pid: ESRCH;
- ``-ctrl`` is refused while a child still has it enabled (EBUSY); rmdir of a cgroup with processes or children:
  EBUSY; writing a file that does not exist: ENOENT (the kernel has no such file: nothing is created).
It records the operations in order (``log``), so a test can check, e.g., that the leaf move came first.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

CORE = ("cgroup.controllers", "cgroup.subtree_control", "cgroup.procs", "cgroup.events", "cgroup.type",
        "cgroup.max.depth", "cgroup.kill")
FILES = {"memory": {"memory.max": "max\n", "memory.high": "max\n", "memory.current": "0\n",
                    "memory.swap.max": "max\n", "memory.oom.group": "0\n",
                    "memory.events": "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n"},
         "pids": {"pids.max": "max\n", "pids.current": "0\n", "pids.events": "max 0\n"},
         "cpu": {"cpu.max": "max 100000\n", "cpu.weight": "100\n"}, "io": {"io.max": ""}, "cpuset": {"cpuset.cpus": ""},
         "hugetlb": {"hugetlb.2MB.max": "max\n", "hugetlb.2MB.events": "max 0\n"}, "rdma": {"rdma.max": ""},
         "misc": {"misc.max": ""}}  # the kernel's controllers (a name beyond them: EINVAL)


def _err(code: int, path: str) -> OSError:
    return OSError(code, os.strerror(code), path)


class FakeCgroup2:
    """A cgroup2 tree rooted at ``root`` (a temp dir) offering ``controllers`` at the root."""

    def __init__(self, root: Path, controllers: tuple[str, ...] = ("memory", "pids", "cpu"),
                 pids: tuple[int, ...] = ()) -> None:
        self.root = str(root)
        self.log: list[tuple[str, str, str]] = []
        self._make(self.root, offered=controllers)
        self._set(self.root, "cgroup.procs", "".join(f"{p}\n" for p in pids))

    # -- the RealFS interface ---------------------------------------------------------------------------------
    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def read(self, path: str) -> str:
        if not os.path.isfile(path):
            raise _err(errno.ENOENT, path)
        return Path(path).read_text()

    def mkdir(self, path: str) -> None:
        parent = os.path.dirname(path)
        if not self._is_cgroup(parent):
            raise _err(errno.ENOENT, path)
        if os.path.isdir(path):
            return
        self.log.append(("mkdir", path, ""))
        self._make(path, offered=tuple(self._words(parent, "cgroup.subtree_control")))

    def write(self, path: str, value: str) -> None:
        if not os.path.isfile(path):
            raise _err(errno.ENOENT, path)
        cg, name = os.path.dirname(path), os.path.basename(path)
        self.log.append(("write", path, value))
        if name == "cgroup.subtree_control":
            self._subtree_control(cg, value)
        elif name == "cgroup.procs":
            self._move(cg, int(value.strip()))
        elif name in ("cgroup.controllers", "cgroup.events", "memory.events", "pids.events", "memory.current",
                      "pids.current"):
            raise _err(errno.EACCES, path)  # read-only interface files
        else:
            value = value.strip()
            if not (value == "max" or value.isdigit()):
                raise _err(errno.EINVAL, path)
            self._set(cg, name, value + "\n")

    def rmdir(self, path: str) -> None:
        if self._words(path, "cgroup.procs") or any(os.path.isdir(os.path.join(path, e)) for e in os.listdir(path)):
            raise _err(errno.EBUSY, path)
        for f in os.listdir(path):
            os.unlink(os.path.join(path, f))
        os.rmdir(path)

    # -- what the kernel does on its own --------------------------------------------------------------------
    def oom_kill(self, cg: str) -> None:
        """An OOM kill in ``cg`` (counted in memory.events, as the kernel does, up the tree in the non-local file)."""
        self._bump(cg, "memory.events", "oom_kill")

    def fork_refused(self, cg: str) -> None:
        self._bump(cg, "pids.events", "max")

    def procs(self, cg: str) -> list[int]:
        return [int(x) for x in self._words(cg, "cgroup.procs")]

    # -- internals --------------------------------------------------------------------------------------------
    def _make(self, path: str, offered: tuple[str, ...]) -> None:
        os.makedirs(path, exist_ok=True)
        for f in CORE:
            self._set(path, f, "")
        self._set(path, "cgroup.controllers", " ".join(offered) + ("\n" if offered else ""))
        self._set(path, "cgroup.type", "domain\n")
        self._set(path, "cgroup.events", "populated 0\nfrozen 0\n")
        if path != self.root:
            for c in offered:
                for f, v in FILES.get(c, {}).items():
                    self._set(path, f, v)

    def _subtree_control(self, cg: str, value: str) -> None:
        enabled = self._words(cg, "cgroup.subtree_control")
        offered = self._words(cg, "cgroup.controllers")
        for token in value.split():
            sign, c = token[0], token[1:]
            if sign not in "+-" or c not in FILES:
                raise _err(errno.EINVAL, cg)
            if sign == "+":
                if c not in offered:
                    raise _err(errno.ENOENT, cg)
                if cg != self.root and self._words(cg, "cgroup.procs"):
                    raise _err(errno.EBUSY, cg)  # no internal processes
                if c not in enabled:
                    enabled.append(c)
            else:
                if any(c in self._words(child, "cgroup.subtree_control") for child in self._children(cg)):
                    raise _err(errno.EBUSY, cg)
                if c in enabled:
                    enabled.remove(c)
        self._set(cg, "cgroup.subtree_control", " ".join(enabled) + ("\n" if enabled else ""))
        for child in self._children(cg):  # children's offered controllers and interface files follow
            self._set(child, "cgroup.controllers", " ".join(enabled) + ("\n" if enabled else ""))
            for c, files in FILES.items():
                for f, v in files.items():
                    p = os.path.join(child, f)
                    if c in enabled and not os.path.exists(p):
                        self._set(child, f, v)
                    elif c not in enabled and os.path.exists(p):
                        os.unlink(p)

    def _move(self, cg: str, pid: int) -> None:
        where = self._find(pid)
        if where is None:
            raise _err(errno.ESRCH, cg)
        if cg != self.root and self._words(cg, "cgroup.subtree_control"):
            raise _err(errno.EBUSY, cg)  # no internal processes
        self._set(where, "cgroup.procs", "".join(f"{p}\n" for p in self.procs(where) if p != pid))
        self._set(cg, "cgroup.procs", "".join(f"{p}\n" for p in [*self.procs(cg), pid]))

    def _find(self, pid: int) -> str | None:
        for dirpath, _, files in os.walk(self.root):
            if "cgroup.procs" in files and pid in self.procs(dirpath):
                return dirpath
        return None

    def _is_cgroup(self, path: str) -> bool:
        return os.path.isfile(os.path.join(path, "cgroup.procs"))

    def _children(self, cg: str) -> list[str]:
        return [os.path.join(cg, e) for e in sorted(os.listdir(cg)) if self._is_cgroup(os.path.join(cg, e))]

    def _words(self, cg: str, name: str) -> list[str]:
        p = os.path.join(cg, name)
        return Path(p).read_text().split() if os.path.isfile(p) else []

    def _set(self, cg: str, name: str, text: str) -> None:
        Path(cg, name).write_text(text)

    def _bump(self, cg: str, name: str, key: str) -> None:
        lines = Path(cg, name).read_text().splitlines()
        out = [f"{k} {int(v) + 1}" if k == key else f"{k} {v}" for k, v in (line.split() for line in lines)]
        Path(cg, name).write_text("\n".join(out) + "\n")
