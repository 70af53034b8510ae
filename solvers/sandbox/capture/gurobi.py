"""gurobipy: ``Model.optimize``. Status codes from the Gurobi reference manual (Optimization Status Codes)."""

from __future__ import annotations

from typing import Any

from solvers.sandbox.capture import Described, capped_solution, export_mps, hook, patch_solves
from solvers.statuses import SolveStatus

_LIMITS = {7, 8, 9, 10, 15, 16, 17}  # iteration, node, time, solution, user-obj, work, memory limits
_STATUS = {2: SolveStatus.OPTIMAL, 3: SolveStatus.INFEASIBLE, 4: SolveStatus.INF_OR_UNBD, 5: SolveStatus.UNBOUNDED,
           11: SolveStatus.INTERRUPTED, 12: SolveStatus.NUMERIC, 13: SolveStatus.NUMERIC}


def _attr(m: Any, name: str) -> Any:
    try:
        return getattr(m, name)
    except Exception:  # gurobipy raises AttributeError / GurobiError for an unavailable attribute
        return None


def _describe(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> Described:
    import gurobipy

    m = args[0]
    code = int(m.Status)
    has_sol = int(m.SolCount) > 0
    if code in _LIMITS:
        status = SolveStatus.TIME_LIMIT_WITH_SOLUTION if has_sol else SolveStatus.TIME_LIMIT_NO_SOLUTION
    else:
        status = _STATUS.get(code, SolveStatus.ERROR)
    is_mip = bool(m.IsMIP)
    d = Described(status=status, solver="gurobi", solver_version=".".join(map(str, gurobipy.gurobi.version())),
                  n_vars=m.NumVars, n_int_vars=m.NumIntVars, n_bin_vars=m.NumBinVars,
                  n_constraints=m.NumConstrs + m.NumQConstrs + m.NumSOS + m.NumGenConstrs,
                  solve_time_s=float(m.Runtime), sense="maximize" if m.ModelSense == -1 else "minimize")
    if has_sol:
        d.objective = m.ObjVal
        variables = m.getVars()
        d.solution = capped_solution(zip(m.getAttr("VarName", variables), m.getAttr("X", variables), strict=True))
        if is_mip:  # a MIP solved in presolve, or without an objective, may lack these attributes
            d.bound = _attr(m, "ObjBound")
            d.mip_gap = _attr(m, "MIPGap")
        else:
            d.bound = m.ObjVal
    d.model_mps = export_mps(m.write)
    if len(args) > 1 or kwargs.get("callback") is not None:  # lazy constraints it adds are not in the exported model
        d.check = {"callback": True}
    return d


@hook("gurobipy", ("gurobipy",))
def install() -> None:
    import gurobipy

    patch_solves("gurobipy", gurobipy.Model, ("optimize",), _describe)
