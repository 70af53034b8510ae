"""Which isolation layers the sandbox gets on this host, and why any is missing (``flywheel sandbox doctor``).

Each layer is probed the way the pool sets it up (bubblewrap's namespaces, the network namespace, seccomp, rlimits,
cgroup memory/pids caps, the uid drop), and one real program is run to read the layers actually in force
(``Execution.isolation``)."""

from __future__ import annotations

import os
import platform
import resource
import shutil
import subprocess
from typing import Any


def _cgroup_layout() -> str:
    try:
        fstype = subprocess.run(["stat", "-fc", "%T", "/sys/fs/cgroup"], capture_output=True, text=True,
                                timeout=5).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        fstype = "?"
    if fstype == "cgroup2fs":
        return "cgroup v2 (unified)"
    if os.path.isdir("/sys/fs/cgroup/unified"):
        return "cgroup v1 + an empty v2 tree (hybrid)"
    return "cgroup v1" if os.path.isdir("/sys/fs/cgroup/memory") else f"no cgroup mount ({fstype})"


def diagnose(run_program: bool = True) -> dict[str, Any]:
    """{"layers": [{"layer", "active", "detail"}], "isolation": what a real program got, "host": ...}."""
    from solvers.sandbox import cgroups, seccomp
    from solvers.sandbox.pool import bwrap_works

    root = os.geteuid() == 0
    layers: list[dict[str, Any]] = []

    def add(name: str, active: bool, detail: str) -> None:
        layers.append({"layer": name, "active": active, "detail": detail})

    bwrap = bwrap_works()
    exe = shutil.which("bwrap")
    add("bwrap namespaces (pid, mount, ro-system, tmpfs)", bwrap,
        f"{exe}: works" if bwrap else ("bwrap not installed (apt-get install bubblewrap)" if exe is None else
                                       f"{exe} cannot create the namespaces here (user namespaces or privileges)"))
    add("no network (netns)", bwrap or root,
        "bwrap --unshare-net" if bwrap else ("unshare(CLONE_NEWNET) in the worker (root)" if root else
                                             "neither bwrap nor root: programs see the host's network"))
    add("seccomp", seccomp.supported(), "x86_64 BPF filter" if seccomp.supported() else
        f"the hand-built filter is x86_64 only (this host: {platform.machine()})")
    add("rlimits (CPU, file size, open files, processes)", True, "setrlimit in each child")
    layer, why = cgroups.probe()
    add("cgroup memory + pids caps", bool(layer), f"{layer} ({_cgroup_layout()})" if layer else
        f"{why} ({_cgroup_layout()}); programs run without memory/pids caps: a round refuses unless "
        "[sandbox] allow_uncapped = true")
    add("unprivileged uid per slot", root, "root: each program drops to its own uid" if root else
        f"not root (uid {os.geteuid()}): programs run as this user")
    soft, _ = resource.getrlimit(resource.RLIMIT_NPROC)
    out: dict[str, Any] = {"layers": layers, "host": {"kernel": platform.release(), "machine": platform.machine(),
                                                      "uid": os.geteuid(), "cgroups": _cgroup_layout(),
                                                      "rlimit_nproc": soft}}
    out["solver_apis"] = solver_apis()
    if run_program:
        from solvers.sandbox import Program, SandboxConfig
        from solvers.sandbox import run_program as run_one

        e = run_one(Program(program_id="doctor", code="print('ok')\n"), SandboxConfig(timeout_s=60, preload=()))
        out["isolation"], out["probe_status"] = e.isolation, str(e.status)
    return out


def solver_apis() -> list[dict[str, Any]]:
    """Every solver API the capture hooks (``solvers/sandbox/capture``): installed here or not, and its version. A
    program written against one that is not installed fails with an import error, as it would anywhere."""
    import importlib.metadata as md
    import importlib.util

    from solvers.sandbox.capture import HOOKS, load_hook_modules

    load_hook_modules()
    dists = md.packages_distributions()
    rows = []
    for api, h in sorted(HOOKS.items()):
        top = h.modules[0].split(".")[0]
        installed = importlib.util.find_spec(top) is not None
        version = ""
        for dist in dists.get(top, []) if installed else []:
            try:
                version = md.version(dist)
                break
            except md.PackageNotFoundError:
                continue
        rows.append({"api": api, "module": h.modules[0], "installed": installed, "version": version})
    return rows
