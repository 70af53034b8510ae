"""CVXPY: ``Problem.solve`` (``cvxpy.Problem`` is ``cvxpy.problems.problem.Problem``, one class).

CVXPY compiles the program's problem and hands it to one of its solver interfaces (HiGHS, Clarabel, SCS, OSQP,
Gurobi...). The record names the solver that answered (``solver_stats.solver_name``, lower-cased) with its package's
version and CVXPY's, keeps ``problem.value`` in the program's stated sense (CVXPY reports the original sense; it
minimises the negation of a maximisation internally), and counts scalars: ``n_vars`` is the number of scalar
variable entries, ``n_constraints`` the number of scalar constraint rows. The solve time is the solver's own
(``solver_stats.solve_time``) when it reports one, else the whole call's.

Statuses: optimal / infeasible / unbounded / infeasible_or_unbounded as such; ``user_limit`` is a limit, with or
without a solution; the ``*_inaccurate`` statuses are ``numeric`` (as Gurobi's SUBOPTIMAL and MathOpt's IMPRECISE
are): the solver stopped at a point it does not vouch for, so the record keeps its value but claims nothing the
parent checks; ``solver_error`` (which CVXPY raises as ``SolverError``) is ``error``.

What is checked: a problem that is an LP or MILP as written (an affine objective; constraints ``<=`` / ``>=`` /
``==`` between affine expressions, or ``Zero`` / ``NonNeg`` / ``NonPos`` of one; variables with no attributes
beyond nonneg, nonpos, boolean, integer and numeric or parametric bounds; parameters replaced by their values)
is written as MPS by ``write_mps`` from the program's own expressions (CVXPY's affine canonicalisation of each
one, not the solving chain, whose auxiliary columns have no values in the solution), one column per scalar
variable entry in Fortran order, named ``name``, ``name[i]`` or ``name[i,j]`` as the solution is. The parent then
checks the claimed point and objective and re-solves no-solution claims. Nothing else gets a model and every such
record goes unchecked (``check["linear"]`` false), never accused: a QP, a cone, a piecewise-linear atom (``abs``,
``maximum``: CVXPY's own reformulation adds columns the program never sees), a DGP / DQCP / NLP solve, a custom
``method``, an answer from a first-order solver (SCS, OSQP, PDLP...: their "optimal" holds to 1e-3..1e-5, looser
than the parent's tolerances), a continuous solve stopped at a limit, and a model too large for the parent to read.

Hardening: the wrapped ``solve`` and the methods it runs the solve through (``_solve``, ``unpack_results``,
``unpack``, ``get_problem_data``) and the ``status`` / ``value`` / ``solver_stats`` properties are patched in place
(``patch``): a program that replaces one, or puts the unwrapped ``solve`` back, is ``tampered``. The describer reads
the problem and its variables through CVXPY's own classes (property getters bound at install), so a subclass or an
instance attribute changes what the program prints, not the record. A subclass that overrides the solve path itself
forges at most a claim that the parent's check of the model then refutes (linear) or that goes unchecked.
"""

from __future__ import annotations

import math
from typing import Any

from solvers.sandbox.capture import (
    Described,
    _state,
    capped_solution,
    finite,
    hook,
    license_or_error,
    patch,
    wrap_solve,
    write_mps,
)
from solvers.sandbox.verify.common import CVXPY, MAX_MPS_CHARS
from solvers.statuses import SolveStatus

_STATUS = {"optimal": SolveStatus.OPTIMAL, "infeasible": SolveStatus.INFEASIBLE,
           "unbounded": SolveStatus.UNBOUNDED, "infeasible_or_unbounded": SolveStatus.INF_OR_UNBD,
           "optimal_inaccurate": SolveStatus.NUMERIC, "infeasible_inaccurate": SolveStatus.NUMERIC,
           "unbounded_inaccurate": SolveStatus.NUMERIC, "solver_error": SolveStatus.ERROR}
# Solvers whose answers hold to 1e-6 or tighter (simplex, interior point, branch and bound): their points and
# no-solution claims may be checked against the model. First-order methods (SCS, OSQP, PDLP, cuOpt...) stop at
# 1e-3..1e-5 relative, which the parent's 1e-4 feasibility tolerance would read as a forged point.
_ACCURATE = {"HIGHS", "GLOP", "CLARABEL", "ECOS", "GUROBI", "CPLEX", "COPT", "SCIP", "SCIPY", "CBC", "GLPK",
             "GLPK_MI", "MOSEK", "XPRESS", "CVXOPT"}
# Solver name -> the distribution whose version the record names.
_DISTS = {"HIGHS": "highspy", "CLARABEL": "clarabel", "SCS": "scs", "OSQP": "osqp", "SCIPY": "scipy",
          "GLOP": "ortools", "PDLP": "ortools", "GUROBI": "gurobipy", "CPLEX": "cplex", "COPT": "coptpy",
          "SCIP": "pyscipopt", "ECOS": "ecos", "ECOS_BB": "ecos", "MOSEK": "mosek", "XPRESS": "xpress",
          "CBC": "cylp", "GLPK": "cvxopt", "GLPK_MI": "cvxopt", "CVXOPT": "cvxopt", "PIQP": "piqp",
          "PROXQP": "proxsuite", "DAQP": "daqp", "QOCO": "qoco"}
# Methods the solve runs through, looked up on the class: replacing one is tampering (only ``solve`` is wrapped).
_SOLVE_PATH = ("_solve", "unpack_results", "unpack", "get_problem_data", "variables")
_PROPERTIES = ("status", "value", "solver_stats", "objective", "constraints")
# Variables a size-limited licence of the bundled commercial solvers takes (gurobipy's restricted licence, CPLEX
# Community Edition, COPT's): CVXPY reports their refusal as a bare "Solver 'GUROBI' failed", the licence error
# lost on the way (it picks Gurobi first for a MILP when gurobipy is installed).
_LICENCE_VARS = {"GUROBI": 2000, "CPLEX": 1000, "COPT": 2000}
_ALLOWED_ATTRIBUTES = {"nonneg", "nonpos", "boolean", "integer", "bounds"}
_GET: dict[str, Any] = {}  # property getters of CVXPY's own classes, bound at install
_VERSIONS: dict[str, str] = {}


def _version(dist: str) -> str:
    if dist not in _VERSIONS:
        from solvers.versions import package_version

        try:
            _VERSIONS[dist] = package_version(dist)
        except Exception:  # metadata unreadable in the sandbox: the record stands without it
            _VERSIONS[dist] = ""
    return _VERSIONS[dist]


def _element_names(variables: list[Any]) -> list[str]:
    """One name per scalar entry, Fortran order (CVXPY's): ``x``, ``x[i]``, ``x[i,j]``. Whitespace becomes ``_``
    (MPS splits on it); a repeated variable name gets ``#<id>``; positional ``x<j>`` if names still collide."""
    import numpy as np

    seen: set[str] = set()
    names: list[str] = []
    for v in variables:
        base = "_".join(str(v.name()).split()) or f"var{v.id}"
        if base in seen:
            base = f"{base}#{v.id}"
        seen.add(base)
        shape = tuple(v.shape)
        if not shape:
            names.append(base)
            continue
        for k in range(int(np.prod(shape))):
            idx = np.unravel_index(k, shape, order="F")
            names.append(f"{base}[{','.join(str(int(i)) for i in idx)}]")
    if len(set(names)) != len(names):
        names = [f"x{j}" for j in range(len(names))]
    return names


def _numeric(bound: Any, shape: tuple[int, ...], default: float) -> Any:
    """A variable bound (number, array, or a parameter expression's value) broadcast to the variable's shape."""
    import numpy as np
    from cvxpy.expressions.expression import Expression

    if bound is None:
        return np.full(shape, default)
    value = bound.value if isinstance(bound, Expression) else bound
    if value is None:
        raise ValueError("bound without a value")
    return np.broadcast_to(np.asarray(value, dtype=float), shape)


def _columns(variables: list[Any], names: list[str], cost: Any, binary: set[int],
             integer: set[int]) -> list[tuple[str, float, float, bool, float]] | None:
    """(name, lower, upper, integer, cost) per scalar entry, or None for a variable attribute MPS cannot hold.
    ``binary`` / ``integer``: the scalar columns that are boolean / integral (booleans included)."""
    import numpy as np

    lower, upper = [], []
    for v in variables:
        if any(value is not None and value is not False for k, value in v.attributes.items()
               if k not in _ALLOWED_ATTRIBUTES):
            return None  # complex, symmetric, PSD, diag, sparsity, pos / neg (strict)...
        shape = max(tuple(v.shape), (1,))
        lo, up = (v.bounds if v.bounds is not None else (None, None))
        lo, up = _numeric(lo, shape, -math.inf), _numeric(up, shape, math.inf)
        if v.attributes.get("nonneg"):
            lo = np.maximum(lo, 0.0)
        if v.attributes.get("nonpos"):
            up = np.minimum(up, 0.0)
        lower += [float(x) for x in np.ravel(lo, order="F")]
        upper += [float(x) for x in np.ravel(up, order="F")]
    for j in binary:
        lower[j], upper[j] = max(lower[j], 0.0), min(upper[j], 1.0)
    return [(names[j], lower[j], upper[j], j in integer, float(cost[j])) for j in range(len(names))]


def _affine(exprs: list[Any], offsets: dict[int, int], n: int) -> tuple[Any, Any] | None:
    """(A as CSR, b) with ``exprs`` stacked (each flattened in Fortran order) = A x + b, by CVXPY's own affine
    canonicalisation; None if one is not affine or its canonical form needs extra constraints."""
    from cvxpy.lin_ops.lin_op import CONSTANT_ID

    forms = []
    for e in exprs:
        if not e.is_affine() or not e.is_real():
            return None
        obj, extra = e.canonical_form
        if extra:
            return None
        forms.append(obj)
    rows = sum(int(e.size) for e in exprs)
    tensor = _GET["problem_matrix"](forms, n, offsets, {CONSTANT_ID: 1}, {CONSTANT_ID: 0}, rows)
    a, b = _GET["matrix_from_tensor"](tensor, None, n, with_offset=True)
    a = a.tocsr()
    a.sum_duplicates()  # one MPS entry per (row, column)
    return a, [float(x) for x in (b.ravel() if hasattr(b, "ravel") else [b])]


def _model(problem: Any, variables: list[Any], names: list[str], binary: set[int], integer: set[int]) -> str | None:
    """The problem as MPS (see the module docstring), or None when it is not an LP / MILP as written."""
    from cvxpy.constraints import Equality, Inequality, NonNeg, NonPos, Zero
    from cvxpy.problems.objective import Maximize, Minimize

    objective = _GET["objective"](problem)
    if type(objective) not in (Minimize, Maximize):
        return None
    offsets, n = {}, 0
    for v in variables:
        offsets[v.id] = n
        n += int(v.size)
    plain = _GET["plain"]  # a parameter's value is what the solver was given
    exprs: list[Any] = []
    sides: list[tuple[bool, bool]] = []  # per constraint: (row <= -b allowed, row >= -b allowed)
    for c in _GET["constraints"](problem):
        kind = type(c)
        if kind in (Inequality, Equality):
            expr = plain(c.args[0]) - plain(c.args[1])
        elif kind in (Zero, NonNeg, NonPos):
            expr = plain(c.args[0])
        else:
            return None
        if expr.size == 0:
            continue
        exprs.append(expr)
        sides.append((kind is not NonNeg, kind not in (Inequality, NonPos)))
    cost = _affine([plain(objective.args[0])], offsets, n)
    body = _affine(exprs, offsets, n) if exprs else None
    if cost is None or (exprs and body is None):
        return None
    c_row, c_const = cost
    columns = _columns(variables, names, c_row.toarray().ravel(), binary, integer)
    if columns is None:
        return None
    rows: list[tuple[str, float, float]] = []
    entries: list[tuple[int, int, float]] = []
    if body is not None:
        a, b = body
        if 30 * (a.nnz + n + a.shape[0]) > MAX_MPS_CHARS:
            return None  # the parent would not read it: not worth the program's time to write
        r = 0
        for expr, (below, above) in zip(exprs, sides, strict=True):
            for _ in range(int(expr.size)):
                rhs = -b[r]  # A x + b (<=, >=, ==) 0
                rows.append((f"c{r}", rhs if above else -math.inf, rhs if below else math.inf))
                entries += [(r, int(a.indices[k]), float(a.data[k])) for k in range(a.indptr[r], a.indptr[r + 1])
                            if a.data[k]]
                r += 1
    elif 30 * n > MAX_MPS_CHARS:
        return None
    return write_mps(type(objective) is Maximize, float(c_const[0]), columns, entries, rows)


def _describe(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> Described:
    import cvxpy
    import numpy as np
    from cvxpy.problems.objective import Maximize

    problem = args[0]
    code = str(_GET["status"](problem))
    variables = list(_GET["variables"](problem))
    n = sum(int(v.size) for v in variables)
    stats = _GET["solver_stats"](problem)
    solver = str(getattr(stats, "solver_name", "") or "")
    values = [_GET["var_value"](v) for v in variables]
    has_sol = code in ("optimal", "optimal_inaccurate", "user_limit") and all(x is not None for x in values)
    if code == "user_limit":
        status = SolveStatus.TIME_LIMIT_WITH_SOLUTION if has_sol else SolveStatus.TIME_LIMIT_NO_SOLUTION
    else:
        status = _STATUS.get(code, SolveStatus.ERROR)
    booleans, integers = _GET["mip_idx"](variables)
    binary = {int(i[0]) for i in booleans}
    integer = binary | {int(i[0]) for i in integers}
    n_bin, n_int = len(binary), len(integer)
    dist = _DISTS.get(solver.upper(), "")
    version = _version(dist) if dist else ""
    d = Described(status=status, solver=solver.lower() or "cvxpy",
                  solver_version=f"{version} (cvxpy {cvxpy.__version__})".strip(), n_vars=n,
                  n_int_vars=n_int, n_bin_vars=n_bin,
                  n_constraints=sum(int(c.size) for c in _GET["constraints"](problem)),
                  solve_time_s=finite(getattr(stats, "solve_time", None)),
                  sense="maximize" if isinstance(_GET["objective"](problem), Maximize) else "minimize")
    names = _element_names(variables)
    if has_sol:
        d.objective = finite(_GET["value"](problem))
        flat = [x for v, val in zip(variables, values, strict=True)
                for x in np.ravel(np.asarray(val, dtype=float).reshape(max(tuple(v.shape), (1,)), order="F"),
                                  order="F")]
        d.solution = capped_solution(zip(names, flat, strict=True))
        if status == SolveStatus.OPTIMAL and not n_int:
            d.bound = d.objective
    if _state["capture_mps"]:
        # solver-name only positionally: gp / qcp passed by position would change the question
        checkable = (solver.upper() in _ACCURATE and "method" not in kwargs and len(args) <= 2
                     and not any(kwargs.get(k) for k in ("gp", "qcp", "nlp", "requires_grad"))
                     and (status != SolveStatus.TIME_LIMIT_WITH_SOLUTION or n_int > 0))
        mps = None
        if checkable:
            try:
                mps = _model(problem, variables, names, binary, integer)
            except Exception:  # a construct this reader does not know: unchecked, never a wrong model
                mps = None
        d.model_mps = mps
        d.check = {"linear": mps is not None}
    return d


def _describe_error(args: tuple[Any, ...], exc: BaseException) -> Described | None:
    """A licence-size error as such (``license_or_error``), and CVXPY's bare "Solver 'GUROBI' failed" for a
    problem with more variables than that solver's size-limited licence takes (see ``_LICENCE_VARS``)."""
    d = license_or_error(args, exc)
    if d is not None and d.status == SolveStatus.ERROR and type(exc).__name__ == "SolverError" and args:
        n = sum(int(v.size) for v in _GET["variables"](args[0]))
        for solver, limit in _LICENCE_VARS.items():
            if f"Solver '{solver}' failed" in str(exc) and n > limit:
                return Described(status=SolveStatus.LICENSE_LIMIT, solver=solver.lower(), n_vars=n)
    return d


@hook("cvxpy", ("cvxpy",))
def install() -> None:
    from cvxpy.cvxcore.python import canonInterface
    from cvxpy.expressions.leaf import Leaf
    from cvxpy.problems.problem import Problem
    from cvxpy.reductions.eval_params import replace_params_with_consts
    from cvxpy.reductions.matrix_stuffing import extract_mip_idx

    # bound now, before the program runs: a program that replaces one later changes its own solve, not the model
    # the record carries
    _GET.update(problem_matrix=canonInterface.get_problem_matrix,
                matrix_from_tensor=canonInterface.get_matrix_from_tensor, plain=replace_params_with_consts,
                mip_idx=extract_mip_idx)
    for name in _PROPERTIES:
        _GET[name] = Problem.__dict__[name].fget
    _GET["var_value"] = Leaf.__dict__["value"].fget
    _GET["variables"] = Problem.__dict__["variables"]
    for name in _SOLVE_PATH + _PROPERTIES:  # in place, unchanged: verify() sees a program replace one
        patch(Problem, name, Problem.__dict__[name])
    patch(Problem, "solve", wrap_solve("cvxpy", Problem.__dict__["solve"], _describe, _describe_error,
                                          kind=CVXPY))
