"""The single-writer lock of a store.

An exclusive ``flock`` on ``<store>/writer.lock``: the kernel drops it when the holder exits, however it exits
(SIGKILL included), so a crashed round never leaves a stale lock. The holder writes who it is into the file so a
refused second writer can say which process holds the store.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import time
from pathlib import Path

from solvers.errors import StoreError


class WriterLock:
    """Re-entrant within one process: nested ``acquire`` calls share the one flock."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self._depth = 0

    @property
    def held(self) -> bool:
        return self._fd is not None

    def holder(self) -> str:
        """A readable description of the current holder (from the lock file), or 'unknown'."""
        try:
            info = json.loads(self.path.read_text() or "{}")
        except (OSError, ValueError):
            return "unknown process"
        since = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(info.get("since", 0)))
        return f"pid {info.get('pid', '?')} on {info.get('host', '?')} ({info.get('command', '?')}), since {since}"

    def acquire(self) -> None:
        if self._fd is not None:
            self._depth += 1
            return
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StoreError(f"cannot create the writer lock: {exc.strerror}", culprit=str(self.path)) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise StoreError(
                f"the store is being written by another process: {self.holder()}; wait for it to finish "
                "(readers such as `flywheel sql` may still query)",
                culprit=str(self.path.parent),
            ) from None
        info = {"pid": os.getpid(), "host": socket.gethostname(), "command": " ".join(sys.argv)[:300],
                "since": time.time()}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode(), 0)
        self._fd, self._depth = fd, 1

    def release(self) -> None:
        if self._fd is None:
            return
        self._depth -= 1
        if self._depth > 0:
            return
        fd, self._fd = self._fd, None
        try:
            os.ftruncate(fd, 0)
        except OSError:
            pass
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)

    def __enter__(self) -> WriterLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
