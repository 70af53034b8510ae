"""OR-Tools: linear solver wrapper (``pywraplp.Solver.Solve``), CP-SAT (``CpSolver.Solve``/``solve``) and MathOpt
(``mathopt.solve``).

Each hook stamps its own ``kind`` on its records (``wrap_solve(kind=...)``): the parent requires the MPS model of a
linear-solver record (written from the model's proto by ``write_mps``: OR-Tools' own MPS writer rounds numbers),
the compact CP-SAT model of a CP-SAT record (``_cp_check``), and the MPS of a linear MathOpt model (``_mathopt_mps``; solvers/sandbox/verify/).
"""

from __future__ import annotations

from typing import Any

from solvers.sandbox.capture import (
    Described,
    _state,
    capped_solution,
    hook,
    patch,
    patch_solves,
    wrap_solve,
    write_mps,
)
from solvers.sandbox.verify.common import CP_MAX_ITEMS, CP_SAT, LINEAR_SOLVER, MATHOPT, MODEL_BUILDER
from solvers.statuses import SolveStatus


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
            d.model_mps = _lp_mps(s)
        except Exception:
            d.model_mps = None
    return d


_LP_EXPORT: list[Any] = []  # Solver.ExportModelToProto and MPModelProto, bound when the hook is installed


def _lp_mps(s: Any) -> str | None:
    """A pywraplp model as MPS, from its MPModelProto (``_mp_mps``)."""
    export, proto_type = _LP_EXPORT
    proto = proto_type()
    export(s, proto)
    return _mp_mps(proto, [v.name for v in proto.variable])


def _mp_mps(proto: Any, names: list[str]) -> str | None:
    """An MPModelProto (pywraplp, model_builder) as MPS (``write_mps``), columns named ``names``; None for what MPS
    cannot hold here (general constraints such as indicators, a quadratic objective)."""
    if len(proto.general_constraint) or len(proto.quadratic_objective.coefficient):
        return None
    columns = [(n, v.lower_bound, v.upper_bound, v.is_integer, v.objective_coefficient)
               for n, v in zip(names, proto.variable, strict=True)]
    entries = [(i, j, a) for i, c in enumerate(proto.constraint) for j, a in zip(c.var_index, c.coefficient, strict=True)]
    rows = [(c.name, c.lower_bound, c.upper_bound) for c in proto.constraint]
    return write_mps(proto.maximize, proto.objective_offset, columns, entries, rows)


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
        if _state["capture_mps"]:
            d.check = {"cp": _cp_check(proto, values, has_int_obj, has_float_obj)}
        if has_objective:
            d.objective = solver.ObjectiveValue()
            d.bound = solver.BestObjectiveBound()
            if d.objective is not None and d.bound is not None:
                d.mip_gap = abs(d.objective - d.bound) / max(abs(d.objective), 1e-10)
    return d


# CP-SAT constraints verify.check_cp checks: the proto's oneof name -> the tag in the compact form ("lin" for linear).
# Every other kind is counted in "unchecked", by name.
_CP_CHECKED = {"bool_or": "or", "bool_and": "and", "at_most_one": "amo", "exactly_one": "eo", "bool_xor": "xor",
               "all_diff": "alldiff", "lin_max": "max", "int_prod": "prod", "int_div": "div", "int_mod": "mod",
               "interval": "iv", "element": "elem"}
_CP_KINDS = ("linear", *_CP_CHECKED, "no_overlap", "no_overlap_2d", "cumulative", "circuit", "routes", "table",
             "automaton", "inverse", "reservoir", "dummy_constraint")


def _cp_kind(c: Any) -> str:
    which = getattr(c, "WhichOneof", None)  # classic protobuf; the pybind proto of ortools >= 9.13 has has_x()
    if which is not None:
        return which("constraint") or "empty"
    return next((k for k in _CP_KINDS if getattr(c, f"has_{k}")()), "other")


def _cp_expr(e: Any) -> list[Any]:
    vars_ = list(e.vars)
    if any(v < 0 for v in vars_):  # a negated reference inside an expression: not checked (semantics vary)
        raise ValueError("negated reference")
    return [vars_, list(e.coeffs), int(e.offset)]


def _cp_check(proto: Any, values: list[int], has_int_obj: bool, has_float_obj: bool) -> dict[str, Any]:
    """The CP-SAT model as plain JSON for the parent's exact check (verify.check_cp): variable names and domains,
    the constraints it can check (with their enforcement literals), a count of the others, the objective. Models over
    ``CP_MAX_ITEMS`` are not sent (``too_large``). When names repeat, the point is also sent by position."""
    variables, constraints = proto.variables, proto.constraints
    if len(variables) + len(constraints) > CP_MAX_ITEMS:
        return {"too_large": True}
    names = [v.name or f"x{i}" for i, v in enumerate(variables)]
    cons: list[list[Any]] = []
    unchecked: dict[str, int] = {}
    for c in constraints:
        kind = _cp_kind(c)
        enforcement = list(c.enforcement_literal)
        try:
            if kind == "linear":
                lin = c.linear
                vars_ = list(lin.vars)
                if any(v < 0 for v in vars_):
                    raise ValueError("negated reference")
                cons.append(["lin", enforcement, vars_, list(lin.coeffs), list(lin.domain)])
            elif kind in ("bool_or", "bool_and", "at_most_one", "exactly_one", "bool_xor"):
                cons.append([_CP_CHECKED[kind], enforcement, list(getattr(c, kind).literals)])
            elif kind == "all_diff":
                cons.append(["alldiff", enforcement, [_cp_expr(e) for e in c.all_diff.exprs]])
            elif kind in ("lin_max", "int_prod", "int_div", "int_mod"):
                arg = getattr(c, kind)
                exprs = [_cp_expr(e) for e in arg.exprs]
                if not exprs or (kind in ("int_div", "int_mod") and len(exprs) != 2):
                    raise ValueError("unusual arity")
                cons.append([_CP_CHECKED[kind], enforcement, _cp_expr(arg.target), exprs])
            elif kind == "interval":
                iv = c.interval
                cons.append(["iv", enforcement, _cp_expr(iv.start), _cp_expr(iv.end), _cp_expr(iv.size)])
            elif kind == "element" and len(c.element.exprs):
                el = c.element
                cons.append(["elem", enforcement, _cp_expr(el.linear_index), _cp_expr(el.linear_target),
                             [_cp_expr(e) for e in el.exprs]])
            else:
                raise ValueError("not checked")
        except ValueError:
            unchecked[kind] = unchecked.get(kind, 0) + 1
    out: dict[str, Any] = {"names": names, "dom": [list(v.domain) for v in variables], "cons": cons,
                           "unchecked": unchecked}
    if len(set(names)) < len(names):
        out["x"] = [int(v) for v in values]
    if has_float_obj:
        o = proto.floating_point_objective
        out["obj"] = ["float", list(o.vars), list(o.coeffs), float(o.offset)]
    elif has_int_obj:
        o = proto.objective
        if any(v < 0 for v in o.vars):
            out["unchecked"]["objective"] = 1
        else:
            out["obj"] = ["int", list(o.vars), list(o.coeffs), float(o.offset), float(o.scaling_factor)]
    return out


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
    if _state["capture_mps"]:
        d.model_mps, d.check = _mathopt_mps(model)
    return d


_MATHOPT_EXPORT: list[Any] = []  # mathopt.Model.export_model, bound when the hook is installed


def _mathopt_mps(model: Any) -> tuple[str | None, dict[str, Any]]:
    """The MathOpt model as MPS (``write_mps``). Columns and rows are named ``_v<id>`` / ``_c<id>`` (MathOpt
    allows repeated and missing names), with the column -> name map for the parent. ``linear``: the model has nothing
    MPS cannot hold here (quadratic terms, cones, SOS, indicators, auxiliary objectives), so an intact capture always
    sends its MPS."""
    proto = (_MATHOPT_EXPORT[0] if _MATHOPT_EXPORT else type(model).export_model)(model)
    linear = not (len(proto.objective.quadratic_coefficients.row_ids) or len(proto.quadratic_constraints)
                  or len(proto.second_order_cone_constraints) or len(proto.sos1_constraints)
                  or len(proto.sos2_constraints) or len(proto.indicator_constraints)
                  or len(proto.auxiliary_objectives))
    var, obj, lin, mat = proto.variables, proto.objective, proto.linear_constraints, proto.linear_constraint_matrix
    ids, names = list(var.ids), list(var.names)
    labels = {f"_v{i}": (names[k] if k < len(names) and names[k] else f"x{i}") for k, i in enumerate(ids)}
    if not linear:
        return None, {"labels": labels, "linear": linear}
    col = {i: k for k, i in enumerate(ids)}
    row = {i: k for k, i in enumerate(lin.ids)}
    cost = dict(zip(obj.linear_coefficients.ids, obj.linear_coefficients.values, strict=True))
    integers = list(var.integers) or [False] * len(ids)
    columns = [(f"_v{i}", lo, up, bool(integer), cost.get(i, 0.0))
               for i, lo, up, integer in zip(ids, var.lower_bounds, var.upper_bounds, integers, strict=True)]
    entries = [(row[r], col[c], a) for r, c, a in zip(mat.row_ids, mat.column_ids, mat.coefficients, strict=True)]
    rows = [(f"_c{i}", lo, up) for i, lo, up in zip(lin.ids, lin.lower_bounds, lin.upper_bounds, strict=True)]
    return write_mps(obj.maximize, obj.offset, columns, entries, rows), {"labels": labels, "linear": linear}


@hook("ortools.pywraplp", ("ortools.linear_solver.pywraplp",))
def install_lp() -> None:
    from ortools.linear_solver import linear_solver_pb2, pywraplp

    # Bound before the program runs: a program that replaces the exporter cannot hand the parent another model.
    _LP_EXPORT[:] = [pywraplp.Solver.ExportModelToProto, linear_solver_pb2.MPModelProto]
    patch_solves("ortools", pywraplp.Solver, ("Solve",), _describe_lp, kind=LINEAR_SOLVER)


# model_builder's SolveStatus by name (OPTIMAL, FEASIBLE: stopped at a limit with a solution, ...).
_MB_STATUS = {"OPTIMAL": SolveStatus.OPTIMAL, "FEASIBLE": SolveStatus.TIME_LIMIT_WITH_SOLUTION,
              "INFEASIBLE": SolveStatus.INFEASIBLE, "UNBOUNDED": SolveStatus.UNBOUNDED, "ABNORMAL": SolveStatus.NUMERIC,
              "NOT_SOLVED": SolveStatus.TIME_LIMIT_NO_SOLUTION, "CANCELLED_BY_USER": SolveStatus.TIME_LIMIT_NO_SOLUTION}
_MB_EXPORT: list[Any] = []  # model_builder.Model.export_to_proto, bound when the hook is installed


def _describe_mb(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> Described:
    """OR-Tools' ``model_builder`` (``Solver(name).solve(model)``): the model from its MPModelProto, written as MPS
    by ``write_mps`` unless it holds what MPS cannot (indicator constraints: ``check["linear"]`` false)."""
    solver, model = args[0], (args[1] if len(args) > 1 else kwargs.get("model"))
    status = _MB_STATUS.get(getattr(result, "name", str(result)), SolveStatus.ERROR)
    proto = _MB_EXPORT[0](model)
    cols = list(proto.variable)
    ints = [v for v in cols if v.is_integer]
    d = Described(status=status, solver="ortools-model_builder", solver_version=_version(), n_vars=len(cols),
                  n_int_vars=len(ints), n_bin_vars=sum(1 for v in ints if v.lower_bound >= 0 and v.upper_bound <= 1),
                  n_constraints=len(proto.constraint) + len(proto.general_constraint),
                  solve_time_s=float(solver.wall_time), sense="maximize" if proto.maximize else "minimize")
    names = [v.name or f"variable#{i}" for i, v in enumerate(cols)]  # what an unnamed Variable's .name reads
    if status in (SolveStatus.OPTIMAL, SolveStatus.TIME_LIMIT_WITH_SOLUTION):
        d.objective = float(solver.objective_value)
        d.bound = float(solver.best_objective_bound) if ints else d.objective
        d.solution = capped_solution((v.name, float(solver.value(v))) for v in model.get_variables())
        if ints and d.objective is not None and d.bound is not None:
            d.mip_gap = abs(d.objective - d.bound) / max(abs(d.objective), 1e-10)
    if _state["capture_mps"]:
        d.model_mps = _mp_mps(proto, names)
        d.check = {"linear": d.model_mps is not None}
    return d


@hook("ortools.model_builder", ("ortools.linear_solver.python.model_builder",))
def install_model_builder() -> None:
    from ortools.linear_solver.python import model_builder as mb

    _MB_EXPORT[:] = [mb.Model.export_to_proto]
    patch_solves("ortools", mb.Solver, ("solve",), _describe_mb, kind=MODEL_BUILDER)


@hook("ortools.cp_model", ("ortools.sat.python.cp_model",))
def install_cp() -> None:
    from ortools.sat.python import cp_model

    for name in ("solve", "Solve"):
        if name in cp_model.CpSolver.__dict__:
            pinned = _pin_cp_workers(cp_model.CpSolver.__dict__[name])
            patch(cp_model.CpSolver, name, wrap_solve("ortools", pinned, _describe_cp, kind=CP_SAT))


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

    _MATHOPT_EXPORT[:] = [mathopt.Model.export_model]
    wrapper = wrap_solve("ortools", solve_mod.solve, _describe_mathopt, kind=MATHOPT)
    patch(solve_mod, "solve", wrapper)
    patch(mathopt, "solve", wrapper)
