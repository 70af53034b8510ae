"""File descriptor 1 pointed elsewhere for a block: the one way to keep solver libraries' own prints off stdout.

Solver libraries write straight to file descriptor 1 from C (HiGHS prints a banner when the first ``Highs()`` of a
process is built; some print a line when they export a model), where ``contextlib.redirect_stdout`` cannot reach.
Every stage that must keep stdout clean (ground truth, the sandbox's capture, ``run-round --format json``, pool
workers) needs the same dup/dup2 dance; it lives here, below all of them.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def fd1_redirected(target: int | None = None) -> Iterator[None]:
    """Inside the block, fd 1 writes go to ``target`` (an open file descriptor; ``/dev/null`` when None).

    Python's own ``sys.stdout`` buffer is flushed before the switch, so earlier prints keep their place; prints made
    inside the block and still buffered when it ends reach the original stdout (flush inside the block to send them
    to ``target``)."""
    with contextlib.suppress(Exception):  # a closed or replaced sys.stdout must not stop the redirect
        sys.stdout.flush()
    saved = os.dup(1)
    fd = os.open(os.devnull, os.O_WRONLY) if target is None else target
    try:
        os.dup2(fd, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        if target is None:
            os.close(fd)
