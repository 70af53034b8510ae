"""PuLP: ``LpProblem.solve``. ``sol_status`` distinguishes optimal (1) from feasible-at-a-limit (2)."""

from __future__ import annotations

from typing import Any

from solvers.sandbox.capture import (
    Described,
    asks_cutoff,
    capped_solution,
    export_mps,
    hook,
    patch_solves,
    with_objective_constant,
)
from solvers.statuses import SolveStatus

_SOL = {1: SolveStatus.OPTIMAL, 2: SolveStatus.TIME_LIMIT_WITH_SOLUTION, -1: SolveStatus.INFEASIBLE,
        -2: SolveStatus.UNBOUNDED, 0: SolveStatus.TIME_LIMIT_NO_SOLUTION, -3: SolveStatus.ERROR}
_STATUS = {1: SolveStatus.OPTIMAL, -1: SolveStatus.INFEASIBLE, -2: SolveStatus.UNBOUNDED, 0: SolveStatus.ERROR,
           -3: SolveStatus.ERROR}


def _describe(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> Described:
    import pulp

    prob = args[0]
    sol = getattr(prob, "sol_status", None)
    status = _SOL.get(sol, _STATUS.get(prob.status, SolveStatus.ERROR)) if sol is not None else \
        _STATUS.get(prob.status, SolveStatus.ERROR)
    variables = prob.variables()
    ints = [v for v in variables if v.cat == pulp.LpInteger]
    solver = args[1] if len(args) > 1 else kwargs.get("solver") or getattr(prob, "solver", None)
    d = Described(status=status, solver=str(getattr(solver, "name", "pulp")).lower(),
                  solver_version=getattr(pulp, "__version__", ""), n_vars=len(variables), n_int_vars=len(ints),
                  n_bin_vars=sum(1 for v in ints if v.lowBound == 0 and v.upBound == 1),
                  n_constraints=len(prob.constraints), solve_time_s=getattr(prob, "solutionTime", None),
                  sense="maximize" if prob.sense == pulp.LpMaximize else "minimize")
    if status in (SolveStatus.OPTIMAL, SolveStatus.TIME_LIMIT_WITH_SOLUTION):
        d.objective = pulp.value(prob.objective)
        d.solution = capped_solution((v.name, v.varValue) for v in variables)
        d.bound = d.objective if not ints else None
    d.model_mps = _portable_sense(export_mps(prob.writeMPS))
    constant = float(getattr(prob.objective, "constant", 0.0) or 0.0)
    if constant:  # PuLP's writer drops the objective's constant: put it back (constant = -RHS of the objective row)
        d.model_mps = with_objective_constant(d.model_mps, -constant)
    if asks_cutoff(getattr(solver, "options", None) or []):
        d.check = {"cutoff": True}
    return d


def _portable_sense(mps: str | None) -> str | None:
    """PuLP marks maximisation only in a comment (``*SENSE:Maximize``) that other readers skip; add the standard
    OBJSENSE section so that the captured model means the same thing to every MPS reader."""
    if not mps or not mps.startswith("*SENSE:Maximize"):
        return mps
    lines = mps.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.startswith("NAME"):
            lines.insert(i + 1, "OBJSENSE\n    MAX\n")
            break
    return "".join(lines)


@hook("pulp", ("pulp",))
def install() -> None:
    import pulp

    patch_solves("pulp", pulp.LpProblem, ("solve",), _describe)
