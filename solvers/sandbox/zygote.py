"""The zygote: a copy of the warm worker whose only job is to fork the program children.

Why a second process. Forking write-protects every page of the forking process, so each page the forker writes
afterwards is copied (a copy-on-write fault, ~4 us here): a worker that forked its children itself took ~450 such
faults per program just supervising (reading pipes, parsing, encoding the result), on top of what fork costs.
The zygote is forked from the worker once, after the solver imports, and then only forks: its loop touches a few
pages, and the worker, which no child shares memory with any more, supervises without faulting.

And why huge pages: fork copies one page-table entry per resident page and an exit frees them again, so a worker
holding 20-60 MB of private memory (the interpreter's heap, the solver libraries' data) paid ~0.5 us per 4 KB page
per program. The worker folds its private memory into 2 MB transparent huge pages (``MADV_COLLAPSE``, Linux 6.1+;
a no-op elsewhere) just before it forks the zygote, so that fork and exit handle one entry per 2 MB instead of 512
where that worked. A child that writes to such a page gets only that 4 KB copied (the kernel splits the huge page's
mapping first); the zygote never writes to most of its memory, so most of its huge pages stay whole.

Protocol (a ``SOCK_SEQPACKET`` socket pair, one ``struct``-packed message per packet, layouts below):
- worker -> zygote: ``REQUEST`` (sub-slot, channel key) then the working directory, with the child's four pipe
  ends attached (SCM_RIGHTS);
- zygote -> worker: ``FORKED`` (pid, when, fork seconds) in request order, with a pidfd of the child attached (made
  by its parent, so it cannot name a recycled pid), and ``EXITED`` (pid, wait status, CPU seconds, peak RSS) once
  it has reaped a child (the children are the zygote's: it owns ``wait4``).
The worker watches each child through that pidfd and kills it by pid; a zygote that dies takes its children with it
(PR_SET_PDEATHSIG), and the worker, finding the socket closed, fails its program as a sandbox error (retried).
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import gc
import os
import select
import signal
import socket
import struct
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from solvers.sandbox.child import child_main

if TYPE_CHECKING:
    from solvers.sandbox.worker import Worker

# The zygote's messages (see the protocol above): a request is REQUEST then the working directory's path.
REQUEST = struct.Struct("=B32s")  # sub-slot, channel key
FORKED = struct.Struct("=cidd")  # b"F", pid, forked at (monotonic), fork seconds; the child's pidfd attached
EXITED = struct.Struct("=ciidq")  # b"X", pid, wait status, CPU seconds, peak RSS in KB
HUGE = 2 * 2**20
MADV_HUGEPAGE, MADV_COLLAPSE = 14, 25
PR_SET_PDEATHSIG = 1
MAX_MSG = 1 << 16


class ZygoteGone(RuntimeError):
    """The zygote closed its socket (it died): the worker cannot fork programs any more."""


def _madvise() -> Any:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    return libc.madvise


def collapse_private_memory() -> list[int]:
    """Fold this process's private anonymous memory into transparent huge pages; returns the 2 MB ranges collapsed
    (none where the kernel has no MADV_COLLAPSE or THP is off). Call it before forking: the kernel declines to
    collapse pages that another process still maps (``max_ptes_shared``)."""
    madvise = _madvise()
    done: list[int] = []
    try:
        with open("/proc/self/maps") as fh:
            maps = fh.read().splitlines()
    except OSError:
        return done
    for line in maps:
        parts = line.split()
        path = parts[5] if len(parts) > 5 else ""
        if parts[1] != "rw-p" or (path and path != "[heap]"):
            continue  # only private anonymous memory (and the brk heap): file mappings are not copied by fork
        lo, hi = (int(x, 16) for x in parts[0].split("-"))
        start, end = (lo + HUGE - 1) // HUGE * HUGE, hi // HUGE * HUGE
        if end <= start:
            continue
        madvise(start, end - start, MADV_HUGEPAGE)
        for addr in range(start, end, HUGE):
            if madvise(addr, HUGE, MADV_COLLAPSE) == 0:
                done.append(addr)
    return done


def _raw_fork() -> Any:
    """libc's fork, called with the GIL held (``PyDLL``), bypassing ``os.fork``'s interpreter hooks.

    Why: ``os.fork`` runs CPython's before- and after-fork machinery (import lock, thread-state and GIL re-init,
    every ``os.register_at_fork`` callback: threading, logging, random, concurrent.futures). In a child that is a
    copy of a 20-60 MB process, each page that machinery touches is a copy-on-write fault: ~200 of them, about 1 ms
    of CPU per program, measured. Safe here, and only here: the zygote is single-threaded (a fork copies only
    the forking thread, and the zygote starts none), so no lock can be held by a thread that does not exist in the
    child, and the GIL stays with the one thread that has it. The one hook a program can observe, ``random``'s
    reseed, the child does itself (``child.reseed``)."""
    libc = ctypes.PyDLL(None, use_errno=True)
    fork = libc.fork
    fork.restype, fork.argtypes = ctypes.c_int, []

    def raw_fork() -> int:
        pid = int(fork())
        if pid < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))
        return pid

    return raw_fork


def zygote_main(worker: Worker, sock: socket.socket) -> None:
    """The zygote's loop. Never returns.

    Written to touch as few pages as it can: every page it writes after a fork is copied (the newest child still
    shares it), so messages are ``struct``-packed (json's encoder and decoder alone touched ~120 pages per program)
    and the loop waits on a bare ``epoll``."""
    fork = _raw_fork()
    with contextlib.suppress(Exception):
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # die with the worker
        ctypes.CDLL(None).prctl(15, b"flywheel-zygote", 0, 0, 0)  # PR_SET_NAME: tell it apart in ps / perf
    gc.disable()  # the loop makes no cycles; a collection would only touch (and so un-share) memory
    # Each sub-slot's cgroup.procs files, opened once: the zygote moves each child into its cgroup right after the
    # fork (a write per controller from here costs a fraction of what opening and writing them costs in the child,
    # where every page it touches is copied).
    procs = [[os.open(os.path.join(d, "cgroup.procs"), os.O_WRONLY) for d in cgroup.dirs] if cgroup else []
             for _, cgroup in worker.subslots]
    sock_fd = sock.fileno()
    poll = select.epoll()
    poll.register(sock_fd, select.EPOLLIN)
    children: dict[int, int] = {}  # pidfd -> pid
    while True:
        for fd, _ in poll.poll():
            if fd == sock_fd:
                try:
                    msg, fds, _, _ = socket.recv_fds(sock, MAX_MSG, 4)
                except OSError:
                    msg, fds = b"", []
                if len(msg) < REQUEST.size or len(fds) != 4:  # the worker is gone: so are its programs
                    for pid in children.values():
                        with contextlib.suppress(OSError):
                            os.kill(pid, signal.SIGKILL)
                    os._exit(0)
                sub, key = REQUEST.unpack_from(msg)
                _fork_child(worker, sock, poll, children, sub, key, msg[REQUEST.size:].decode(), fds, procs, fork)
            else:
                pid = children.pop(fd)
                poll.unregister(fd)
                os.close(fd)
                _, status, ru = os.wait4(pid, 0)
                sock.send(EXITED.pack(b"X", pid, status, ru.ru_utime + ru.ru_stime, ru.ru_maxrss))


def _fork_child(worker: Worker, sock: socket.socket, poll: select.epoll, children: dict[int, int], sub: int,
                key: bytes, workdir: str, fds: list[int], procs: list[list[int]], fork: Callable[[], int]) -> None:
    uid, _ = worker.subslots[sub]
    started = time.monotonic()
    pid = fork()
    if pid == 0:  # the child: never returns (child_main closes every descriptor it was not given)
        try:
            out_w, err_w, chan_w, prog_r = fds
            child_main(worker.config, workdir, out_w, err_w, chan_w, prog_r, key, uid)
        finally:
            os._exit(72)
    forked_at = time.monotonic()
    # Into its cgroup before anyone hears of it: its program is sent only after this reply. A child that cannot be
    # capped is killed (the worker then reports a sandbox error, retried).
    try:
        for fd in procs[sub]:
            os.write(fd, b"%d" % pid)
    except OSError:
        os.kill(pid, signal.SIGKILL)
    for fd in fds:
        os.close(fd)
    pidfd = os.pidfd_open(pid)
    children[pidfd] = pid
    poll.register(pidfd, select.EPOLLIN)
    theirs = os.dup(pidfd)
    try:
        socket.send_fds(sock, [FORKED.pack(b"F", pid, forked_at, forked_at - started)], [theirs])
    finally:
        os.close(theirs)


class Zygote:
    """The worker's end: start the zygote, ask for children, learn when they were reaped."""

    def __init__(self, worker: Worker) -> None:
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            try:
                self.sock.close()
                zygote_main(worker, theirs)
            finally:
                os._exit(70)
        theirs.close()
        self.pid = pid
        self.forked: collections.deque[dict[str, Any]] = collections.deque()
        self.exits: dict[int, dict[str, Any]] = {}

    def request(self, workdir: str, key: bytes, sub: int, fds: list[int]) -> None:
        try:
            socket.send_fds(self.sock, [REQUEST.pack(sub, key) + workdir.encode()], fds)
        except OSError as exc:
            raise ZygoteGone(f"sandbox zygote is gone: {exc}") from exc

    def _receive(self) -> None:
        try:
            data, fds, _, _ = socket.recv_fds(self.sock, MAX_MSG, 1)
        except OSError:
            data, fds = b"", []
        if not data:
            for fd in fds:
                os.close(fd)
            raise ZygoteGone("sandbox zygote is gone")
        if data[:1] == b"F" and len(data) == FORKED.size and fds:
            _, pid, t, fork_s = FORKED.unpack(data)
            self.forked.append({"forked": pid, "t": t, "fork_s": fork_s, "pidfd": fds[0]})
        elif data[:1] == b"X" and len(data) == EXITED.size:
            _, pid, status, cpu_s, max_rss_kb = EXITED.unpack(data)
            self.exits[pid] = {"status": status, "cpu_s": cpu_s, "max_rss_kb": max_rss_kb}
        else:
            for fd in fds:
                os.close(fd)
            raise ZygoteGone(f"sandbox zygote sent a malformed message ({len(data)} bytes)")

    def next_forked(self) -> dict[str, Any]:
        """The reply to the oldest request: ``{"forked": pid, "t", "fork_s", "pidfd"}`` (the caller owns the pidfd)."""
        while not self.forked:
            self._receive()
        return self.forked.popleft()

    def reaped(self, pid: int) -> dict[str, Any]:
        """Wait until the zygote has reaped ``pid``: ``{"status", "cpu_s", "max_rss_kb"}``."""
        while pid not in self.exits:
            self._receive()
        return self.exits.pop(pid)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)
