"""The generate stage fanned out over Ray (``[round] backend = "ray"``): the same worker function as the local
fork pool (``generate._generate_item``), so the same tasks give the same records; Ray only moves tasks and rows.

Tasks travel in chunks (a problem takes tens of milliseconds: one Ray call per problem would cost more than the
work), a bounded number of chunks is in flight per cluster CPU, and results come back in task order, as the local
pool's ``map`` returns them. Needs the optional extra ``ray`` (``make install-test`` installs it).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any

from solvers.sandbox.ray_backend import require_ray

CHUNK = 16  # problems per Ray call
IN_FLIGHT_PER_CPU = 2  # one running, one queued: no idle gap between chunks


def _generate_chunk(tasks: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    """Ray task body: the local pool's worker over a chunk of tasks (the same imports, the same rows)."""
    from flywheel.round.generate import _generate_item, _quiet_worker

    _quiet_worker()  # solver banners would otherwise go to the Ray worker's log on every call
    return [_generate_item(t) for t in tasks]


def map_items(tasks: Iterable[tuple[Any, ...]], address: str | None = None,
              cpus: int | None = None) -> Iterator[dict[str, Any]]:
    """``_generate_item`` over ``tasks`` on a Ray cluster (joined at ``address``, RAY_ADDRESS or a local instance),
    yielding results in task order."""
    ray = require_ray()
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
    remote = ray.remote(num_cpus=1)(_generate_chunk)
    cpus = cpus or max(1, int(ray.cluster_resources().get("CPU", 1)))
    items = list(tasks)
    chunks = [items[i:i + CHUNK] for i in range(0, len(items), CHUNK)]
    pending: deque[Any] = deque()
    next_chunk = 0
    while next_chunk < len(chunks) or pending:
        while next_chunk < len(chunks) and len(pending) < IN_FLIGHT_PER_CPU * cpus:
            pending.append(remote.remote(chunks[next_chunk]))
            next_chunk += 1
        yield from ray.get(pending.popleft())
