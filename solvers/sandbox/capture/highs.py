"""highspy: ``Highs.run`` / ``Highs.solve`` (one record per outermost call)."""

from __future__ import annotations

from typing import Any

from solvers.sandbox.capture import Described, capped_solution, export_mps, hook, patch_solves
from solvers.statuses import SolveStatus

_STATUS = {"kOptimal": SolveStatus.OPTIMAL, "kInfeasible": SolveStatus.INFEASIBLE,
           "kUnbounded": SolveStatus.UNBOUNDED, "kUnboundedOrInfeasible": SolveStatus.INF_OR_UNBD,
           "kInterrupt": SolveStatus.INTERRUPTED, "kModelEmpty": SolveStatus.OPTIMAL}
_LIMITS = {"kTimeLimit", "kIterationLimit", "kSolutionLimit", "kObjectiveBound", "kObjectiveTarget",
           "kMemoryLimit"}


def _describe(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> Described:
    import highspy

    h = args[0]
    name = h.modelStatusToString(h.getModelStatus())
    raw = str(h.getModelStatus()).split(".")[-1]
    info = h.getInfo()
    has_sol = int(info.primal_solution_status) == 2
    if raw in _LIMITS:
        status = SolveStatus.TIME_LIMIT_WITH_SOLUTION if has_sol else SolveStatus.TIME_LIMIT_NO_SOLUTION
    else:
        status = _STATUS.get(raw, SolveStatus.ERROR)
    lp = h.getLp()
    integrality = [int(x) for x in lp.integrality_] if len(lp.integrality_) else []
    n_int = sum(1 for x in integrality if x in (1, 3))
    n_bin = sum(1 for j, x in enumerate(integrality) if x == 1 and lp.col_lower_[j] >= 0 and lp.col_upper_[j] <= 1)
    version = highspy.Highs.version(h) if hasattr(highspy.Highs, "version") else ""
    d = Described(status=status, solver="highs", solver_version=str(version), n_vars=lp.num_col_, n_int_vars=n_int,
                  n_bin_vars=n_bin, n_constraints=lp.num_row_, solve_time_s=h.getRunTime(),
                  sense="maximize" if int(lp.sense_) == -1 else "minimize")
    if has_sol:
        d.objective = info.objective_function_value
        names = list(lp.col_names_) or [f"c{j}" for j in range(lp.num_col_)]
        d.solution = capped_solution(zip(names, h.getSolution().col_value, strict=False))
        if n_int:
            d.bound = info.mip_dual_bound
            d.mip_gap = info.mip_gap
        else:
            d.bound = d.objective
    del name
    d.model_mps = export_mps(lambda path: _write_quietly(h, path))
    return d


def _write_quietly(h: Any, path: str) -> None:
    flag = h.getOptionValue("output_flag")
    flag = bool(flag[1] if isinstance(flag, tuple) else flag)  # highspy >= 1.8 returns (status, value)
    try:
        h.setOptionValue("output_flag", False)  # writeModel logs a line to stdout otherwise
        h.writeModel(path)
    finally:
        h.setOptionValue("output_flag", flag)


@hook("highspy", ("highspy",))
def install() -> None:
    import highspy

    patch_solves("highspy", highspy.Highs, ("run", "solve"), _describe)
