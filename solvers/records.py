"""Frozen records that cross stage boundaries.

Every record is a frozen pydantic v2 model with explicit field types. Ids are content hashes of the canonical
JSON, so the same input always gets the same id. These records live in ``solvers/`` because the generators,
the sandbox, the contracts and the store all read them.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from solvers.ir import Model
from solvers.statuses import ExecStatus as ExecStatus  # re-exported: the enums live apart (see statuses.py)
from solvers.statuses import SolveStatus as SolveStatus


class Record(BaseModel):
    """Base of every boundary record: immutable, no unknown fields, canonical JSON and a content hash."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def canonical_json(self) -> str:
        """Deterministic JSON: sorted keys, no whitespace; the same record always gives the same bytes."""
        return canonical_json(self.model_dump(mode="json"))

    def content_hash(self, length: int = 16) -> str:
        return content_hash(self.canonical_json(), length)


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def content_hash(text: str | bytes, length: int = 16) -> str:
    """A short sha256 hex digest: the id scheme used for problems, attempts and samples."""
    data = text.encode() if isinstance(text, str) else text
    return hashlib.sha256(data).hexdigest()[:length]


class SolverRun(Record):
    """One ground-truth solve of an IR by one solver."""

    solver: str  # e.g. "highs", "gurobi", "scip", "cp-sat"
    version: str
    status: SolveStatus
    objective: float | None = None
    solution: dict[str, float] = Field(default_factory=dict)
    solve_time_s: float = 0.0
    message: str = ""


class GroundTruth(Record):
    """The verified answer of a problem: two independent solvers that agree, or a dispute."""

    status: SolveStatus
    objective: float | None = None
    solution: dict[str, float] = Field(default_factory=dict)
    runs: tuple[SolverRun, ...] = ()
    disputed: bool = False
    dispute_reason: str = ""
    # |a - b| <= atol + rtol * max(|a|, |b|) decides agreement between the two solvers; stored for lineage.
    agreement_rtol: float = 1e-6
    agreement_atol: float = 1e-6


class Problem(Record):
    """A generated (or imported) OR problem with its model, text and verified ground truth."""

    problem_id: str
    family: str
    generator_version: str
    generator_code_hash: str
    seed: int
    difficulty: int
    params: dict[str, Any]
    question: str
    ir: Model | None
    formulation: str = ""
    reference_programs: dict[str, str] = Field(default_factory=dict)  # api -> program text
    ground_truth: GroundTruth | None = None
    infeasible_by_design: bool = False
    label_source: str = "generator"  # generator | benchmark | teacher | self
    template_id: str = ""
    domain: str = ""
    application_domain: str = ""  # one of the generators' APPLICATION_DOMAINS (manufacturing, logistics, ...)
    techniques: tuple[str, ...] = ()  # modelling techniques the model needs (big_m_indicator, fixed_charge, ...)
    distractors: tuple[float, ...] = ()  # numbers the question states that play no part in the model


class SolveCall(Record):
    """What one solver call inside a program really did, captured by instrumentation (never stdout)."""

    api: str  # gurobipy | pyomo | ortools | coptpy | docplex | highspy | pulp
    solver: str = ""
    solver_version: str = ""
    status: SolveStatus
    objective: float | None = None
    bound: float | None = None
    mip_gap: float | None = None
    solution: dict[str, float] = Field(default_factory=dict)
    n_vars: int = 0
    n_int_vars: int = 0
    n_bin_vars: int = 0
    n_constraints: int = 0
    solve_time_s: float = 0.0
    model_mps: str | None = None  # the model the program built, for structural checks
    sense: str | None = None  # "minimize" | "maximize" where known
    # The parent's check of this call against its own captured model (solvers/sandbox/verify.py): "verified",
    # "partial" (some constraint kinds unchecked), "re-solved" (a no-solution claim HiGHS did not contradict),
    # "unverified" (no checkable model), "refuted" (the execution is tampered), "" (nothing claimed to check).
    verification: str = ""


class Execution(Record):
    """The outcome of running one program in the sandbox."""

    program_id: str
    status: ExecStatus
    solves: tuple[SolveCall, ...] = ()
    stdout: str = ""
    stderr: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    wall_s: float = 0.0
    cpu_s: float = 0.0
    max_rss_mb: float = 0.0
    error: str = ""  # one-line explanation of a non-ok status
    isolation: str = ""  # what isolation was in force (e.g. "bwrap+netns+seccomp+cgroup"), for lineage
    returned: Any = None  # JSON value returned by a function-style program's entry (e.g. ComplexOR's solve())
    exec_s: float = 0.0  # time the program's own code ran (module body + entry), without sandbox set-up
    phases: dict[str, float] = Field(default_factory=dict)  # sandbox timing breakdown (fork, setup, exit, ...)

    @property
    def final_solve(self) -> SolveCall | None:
        """The last solve call: the one whose result a program reports."""
        return self.solves[-1] if self.solves else None

    @property
    def objective(self) -> float | None:
        final = self.final_solve
        return final.objective if final else None


class Attempt(Record):
    """One program that claims to solve a problem: a generator's reference program or a policy's response."""

    attempt_id: str  # content hash of (problem_id, policy, prompt hash, sample index, response)
    problem_id: str
    round: int = 0
    policy: str = "reference"  # "reference" for generator programs, else the policy spec string
    api: str = ""  # target solver API
    response: str = ""  # the full response text (may hold markdown and reasoning)
    code: str = ""  # the extracted program
    sample_index: int = 0
    prompt_template: str = ""
    prompt_hash: str = ""
    sampling: dict[str, Any] = Field(default_factory=dict)
    label_source: str = "generator"  # generator | benchmark | teacher | self
