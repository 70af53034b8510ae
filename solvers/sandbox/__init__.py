"""The solver sandbox: run untrusted OR programs in isolation and capture what their solver calls really did.

    from solvers.sandbox import Program, SandboxConfig, run_program, run_batch

``run_program`` and ``run_batch`` share warm worker pools (one per config and size, closed at exit). Each program
runs in a fresh forked child, locked down (bubblewrap namespaces where available, unprivileged uid, seccomp,
rlimits, cgroup caps, scrubbed environment) and its solve calls are captured by instrumentation, never by reading
its output. See ``pool.py`` (parent side), ``worker.py`` / ``child.py`` (the two sides of one program) and
``capture/`` (one module per solver API).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

from solvers.records import Execution
from solvers.sandbox.pool import Pool, close_pools, shared_pool
from solvers.sandbox.program import Program, SandboxConfig, preload_for

__all__ = ["Program", "SandboxConfig", "Pool", "run_program", "run_batch", "close_pools", "default_workers",
           "preload_for"]


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def run_program(program: Program, config: SandboxConfig | None = None) -> Execution:
    """Run one program; never raises for anything the program does (that is in ``Execution.status``)."""
    return shared_pool(config or SandboxConfig(), 1).run(program)


def run_batch(programs: Iterable[Program], config: SandboxConfig | None = None, workers: int | None = None,
              progress: bool = False) -> Iterator[Execution]:
    """Run programs on ``workers`` warm workers (default: the cores); yields executions in input order."""
    pool = shared_pool(config or SandboxConfig(), workers or default_workers())
    if not progress:
        yield from pool.map(programs)
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    try:
        total = len(programs)  # type: ignore[arg-type]
    except TypeError:
        total = None
    with Progress(TextColumn("sandbox"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  transient=False) as bar:
        task = bar.add_task("run", total=total)
        yield from pool.map(programs, progress=lambda _e: bar.advance(task))
