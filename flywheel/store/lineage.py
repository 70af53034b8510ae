"""The environment a round ran in: Python, package and solver versions, threads, tolerances.

Stored once per round (``rounds.env_json``) and referenced from every attempt's ``lineage_json``, so any accepted
sample can be traced to the exact software that produced and verified it.
"""

from __future__ import annotations

import os
import platform
import sys
from functools import cache
from typing import Any

from solvers.versions import package_version

# Distributions whose versions change what a round produces (generators, solvers, store, contracts).
PACKAGES = ("or-flywheel", "numpy", "pydantic", "duckdb", "pyarrow", "highspy", "gurobipy", "ortools", "pyomo",
            "coptpy", "docplex", "cplex", "pulp", "pyscipopt", "cvxpy", "scipy", "datasketch", "torch", "transformers")


@cache
def environment() -> dict[str, Any]:
    """A JSON-able description of this process's software and machine (cached: it does not change mid-run)."""
    env: dict[str, Any] = {
        "python": platform.python_version(),
        "implementation": sys.implementation.name,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "packages": {p: package_version(p) for p in PACKAGES},
    }
    env["tolerances"] = tolerances()
    env["solver_threads"] = _solver_threads()
    return env


def tolerances() -> dict[str, Any]:
    """The numeric tolerances in force: ground-truth agreement and MIP gap, contract tolerances if available."""
    from contracts import tolerance as ct
    from solvers import ground_truth as gt

    return {"ground_truth": {"rtol": gt.RTOL, "atol": gt.ATOL, "mip_gap": gt.MIP_GAP, "time_limit_s": gt.TIME_LIMIT_S},
            "contracts": {k: v for k, v in vars(ct).items() if k.isupper() and isinstance(v, int | float | str | bool)}}


def _solver_threads() -> dict[str, Any]:
    """Threads used by ground-truth solves (single-threaded by design) and by sandboxed programs."""
    from solvers.sandbox import SandboxConfig

    return {"ground_truth": 1, "sandbox": SandboxConfig().solver_threads}
