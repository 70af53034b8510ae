"""Repairs run where the answer does not exist: a warm child interpreter (``python -m contracts.blind``; not forked, so nothing of the
parent's memory, and no ``Sample`` with its ground truth, is copied in) receives each sample's ``BlindSample`` as
JSON plus the repair functions (cloudpickle, by value for functions no child can import: test locals, user contract
files) and returns each repair's ``Repair`` as JSON. Frame walks (``sys._getframe``), ``gc.get_objects()`` and
``inspect.stack()`` in the child see only the blind view.

Why repairs and not checks: a repair rewrites the program that is stored and trained on, so reading the answer
would leak it into the data; a check only returns a verdict, and the answer checks need the ground truth.

Cost: one child per parent process, started on first use and kept warm (``shutdown()`` ends it); one message per
chunk of samples per round, each task running the whole repair chain of its samples in order.
"""

from __future__ import annotations

import atexit
import os
import pickle
import struct
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Sequence

import cloudpickle

from contracts.api import Contract, Repair
from contracts.sample import BlindSample
from solvers.errors import FlywheelError

# (Repair as JSON or None, seconds, error text or None), one per repair, in order.
RepairOutcome = tuple[str | None, float, str | None]

CHUNK = 64  # samples per message: amortises the pickled functions and the round trip


class _Worker:
    """One warm ``python -m contracts.blind`` child (a fresh interpreter: no fork of the parent's memory, and no
    re-import of the caller's ``__main__`` as multiprocessing's spawn would do), length-prefixed pickles over its
    stdin/stdout; a lock serialises callers on threads."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "contracts.blind"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE)
        self.lock = threading.Lock()

    def call(self, payload: bytes) -> bytes:
        with self.lock:
            assert self.proc.stdin is not None and self.proc.stdout is not None
            self.proc.stdin.write(struct.pack("<Q", len(payload)) + payload)
            self.proc.stdin.flush()
            head = self.proc.stdout.read(8)
            if len(head) < 8:
                raise FlywheelError("the blind repair process died", culprit="contracts.blind worker")
            (n,) = struct.unpack("<Q", head)
            return self.proc.stdout.read(n)

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=10)


_WORKER: _Worker | None = None
_START = threading.Lock()


def _worker() -> _Worker:
    global _WORKER
    with _START:
        if _WORKER is None or _WORKER.proc.poll() is not None:
            _WORKER = _Worker()
        return _WORKER


def shutdown() -> None:
    global _WORKER
    if _WORKER is not None:
        _WORKER.close()
        _WORKER = None


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
    w = _worker()
    results: list[list[RepairOutcome]] = []
    for part in chunks:
        results.extend(pickle.loads(w.call(pickle.dumps((blob, part)))))
    return [[(Repair.model_validate_json(r) if r else None, s, e) for r, s, e in rows] for rows in results]




def _serve() -> None:
    """The child's loop: read (functions, blind samples), answer the outcomes; prints from repairs go to stderr."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    inp = sys.stdin.buffer
    while True:
        head = inp.read(8)
        if len(head) < 8:
            return
        (n,) = struct.unpack("<Q", head)
        blob, raws = pickle.loads(inp.read(n))
        reply = pickle.dumps(_run_chain(blob, raws))
        out.write(struct.pack("<Q", len(reply)) + reply)
        out.flush()


if __name__ == "__main__":
    _serve()
