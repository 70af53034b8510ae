"""coptpy: ``Model.solve`` and ``Model.solveLP``. Status codes from the COPT reference (COPT.OPTIMAL = 1, ...)."""

from __future__ import annotations

from typing import Any

from solvers.sandbox.capture import Described, capped_solution, export_mps, hook, patch_solves
from solvers.statuses import SolveStatus
from solvers.stdout import fd1_redirected

# 1 optimal, 2 infeasible, 3 unbounded, 4 inf-or-unbd, 5 numerical, 6 node limit, 7 imprecise, 8 timeout,
# 9 unfinished, 10 interrupted.
_STATUS = {1: SolveStatus.OPTIMAL, 2: SolveStatus.INFEASIBLE, 3: SolveStatus.UNBOUNDED, 4: SolveStatus.INF_OR_UNBD,
           5: SolveStatus.NUMERIC, 7: SolveStatus.NUMERIC, 10: SolveStatus.INTERRUPTED}


def _attr(m: Any, name: str, default: Any = None) -> Any:
    try:
        return m.getAttr(name)
    except Exception:
        return default


def _describe(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> Described:
    import coptpy

    m = args[0]
    is_mip = bool(_attr(m, "IsMIP", 0))
    code = int(_attr(m, "MipStatus" if is_mip else "LpStatus", 0))
    has_sol = bool(_attr(m, "HasMipSol" if is_mip else "HasLpSol", 0))
    if code in (6, 8, 9):
        status = SolveStatus.TIME_LIMIT_WITH_SOLUTION if has_sol else SolveStatus.TIME_LIMIT_NO_SOLUTION
    else:
        status = _STATUS.get(code, SolveStatus.ERROR)
    version = ""
    try:
        version = f"{coptpy.COPT.VERSION_MAJOR}.{coptpy.COPT.VERSION_MINOR}.{coptpy.COPT.VERSION_TECHNICAL}"
    except AttributeError:
        pass
    d = Described(status=status, solver="copt", solver_version=version, n_vars=int(_attr(m, "Cols", 0)),
                  n_int_vars=int(_attr(m, "Ints", 0)) + int(_attr(m, "Bins", 0)), n_bin_vars=int(_attr(m, "Bins", 0)),
                  n_constraints=int(_attr(m, "Rows", 0)) + int(_attr(m, "QConstrs", 0) or 0),
                  solve_time_s=_attr(m, "SolvingTime"),
                  sense="maximize" if int(_attr(m, "ObjSense", 1)) == -1 else "minimize")
    if has_sol and status in (SolveStatus.OPTIMAL, SolveStatus.TIME_LIMIT_WITH_SOLUTION):
        d.objective = _attr(m, "BestObj" if is_mip else "LpObjval")
        variables = m.getVars()
        d.solution = capped_solution(zip((v.getName() for v in variables), m.getInfo("Value", variables),
                                         strict=False))
        if is_mip:
            d.bound = _attr(m, "BestBnd")
            d.mip_gap = _attr(m, "BestGap")
        else:
            d.bound = d.objective
    d.model_mps = export_mps(lambda path: _write_quietly(m, path))
    return d


def _write_quietly(m: Any, path: str) -> None:
    with fd1_redirected():  # writeMps announces itself on stdout, which is the program's own
        m.writeMps(path)


@hook("coptpy", ("coptpy",))
def install() -> None:
    import coptpy

    patch_solves("coptpy", coptpy.Model, ("solve", "solveLP"), _describe)
