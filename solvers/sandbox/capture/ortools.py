"""OR-Tools: linear solver wrapper (``pywraplp.Solver.Solve``), CP-SAT (``CpSolver.Solve``/``solve``) and MathOpt
(``mathopt.solve``)."""

from __future__ import annotations

from typing import Any

from solvers.records import SolveStatus
from solvers.sandbox.capture import Described, _state, capped_solution, hook, patch, patch_solves, wrap_solve


def _version() -> str:
    import ortools

    return getattr(ortools, "__version__", "")


# pywraplp result codes: OPTIMAL 0, FEASIBLE 1 (stopped at a limit with a solution), INFEASIBLE 2, UNBOUNDED 3,
# ABNORMAL 4, MODEL_INVALID 5, NOT_SOLVED 6.
_LP_STATUS = {0: SolveStatus.OPTIMAL, 1: SolveStatus.TIME_LIMIT_WITH_SOLUTION, 2: SolveStatus.INFEASIBLE,
              3: SolveStatus.UNBOUNDED, 4: SolveStatus.NUMERIC, 5: SolveStatus.ERROR,
              6: SolveStatus.TIME_LIMIT_NO_SOLUTION}


def _describe_lp(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> Described:
    s = args[0]
    status = _LP_STATUS.get(int(result), SolveStatus.ERROR)
    variables = s.variables()
    ints = [v for v in variables if v.integer()]
    d = Described(status=status, solver=f"ortools-{s.SolverVersion().split()[0].lower()}" if s.SolverVersion() else
                  "ortools", solver_version=_version(), n_vars=len(variables), n_int_vars=len(ints),
                  n_bin_vars=sum(1 for v in ints if v.lb() >= 0 and v.ub() <= 1),
                  n_constraints=s.NumConstraints(), solve_time_s=s.wall_time() / 1000.0,
                  sense="maximize" if s.Objective().maximization() else "minimize")
    if status in (SolveStatus.OPTIMAL, SolveStatus.TIME_LIMIT_WITH_SOLUTION):
        d.objective = s.Objective().Value()
        d.solution = capped_solution((v.name(), v.solution_value()) for v in variables)
        d.bound = s.Objective().BestBound() if ints else d.objective
        if ints and d.objective is not None and d.bound is not None:
            d.mip_gap = abs(d.objective - d.bound) / max(abs(d.objective), 1e-10)
    if _state["capture_mps"]:
        try:
            d.model_mps = s.ExportModelAsMpsFormat(False, False)  # (fixed_format, obfuscated)
        except Exception:
            d.model_mps = None
    return d


# CP-SAT CpSolverStatus: UNKNOWN 0, MODEL_INVALID 1, FEASIBLE 2, INFEASIBLE 3, OPTIMAL 4.
def _describe_cp(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> Described:
    solver, model = args[0], (args[1] if len(args) > 1 else kwargs.get("model"))
    code = int(result)
    proto = model.Proto()
    has_field = getattr(proto, "HasField", None)  # classic protobuf; the pybind proto of ortools >= 9.13 has has_x()
    has_int_obj = has_field("objective") if has_field else proto.has_objective()
    has_float_obj = has_field("floating_point_objective") if has_field else proto.has_floating_point_objective()
    has_objective = has_int_obj or has_float_obj
    if code == 4:
        status = SolveStatus.OPTIMAL
    elif code == 2:  # without an objective, a found assignment is the answer
        status = SolveStatus.TIME_LIMIT_WITH_SOLUTION if has_objective else SolveStatus.OPTIMAL
    elif code == 3:
        status = SolveStatus.INFEASIBLE
    elif code == 0:
        status = SolveStatus.TIME_LIMIT_NO_SOLUTION
    else:
        status = SolveStatus.ERROR
    variables = proto.variables
    n_bin = sum(1 for v in variables if list(v.domain) in ([0, 1], [0, 0], [1, 1]))
    maximize = has_int_obj and proto.objective.scaling_factor < 0  # CP-SAT stores max as min of the negation
    if has_float_obj:
        maximize = proto.floating_point_objective.maximize
    d = Described(status=status, solver="cp-sat", solver_version=_version(), n_vars=len(variables),
                  n_int_vars=len(variables), n_bin_vars=n_bin, n_constraints=len(proto.constraints),
                  solve_time_s=solver.WallTime(), sense=("maximize" if maximize else "minimize") if has_objective
                  else None)
    if code in (2, 4):
        response = solver.ResponseProto()
        values = list(response.solution)
        d.solution = capped_solution((v.name or f"x{i}", values[i]) for i, v in enumerate(variables)
                                     if i < len(values))
        if has_objective:
            d.objective = solver.ObjectiveValue()
            d.bound = solver.BestObjectiveBound()
            if d.objective is not None and d.bound is not None:
                d.mip_gap = abs(d.objective - d.bound) / max(abs(d.objective), 1e-10)
    return d


def _describe_mathopt(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> Described:
    model = args[0] if args else kwargs.get("opt_model")
    reason = result.termination.reason.name.lower()
    status = {"optimal": SolveStatus.OPTIMAL, "infeasible": SolveStatus.INFEASIBLE,
              "unbounded": SolveStatus.UNBOUNDED, "infeasible_or_unbounded": SolveStatus.INF_OR_UNBD,
              "imprecise": SolveStatus.NUMERIC, "numerical_error": SolveStatus.NUMERIC,
              "feasible": SolveStatus.TIME_LIMIT_WITH_SOLUTION,
              "no_solution_found": SolveStatus.TIME_LIMIT_NO_SOLUTION}.get(reason, SolveStatus.ERROR)
    solver_type = args[1] if len(args) > 1 else kwargs.get("solver_type")
    variables = list(model.variables())
    ints = [v for v in variables if v.integer]
    d = Described(status=status, solver=f"mathopt-{getattr(solver_type, 'name', solver_type)}".lower(),
                  solver_version=_version(), n_vars=len(variables), n_int_vars=len(ints),
                  n_bin_vars=sum(1 for v in ints if v.lower_bound >= 0 and v.upper_bound <= 1),
                  n_constraints=len(list(model.linear_constraints())),
                  solve_time_s=result.solve_time().total_seconds(),
                  sense="maximize" if model.objective.is_maximize else "minimize")
    if result.has_primal_feasible_solution():
        d.objective = result.objective_value()
        d.bound = result.best_objective_bound()
        d.solution = capped_solution((v.name or f"x{v.id}", val) for v, val in result.variable_values().items())
    return d


@hook("ortools.pywraplp", ("ortools.linear_solver.pywraplp",))
def install_lp() -> None:
    from ortools.linear_solver import pywraplp

    patch_solves("ortools", pywraplp.Solver, ("Solve",), _describe_lp)


@hook("ortools.cp_model", ("ortools.sat.python.cp_model",))
def install_cp() -> None:
    from ortools.sat.python import cp_model

    for name in ("solve", "Solve"):
        if name in cp_model.CpSolver.__dict__:
            pinned = _pin_cp_workers(cp_model.CpSolver.__dict__[name])
            patch(cp_model.CpSolver, name, wrap_solve("ortools", pinned, _describe_cp))


def _pin_cp_workers(original: Any) -> Any:
    """CP-SAT starts one worker per core by default; pin it to the sandbox's thread count unless the program
    chose its own (num_workers != 0)."""

    def solve(self: Any, *args: Any, **kwargs: Any) -> Any:
        threads = _state.get("threads", 0)
        if threads and self.parameters.num_workers == 0 and self.parameters.num_search_workers == 0:
            self.parameters.num_workers = threads
        return original(self, *args, **kwargs)

    return solve


@hook("ortools.mathopt", ("ortools.math_opt.python.solve", "ortools.math_opt.python.mathopt"))
def install_mathopt() -> None:
    import ortools.math_opt.python.mathopt as mathopt
    import ortools.math_opt.python.solve as solve_mod

    wrapper = wrap_solve("ortools", solve_mod.solve, _describe_mathopt)
    patch(solve_mod, "solve", wrapper)
    patch(mathopt, "solve", wrapper)
