"""Ground truth: every instance solved by two independent solvers, straight from the IR.

``solve_with(model, solver)`` builds the model in one solver's own API (no MPS text in between, so a bug in
``to_mps`` cannot hide in both answers) and returns a ``SolverRun`` with a normalised status. Solvers register
themselves by name in ``SOLVERS``: ``highs`` (highspy), ``gurobi`` (gurobipy), ``scip`` (OR-Tools: pywraplp for
linear models, MathOpt for a quadratic objective) and ``cp-sat`` (pure-integer models with integer data).

``solve_ground_truth(model)`` solves with HiGHS and a second solver (Gurobi when the model fits the bundled
size-limited licence, else CP-SAT or SCIP) and accepts the answer only if both reach the same status and, when
optimal, objectives within ``|a - b| <= atol + rtol * max(|a|, |b|)``. Anything else is ``disputed`` with a reason.

Every solver runs single-threaded (reproducible, and fair on a shared machine), silent, and with MIP gaps
closed to ~1e-9 so that two correct solvers agree to 1e-6 instead of to their default 1e-4 gaps.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from functools import cache

from solvers.errors import unknown_name
from solvers.ir import ConSense, Model, ObjSense, VarType
from solvers.records import GroundTruth, SolverRun, SolveStatus
from solvers.registry import by_name
from solvers.stdout import fd1_redirected

RTOL = 1e-6
ATOL = 1e-6
MIP_GAP = 1e-9
TIME_LIMIT_S = 60.0
# The bundled size-limited Gurobi licence (pip gurobipy): beyond these it raises error 10010.
GUROBI_MAX_VARS = 2000
GUROBI_MAX_CONS = 2000
GUROBI_MAX_QUAD_VARS = 200

SolverFn = Callable[[Model, float], SolverRun]
SOLVERS: dict[str, SolverFn] = {}


def solver(name: str) -> Callable[[SolverFn], SolverFn]:
    """Decorator: register a ground-truth solver under ``name``."""
    return by_name(SOLVERS, name)


def solve_with(model: Model, solver: str, time_limit_s: float = TIME_LIMIT_S) -> SolverRun:
    """Solve ``model`` with one registered solver. Never raises for solver trouble: it is in the status."""
    if solver not in SOLVERS:
        raise unknown_name("ground-truth solver", solver, list(SOLVERS))
    return SOLVERS[solver](model, time_limit_s)


def quadratic_vars(model: Model) -> int:
    return len({v for a, b, _ in model.objective.quadratic for v in (a, b)})


def fits_gurobi_licence(model: Model) -> bool:
    return (len(model.variables) <= GUROBI_MAX_VARS and len(model.constraints) <= GUROBI_MAX_CONS
            and quadratic_vars(model) <= GUROBI_MAX_QUAD_VARS)


def cp_sat_compatible(model: Model) -> bool:
    """CP-SAT solves it exactly: integer variables with finite bounds, integer coefficients, linear objective."""
    if model.objective.quadratic:
        return False
    if any(v.vtype == VarType.CONTINUOUS or v.lb is None or v.ub is None for v in model.variables):
        return False
    numbers = [c for con in model.constraints for _, c in con.terms] + [con.rhs for con in model.constraints]
    numbers += [c for _, c in model.objective.terms] + [model.objective.constant]
    numbers += [b for v in model.variables for b in (v.lb, v.ub) if b is not None]
    return all(float(x).is_integer() for x in numbers)


def second_solvers(model: Model) -> list[str]:
    """The independent solvers to try after HiGHS, in order (the next one is used if one hits its licence)."""
    fallback = "cp-sat" if cp_sat_compatible(model) else "scip"
    return ["gurobi", fallback] if fits_gurobi_licence(model) else [fallback]


def solve_ground_truth(model: Model, time_limit_s: float = TIME_LIMIT_S) -> GroundTruth:
    """Two independent solves of ``model``; the answer, or a dispute that says why there is none."""
    primary = solve_with(model, "highs", time_limit_s)
    runs = [primary]
    for name in second_solvers(model):
        runs.append(solve_with(model, name, time_limit_s))
        if runs[-1].status != SolveStatus.LICENSE_LIMIT:
            break
    return judge(primary, runs[-1], tuple(runs))


def judge(primary: SolverRun, second: SolverRun, runs: tuple[SolverRun, ...] | None = None,
          rtol: float = RTOL, atol: float = ATOL) -> GroundTruth:
    """The ground truth of two runs: agreed, or ``disputed`` with the reason. ``runs`` (default both) is kept."""
    reason = disagreement(primary, second, rtol, atol)
    return GroundTruth(
        status=primary.status,
        objective=primary.objective,
        solution=primary.solution,
        runs=runs if runs is not None else (primary, second),
        disputed=reason is not None,
        dispute_reason=reason or "",
        agreement_rtol=rtol,
        agreement_atol=atol,
    )


_CONCLUSIVE = {SolveStatus.OPTIMAL, SolveStatus.INFEASIBLE, SolveStatus.UNBOUNDED}


def disagreement(a: SolverRun, b: SolverRun, rtol: float = RTOL, atol: float = ATOL) -> str | None:
    """Why two runs do not make a ground truth, or None when they agree."""
    for run in (a, b):
        if run.status not in _CONCLUSIVE:
            return f"{run.solver} did not conclude: {run.status.value}" + (f" ({run.message})" if run.message else "")
    if a.status != b.status:
        return f"status differs: {a.solver} {a.status.value}, {b.solver} {b.status.value}"
    if a.status == SolveStatus.OPTIMAL:
        assert a.objective is not None and b.objective is not None
        if abs(a.objective - b.objective) > atol + rtol * max(abs(a.objective), abs(b.objective)):
            return f"objective differs: {a.solver} {a.objective!r}, {b.solver} {b.objective!r}"
    return None


# ---- HiGHS (highspy) --------------------------------------------------------------------------------


@solver("highs")
def _highs(model: Model, time_limit_s: float) -> SolverRun:
    import highspy
    import numpy as np

    n = len(model.variables)
    pos = {v.name: i for i, v in enumerate(model.variables)}
    quadratic = bool(model.objective.quadratic)
    if quadratic and any(v.vtype != VarType.CONTINUOUS for v in model.variables):
        return SolverRun(solver="highs", version=_highs_version(), status=SolveStatus.ERROR,
                         message="HiGHS cannot solve mixed-integer quadratic programs")
    # HiGHS takes a QP as min c'x + 1/2 x'Qx with Q positive semidefinite, so a maximisation is negated.
    flip = -1.0 if quadratic and model.objective.sense == ObjSense.MAXIMIZE else 1.0
    lp = highspy.HighsLp()
    lp.num_col_ = n
    lp.num_row_ = len(model.constraints)
    cost = np.zeros(n)
    for v, c in model.objective.terms:
        cost[pos[v]] += c
    lp.col_cost_ = flip * cost
    lp.offset_ = flip * model.objective.constant
    inf = highspy.kHighsInf
    lp.col_lower_ = np.array([-inf if v.lb is None else v.lb for v in model.variables], dtype=float)
    lp.col_upper_ = np.array([inf if v.ub is None else v.ub for v in model.variables], dtype=float)
    lp.row_lower_ = np.array([-inf if c.sense == ConSense.LE else c.rhs for c in model.constraints], dtype=float)
    lp.row_upper_ = np.array([inf if c.sense == ConSense.GE else c.rhs for c in model.constraints], dtype=float)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = compressed(
        [(pos[v], coef) for v, coef in c.terms] for c in model.constraints)
    lp.sense_ = highspy.ObjSense.kMaximize if model.objective.sense == ObjSense.MAXIMIZE and not quadratic \
        else highspy.ObjSense.kMinimize
    if any(v.vtype != VarType.CONTINUOUS for v in model.variables):
        lp.integrality_ = [highspy.HighsVarType.kContinuous if v.vtype == VarType.CONTINUOUS
                           else highspy.HighsVarType.kInteger for v in model.variables]
    h = new_highs()
    for option, setting in (("output_flag", False), ("threads", 1), ("time_limit", float(time_limit_s)),
                            ("mip_rel_gap", MIP_GAP), ("mip_abs_gap", MIP_GAP), ("random_seed", 0)):
        h.setOptionValue(option, setting)
    h.passModel(lp)
    if quadratic:
        h.passHessian(_hessian(model, pos, flip, highspy))
        # HiGHS 1.16's QP solver with its default regularisation (1e-7) finds some convex QPs' optimum and never
        # declares it, running to the time limit (economic_dispatch: 5 of 36 instances at 2 s); without it every
        # QP family's instance ends optimal at once with the same objective (2026-12-06: 5 QP families x d1-3 x 12).
        h.setOptionValue("qp_regularization_value", 0.0)
    start = time.perf_counter()
    status = run_highs(h)
    elapsed = time.perf_counter() - start
    S = highspy.HighsModelStatus
    has_solution = h.getInfo().primal_solution_status == 2  # kSolutionStatusFeasible
    mapping = {S.kOptimal: SolveStatus.OPTIMAL, S.kInfeasible: SolveStatus.INFEASIBLE,
               S.kUnbounded: SolveStatus.UNBOUNDED, S.kUnboundedOrInfeasible: SolveStatus.INF_OR_UNBD,
               S.kInterrupt: SolveStatus.INTERRUPTED, S.kHighsInterrupt: SolveStatus.INTERRUPTED,
               S.kModelEmpty: SolveStatus.OPTIMAL}
    if status in (S.kTimeLimit, S.kIterationLimit, S.kSolutionLimit):
        normal = SolveStatus.TIME_LIMIT_WITH_SOLUTION if has_solution else SolveStatus.TIME_LIMIT_NO_SOLUTION
    else:
        normal = mapping.get(status, SolveStatus.ERROR)
    objective, solution = None, {}
    if normal in (SolveStatus.OPTIMAL, SolveStatus.TIME_LIMIT_WITH_SOLUTION):
        objective = flip * h.getInfo().objective_function_value
        if status == S.kModelEmpty:
            objective = model.objective.constant
        values = h.getSolution().col_value
        solution = {v.name: float(values[i]) for i, v in enumerate(model.variables)} if len(values) == n else {}
    return SolverRun(solver="highs", version=_highs_version(), status=normal, objective=objective,
                     solution=solution, solve_time_s=elapsed,
                     message="" if normal != SolveStatus.ERROR else h.modelStatusToString(status))


_banner_shown = False


def new_highs():  # type: ignore[no-untyped-def]
    """A Highs instance; the first one in a process prints a banner to fd 1 before options exist, so that one
    is built with fd 1 pointed at /dev/null (ground truth is silent: stdout may be a program's channel)."""
    import highspy

    global _banner_shown
    if _banner_shown:
        return highspy.Highs()
    with fd1_redirected():
        h = highspy.Highs()
    _banner_shown = True
    return h


def run_highs(h):  # type: ignore[no-untyped-def]
    """Run a loaded Highs to its model status. Presolve proves only "infeasible or unbounded"; then a second run
    without it lets the simplex tell which."""
    import highspy

    h.run()
    status = h.getModelStatus()
    if status == highspy.HighsModelStatus.kUnboundedOrInfeasible:
        h.setOptionValue("presolve", "off")
        h.run()
        status = h.getModelStatus()
    return status


def _hessian(model: Model, pos: dict[str, int], flip: float, highspy):  # type: ignore[no-untyped-def]
    """The lower triangle, column-wise, of Q with 1/2 x'Qx = sum(coef * x_i * x_j)."""
    entries: dict[tuple[int, int], float] = {}
    for a, b, coef in model.objective.quadratic:
        i, j = pos[a], pos[b]
        row, col = max(i, j), min(i, j)
        entries[(row, col)] = entries.get((row, col), 0.0) + flip * (2 * coef if i == j else coef)
    n = len(model.variables)
    cols: list[list[tuple[int, float]]] = [[] for _ in range(n)]
    for (row, col), val in sorted(entries.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        cols[col].append((row, val))
    hess = highspy.HighsHessian()
    hess.dim_ = n
    hess.format_ = highspy.HessianFormat.kTriangular
    hess.start_, hess.index_, hess.value_ = compressed(cols)
    return hess


def compressed(vectors: Iterable[Iterable[tuple[int, float]]]):  # type: ignore[no-untyped-def]
    """HiGHS's compressed sparse format (``start``, ``index``, ``value`` as int32, int32, float64 arrays) of sparse
    vectors given as (index, value) pairs, kept in the order given: rows of a row-wise matrix, columns of a
    column-wise one or of a triangular Hessian."""
    import numpy as np

    start, index, value = [0], [], []
    for vector in vectors:
        for i, v in vector:
            index.append(i)
            value.append(v)
        start.append(len(index))
    return np.array(start, dtype=np.int32), np.array(index, dtype=np.int32), np.array(value, dtype=float)


@cache
def _highs_version() -> str:
    import highspy

    return "highspy " + ".".join(str(x) for x in (highspy.HIGHS_VERSION_MAJOR, highspy.HIGHS_VERSION_MINOR,
                                                   highspy.HIGHS_VERSION_PATCH)) \
        if hasattr(highspy, "HIGHS_VERSION_MAJOR") else "highspy " + _pkg_version("highspy")


def _pkg_version(dist: str) -> str:
    from solvers.versions import package_version

    return package_version(dist) or "unknown"


# ---- Gurobi (gurobipy) ------------------------------------------------------------------------------


@cache
def _gurobi_env():  # type: ignore[no-untyped-def]
    """One silent environment per process (starting one checks the licence, which costs time)."""
    import gurobipy as gp

    env = gp.Env(empty=True)
    env.setParam("OutputFlag", 0)
    env.start()
    return env


@solver("gurobi")
def _gurobi(model: Model, time_limit_s: float) -> SolverRun:
    import gurobipy as gp
    from gurobipy import GRB

    version = "gurobipy " + ".".join(str(x) for x in gp.gurobi.version())
    start = time.perf_counter()
    try:
        m = gp.Model(model.name, env=_gurobi_env())
        vtype = {VarType.CONTINUOUS: GRB.CONTINUOUS, VarType.INTEGER: GRB.INTEGER, VarType.BINARY: GRB.BINARY}
        x = {v.name: m.addVar(lb=-GRB.INFINITY if v.lb is None else v.lb, ub=GRB.INFINITY if v.ub is None else v.ub,
                              vtype=vtype[v.vtype], name=v.name) for v in model.variables}
        sense = {ConSense.LE: GRB.LESS_EQUAL, ConSense.GE: GRB.GREATER_EQUAL, ConSense.EQ: GRB.EQUAL}
        for c in model.constraints:
            m.addLConstr(gp.LinExpr([coef for _, coef in c.terms], [x[v] for v, _ in c.terms]), sense[c.sense],
                         c.rhs, name=c.name)
        obj = gp.QuadExpr(gp.LinExpr([c for _, c in model.objective.terms], [x[v] for v, _ in model.objective.terms]))
        for a, b, coef in model.objective.quadratic:
            obj.add(x[a] * x[b], coef)
        obj.addConstant(model.objective.constant)
        m.setObjective(obj, GRB.MAXIMIZE if model.objective.sense == ObjSense.MAXIMIZE else GRB.MINIMIZE)
        m.Params.Threads = 1
        m.Params.TimeLimit = time_limit_s
        m.Params.MIPGap = MIP_GAP
        m.Params.MIPGapAbs = MIP_GAP
        m.Params.Seed = 0
        m.optimize()
        if m.Status == GRB.INF_OR_UNBD:
            # Dual reductions in presolve only prove "one of the two"; without them Gurobi says which.
            m.Params.DualReductions = 0
            m.optimize()
        if m.Status == GRB.INF_OR_UNBD:
            # Still undecided (happens for QPs): a feasibility solve settles it, since a feasible model that
            # is "infeasible or unbounded" is unbounded.
            m.setObjective(gp.LinExpr())
            m.optimize()
            if m.Status in (GRB.OPTIMAL, GRB.INFEASIBLE):
                status = SolveStatus.UNBOUNDED if m.Status == GRB.OPTIMAL else SolveStatus.INFEASIBLE
                m.dispose()
                return SolverRun(solver="gurobi", version=version, status=status,
                                 solve_time_s=time.perf_counter() - start)
    except gp.GurobiError as e:
        status = SolveStatus.LICENSE_LIMIT if e.errno == 10010 else SolveStatus.ERROR
        return SolverRun(solver="gurobi", version=version, status=status, message=f"GurobiError {e.errno}: {e}",
                         solve_time_s=time.perf_counter() - start)
    elapsed = time.perf_counter() - start
    mapping = {GRB.OPTIMAL: SolveStatus.OPTIMAL, GRB.INFEASIBLE: SolveStatus.INFEASIBLE,
               GRB.UNBOUNDED: SolveStatus.UNBOUNDED, GRB.INF_OR_UNBD: SolveStatus.INF_OR_UNBD,
               GRB.NUMERIC: SolveStatus.NUMERIC, GRB.INTERRUPTED: SolveStatus.INTERRUPTED}
    if m.Status in (GRB.TIME_LIMIT, GRB.ITERATION_LIMIT, GRB.NODE_LIMIT, GRB.SOLUTION_LIMIT):
        status = SolveStatus.TIME_LIMIT_WITH_SOLUTION if m.SolCount else SolveStatus.TIME_LIMIT_NO_SOLUTION
    else:
        status = mapping.get(m.Status, SolveStatus.ERROR)
    objective, solution = None, {}
    if m.SolCount and status in (SolveStatus.OPTIMAL, SolveStatus.TIME_LIMIT_WITH_SOLUTION):
        objective = float(m.ObjVal)
        solution = {name: float(var.X) for name, var in x.items()}
    m.dispose()
    return SolverRun(solver="gurobi", version=version, status=status, objective=objective, solution=solution,
                     solve_time_s=elapsed, message="" if status != SolveStatus.ERROR else f"Gurobi status {m.Status}")


# ---- SCIP (OR-Tools pywraplp; MathOpt for a quadratic objective) ------------------------------------


@solver("scip")
def _scip(model: Model, time_limit_s: float) -> SolverRun:
    if model.objective.quadratic:
        return _scip_mathopt(model, time_limit_s)
    from ortools.linear_solver import pywraplp

    version = "ortools " + _pkg_version("ortools") + " SCIP"
    s = pywraplp.Solver.CreateSolver("SCIP")
    if s is None:
        return SolverRun(solver="scip", version=version, status=SolveStatus.ERROR, message="SCIP is not available")
    s.SuppressOutput()
    s.SetNumThreads(1)
    s.SetTimeLimit(int(time_limit_s * 1000))
    inf = s.infinity()
    x = {}
    for v in model.variables:
        lb, ub = -inf if v.lb is None else v.lb, inf if v.ub is None else v.ub
        x[v.name] = s.NumVar(lb, ub, v.name) if v.vtype == VarType.CONTINUOUS else s.IntVar(lb, ub, v.name)
    for c in model.constraints:
        lo = -inf if c.sense == ConSense.LE else c.rhs
        hi = inf if c.sense == ConSense.GE else c.rhs
        row = s.RowConstraint(lo, hi, c.name)
        for v, coef in c.terms:
            row.SetCoefficient(x[v], coef)
    obj = s.Objective()
    for v, coef in model.objective.terms:
        obj.SetCoefficient(x[v], coef)
    obj.SetOffset(model.objective.constant)
    if model.objective.sense == ObjSense.MAXIMIZE:
        obj.SetMaximization()
    else:
        obj.SetMinimization()
    params = pywraplp.MPSolverParameters()
    params.SetDoubleParam(params.RELATIVE_MIP_GAP, MIP_GAP)
    start = time.perf_counter()
    code = s.Solve(params)
    elapsed = time.perf_counter() - start
    S = pywraplp.Solver
    mapping = {S.OPTIMAL: SolveStatus.OPTIMAL, S.INFEASIBLE: SolveStatus.INFEASIBLE, S.UNBOUNDED: SolveStatus.UNBOUNDED,
               S.FEASIBLE: SolveStatus.TIME_LIMIT_WITH_SOLUTION, S.NOT_SOLVED: SolveStatus.TIME_LIMIT_NO_SOLUTION}
    status = mapping.get(code, SolveStatus.ERROR)
    objective, solution = None, {}
    if status in (SolveStatus.OPTIMAL, SolveStatus.TIME_LIMIT_WITH_SOLUTION):
        objective = float(obj.Value())
        solution = {name: float(var.solution_value()) for name, var in x.items()}
    return SolverRun(solver="scip", version=version, status=status, objective=objective, solution=solution,
                     solve_time_s=elapsed, message="" if status != SolveStatus.ERROR else f"pywraplp status {code}")


def _scip_mathopt(model: Model, time_limit_s: float) -> SolverRun:
    from datetime import timedelta

    from ortools.math_opt.python import mathopt

    version = "ortools " + _pkg_version("ortools") + " SCIP (MathOpt)"
    mo = mathopt.Model(name=model.name)
    x = {v.name: mo.add_variable(lb=-math.inf if v.lb is None else v.lb, ub=math.inf if v.ub is None else v.ub,
                                 is_integer=v.vtype != VarType.CONTINUOUS, name=v.name) for v in model.variables}
    for c in model.constraints:
        expr = mathopt.LinearSum(coef * x[v] for v, coef in c.terms)
        lo = -math.inf if c.sense == ConSense.LE else c.rhs
        hi = math.inf if c.sense == ConSense.GE else c.rhs
        mo.add_linear_constraint(lb=lo, ub=hi, expr=expr, name=c.name)
    obj = mathopt.QuadraticSum([*(coef * x[v] for v, coef in model.objective.terms),
                                *(coef * x[a] * x[b] for a, b, coef in model.objective.quadratic),
                                model.objective.constant])
    mo.set_objective(obj, is_maximize=model.objective.sense == ObjSense.MAXIMIZE)
    params = mathopt.SolveParameters(threads=1, relative_gap_tolerance=MIP_GAP, absolute_gap_tolerance=MIP_GAP,
                                     time_limit=timedelta(seconds=time_limit_s), enable_output=False)
    start = time.perf_counter()
    try:
        result = mathopt.solve(mo, mathopt.SolverType.GSCIP, params=params)
    except Exception as e:  # noqa: BLE001  (a solver failure is a status, not a crash of the whole round)
        return SolverRun(solver="scip", version=version, status=SolveStatus.ERROR, message=f"{type(e).__name__}: {e}")
    elapsed = time.perf_counter() - start
    R = mathopt.TerminationReason
    mapping = {R.OPTIMAL: SolveStatus.OPTIMAL, R.INFEASIBLE: SolveStatus.INFEASIBLE, R.UNBOUNDED: SolveStatus.UNBOUNDED,
               R.INFEASIBLE_OR_UNBOUNDED: SolveStatus.INF_OR_UNBD, R.NUMERICAL_ERROR: SolveStatus.NUMERIC}
    reason = result.termination.reason
    if reason in (R.FEASIBLE, R.NO_SOLUTION_FOUND):
        status = SolveStatus.TIME_LIMIT_WITH_SOLUTION if result.has_primal_feasible_solution() \
            else SolveStatus.TIME_LIMIT_NO_SOLUTION
    else:
        status = mapping.get(reason, SolveStatus.ERROR)
    objective, solution = None, {}
    if status in (SolveStatus.OPTIMAL, SolveStatus.TIME_LIMIT_WITH_SOLUTION):
        objective = float(result.objective_value())
        values = result.variable_values()
        solution = {name: float(values[var]) for name, var in x.items()}
    return SolverRun(solver="scip", version=version, status=status, objective=objective, solution=solution,
                     solve_time_s=elapsed, message="" if status != SolveStatus.ERROR else f"MathOpt {reason.name}")


# ---- CP-SAT -----------------------------------------------------------------------------------------


@solver("cp-sat")
def _cp_sat(model: Model, time_limit_s: float) -> SolverRun:
    from ortools.sat.python import cp_model

    version = "ortools " + _pkg_version("ortools") + " CP-SAT"
    if not cp_sat_compatible(model):
        return SolverRun(solver="cp-sat", version=version, status=SolveStatus.ERROR,
                         message="CP-SAT needs integer variables with finite bounds and integer coefficients")
    cp = cp_model.CpModel()
    x = {}
    for v in model.variables:
        assert v.lb is not None and v.ub is not None
        x[v.name] = cp.NewIntVar(int(v.lb), int(v.ub), v.name)
    for c in model.constraints:
        expr = cp_model.LinearExpr.WeightedSum([x[v] for v, _ in c.terms], [int(coef) for _, coef in c.terms])
        rhs = int(c.rhs)
        cp.Add(expr <= rhs if c.sense == ConSense.LE else expr >= rhs if c.sense == ConSense.GE else expr == rhs)
    obj = cp_model.LinearExpr.WeightedSum([x[v] for v, _ in model.objective.terms],
                                          [int(c) for _, c in model.objective.terms])
    if model.objective.sense == ObjSense.MAXIMIZE:
        cp.Maximize(obj)
    else:
        cp.Minimize(obj)
    s = cp_model.CpSolver()
    s.parameters.num_workers = 1
    s.parameters.max_time_in_seconds = time_limit_s
    s.parameters.random_seed = 0
    start = time.perf_counter()
    code = s.Solve(cp)
    elapsed = time.perf_counter() - start
    mapping = {cp_model.OPTIMAL: SolveStatus.OPTIMAL, cp_model.INFEASIBLE: SolveStatus.INFEASIBLE,
               cp_model.FEASIBLE: SolveStatus.TIME_LIMIT_WITH_SOLUTION,
               cp_model.UNKNOWN: SolveStatus.TIME_LIMIT_NO_SOLUTION, cp_model.MODEL_INVALID: SolveStatus.ERROR}
    status = mapping.get(code, SolveStatus.ERROR)
    objective, solution = None, {}
    if status in (SolveStatus.OPTIMAL, SolveStatus.TIME_LIMIT_WITH_SOLUTION):
        # The constant is added here: CP-SAT's objective is the integer part only.
        objective = float(s.ObjectiveValue()) + model.objective.constant
        solution = {name: float(s.Value(var)) for name, var in x.items()}
    return SolverRun(solver="cp-sat", version=version, status=status, objective=objective, solution=solution,
                     solve_time_s=elapsed, message="" if status != SolveStatus.ERROR else s.StatusName(code))
