"""A warm worker: imports the solver libraries once, then runs one locked-down child per program.

Run as ``python -m solvers.sandbox.worker`` (inside bubblewrap, or directly in the fallback). It speaks
length-prefixed JSON with its parent on stdin/stdout (moved to private descriptors at start-up so that nothing
the libraries print can corrupt the protocol). The children are forked by the worker's zygote (``zygote.py``, a
copy of the worker made once after the imports, so that this process supervises without copy-on-write faults);
they share the imported libraries copy-on-write and reuse nothing else: each gets a fresh working directory,
fresh pipes, a fresh channel key, and is killed with its whole process group and cgroup when it ends.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import gc
import os
import resource
import select
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from solvers.sandbox import capture, deferred, seccomp
from solvers.sandbox.cgroups import SlotCgroup
from solvers.sandbox.channel import parse_frames, read_frame, read_msg, write_frame, write_msg
from solvers.sandbox.child import remember_sandbox_modules
from solvers.sandbox.classify import Observed
from solvers.sandbox.given import GivenConfig
from solvers.sandbox.zygote import Zygote, collapse_private_memory

CHANNEL_CAP = 256 * 2**20
DONE_MARK = b'"type": "done"'
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS", "GOTO_NUM_THREADS")


def child_env(config: GivenConfig, licenses: dict[str, str]) -> dict[str, str]:
    """The whole environment a program sees but HOME and TMPDIR (its working directory, set by each child):
    nothing inherited, so no secret reaches it. The worker makes its own environment exactly this after its
    imports, so that a child only sets those two: rebuilding the whole environment in every child cost ~0.7 ms of
    copy-on-write faults."""
    env = {"PATH": f"{os.path.dirname(sys.executable)}:/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
           "LC_ALL": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONIOENCODING": "utf-8"}
    env.update({k: str(max(1, config.solver_threads)) for k in THREAD_VARS})
    env.update(licenses)
    env.update(config.extra_env)
    return env


@dataclass
class Prepared:
    """A child asked of the zygote (``pid`` is 0 until it says it forked), then locked down and waiting for its
    program on ``prog_w``."""

    workdir: str
    out_r: int
    err_r: int
    chan_r: int
    prog_w: int
    key: bytes
    cgroup: SlotCgroup | None
    pid: int = 0
    pidfd: int = -1  # from the zygote: readable once the child has exited
    forked_at: float = 0.0
    fork_s: float = 0.0


class Worker:
    def __init__(self, config: GivenConfig, slot: dict[str, Any]) -> None:
        self.config = config
        uids = slot.get("uids") or [None, None]
        cgs = [SlotCgroup(c["version"], tuple(c["dirs"])) for c in slot.get("cgroups") or []] or [None, None]
        # Two (uid, cgroup) sub-slots used alternately: the next child is forked and locked down in one while the
        # previous program's processes are still exiting in the other, so they never share a uid or a cgroup.
        self.subslots: list[tuple[int | None, SlotCgroup | None]] = list(zip(uids, cgs, strict=True))
        self.next_sub = 0
        self.licenses: dict[str, str] = slot.get("licenses", {})
        self.workroot = slot.get("workroot") or tempfile.mkdtemp(prefix="flywheel-sandbox-")
        os.makedirs(self.workroot, exist_ok=True)
        os.chmod(self.workroot, 0o711)  # children may enter their own directory, not list the others
        self.layers: list[str] = list(slot.get("layers", []))
        self.private_shm = bool(slot.get("private_shm"))  # /dev/shm is this worker's own tmpfs (bubblewrap)
        self.prepared: Prepared | None = None
        # A child that reported "done" and was killed, whose exit and clean-up finish off the result's path: it is
        # reaped, and its sub-slot emptied, before that sub-slot takes a new child (see run).
        self.finishing: Prepared | None = None
        self.finishing_fd: int | None = None  # its pidfd: readable once it has exited
        self.left_behind = 0  # processes such a child left in its sub-slot (killed; the worker is then recycled)
        # The channel as last parsed while the program ran (bytes, messages, error): reused for the result when
        # nothing arrived after it.
        self.parsed: tuple[bytes, list[dict[str, Any]], str | None] | None = None
        self.zygote: Zygote | None = None  # started at the end of preload: it forks every child
        self.oom_counts: dict[SlotCgroup, int] = {}  # each sub-slot's OOM-kill count after its last program
        self.pids_counts: dict[SlotCgroup, int] = {}  # each sub-slot's pids.events "max" after its last failure

    def preload(self) -> list[str]:
        for var in THREAD_VARS:
            os.environ[var] = str(max(1, self.config.solver_threads))
        capture.load_hook_modules()
        for name in self.config.preload:
            with contextlib.suppress(Exception):
                deferred.import_module(name)  # cp_model without pandas unless the flavour names it (deferred.py)
        installed = capture.install_available(preload=False)
        capture.install_import_hook()
        if seccomp.supported():
            seccomp.prepare()
        remember_sandbox_modules()
        os.environ.clear()  # whatever the imports set is gone too: children see exactly child_env
        os.environ.update(child_env(self.config, self.licenses))
        # Everything imported so far is shared with every child: freezing it keeps the children's garbage
        # collector from touching (and so copying) those pages.
        gc.collect()
        gc.freeze()
        collapse_private_memory()  # huge pages, while nothing else maps this memory (see zygote.py)
        self.zygote = Zygote(self)
        return installed

    def prepare(self) -> None:
        """Ask the zygote for the next child now (it forks and locks down while this worker goes on), so that it is
        waiting when the next program arrives."""
        if self.prepared is not None:
            return
        assert self.zygote is not None, "preload() starts the zygote"
        sub = self.next_sub
        uid, cgroup = self.subslots[sub]
        self.next_sub = (self.next_sub + 1) % len(self.subslots)
        workdir = tempfile.mkdtemp(dir=self.workroot)  # mode 0700
        if uid is not None:
            os.chown(workdir, uid, uid)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        chan_r, chan_w = os.pipe()
        prog_r, prog_w = os.pipe()
        key = os.urandom(32)
        theirs = [out_w, err_w, chan_w, prog_r]
        try:
            self.zygote.request(workdir, key, sub, theirs)
        finally:
            for fd in theirs:
                os.close(fd)
        self.prepared = Prepared(workdir, out_r, err_r, chan_r, prog_w, key, cgroup)

    def _forked(self, p: Prepared) -> None:
        """Learn the pid of the child asked for in ``p`` (the zygote answers requests in order)."""
        if p.pid == 0:
            assert self.zygote is not None
            reply = self.zygote.next_forked()
            p.pid, p.pidfd = int(reply["forked"]), int(reply["pidfd"])
            p.forked_at, p.fork_s = float(reply["t"]), float(reply["fork_s"])

    def _reap(self, pid: int) -> tuple[int, float, int]:
        """Wait until the zygote reaped ``pid``: (wait status, CPU seconds, peak RSS in KB)."""
        assert self.zygote is not None
        exit_ = self.zygote.reaped(pid)
        return int(exit_["status"]), float(exit_["cpu_s"]), int(exit_["max_rss_kb"])

    def finish(self) -> None:
        """Reap the child that finished early and empty its sub-slot, counting what it left behind."""
        p, self.finishing = self.finishing, None
        if self.finishing_fd is not None:
            os.close(self.finishing_fd)
            self.finishing_fd = None
        if p is None:
            return
        self._reap(p.pid)
        left = self._kill_rest(p.pid, p.cgroup)
        if left and p.cgroup:
            self.oom_counts.pop(p.cgroup, None)  # its leftovers may have been OOM-killed: read the count afresh
        self.left_behind += left
        self.clear(p.workdir)

    def clear(self, workdir: str) -> None:
        """Remove what a finished program left on disk: its working directory and, where /dev/shm is this
        worker's private tmpfs, everything in it (POSIX semaphores and shared memory, which a later program
        running as the same uid could otherwise open). Its processes are gone by now."""
        shutil.rmtree(workdir, ignore_errors=True)
        if self.private_shm:
            with contextlib.suppress(OSError), os.scandir("/dev/shm") as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        shutil.rmtree(entry.path, ignore_errors=True)
                    else:
                        with contextlib.suppress(OSError):
                            os.unlink(entry.path)

    def discard(self) -> None:
        """Kill the waiting child (worker shutdown)."""
        self.finish()
        p, self.prepared = self.prepared, None
        if p is None:
            return
        self._forked(p)
        with contextlib.suppress(OSError):
            os.kill(p.pid, signal.SIGKILL)
        self._reap(p.pid)
        for fd in (p.out_r, p.err_r, p.chan_r, p.prog_w, p.pidfd):
            with contextlib.suppress(OSError):
                os.close(fd)
        shutil.rmtree(p.workdir, ignore_errors=True)

    def run(self, payload: bytes) -> tuple[dict[str, Any], bool]:
        """Run one program (``payload``: its JSON message, forwarded to the child unchanged, never parsed here);
        returns the fields of its ``Execution`` but the program id (the parent knows it) and whether the worker
        saw an anomaly (then it is recycled)."""
        self.prepare()
        p, self.prepared = self.prepared, None
        assert p is not None
        self._forked(p)
        # The previous program's child is reaped and what it left (its working directory, /dev/shm) removed
        # before this program's code is sent: emptied afterwards, while this program ran, a file the previous
        # program left in /dev/shm was still there for this one to read.
        self.finish()
        oom_before = self._oom_seen(p.cgroup)
        start = time.monotonic()
        try:
            write_frame(p.prog_w, payload)
        except OSError:
            pass  # the child died during set-up: supervision reports it (no "ready" -> sandbox_error)
        with contextlib.suppress(OSError):
            os.close(p.prog_w)
        # The next child is forked and locked down while this program runs: the next program finds it ready, and
        # this program's result is not held up by a fork.
        self.prepare()
        try:
            execution, anomaly = self._supervise(p, start, oom_before)
            return execution, anomaly or self.left_behind > 0
        finally:
            for fd in (p.out_r, p.err_r, p.chan_r):
                with contextlib.suppress(OSError):
                    os.close(fd)
            if self.finishing is not p:
                self.clear(p.workdir)

    def _oom_seen(self, cgroup: SlotCgroup | None) -> int:
        """The sub-slot's OOM-kill count as of its last program (read once per program, after it: a sub-slot runs
        one program at a time, so the count cannot move in between but through that program's leftovers, after
        which ``finish`` reads it again)."""
        if cgroup is None:
            return 0
        if cgroup not in self.oom_counts:
            self.oom_counts[cgroup] = cgroup.oom_kills()
        return self.oom_counts[cgroup]

    def _supervise(self, prepared: Prepared, start: float, oom_before: int) -> tuple[dict[str, Any], bool]:
        cfg = self.config
        pid, out_r, err_r, chan_r, key = prepared.pid, prepared.out_r, prepared.err_r, prepared.chan_r, prepared.key
        buffers = {out_r: bytearray(), err_r: bytearray(), chan_r: bytearray()}
        totals = {out_r: 0, err_r: 0}
        sel = select.epoll()  # bare: selectors' keys and maps cost more than the rest of this loop
        for fd in buffers:
            os.set_blocking(fd, False)
            sel.register(fd, select.EPOLLIN)
        pidfd, prepared.pidfd = prepared.pidfd, -1  # closed below
        sel.register(pidfd, select.EPOLLIN)
        exited: tuple[int, float, int] | None = None  # wait status, CPU s, peak RSS KB
        deadline = start + cfg.timeout_s
        timed_out = output_flood = channel_flood = False
        open_fds = set(buffers)
        early: dict[str, Any] | None = None
        scan_from = 0
        self.parsed = None
        try:
            while exited is None and early is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    timed_out = True
                    break
                for fd, _ in sel.poll(min(remaining, 1.0)):
                    if fd == pidfd:
                        exited = self._reap(pid)
                        break
                    if self._read_into(fd, buffers, totals, sel, open_fds, chan_r) and fd == chan_r:
                        if buffers[chan_r].find(DONE_MARK, scan_from) >= 0:
                            early = self._finished_alone(prepared, bytes(buffers[chan_r]))
                        scan_from = max(0, len(buffers[chan_r]) - len(DONE_MARK))
                if sum(totals.values()) > cfg.output_limit_bytes:
                    output_flood = True
                    break
                if len(buffers[chan_r]) > CHANNEL_CAP:
                    channel_flood = True
                    break
            if early is not None and exited is None and not output_flood and not channel_flood:
                # The program said, over the authenticated channel, that it finished, and its sub-slot holds no
                # other process: it is killed (it was only going to _exit) and its result goes back now; its exit
                # (page-table teardown) and reaping finish off the critical path, before the sub-slot is reused.
                # (When its exit was seen in the same wake-up, it is reaped already: the full path below.)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                for fd in list(open_fds):  # everything written before "done" is in the pipes
                    while fd in open_fds and self._read_into(fd, buffers, totals, sel, open_fds, chan_r):
                        pass
                self.finishing, self.finishing_fd = prepared, os.dup(pidfd)
                reaped_at = time.monotonic()
                leftovers = 0
            else:
                early = None
                if exited is None:
                    self._kill(pid, prepared.cgroup)
                    exited = self._reap(pid)
                reaped_at = time.monotonic()
                # Descendants may still hold the pipes (a daemonised grandchild): kill the whole slot, then drain.
                leftovers = self._kill_rest(pid, prepared.cgroup)
                drain_until = time.monotonic() + 0.5
                while open_fds and time.monotonic() < drain_until:
                    for fd, _ in sel.poll(0.05):
                        if fd != pidfd:
                            self._read_into(fd, buffers, totals, sel, open_fds, chan_r)
        finally:
            sel.close()
            os.close(pidfd)
        wall = time.monotonic() - start
        if exited is not None:
            wstatus, cpu_s, max_rss_kb = exited
            term_signal = os.WTERMSIG(wstatus) if os.WIFSIGNALED(wstatus) else None
            exit_code = os.WEXITSTATUS(wstatus) if os.WIFEXITED(wstatus) else None
        else:  # finished early: it was about to _exit(0); its CPU and peak memory as the child measured them
            assert early is not None
            term_signal, exit_code = None, 0
            cpu_s, max_rss_kb = float(early.get("cpu_s") or 0.0), int(early.get("max_rss_kb") or 0)
        channel = bytes(buffers[chan_r])
        if self.parsed is not None and self.parsed[0] == channel:  # nothing arrived after "done": parsed already
            messages, channel_error = self.parsed[1], self.parsed[2]
        else:
            messages, channel_error = parse_frames(channel, key)
        self.parsed = None
        if channel_flood:
            channel_error = "result channel flooded"
        oom = 0
        if prepared.cgroup:
            self.oom_counts[prepared.cgroup] = prepared.cgroup.oom_kills()
            oom = self.oom_counts[prepared.cgroup] - oom_before
        done = next((m for m in messages if m.get("type") == "done"), {})
        pids_hits = 0
        if prepared.cgroup and done.get("outcome") in (None, "exception", "exit"):
            # Only for a program that failed (no cost on success): forks its cgroup's pids.max refused since the
            # sub-slot's last failed program (a fresh cgroup starts at 0).
            total = prepared.cgroup.pids_max_hits()
            pids_hits = max(0, total - self.pids_counts.get(prepared.cgroup, 0))
            self.pids_counts[prepared.cgroup] = total
        obs = Observed(messages=messages, channel_error=channel_error, exit_code=exit_code, term_signal=term_signal,
                       timed_out=timed_out, output_flood=output_flood, oom_kills=oom,
                       cpu_s=cpu_s, cpu_limit=cfg.cpu_limit, leftovers=leftovers, models_expected=cfg.capture_mps,
                       pids_max_hits=pids_hits)
        ready = next((m for m in messages if m.get("type") == "ready"), {})
        layers = self.layers + (["seccomp"] if ready.get("seccomp") else [])
        # Where the time went (CLOCK_MONOTONIC is shared by the worker and its child): fork, child set-up until
        # ready, the program (incl. prep -- files, parse, compile -- and capture), exit until reaped, and the
        # worker's bookkeeping after that.
        # fork_s and setup_s happened before the program arrived (the child was prepared ahead); wall_s starts at
        # the hand-off.
        phases = {"fork_s": prepared.fork_s}
        if "t" in ready:
            phases["setup_s"] = ready["t"] - prepared.forked_at
            phases["waited_s"] = ready["t"] - start  # > 0: the program waited for its child's lock-down
            if "t" in done:
                phases["program_s"] = done["t"] - max(ready["t"], start)
                phases["exit_s"] = reaped_at - done["t"]
        for key in ("prep_s", "capture_s"):
            if isinstance(done.get(key), float):
                phases[key] = done[key]
        phases["after_s"] = time.monotonic() - reaped_at
        phases = {k: round(max(v, 0.0), 5) for k, v in phases.items()}
        cap = cfg.output_cap_bytes
        out, err = bytes(buffers[out_r]), bytes(buffers[err_r])
        # Plain fields and what was observed: the parent classifies (checking each captured solve against its
        # model, with HiGHS and numpy) and validates the ``Execution``. Doing that here would load and touch, and
        # so copy, pages shared with the next child.
        execution = {
            "stdout": out[:cap].decode("utf-8", "replace"), "stderr": err[:cap].decode("utf-8", "replace"),
            "stdout_truncated": totals[out_r] > cap, "stderr_truncated": totals[err_r] > cap,
            "wall_s": round(wall, 4), "cpu_s": round(cpu_s, 4), "max_rss_mb": round(max_rss_kb / 1024.0, 2),
            "isolation": "+".join(layers), "returned": done.get("returned"),
            "exec_s": round(float(done.get("exec_s") or 0.0), 4), "phases": phases,
            # shallow: the messages were just parsed, nothing shares them (asdict's deep copy cost ~1 ms)
            "observed": {f.name: getattr(obs, f.name) for f in dataclasses.fields(obs)},
        }
        # A killed child (timeout, flood, OOM) leaves the worker as it was: fork isolates it. What does not:
        # processes that escaped the child's group (and, decided by the parent, tampering or a set-up failure).
        return execution, leftovers > 0

    def _finished_alone(self, prepared: Prepared, channel: bytes) -> dict[str, Any] | None:
        """The child's authenticated "done" message, if the channel holds one (and nothing unauthenticated) and the
        child's cgroup holds no other process; else None (the full kill-and-reap path decides)."""
        if prepared.cgroup is None:
            return None
        messages, error = parse_frames(channel, prepared.key)
        self.parsed = (channel, messages, error)
        if error is not None or not messages or messages[-1].get("type") != "done":
            return None
        if set(prepared.cgroup.pids()) - {prepared.pid}:
            return None
        return messages[-1]

    def _read_into(self, fd: int, buffers: dict[int, bytearray], totals: dict[int, int], sel: select.epoll,
                   open_fds: set[int], chan_r: int) -> bool:
        try:
            data = os.read(fd, 1 << 16)
        except BlockingIOError:
            return False
        except OSError:
            data = b""
        if not data:
            with contextlib.suppress(OSError, ValueError):
                sel.unregister(fd)
            open_fds.discard(fd)
            return False
        if fd == chan_r:
            buffers[fd] += data
        else:
            totals[fd] += len(data)
            keep = self.config.output_cap_bytes + 1 - len(buffers[fd])
            if keep > 0:
                buffers[fd] += data[:keep]
        return True

    def _kill(self, pid: int, cgroup: SlotCgroup | None) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        if cgroup:
            cgroup.kill_all()

    def _kill_rest(self, pid: int, cgroup: SlotCgroup | None) -> int:
        """Kill whatever the program left behind (its group, its cgroup); returns how many there were. Orphans are
        reaped by the sandbox's init (bwrap) or the host's, never by this worker, which waits for its own only."""
        leftovers = 0
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
            leftovers += 1
        if cgroup:
            pids = cgroup.pids()
            leftovers = max(leftovers, len(pids))
            if pids:
                cgroup.kill_all()
        return leftovers


def _unshare_net() -> bool:
    """Fallback network cut when bubblewrap is absent: a fresh network namespace for the worker (needs root)."""
    clone_newnet = 0x40000000
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.unshare(clone_newnet) == 0


def main() -> None:
    proto_in, proto_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(2, 1)  # anything printed by the libraries goes to stderr, never into the protocol
    hello = read_msg(proto_in)
    if hello is None:
        return
    config = GivenConfig(hello["config"])
    slot = hello["slot"]
    if slot.get("unshare_net") and _unshare_net():
        slot.setdefault("layers", []).append("netns")
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # a child that died early: EPIPE, handled, not a dead worker
    worker = Worker(config, slot)
    installed = worker.preload()
    if not seccomp.supported():
        worker.layers.append("no-seccomp")
    write_msg(proto_out, {"type": "ready", "hooks": installed, "pid": os.getpid(),
                          "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})
    worker.prepare()
    while True:
        if worker.finishing_fd is not None:  # idle: reap the last child as soon as it has exited
            ready, _, _ = select.select([proto_in, worker.finishing_fd], [], [])
            if proto_in not in ready:
                worker.finish()
                continue
        payload = read_frame(proto_in)
        if payload is None:
            break
        execution, anomaly = worker.run(payload)
        write_msg(proto_out, {"type": "result", "execution": execution, "anomaly": anomaly})
        if anomaly:  # an anomalous worker is about to be replaced: no child for it
            worker.discard()
    worker.discard()
    if worker.zygote is not None:
        worker.zygote.close()


if __name__ == "__main__":
    main()
