"""docplex: ``docplex.mp.model.Model.solve``. CPLEX status codes from the CPLEX callable library reference."""

from __future__ import annotations

from typing import Any

from solvers.mps_names import respace
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

_STATUS = {1: SolveStatus.OPTIMAL, 101: SolveStatus.OPTIMAL, 102: SolveStatus.OPTIMAL,  # 102: optimal within gap
           2: SolveStatus.UNBOUNDED, 118: SolveStatus.UNBOUNDED, 3: SolveStatus.INFEASIBLE,
           103: SolveStatus.INFEASIBLE, 4: SolveStatus.INF_OR_UNBD, 119: SolveStatus.INF_OR_UNBD,
           5: SolveStatus.NUMERIC, 6: SolveStatus.NUMERIC, 13: SolveStatus.INTERRUPTED, 113: SolveStatus.INTERRUPTED}
_LIMITS = {10, 11, 12, 104, 105, 106, 107, 108, 109, 110, 111, 112}


def _describe(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> Described:
    m = args[0]
    details = m.solve_details
    code = int(getattr(details, "status_code", -1) or -1)
    if code in _LIMITS:
        status = SolveStatus.TIME_LIMIT_WITH_SOLUTION if result is not None else SolveStatus.TIME_LIMIT_NO_SOLUTION
    else:
        status = _STATUS.get(code, SolveStatus.ERROR)
    version = ""
    try:
        import cplex

        version = cplex.__version__
    except Exception:
        pass
    d = Described(status=status, solver="cplex", solver_version=version, n_vars=m.number_of_variables,
                  n_int_vars=m.number_of_integer_variables + m.number_of_binary_variables,
                  n_bin_vars=m.number_of_binary_variables, n_constraints=m.number_of_constraints,
                  solve_time_s=getattr(details, "time", None),
                  sense="maximize" if m.objective_sense.is_maximize() else "minimize")
    if result is not None:
        d.objective = result.objective_value
        d.solution = capped_solution((v.name or f"x{v.index}", result.get_value(v)) for v in m.iter_variables())
        if m.number_of_integer_variables + m.number_of_binary_variables:
            d.bound = getattr(details, "best_bound", None)
            d.mip_gap = getattr(details, "mip_relative_gap", None)
        else:
            d.bound = d.objective
    d.model_mps = _names_without_spaces(m, export_mps(lambda path: m.export_as_mps(path=path)))
    if d.model_mps and m.objective_sense.is_maximize() and "OBJSENSE" not in d.model_mps:
        # docplex writes a maximisation as "minimise the negated costs" but keeps the constant's sign: the
        # negated objective's constant is -k, written as RHS k (constant = -RHS)
        constant = float(m.objective_expr.get_constant() or 0.0)
        if constant:
            d.model_mps = with_objective_constant(d.model_mps, constant)
    try:
        changed = [p.name for p in m.parameters.generate_nondefault_params()]
    except Exception:
        changed = []
    if asks_cutoff(changed):
        d.check = {"cutoff": True}
    return d


def _names_without_spaces(m: Any, mps: str | None) -> str | None:
    """docplex writes a name with a space as it is ("open_Old Mill"), which every free-format reader splits into two
    fields; rewrite such names the way HiGHS, OR-Tools and COPT write them (``solvers.mps_names``)."""
    if not mps:
        return mps
    columns = [v.name or "" for v in m.iter_variables()]
    rows = [c.name or "" for c in m.iter_constraints()]
    if not any(ch.isspace() for n in (*columns, *rows) for ch in n):
        return mps
    return respace(mps, columns, rows)


@hook("docplex", ("docplex.mp.model",))
def install() -> None:
    from docplex.mp.model import Model

    patch_solves("docplex", Model, ("solve",), _describe)
