"""HiGHS in the parent: one quiet instance per thread, and MPS text read through a private scratch file (HiGHS reads
MPS from files only). Used by the linear check (models the pure-Python reader leaves) and the no-solution re-solve."""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from typing import Any

_local = threading.local()
_scratch: list[str] = []


def _highs() -> Any:
    """One quiet Highs instance per thread (the parent classifies on each worker's feeder thread), or None."""
    try:
        import highspy
    except ImportError:
        return None
    h = getattr(_local, "highs", None)
    if h is None:
        from solvers.stdout import fd1_redirected

        with fd1_redirected():  # the first Highs() of a process prints a banner; this runs in the caller's process
            h = _local.highs = highspy.Highs()
        h.setOptionValue("output_flag", False)
    return h


def _load(h: Any, mps: str) -> bool:
    """Read ``mps`` into ``h`` (through a private scratch file: HiGHS reads MPS from files only)."""
    import highspy

    if not _scratch:
        _scratch.append(tempfile.mkdtemp(prefix="flywheel-verify-"))  # private (0700), made once per process
    path = os.path.join(_scratch[0], f"{threading.get_ident()}.mps")
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(mps)
        h.clearModel()
        h.resetOptions()
        h.setOptionValue("output_flag", False)
        # HiGHS's thread pool is global to the process and fixed by the first run(): a run asking for another size
        # fails ("Not Set"). Every HiGHS run in the project uses one thread (ground truth, contracts), so this one too.
        h.setOptionValue("threads", 1)
        return h.readModel(path) != highspy.HighsStatus.kError
    except Exception:  # a model HiGHS cannot take: unverified, not tampered
        return False
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _read(mps: str) -> Any:
    """The model as a HiGHS ``HighsLp``, or None if HiGHS cannot read it or it has a quadratic objective (the linear
    check would be wrong)."""
    h = _highs()
    if h is None or not _load(h, mps):
        return None
    try:
        model = h.getModel()
        if int(model.hessian_.dim_) > 0:
            return None
        return model.lp_
    except Exception:
        return None

