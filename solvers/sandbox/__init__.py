"""The solver sandbox: run untrusted OR programs in isolation and capture what their solver calls really did.

    from solvers.sandbox import Program, SandboxConfig, run_program, run_batch

``run_program`` and ``run_batch`` share warm worker pools (one per config and size, closed at exit). Each program
runs in a fresh forked child, locked down (bubblewrap namespaces where available, unprivileged uid, seccomp,
rlimits, cgroup caps, scrubbed environment) and its solve calls are captured by instrumentation, never by reading
its output. See ``pool.py`` (parent side), ``worker.py`` / ``child.py`` (the two sides of one program) and
``capture/`` (one module per solver API). ``SandboxConfig(backend="ray")`` fans the same batches out across a
Ray cluster (``ray_backend.py``; each node still runs every program in its own isolated pool);
``SandboxConfig(backend="server", server_url=URL)`` sends them to a running ``flywheel sandbox serve``
(``service.py``, ``client.py``).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from solvers.records import Execution
    from solvers.sandbox.pool import Pool, close_pools
    from solvers.sandbox.program import Program, SandboxConfig, preload_for

__all__ = ["Program", "SandboxConfig", "Pool", "run_program", "run_batch", "close_pools", "default_workers",
           "preload_for"]

# The parent-side names load on first use (PEP 562): a warm worker imports this package too (for ``capture``,
# ``worker``, ...), and must not load pydantic and the pool with it (see ``solvers/statuses.py``).
_LAZY = {"Pool": "solvers.sandbox.pool", "close_pools": "solvers.sandbox.pool", "shared_pool": "solvers.sandbox.pool",
         "Program": "solvers.sandbox.program", "SandboxConfig": "solvers.sandbox.program",
         "preload_for": "solvers.sandbox.program"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def run_program(program: Program, config: SandboxConfig | None = None) -> Execution:
    """Run one program; never raises for anything the program does (that is in ``Execution.status``)."""
    from solvers.sandbox.pool import shared_pool
    from solvers.sandbox.program import SandboxConfig

    config = config or SandboxConfig()
    if config.backend == "server":
        return _client(config).run(program, config.timeout_s)
    if config.backend == "ray":
        return next(_map(config, None)([program], None))
    return shared_pool(config, 1).run(program)


def _map(config: SandboxConfig, workers: int | None) -> Callable[..., Iterator[Execution]]:
    """The backend's order-preserving ``map(programs, progress)``."""
    if config.backend == "server":
        return lambda programs, progress: _client(config).map(programs, progress, config.timeout_s)
    if config.backend == "ray":
        from solvers.sandbox import ray_backend

        return lambda programs, progress: ray_backend.map_programs(programs, config, workers, progress)
    from solvers.sandbox.pool import shared_pool

    return shared_pool(config, workers or default_workers()).map


def _client(config: SandboxConfig) -> Any:
    from solvers.errors import SandboxError
    from solvers.sandbox.client import shared_client

    if not config.server_url:
        raise SandboxError("backend 'server' needs server_url (the URL of `flywheel sandbox serve`)",
                           culprit="server_url")
    return shared_client(config.server_url)


def run_batch(programs: Iterable[Program], config: SandboxConfig | None = None, workers: int | None = None,
              progress: bool = False) -> Iterator[Execution]:
    """Run programs on ``workers`` warm workers (default: the cores; with the ray backend, one per cluster CPU);
    yields executions in input order."""
    from solvers.sandbox.program import SandboxConfig

    run_map = _map(config or SandboxConfig(), workers)
    if not progress:
        yield from run_map(programs, None)
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    try:
        total = len(programs)  # type: ignore[arg-type]
    except TypeError:
        total = None
    with Progress(TextColumn("sandbox"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  transient=False) as bar:
        task = bar.add_task("run", total=total)
        yield from run_map(programs, lambda _e: bar.advance(task))
