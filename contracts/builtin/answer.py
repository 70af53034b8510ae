"""Checks of the answer against the verified ground truth and the reference model.

A candidate that is feasible on the reference model and *beats* its ground truth is not failed: it raises a
dispute (the ground truth may be wrong), and so does a problem whose ground-truth solvers disagreed.
"""

from __future__ import annotations

from typing import Any

from contracts.api import Verdict, contract
from contracts.codefacts import uses_callbacks
from contracts.equivalence import read_mps
from contracts.equivalence.canonical import canonicalize
from contracts.equivalence.mps import UnsupportedModelError
from contracts.equivalence.semantic import map_variables, solve
from contracts.equivalence.stdform import from_ir, normalize_name
from contracts.sample import Sample
from contracts.tolerance import compare
from solvers.ir import Model, ObjSense
from solvers.records import SolveCall, SolveStatus

ANSWERED = {SolveStatus.OPTIMAL, SolveStatus.TIME_LIMIT_WITH_SOLUTION}
NO_SOLUTION = {SolveStatus.INFEASIBLE, SolveStatus.INF_OR_UNBD}
# Feasibility on the reference: 1e-6 scaled, the default primal feasibility tolerance of every solver we run.
FEAS_TOL = 1e-6


def _final(sample: Sample) -> SolveCall | None:
    return sample.execution.final_solve if sample.execution else None


@contract(stage="after_execution", severity="reject", cost=0.02)
def status_matches_ground_truth(sample: Sample) -> Verdict:
    """The final solve's status agrees with the ground truth: optimal vs optimal, infeasible vs infeasible."""
    gt = sample.problem.ground_truth
    solve_ = _final(sample)
    if gt is None:
        return Verdict.skipped("no ground truth")
    if gt.disputed:
        return Verdict.disputed("ground_truth_disputed", f"ground truth disputed: {gt.dispute_reason}")
    if solve_ is None:
        return Verdict.failed("no solve call", expected=gt.status.value)
    got, want = solve_.status, gt.status
    same = (want in ANSWERED and got in ANSWERED) or (want in NO_SOLUTION and got in NO_SOLUTION) or got == want
    ev = {"expected": want.value, "got": got.value, "infeasible_by_design": sample.problem.infeasible_by_design}
    if same:
        return Verdict.passed(f"status {got.value}", **ev)
    return Verdict.failed(f"status {got.value}, ground truth {want.value}", **ev)


@contract(stage="after_execution", severity="reject", cost=0.03, rule="strict", atol=None, rtol=None)
def objective_matches(sample: Sample, rule: str, atol: float | None, rtol: float | None) -> Verdict:
    """The final objective matches the ground truth under a named rule, widened by the achieved MIP gap."""
    gt = sample.problem.ground_truth
    solve_ = _final(sample)
    if gt is None or gt.status not in ANSWERED or gt.objective is None:
        return Verdict.skipped("no ground-truth objective")
    if gt.disputed:
        return Verdict.disputed("ground_truth_disputed", f"ground truth disputed: {gt.dispute_reason}")
    if solve_ is None or solve_.objective is None:
        return Verdict.failed("no objective was produced", expected=gt.objective)
    cmp = compare(solve_.objective, gt.objective, rule, solve_.mip_gap, atol, rtol)
    ev = cmp.as_dict()
    if cmp.match:
        return Verdict.passed(f"{solve_.objective:g} matches {gt.objective:g} ({cmp.rule})", **ev)
    beats = _beats_ground_truth(sample, solve_, gt.objective)
    if beats is not None:
        return Verdict.disputed("beats_ground_truth", f"feasible on the reference and better than the ground truth "
                                f"({beats:g} vs {gt.objective:g})", **ev, recomputed_objective=beats)
    return Verdict.failed(f"{solve_.objective:g} vs ground truth {gt.objective:g} ({cmp.rule}, tol {cmp.tolerance:g})",
                          score=0.0, **ev)


def _beats_ground_truth(sample: Sample, solve_: SolveCall, gt_obj: float) -> float | None:
    ir = sample.problem.ir
    if ir is None:
        return None
    sol = reference_solution(ir, solve_)
    if sol is None or ir.violations(sol, FEAS_TOL):
        return None
    value = ir.evaluate(sol)
    better = value > gt_obj if ir.objective.sense == ObjSense.MAXIMIZE else value < gt_obj
    return value if better and not compare(value, gt_obj, "strict").match else None


def reference_solution(ir: Model, solve_: SolveCall) -> dict[str, float] | None:
    """The candidate's solution in the reference model's variable names, or None if it cannot be mapped.

    Names map first (``make[Chairs]`` == ``make_Chairs``); failing that, the captured model is aligned with the
    reference by coefficient signature (the semantic layer's mapping).
    """
    if not solve_.solution:
        return None
    by_norm = {normalize_name(k): v for k, v in solve_.solution.items()}
    out = {v.name: by_norm[normalize_name(v.name)] for v in ir.variables if normalize_name(v.name) in by_norm}
    if len(out) == len(ir.variables):
        return out
    if not solve_.model_mps:
        return None
    try:
        cand = canonicalize(read_mps(solve_.model_mps)).model
    except UnsupportedModelError:
        return None
    ref = canonicalize(from_ir(ir)).model
    mapping = map_variables(ref, cand)
    values = {normalize_name(k): v for k, v in solve_.solution.items()}
    out = {}
    for ja, jb in mapping.items():
        key = normalize_name(cand.names[jb])
        if key in values:
            out[ref.names[ja]] = values[key]
    used = {j for row in ref.rows for j in row} | set(ref.obj)
    if any(ref.names[j] not in out for j in used):
        return None
    for v in ir.variables:  # columns presolve removed are fixed or unused; take their bound
        out.setdefault(v.name, v.lb if v.lb is not None else 0.0)
    return out


@contract(stage="after_execution", severity="reject", cost=0.1, tol=FEAS_TOL)
def feasible_on_reference(sample: Sample, tol: float) -> Verdict:
    """The candidate's solution, evaluated on the reference IR, satisfies every constraint, bound and integrality
    requirement; the objective is recomputed on the reference."""
    ir = sample.problem.ir
    solve_ = _final(sample)
    if ir is None:
        return Verdict.skipped("no reference model")
    if solve_ is None or not solve_.solution:
        return Verdict.skipped("no candidate solution")
    sol = reference_solution(ir, solve_)
    if sol is None:
        return Verdict.skipped("candidate variables could not be mapped to the reference",
                               candidate_vars=len(solve_.solution), reference_vars=len(ir.variables))
    bad = ir.violations(sol, tol)
    recomputed = ir.evaluate(sol)
    ev: dict[str, Any] = {"violations": bad[:20], "n_violations": len(bad), "recomputed_objective": recomputed,
                          "reported_objective": solve_.objective}
    if solve_.objective is not None:
        ev["objective_consistent"] = compare(recomputed, solve_.objective, "strict", solve_.mip_gap).match
    if bad:
        return Verdict.failed(f"{len(bad)} reference constraints violated (first: {bad[0]})", **ev)
    return Verdict.passed(f"feasible on the reference; objective {recomputed:g}", **ev)


@contract(stage="after_execution", severity="warn", cost=5.0, rule="strict")
def cross_solver(sample: Sample, rule: str) -> Verdict:
    """Re-solve the captured model with a second solver (HiGHS, or Gurobi when the program used HiGHS) and
    compare the objective with the one the program's solver reported."""
    solve_ = _final(sample)
    if solve_ is None or not solve_.model_mps:
        return Verdict.skipped("no captured model")
    if solve_.objective is None:
        return Verdict.skipped("the program's solver reported no objective")
    if uses_callbacks(sample.code):
        return Verdict.skipped("the program adds constraints in solver callbacks: the captured model is partial")
    try:
        std = read_mps(solve_.model_mps)
    except UnsupportedModelError as exc:
        return Verdict.skipped(f"captured model not checkable: {exc.message}")
    maximize = solve_.sense == "maximize" if solve_.sense else std.maximize
    if "highs" in (solve_.solver or "").lower():
        second, status, value = "gurobi", *_gurobi_objective(solve_.model_mps)
        if status == "optimal" and value is not None and std.maximize != maximize:
            value = -value  # the writer negated a maximisation into a minimisation (docplex does)
    else:
        second = "highs"
        if std.quad and any(std.integer):
            return Verdict.skipped("HiGHS cannot solve a mixed-integer quadratic model", first_solver=solve_.solver)
        res = solve(canonicalize(std).model)
        status, value = res.status, res.value
        if value is not None:
            # The canonical form minimises; a maximisation's objective is minus that minimum.
            value = -value if maximize else value
    ev: dict[str, Any] = {"second_solver": second, "second_status": status, "second_objective": value,
                          "first_solver": solve_.solver, "first_objective": solve_.objective}
    # The objective compared is the one the solver itself reported for this very model (captured, not printed),
    # so a definite mismatch is two solvers disagreeing: a dispute for a person to look at, not the program's
    # failure. A second solver that stops without a verdict (time limit) decides nothing.
    if status not in ("optimal", "infeasible", "unbounded"):
        return Verdict.skipped(f"{second} reached no verdict ({status})", **ev)
    if status != "optimal" or value is None:
        return Verdict.disputed("solver_disagreement", f"{second} finds {status} on the captured model", **ev)
    cmp = compare(solve_.objective, value, rule, solve_.mip_gap)
    ev.update(cmp.as_dict())
    if cmp.match:
        return Verdict.passed(f"{second} agrees ({value:g})", **ev)
    return Verdict.disputed("solver_disagreement", f"{second} finds {value:g}, {solve_.solver or 'the program'} "
                            f"reported {solve_.objective:g}", **ev)


def _gurobi_objective(mps: str) -> tuple[str, float | None]:
    import os
    import tempfile

    import gurobipy as gp

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.mps")
        with open(path, "w") as f:
            f.write(mps)
        with gp.Env(params={"OutputFlag": 0, "Threads": 1}) as env, gp.read(path, env=env) as m:
            m.optimize()
            if m.Status == gp.GRB.OPTIMAL:
                return "optimal", float(m.ObjVal)
            return {gp.GRB.INFEASIBLE: "infeasible", gp.GRB.UNBOUNDED: "unbounded"}.get(m.Status, "other"), None
