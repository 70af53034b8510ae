"""Repairs run where the answer does not exist: a warm pool of *spawned* processes (not forked, so nothing of the
parent's memory, and no ``Sample`` with its ground truth, is copied in) receives each sample's ``BlindSample`` as
JSON plus the repair functions (cloudpickle, by value for functions no child can import: test locals, user contract
files) and returns each repair's ``Repair`` as JSON. Frame walks (``sys._getframe``), ``gc.get_objects()`` and
``inspect.stack()`` in the child see only the blind view.

Why repairs and not checks: a repair rewrites the program that is stored and trained on, so reading the answer
would leak it into the data; a check only returns a verdict, and the answer checks need the ground truth.

Cost: one pool per parent process, started on first use and kept warm (``shutdown()`` ends it); one task per chunk
of samples per round, each task running the whole repair chain of its samples in order.
"""

from __future__ import annotations

import atexit
import multiprocessing
import time
import traceback
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor

import cloudpickle

from contracts.api import Contract, Repair
from contracts.sample import BlindSample

# (Repair as JSON or None, seconds, error text or None), one per repair, in order.
RepairOutcome = tuple[str | None, float, str | None]

_POOL: ProcessPoolExecutor | None = None
WORKERS = 2  # this machine has 2 cores; repairs are cheap text rewrites
CHUNK = 64  # samples per task: amortises the pickled functions and the round trip


def _pool() -> ProcessPoolExecutor:
    global _POOL
    if _POOL is None:
        _POOL = ProcessPoolExecutor(max_workers=WORKERS, mp_context=multiprocessing.get_context("spawn"))
    return _POOL


def shutdown() -> None:
    global _POOL
    if _POOL is not None:
        _POOL.shutdown(wait=True, cancel_futures=True)
        _POOL = None


atexit.register(shutdown)


def _pack(repairs: Sequence[Contract]) -> bytes:
    """The repair functions and parameters, pickled by value where the child could not import them."""
    import sys

    for c in repairs:
        mod = sys.modules.get(getattr(c.fn, "__module__", "") or "")
        if mod is not None and not (mod.__name__.startswith(("contracts.", "flywheel.", "solvers."))):
            cloudpickle.register_pickle_by_value(mod)  # user files, test modules: the child cannot import them
    return cloudpickle.dumps([(c.name, c.fn, dict(c.params)) for c in repairs])


def _run_chain(blob: bytes, blinds: list[str]) -> list[list[RepairOutcome]]:
    """In the child: every sample's repairs in order, each seeing the code the previous one produced."""
    chain = cloudpickle.loads(blob)
    out: list[list[RepairOutcome]] = []
    for raw in blinds:
        blind = BlindSample.model_validate_json(raw)
        del raw
        rows: list[RepairOutcome] = []
        for _name, fn, params in chain:
            start = time.perf_counter()
            try:
                res = fn(blind, **params)
            except Exception as exc:  # any fault becomes a contract_error row in the parent
                tb = traceback.extract_tb(exc.__traceback__)[-1]
                rows.append((None, time.perf_counter() - start, f"{type(exc).__name__}: {exc} (line {tb.lineno})"))
                continue
            seconds = time.perf_counter() - start
            if res is not None and not isinstance(res, Repair):
                rows.append((None, seconds, f"a repair must return Repair or None, got {type(res).__name__}"))
                continue
            rows.append((res.model_dump_json() if res is not None else None, seconds, None))
            if res is not None:
                blind = blind.model_copy(update={"attempt": blind.attempt.model_copy(update={"code": res.code})})
        out.append(rows)
    return out


def run_repairs(repairs: Sequence[Contract], blinds: Sequence[BlindSample]) -> list[list[tuple[Repair | None, float,
                                                                                               str | None]]]:
    """Run ``repairs`` (in order) over each blind sample in the pool; one list of outcomes per sample."""
    if not repairs or not blinds:
        return [[] for _ in blinds]
    blob = _pack(repairs)
    raws = [b.model_dump_json() for b in blinds]
    chunks = [raws[i:i + CHUNK] for i in range(0, len(raws), CHUNK)]
    pool = _pool()
    results: list[list[RepairOutcome]] = []
    for part in pool.map(_run_chain, [blob] * len(chunks), chunks):
        results.extend(part)
    return [[(Repair.model_validate_json(r) if r else None, s, e) for r, s, e in rows] for rows in results]


