"""cgroup v2 caps (solvers/sandbox/cgroups.py): delegation through ``cgroup.subtree_control``, the leaf-only layout,
``memory.max`` / ``memory.swap.max`` / ``memory.oom.group`` / ``pids.max``, OOM kills from ``memory.events`` and
refused forks from ``pids.events``. Against a fake cgroup2 tree that enforces the kernel's rules (every host), and
the fake's rules against the kernel's own cgroup2 where this host has one."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
import tempfile
from pathlib import Path

import pytest
from cgroup2_fake import FakeCgroup2

from solvers.sandbox import cgroups
from solvers.sandbox.cgroups import REAL_FS, CgroupUnavailable, create_v2_slot, delegate_v2, v2_base

ME, OTHER = os.getpid(), 424242  # OTHER: a process of the same cgroup that is not ours (never signalled)


def _tree(tmp_path: Path, offered: tuple[str, ...] = ("memory", "pids", "cpu")) -> tuple[FakeCgroup2, str]:
    """root -> system.slice -> pool (this process and another live in pool), memory+pids offered down to pool."""
    fake = FakeCgroup2(tmp_path / "cg", pids=(ME, OTHER))
    root = fake.root
    fake.write(os.path.join(root, "cgroup.subtree_control"), " ".join(f"+{c}" for c in offered))
    fake.mkdir(os.path.join(root, "system.slice"))
    fake.write(os.path.join(root, "system.slice", "cgroup.subtree_control"), " ".join(f"+{c}" for c in offered))
    pool = os.path.join(root, "system.slice", "pool")
    fake.mkdir(pool)
    for pid in (ME, OTHER):
        fake.write(os.path.join(pool, "cgroup.procs"), str(pid))
    return fake, pool


def test_the_fake_refuses_what_the_kernel_refuses(tmp_path: Path) -> None:
    """Caps written the way the old v2 branch did (mkdir, then memory.max) fail: the controller is not enabled."""
    fake, pool = _tree(tmp_path)
    fake.mkdir(os.path.join(pool, "slot"))
    with pytest.raises(OSError) as e:
        fake.write(os.path.join(pool, "slot", "memory.max"), "1048576")
    assert e.value.errno == errno.ENOENT
    with pytest.raises(OSError) as e:  # no internal processes: pool still holds two
        fake.write(os.path.join(pool, "cgroup.subtree_control"), "+memory")
    assert e.value.errno == errno.EBUSY
    with pytest.raises(OSError) as e:  # a controller the parent does not offer
        fake.write(os.path.join(fake.root, "system.slice", "cgroup.subtree_control"), "+io")
    assert e.value.errno == errno.ENOENT
    with pytest.raises(OSError) as e:  # no such controller
        fake.write(os.path.join(fake.root, "system.slice", "cgroup.subtree_control"), "+nonsense")
    assert e.value.errno == errno.EINVAL


def test_delegation_moves_the_processes_to_a_leaf_then_enables_the_controllers(tmp_path: Path) -> None:
    fake, pool = _tree(tmp_path)
    slot = create_v2_slot("flywheel-1-w0-0", 256, 16, base=pool, root=fake.root, fs=fake)
    leaf = os.path.join(pool, cgroups.V2_LEAF)
    assert fake.procs(pool) == [] and sorted(fake.procs(leaf)) == sorted([ME, OTHER])
    moves = [(p, v) for op, p, v in fake.log if op == "write" and p.endswith("cgroup.procs")]
    assert moves[-2:] == [(os.path.join(leaf, "cgroup.procs"), str(ME)), (os.path.join(leaf, "cgroup.procs"),
                                                                           str(OTHER))]  # this process first
    enable = next(i for i, (op, p, _) in enumerate(fake.log) if p == os.path.join(pool, "cgroup.subtree_control"))
    assert enable > max(i for i, (op, p, _) in enumerate(fake.log) if p.endswith(f"{cgroups.V2_LEAF}/cgroup.procs"))
    assert Path(pool, "cgroup.subtree_control").read_text().split() == ["memory", "pids"]
    d = slot.dirs[0]
    assert slot.version == 2 and os.path.dirname(d) == pool
    assert Path(d, "memory.max").read_text().strip() == str(256 * 2**20)
    assert Path(d, "memory.swap.max").read_text().strip() == "0"
    assert Path(d, "memory.oom.group").read_text().strip() == "1"
    assert Path(d, "pids.max").read_text().strip() == "16"
    # a second slot: already delegated, nothing moves again; both are leaves beside the processes' leaf
    before = len(moves)
    create_v2_slot("flywheel-1-w0-1", 256, 16, base=pool, root=fake.root, fs=fake)
    assert len([1 for op, p, _ in fake.log if op == "write" and p.endswith("cgroup.procs")]) == before
    assert Path(pool, "flywheel-1-w0-1", "cgroup.subtree_control").read_text() == ""


def test_oom_kills_and_refused_forks_are_read_from_the_events_files(tmp_path: Path) -> None:
    fake, pool = _tree(tmp_path)
    slot = create_v2_slot("s", 256, 16, base=pool, root=fake.root, fs=fake)
    assert (slot.oom_kills(), slot.pids_max_hits()) == (0, 0)
    fake.oom_kill(slot.dirs[0])
    fake.oom_kill(slot.dirs[0])
    fake.fork_refused(slot.dirs[0])
    assert (slot.oom_kills(), slot.pids_max_hits()) == (2, 1)


def test_controllers_not_delegated_say_so(tmp_path: Path) -> None:
    fake, pool = _tree(tmp_path, offered=("cpu",))
    with pytest.raises(CgroupUnavailable, match=r"memory, pids not offered .*cgroup.controllers: cpu"):
        create_v2_slot("s", 256, 16, base=pool, root=fake.root, fs=fake)


def test_a_process_that_cannot_be_moved_says_which(tmp_path: Path) -> None:
    fake, pool = _tree(tmp_path)
    real_write = fake.write

    def refuse(path: str, value: str) -> None:
        if path.endswith(f"{cgroups.V2_LEAF}/cgroup.procs") and value == str(OTHER):
            raise OSError(errno.EACCES, "Permission denied", path)
        real_write(path, value)

    fake.write = refuse  # type: ignore[method-assign]
    with pytest.raises(CgroupUnavailable, match=f"cannot move process {OTHER}"):
        delegate_v2(pool, fake.root, fake)


def test_the_root_cgroup_needs_no_leaf(tmp_path: Path) -> None:
    fake = FakeCgroup2(tmp_path / "cg", pids=(ME,))
    create_v2_slot("s", 64, 8, base=fake.root, root=fake.root, fs=fake)
    assert fake.procs(fake.root) == [ME] and not os.path.exists(os.path.join(fake.root, cgroups.V2_LEAF))


def test_base_is_found_from_proc_self_cgroup(tmp_path: Path) -> None:
    fake, pool = _tree(tmp_path)
    assert v2_base(fake.root, fake, "/system.slice/pool") == pool
    assert v2_base(fake.root, fake, f"/system.slice/pool/{cgroups.V2_LEAF}") == pool  # after our own delegation
    assert v2_base(str(tmp_path), fake, "/") is None  # not a cgroup2 mount


# ---- the kernel's own cgroup2 -------------------------------------------------------------------------------

def _cgroup2_mount() -> tuple[str | None, str]:
    """A cgroup2 mount of this host (mounting one in a temp dir when none is mounted and we are root)."""
    with open("/proc/mounts") as fh:
        for line in fh:
            parts = line.split()
            if parts[2] == "cgroup2":
                return parts[1], ""
    if os.geteuid() != 0:
        return None, "no cgroup2 mount and not root (cannot mount one)"
    where = tempfile.mkdtemp(prefix="cg2-")
    r = subprocess.run(["mount", "-t", "cgroup2", "none", where], capture_output=True, text=True)
    if r.returncode:
        return None, f"mount -t cgroup2 refused: {r.stderr.strip()}"
    return where, ""


@pytest.fixture
def kernel_cg2() -> tuple[str, str]:
    if os.geteuid() != 0:
        pytest.skip("needs root to create cgroups in the kernel's cgroup2 hierarchy")
    mount, why = _cgroup2_mount()
    if mount is None:
        pytest.skip(why)
    offered = Path(mount, "cgroup.controllers").read_text().split()
    if not offered:
        pytest.skip(f"the cgroup2 hierarchy at {mount} offers no controller (all bound to v1)")
    return mount, offered[0]


def test_the_kernel_enforces_the_fakes_rules_and_delegation_works_there(kernel_cg2: tuple[str, str],
                                                                         tmp_path: Path) -> None:
    """The same operations against the kernel and the fake, with a controller this host's cgroup2 offers: the
    same refusals (errno), then ``delegate_v2`` on the kernel with a real process in the cgroup."""
    mount, ctrl = kernel_cg2
    root_ctl = os.path.join(mount, "cgroup.subtree_control")
    was_enabled = ctrl in Path(root_ctl).read_text().split()
    test_cg = os.path.join(mount, f"flywheel-test-{os.getpid()}")
    fake = FakeCgroup2(tmp_path / "cg", controllers=(ctrl,))
    sleeper = subprocess.Popen(["sleep", "60"])
    fake_root = fake.root
    Path(fake_root, "cgroup.procs").write_text(f"{sleeper.pid}\n")  # the fake's root holds the process too
    try:
        results = {}
        for name, fs, root in (("kernel", REAL_FS, mount), ("fake", fake, fake_root)):
            cg = os.path.join(root, f"flywheel-test-{os.getpid()}")
            got = []
            fs.write(os.path.join(root, "cgroup.subtree_control"), f"+{ctrl}")
            fs.mkdir(cg)
            fs.mkdir(os.path.join(cg, "child"))
            fs.write(os.path.join(cg, "cgroup.procs"), str(sleeper.pid))
            for path, value in ((os.path.join(cg, "cgroup.subtree_control"), f"+{ctrl}"),  # holds a process
                                (os.path.join(cg, "cgroup.subtree_control"), "+memory" if ctrl != "memory" else
                                 "+pids")):  # not offered
                try:
                    fs.write(path, value)
                    got.append(0)
                except OSError as exc:
                    got.append(exc.errno)
            delegate_v2(cg, root, fs, controllers=(ctrl,), own_pid=sleeper.pid)
            leaf = os.path.join(cg, cgroups.V2_LEAF)
            got.append(int(fs.read(os.path.join(leaf, "cgroup.procs")).split()[0]) == sleeper.pid)
            got.append(ctrl in fs.read(os.path.join(cg, "cgroup.subtree_control")).split())
            try:  # a process into the cgroup that now has controllers enabled: no internal processes
                fs.write(os.path.join(cg, "cgroup.procs"), str(sleeper.pid))
                got.append(0)
            except OSError as exc:
                got.append(exc.errno)
            results[name] = got
            if name == "kernel":  # undo: the process back to the root, the test cgroups removed
                fs.write(os.path.join(mount, "cgroup.procs"), str(sleeper.pid))
        assert results["kernel"][0] == errno.EBUSY and results["kernel"][-1] == errno.EBUSY
        assert results["kernel"] == results["fake"]
    finally:
        sleeper.kill()
        sleeper.wait()
        with contextlib.suppress(OSError):
            REAL_FS.write(os.path.join(test_cg, "cgroup.subtree_control"), f"-{ctrl}")
        for d in (os.path.join(test_cg, "child"), os.path.join(test_cg, cgroups.V2_LEAF), test_cg):
            with contextlib.suppress(OSError):
                os.rmdir(d)
        if not was_enabled:
            with contextlib.suppress(OSError):
                REAL_FS.write(root_ctl, f"-{ctrl}")


def test_memory_and_pids_caps_on_the_kernels_cgroup2(kernel_cg2: tuple[str, str]) -> None:
    mount, _ = kernel_cg2
    offered = Path(mount, "cgroup.controllers").read_text().split()
    if not {"memory", "pids"} <= set(offered):
        pytest.skip(f"this host binds memory and pids to cgroup v1; its cgroup2 at {mount} offers only: "
                    f"{' '.join(offered)}")
    base = os.path.join(mount, f"flywheel-test-{os.getpid()}")
    REAL_FS.mkdir(base)
    try:
        slot = create_v2_slot("s", 64, 8, base=base, root=mount)
        assert Path(slot.dirs[0], "memory.max").read_text().strip() == str(64 * 2**20)
        assert Path(slot.dirs[0], "pids.max").read_text().strip() == "8"
        assert slot.oom_kills() == 0
    finally:
        for d in (os.path.join(base, "s"), os.path.join(base, cgroups.V2_LEAF), base):
            with contextlib.suppress(OSError):
                os.rmdir(d)
