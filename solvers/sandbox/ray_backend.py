"""The Ray backend: the local pool's batch interface, fanned out across a Ray cluster (optional extra ``ray``).

Ray only moves programs and executions. Each Ray actor (one CPU) owns a one-slot warm pool on its node
(``solvers.sandbox.pool``), so every program still runs in that node's isolated sandbox: bubblewrap namespaces,
unprivileged uid, seccomp, rlimits, cgroup caps, scrubbed environment, captured solve calls. Every node therefore
needs this package installed in the same interpreter as the Ray workers (and, for full isolation, bwrap and root).

Selected by ``SandboxConfig(backend="ray", ray_address=...)``; ``solvers.sandbox.run_batch`` dispatches here.
Executions come back in input order. ``sandbox_error`` is retried at two levels: the node's pool retries a broken
worker locally (``config.retries``), and this driver re-sends a program whose actor died or whose node reported
``sandbox_error`` to another actor (a fresh one in the dead actor's place), again up to ``config.retries`` times.
"""

from __future__ import annotations

import atexit
import functools
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from solvers.errors import FlywheelError, SandboxError
from solvers.records import ExecStatus, Execution
from solvers.sandbox.program import Program, SandboxConfig

IN_FLIGHT_PER_ACTOR = 2  # one running, one queued on the actor: no idle gap between programs
LOOKAHEAD_PER_ACTOR = 4  # results buffered for in-order output, as the local pool's look-ahead
ACTOR_START_TIMEOUT_S = 180.0  # as the local pool's worker start: a loaded node may take a while


def require_ray() -> Any:
    """The ``ray`` module, or a one-line error naming the extra that provides it."""
    try:
        import ray
    except ImportError as exc:
        # No square brackets in the message: the CLI prints it through Rich, which would read [ray] as markup.
        raise SandboxError("the ray backend needs Ray, which is not installed: pip install ray (this project's "
                           "optional extra 'ray')", culprit="sandbox.backend=ray") from exc
    return ray


@functools.lru_cache(maxsize=8)
def _parse_config(config_json: str) -> SandboxConfig:
    return SandboxConfig.model_validate_json(config_json)


class _NodeSandbox:
    """Ray actor body: one warm pool slot on this node per config (the local pool's own cache: at most two live,
    closed at process exit); runs one program per call, JSON in, JSON out. The config travels with each call, so
    one set of actors serves every config and a full cluster never waits for a second set."""

    def run(self, config_json: str, program: dict[str, Any]) -> dict[str, Any]:
        from solvers.sandbox.pool import shared_pool

        return shared_pool(_parse_config(config_json), 1).run(Program(**program)).model_dump(mode="json")

    def pid(self) -> int:
        return os.getpid()

    def close(self) -> None:
        from solvers.sandbox.pool import close_pools

        close_pools()


class _Actors:
    """The driver's actors (one CPU each): created once, replaced one by one when they die."""

    def __init__(self, ray: Any, size: int) -> None:
        self.ray = ray
        self.remote_cls = ray.remote(num_cpus=1)(_NodeSandbox)
        self.handles = [self.remote_cls.remote() for _ in range(size)]
        # An actor the cluster cannot place (its CPUs held by other jobs) would leave its programs pending forever:
        # wait for all of them once, and say so instead.
        try:
            ray.get([h.pid.remote() for h in self.handles], timeout=ACTOR_START_TIMEOUT_S)
        except ray.exceptions.GetTimeoutError:
            self.close()
            raise SandboxError(f"{size} Ray actors of one CPU each could not all start within "
                               f"{ACTOR_START_TIMEOUT_S:.0f} s: fewer free CPUs on the cluster?",
                               culprit="workers") from None

    def replace(self, index: int) -> None:
        self.ray.kill(self.handles[index], no_restart=True)
        self.handles[index] = self.remote_cls.remote()

    def close(self) -> None:
        # Close the node pools first (their workers and cgroups go away cleanly), then end the actors.
        try:
            self.ray.get([h.close.remote() for h in self.handles], timeout=30)
        except Exception:  # noqa: BLE001 - a dead actor has nothing left to close
            pass
        for h in self.handles:
            try:
                self.ray.kill(h, no_restart=True)
            except Exception:  # noqa: BLE001
                pass


_current: _Actors | None = None
_lock = threading.Lock()
_atexit_registered = False


def _connect(ray: Any, config: SandboxConfig) -> None:
    if not ray.is_initialized():
        # No address: join RAY_ADDRESS if set, else start a local instance with the machine's cores.
        ray.init(address=config.ray_address, include_dashboard=False, log_to_driver=False)


def cluster_cpus() -> int:
    """CPUs the connected cluster advertises: the default number of actors, as the cores are locally."""
    ray = require_ray()
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


def actors(config: SandboxConfig, workers: int | None = None) -> _Actors:
    """This process's actor set, sized ``workers`` (default and at most: the cluster's CPUs), started and ready;
    connects to Ray if needed. A different size replaces the set (two sets could not both be placed on a cluster
    that the first one fills)."""
    global _current, _atexit_registered
    ray = require_ray()
    _connect(ray, config)
    # More actors than the cluster's CPUs could never all be placed (each needs one).
    size = min(workers, cluster_cpus()) if workers else cluster_cpus()
    old = None
    with _lock:
        if _current is None or len(_current.handles) != size:
            old, _current = _current, _Actors(ray, size)
            if not _atexit_registered:
                # Registered after ray.init, so it runs before Ray's own exit-time shutdown (atexit is LIFO).
                atexit.register(close)
                _atexit_registered = True
        current = _current
    if old is not None:
        old.close()
    return current


def close() -> None:
    """End the actors this process started (their node pools close first). Call before ``ray.shutdown()``."""
    global _current
    with _lock:
        old, _current = _current, None
    if old is not None:
        old.close()


def map_programs(programs: Iterable[Program], config: SandboxConfig, workers: int | None = None,
                 progress: Callable[[Execution], None] | None = None) -> Iterator[Execution]:
    """Run ``programs`` on ``workers`` actors (default: the cluster's CPUs); yields executions in input order and
    reads the input lazily (at most ``LOOKAHEAD_PER_ACTOR`` programs per actor ahead of the output)."""
    fleet = actors(config, workers)
    ray = fleet.ray
    config_json = config.model_copy(update={"backend": "local", "ray_address": None}).model_dump_json()
    from ray.exceptions import RayError, RayTaskError

    size = len(fleet.handles)
    it = enumerate(programs)
    exhausted = False
    next_yield = 0
    taken = 0
    results: dict[int, Execution] = {}
    load = [0] * size  # calls in flight on each actor slot's current actor
    generation = [0] * size  # bumped when a slot's actor is replaced: late failures of the old one are ignored
    # ref -> (index, program, actor slot, its generation, attempts so far, slots already tried)
    inflight: dict[Any, tuple[int, Program, int, int, int, frozenset[int]]] = {}

    def submit(idx: int, program: Program, attempt: int, tried: frozenset[int]) -> None:
        fresh = [a for a in range(size) if a not in tried] or list(range(size))
        a = min(fresh, key=lambda i: load[i])
        load[a] += 1
        ref = fleet.handles[a].run.remote(config_json, program.model_dump(mode="json"))
        inflight[ref] = (idx, program, a, generation[a], attempt, tried | {a})

    while True:
        while (not exhausted and len(inflight) < size * IN_FLIGHT_PER_ACTOR
               and taken - next_yield < size * LOOKAHEAD_PER_ACTOR):
            try:
                idx, program = next(it)
            except StopIteration:
                exhausted = True
                break
            taken += 1
            submit(idx, program, 0, frozenset())
        if next_yield in results:
            execution = results.pop(next_yield)
            next_yield += 1
            if progress is not None:
                progress(execution)
            yield execution
            continue
        if not inflight:
            return
        ready, _ = ray.wait(list(inflight), num_returns=1)
        for ref in ready:
            idx, program, a, gen, attempt, tried = inflight.pop(ref)
            if gen == generation[a]:
                load[a] -= 1
            try:
                execution = Execution(**ray.get(ref))
            except RayTaskError as exc:
                if isinstance(exc.cause, FlywheelError):
                    # A config the node cannot honour (isolation="bwrap" without bubblewrap): raised to the caller
                    # as the local pool raises it, not retried.
                    raise exc.cause from None
                # Any other exception of the node's sandbox is infrastructure: sandbox_error, retried elsewhere.
                execution = Execution(program_id=program.program_id, status=ExecStatus.SANDBOX_ERROR,
                                      error=f"node sandbox raised {type(exc.cause).__name__}: {exc.cause}")
            except RayError as exc:  # the actor (or its node) died: infrastructure, never the program's fault
                if gen == generation[a]:  # the first failure of this actor replaces it; later ones only retry
                    fleet.replace(a)
                    generation[a] += 1
                    load[a] = 0
                execution = Execution(program_id=program.program_id, status=ExecStatus.SANDBOX_ERROR,
                                      error=f"ray actor failed: {type(exc).__name__}")
            if execution.status == ExecStatus.SANDBOX_ERROR and attempt < config.retries:
                submit(idx, program, attempt + 1, tried)
                continue
            results[idx] = execution
