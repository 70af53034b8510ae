"""Where the blind process (``contracts.blind``) runs: the sandbox's own layers, applied to one warm interpreter.

Outside (the command line, ``command``): bubblewrap where it works (``solvers.sandbox.pool.bwrap_command``, the
sandbox workers' own mount plan): a new network, pid, ipc and uts namespace, a cleared environment, only the system,
the interpreter, the virtualenv and the ``solvers`` and ``contracts`` packages bound read-only, and a private tmpfs
for ``/tmp``, ``/run`` and ``/dev/shm``. The store, the user's home, the repository's other directories and every
other host path do not exist in there. Without bubblewrap, as root: the same mount plan made by hand in the child
(``_private_root``: a new mount namespace, a tmpfs root with the same read-only binds, chroot), so the store is
gone there too; layers ``mountns+ro-system+tmpfs``. Without bubblewrap and without a mount namespace (not root, or
no CAP_SYS_ADMIN): a scrubbed environment and a private working directory only (reading host files is then
possible; ``isolation`` says so).

Inside (``lock_down``, once the child has imported what it needs): an unprivileged uid (as root; it drops every
capability), RLIMIT_FSIZE 0 (no file can be written, so nothing passes through a file to another process),
RLIMIT_NPROC, RLIMIT_AS (``MEMORY_BYTES``) and no core dumps, a new network namespace where bubblewrap gave none, and the sandbox's seccomp filter
(no IP, netlink or packet sockets; no ptrace, mount or namespaces).
"""

from __future__ import annotations

import ctypes
import os
import resource
import sys
import tempfile
from pathlib import Path

# One fixed unprivileged uid per role: the blind process and the answer process never share one, so neither can
# signal or read the other's /proc even where they share a pid namespace (no bubblewrap).
UIDS = {"blind": 64_990, "answer": 64_991}
NPROC = 32  # threads count too; the child is single-threaded, a library may start a few
# Address space of one jailed child (RLIMIT_AS): a user contract that allocates more gets MemoryError (a
# contract_error verdict), never the host's memory. The child itself (interpreter, numpy, the packages) maps
# well under 1 GiB.
MEMORY_BYTES = 4 << 30
CLONE_NEWNET = 0x40000000


def command(role: str) -> tuple[list[str], dict[str, str] | None, str | None, list[str]]:
    """``(argv, env, cwd, layers)`` to start ``python -m contracts.blind ROLE`` in its jail."""
    from solvers.sandbox.pool import bwrap_command, bwrap_works

    bwrapped = bwrap_works()
    argv = [sys.executable, "-m", "contracts.blind", role, "bwrap" if bwrapped else "process"]
    roots = package_roots()
    if bwrapped:
        here = str(Path(__file__).resolve().parent)
        cmd = bwrap_command([], {}, caps=os.geteuid() == 0) + ["--ro-bind", here, here,
                                                               "--setenv", "PYTHONPATH", roots]
        return cmd + argv, None, None, ["bwrap", "netns", "pidns", "ro-system", "tmpfs"]
    work = tempfile.mkdtemp(prefix="flywheel-blind-")
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": work, "TMPDIR": work, "LANG": "C.UTF-8",
           "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": roots}
    return argv, env, work, ["process", "clean-env"]


def package_roots() -> str:
    """The directories the parent imported ``contracts`` and ``solvers`` from, as a ``PYTHONPATH``: the child imports
    the same copies (a second checkout run with ``PYTHONPATH`` beside an installed one once had its child look for the
    installed ``contracts``, which bubblewrap had not mounted). The child drops the variable once it has started."""
    import solvers

    pkgs = (Path(__file__).resolve().parent, Path(solvers.__file__).resolve().parent)
    return os.pathsep.join(dict.fromkeys(str(p.parent) for p in pkgs))


def lock_down(role: str, bwrapped: bool) -> list[str]:
    """Apply the in-process layers to the calling (single-threaded) child; returns the ones in force."""
    from solvers.sandbox import seccomp

    layers = []
    private_root = False
    if os.geteuid() == 0 and not bwrapped:
        libc = ctypes.CDLL(None, use_errno=True)
        # As root without bubblewrap: its mount plan by hand (a new mount namespace, a tmpfs root with the
        # system and the interpreter bound read-only, chroot). The store and every other host path are then
        # gone, and the uid drop works even for an interpreter under /root (its parents are made 0755 there).
        if libc.unshare(CLONE_NEWNS | CLONE_NEWNET) == 0:
            layers.append("netns")
            private_root = _private_root(libc)
            if private_root:
                layers += ["mountns", "ro-system", "tmpfs"]
        elif libc.unshare(CLONE_NEWNET) == 0:
            layers.append("netns")
    if os.geteuid() == 0 and (bwrapped or private_root or _traversable()):
        os.setgroups([])
        os.setgid(UIDS[role])
        os.setuid(UIDS[role])  # a non-zero uid without keep-caps: every capability is gone
        layers.append("uid")
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NPROC, (NPROC, NPROC))
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    layers.append("rlimits")
    if seccomp.supported():
        seccomp.install()
        layers.append("seccomp")
    return layers


# mount(2) flags (linux/mount.h)
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 32, 4096, 16384, 1 << 18
CLONE_NEWNS = 0x00020000
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc")
DEVICES = ("/dev/null", "/dev/zero", "/dev/urandom", "/dev/random")


def _private_root(libc: ctypes.CDLL) -> bool:
    """In a fresh mount namespace: a tmpfs at the working directory becomes the root, holding read-only binds of
    the system directories, the interpreter, the virtualenv and the ``solvers`` / ``contracts`` packages (the
    sandbox's own list), a few device nodes and an empty ``/tmp``; then chroot. False (nothing changed) where a
    mount fails, e.g. without CAP_SYS_ADMIN in a container: the caller keeps the weaker jail and says so."""
    from solvers.sandbox.pool import _repo_paths

    def mount(src: str | None, dst: str, fstype: str | None, flags: int, data: str | None = None) -> bool:
        args = [None if x is None else x.encode() for x in (src, dst, fstype)]
        return libc.mount(*args, ctypes.c_ulong(flags), None if data is None else data.encode()) == 0

    root = os.getcwd()
    if not (mount(None, "/", None, MS_REC | MS_PRIVATE) and mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV,
                                                                   "mode=0755,size=16m")):
        return False
    for path in SYSTEM:
        if os.path.islink(path):
            os.symlink(os.readlink(path), root + path)
    # The empty /tmp first: a repository or virtualenv under /tmp (a clone in /tmp/ci) is bound inside it below.
    os.makedirs(root + "/tmp", mode=0o1777)
    os.chmod(root + "/tmp", 0o1777)
    binds = [p for p in SYSTEM if os.path.isdir(p) and not os.path.islink(p)]
    binds += [*_repo_paths(), str(Path(__file__).resolve().parent)]
    for path in binds:
        target = root + path
        os.makedirs(target, mode=0o755, exist_ok=True)  # parents 0755: the dropped uid must traverse them
        if not (mount(path, target, None, MS_BIND | MS_REC)
                and mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_REC)):
            return False
    os.makedirs(root + "/dev", mode=0o755)
    for dev in DEVICES:
        if os.path.exists(dev):
            open(root + dev, "w").close()
            mount(dev, root + dev, None, MS_BIND)
    os.chroot(root)
    os.chdir("/tmp")
    os.environ.update(HOME="/tmp", TMPDIR="/tmp")
    tempfile.tempdir = None
    return True


def _traversable() -> bool:
    """Without bubblewrap the child reads the interpreter and the packages from the host: drop the uid only where
    another uid can reach them (as the sandbox's workers decide it)."""
    from solvers.sandbox.pool import _repo_paths, _world_traversable

    return all(_world_traversable(p) for p in [*_repo_paths(), str(Path(__file__).resolve().parent)])
