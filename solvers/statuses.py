"""The two status enums, in a module with no dependencies.

Why apart from ``records.py``: the sandbox's warm workers and their program children import these (the capture
normalises every solver's status to ``SolveStatus``), and every module a worker imports is copied into each
program's address space by fork and torn down at its exit. ``records.py`` pulls in pydantic and builds its models'
validators (~12 MB and ~170 memory mappings), which cost each sandboxed program about a millisecond of fork and
exit for nothing. ``records.py`` re-exports both, so ``from solvers.records import ExecStatus`` keeps working.
"""

from __future__ import annotations

from enum import StrEnum


class SolveStatus(StrEnum):
    """What a solver concluded. Normalised across every solver API."""

    OPTIMAL = "optimal"
    INFEASIBLE = "infeasible"
    UNBOUNDED = "unbounded"
    INF_OR_UNBD = "inf_or_unbd"
    TIME_LIMIT_WITH_SOLUTION = "time_limit_with_solution"
    TIME_LIMIT_NO_SOLUTION = "time_limit_no_solution"
    NUMERIC = "numeric"
    INTERRUPTED = "interrupted"
    ERROR = "error"
    LICENSE_LIMIT = "license_limit"


class ExecStatus(StrEnum):
    """The failure taxonomy of one program execution. Stable: stored with every execution.

    ``sandbox_error`` is infrastructure (retried, never counted against a model). ``memory_limit``,
    ``output_limit`` (stdout/stderr beyond the limit, or a file beyond RLIMIT_FSIZE), ``process_limit`` (the
    processes/threads cap: RLIMIT_NPROC or the cgroup's ``pids.max``) and ``denied`` (a system call or the network
    refused by the sandbox: seccomp, no network namespace, read-only system) name the sandbox rule that stopped the
    program, whether or not it had solved anything yet (``solvers/sandbox/classify.py``).
    """

    OK = "ok"
    NO_CODE = "no_code"
    SYNTAX_ERROR = "syntax_error"
    IMPORT_ERROR = "import_error"
    LICENSE_LIMIT = "license_limit"
    MODEL_BUILD_ERROR = "model_build_error"
    RUNTIME_ERROR = "runtime_error"
    NO_SOLVE_CALL = "no_solve_call"
    SOLVER_INFEASIBLE = "solver_infeasible"
    SOLVER_UNBOUNDED = "solver_unbounded"
    SOLVER_NUMERIC = "solver_numeric"
    TIMEOUT_CPU = "timeout_cpu"
    TIMEOUT_WALL = "timeout_wall"
    MEMORY_LIMIT = "memory_limit"
    OUTPUT_LIMIT = "output_limit"
    PROCESS_LIMIT = "process_limit"
    DENIED = "denied"
    TAMPERED = "tampered"
    SANDBOX_ERROR = "sandbox_error"
