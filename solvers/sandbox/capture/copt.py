"""coptpy: ``Model.solve`` and ``Model.solveLP``. Status codes from the COPT reference (COPT.OPTIMAL = 1, ...)."""

from __future__ import annotations

from typing import Any

from solvers.records import SolveStatus
from solvers.sandbox.capture import (
    Described,
    capped_solution,
    hook,
    license_or_error,
    mps_path,
    patch,
    quiet_stdout,
    read_and_remove,
    wrap_solve,
)

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
    path = mps_path()
    if path is not None:
        try:
            with quiet_stdout():  # writeMps announces itself on stdout
                m.writeMps(path)
        except Exception:
            pass
        d.model_mps = read_and_remove(path)
    return d


@hook("coptpy", ("coptpy",))
def install() -> None:
    import coptpy

    for name in ("solve", "solveLP"):
        original = getattr(coptpy.Model, name, None)
        if original is not None:
            patch(coptpy.Model, name, wrap_solve("coptpy", original, _describe, license_or_error))
