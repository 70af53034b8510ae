"""What the sandbox is given: a ``Program`` and a ``SandboxConfig``. Both are frozen and JSON-serialisable, so they
cross the process boundary to the warm workers unchanged."""

from __future__ import annotations

import ast
import os
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from solvers.sandbox.given import cpu_limit

# Solver libraries a warm worker imports once, so that a program pays nothing for them (the fork shares them).
# pandas is listed so that a program that imports it gets a worker that preloaded it; cp_model's worker defers it
# otherwise (deferred.py). A library's worker only starts for programs that import it (flavour.py), so the rarer
# ones cost nothing until used; preloaded, a cvxpy LP runs in 0.027 s on a warm worker instead of 0.64 s, a scipy
# ``linprog`` in 0.009 s instead of 0.25 s, a pyscipopt model in 0.007 s instead of 0.054 s (``bench/preload.py``).
DEFAULT_PRELOAD = ("numpy", "pandas", "gurobipy", "pyomo.environ", "ortools.linear_solver.pywraplp",
                   "ortools.sat.python.cp_model", "coptpy", "highspy", "docplex.mp.model", "pulp", "cvxpy",
                   "scipy.optimize", "pyscipopt")
# Libraries few programs use: not warmed ahead of demand by the service (``service.default_warm``).
ON_DEMAND = ("cvxpy", "scipy.optimize", "pyscipopt")


class Program(BaseModel):
    """One program to run. ``entry`` names a function to call after the module body ran (function-style programs,
    e.g. ComplexOR's ``solve(...)``); ``args`` are its inputs (list -> positional, dict -> keyword, anything else
    -> one positional argument). ``files`` (relative name -> text) are written into the working directory."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    program_id: str
    code: str
    entry: str | None = None
    args: Any = None
    files: dict[str, str] = Field(default_factory=dict)

    @field_validator("files")
    @classmethod
    def _relative_names(cls, files: dict[str, str]) -> dict[str, str]:
        for name in files:
            norm = os.path.normpath(name)
            if os.path.isabs(name) or norm.startswith("..") or norm in (".", ""):
                raise ValueError(f"data file name {name!r} must be a relative path inside the working directory")
        return files


# The one default of each limit that a round's [sandbox] section (flywheel/config.py), `flywheel sandbox run` and a
# bare SandboxConfig() share; `flywheel config show` prints them.
DEFAULT_TIMEOUT_S = 20.0
DEFAULT_MEMORY_MB = 2048


class SandboxConfig(BaseModel):
    """Limits and isolation of every program. Defaults suit generated OR programs on a small machine."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    timeout_s: float = DEFAULT_TIMEOUT_S  # wall clock per program
    cpu_s: int | None = None  # RLIMIT_CPU; default: the wall timeout rounded up
    memory_mb: int = DEFAULT_MEMORY_MB  # cgroup memory cap (RLIMIT_DATA in the fallback)
    max_pids: int = 64  # cgroup pids cap and RLIMIT_NPROC (after the uid drop)
    max_open_files: int = 256
    max_file_mb: int = 64  # RLIMIT_FSIZE
    output_cap_bytes: int = 64 * 1024  # stdout / stderr kept per stream; beyond it: truncated flag
    output_limit_bytes: int = 16 * 1024 * 1024  # total output beyond which the program is killed (output_limit)
    isolation: Literal["auto", "bwrap", "process"] = "auto"  # auto: bwrap when it works, else the process fallback
    solver_threads: int = 1  # threads of BLAS / OpenMP, Gurobi (gurobi.env) and CP-SAT; 0: solvers' own defaults
    capture_mps: bool = True
    max_solution_values: int = 100_000
    license_files: dict[str, str] = Field(default_factory=dict)  # env var -> host licence file, mounted read-only
    extra_env: dict[str, str] = Field(default_factory=dict)
    recycle_after: int = 500  # a worker is replaced after this many programs (or any anomaly)
    retries: int = 2  # sandbox_error (infrastructure) retries
    preload: tuple[str, ...] = DEFAULT_PRELOAD
    uid_base: int = 100_000  # programs run as uid_base + a block per (pool process, pool) + slot (root only; pool.slot_uid)
    backend: Literal["local", "ray", "server"] = "local"  # ray: fan out across a Ray cluster (extra `ray`), see
    # ray_backend.py; server: a running `flywheel sandbox serve` at server_url (client.py; its limits cap ours)
    ray_address: str | None = None  # cluster to join (ray.init address); None: RAY_ADDRESS or a local instance
    server_url: str | None = None  # backend "server": the service's base URL (token: FLYWHEEL_SANDBOX_TOKEN)

    @property
    def cpu_limit(self) -> int:
        return cpu_limit(self.cpu_s, self.timeout_s)


def preload_for(codes: Iterable[str]) -> tuple[str, ...]:
    """The default preload narrowed to the libraries these programs import: a one-off run (the CLI) then pays
    only for what it uses at worker start. Unparseable code contributes nothing (it fails before importing)."""
    roots: set[str] = set()
    for code in codes:
        try:
            tree = ast.parse(code)
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                roots.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                roots.add(node.module.split(".")[0])
    return tuple(m for m in DEFAULT_PRELOAD if m.split(".")[0] in roots)
