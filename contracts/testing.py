"""Helpers to test a contract without the sandbox: the execution a problem's reference model would produce
(captured MPS, solution, objective), which a test then bends. A real problem with solver-verified ground truth to
start from comes from the generators (``flywheel.generators.testing.problem_with_truth``), a layer above this one.

Used by the project's tests and meant for authors of user contracts.
"""

from __future__ import annotations

from typing import Any

from contracts.sample import Sample
from solvers.ir import ObjSense, VarType
from solvers.records import Attempt, ExecStatus, Execution, Problem, SolveCall, SolveStatus


def reference_solve(problem: Problem, **changes: Any) -> SolveCall:
    """The solve call a faithful program would make: the reference model, the ground-truth answer."""
    ir, gt = problem.ir, problem.ground_truth
    assert ir is not None and gt is not None
    n_int = sum(v.vtype == VarType.INTEGER for v in ir.variables)
    n_bin = sum(v.vtype == VarType.BINARY for v in ir.variables)
    fields: dict[str, Any] = {
        "api": "gurobipy", "solver": "gurobi", "status": gt.status, "objective": gt.objective, "bound": gt.objective,
        "mip_gap": 0.0, "solution": dict(gt.solution), "n_vars": len(ir.variables), "n_int_vars": n_int,
        "n_bin_vars": n_bin, "n_constraints": len(ir.constraints), "model_mps": ir.to_mps(),
        "sense": "maximize" if ir.objective.sense == ObjSense.MAXIMIZE else "minimize",
    }
    fields.update(changes)
    return SolveCall(**fields)


def make_sample(problem: Problem, code: str = "", response: str = "", solves: tuple[SolveCall, ...] | None = None,
                status: ExecStatus = ExecStatus.OK, stdout: str = "", executed: bool = True, api: str = "gurobipy",
                attempt_id: str = "a1") -> Sample:
    """A sample of ``problem``; by default executed with the reference solve call."""
    if solves is None:
        solves = (reference_solve(problem),)
    if problem.ground_truth and problem.ground_truth.status == SolveStatus.INFEASIBLE and status == ExecStatus.OK:
        status = ExecStatus.SOLVER_INFEASIBLE
    execution = Execution(program_id=attempt_id, status=status, solves=solves, stdout=stdout) if executed else None
    attempt = Attempt(attempt_id=attempt_id, problem_id=problem.problem_id, api=api, code=code, response=response)
    return Sample(problem=problem, attempt=attempt, execution=execution)
