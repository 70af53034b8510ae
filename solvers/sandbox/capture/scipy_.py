"""SciPy: ``scipy.optimize.linprog`` and ``scipy.optimize.milp`` (HiGHS inside), the LP/MILP solvers a program
reaches without an optimisation library; models write them too. Without this hook such a program "never called a
solver" (``no_solve_call``), whatever it solved.

The model is the call's arrays, written as MPS by ``write_mps`` with columns ``x0..x{n-1}`` (the solution's names)
and rows ``ub<i>`` / ``eq<i>`` (linprog) or ``r<i>`` (milp). Both functions minimise: a program that maximises
passes ``-c`` and reports ``-res.fun``; the record keeps what the solver optimised (``fun``), as for every API.
Semi-continuous integrality (2, 3) has no MPS here: ``check["linear"]`` is false and the record goes unchecked.
"""

from __future__ import annotations

import inspect
from typing import Any

from solvers.sandbox.capture import Described, _state, capped_solution, hook, patch, wrap_solve, write_mps
from solvers.sandbox.verify.common import SCIPY
from solvers.statuses import SolveStatus

# OptimizeResult.status of both: 0 optimal, 1 iteration / time limit, 2 infeasible, 3 unbounded, 4 numerical / other.
_STATUS = {0: SolveStatus.OPTIMAL, 2: SolveStatus.INFEASIBLE, 3: SolveStatus.UNBOUNDED, 4: SolveStatus.NUMERIC}
_SIGNATURES: dict[str, inspect.Signature] = {}


def _version() -> str:
    import scipy

    return scipy.__version__


def _matrix(a: Any, n: int) -> Any:
    """The constraint matrix as CSR, never densified (a large sparse model would not fit in the program's memory
    cap twice)."""
    import numpy as np
    from scipy import sparse

    if a is None:
        return sparse.csr_matrix((0, n))
    if sparse.issparse(a):
        return sparse.csr_matrix(a, dtype=float)
    return sparse.csr_matrix(np.atleast_2d(np.asarray(a, dtype=float)).reshape(-1, n))


def _vector(v: Any, m: int, default: float) -> list[float]:
    import numpy as np

    if v is None:
        return [default] * m
    arr = np.broadcast_to(np.asarray(v, dtype=float), (m,)) if np.ndim(v) == 0 else np.asarray(v, dtype=float).ravel()
    return [float(x) for x in arr]


def _bounds(bounds: Any, n: int, default: tuple[float, float]) -> list[tuple[float, float]]:
    """linprog's rules: None -> the default for every column; one (lb, ub) pair -> every column; else one pair per
    column. A ``Bounds`` object (milp; linprog takes it too): its lb / ub, broadcast. None inside a pair: no bound."""
    inf = float("inf")
    if bounds is None:
        return [default] * n
    if hasattr(bounds, "lb") and hasattr(bounds, "ub"):
        return list(zip(_vector(bounds.lb, n, 0.0), _vector(bounds.ub, n, inf), strict=True))
    pairs = list(bounds)
    if len(pairs) == 2 and all(x is None or not hasattr(x, "__len__") for x in pairs):
        pairs = [tuple(pairs)] * n
    elif len(pairs) == 1:
        pairs = pairs * n
    return [(-inf if lo is None else float(lo), inf if up is None else float(up)) for lo, up in pairs]


def _constraints(constraints: Any, n: int) -> list[tuple[Any, list[float], list[float]]]:
    """milp's ``constraints``: one LinearConstraint, one (A, lb, ub) tuple, or a sequence of either."""
    inf = float("inf")
    if constraints is None:
        return []
    if hasattr(constraints, "A") or (isinstance(constraints, tuple) and len(constraints) == 3
                                     and not hasattr(constraints[0], "A")):
        constraints = [constraints]
    out = []
    for c in constraints:
        a, lb, ub = (c.A, c.lb, c.ub) if hasattr(c, "A") else c
        a = _matrix(a, n)
        out.append((a, _vector(lb, a.shape[0], -inf), _vector(ub, a.shape[0], inf)))
    return out


def _describe(kind: str) -> Any:
    def describe(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> Described:
        import numpy as np

        call = _SIGNATURES[kind].bind(*args, **kwargs)
        call.apply_defaults()
        a = call.arguments
        c = np.asarray(a["c"], dtype=float).ravel()
        n = c.size
        inf = float("inf")
        blocks: list[tuple[str, Any, list[float], list[float]]] = []
        if kind == "linprog":
            a_ub, a_eq = _matrix(a["A_ub"], n), _matrix(a["A_eq"], n)
            blocks.append(("ub", a_ub, [-inf] * a_ub.shape[0], _vector(a["b_ub"], a_ub.shape[0], 0.0)))
            b_eq = _vector(a["b_eq"], a_eq.shape[0], 0.0)
            blocks.append(("eq", a_eq, b_eq, b_eq))
        else:
            blocks += [("r", m, lo, up) for m, lo, up in _constraints(a["constraints"], n)]
        bounds = _bounds(a["bounds"], n, (0.0, inf))
        integrality = [int(v) for v in _vector(a["integrality"], n, 0.0)]
        code = int(getattr(result, "status", 4))
        x = getattr(result, "x", None)
        status = _STATUS.get(code, SolveStatus.ERROR)
        if code == 1:
            status = SolveStatus.TIME_LIMIT_WITH_SOLUTION if x is not None else SolveStatus.TIME_LIMIT_NO_SOLUTION
        ints = [j for j in range(n) if integrality[j] in (1, 3)]
        rows: list[tuple[str, float, float]] = []
        entries: list[tuple[int, int, float]] = []
        for prefix, m, lo, up in blocks:
            for i in range(m.shape[0]):
                r = len(rows)
                rows.append((f"{prefix}{i}" if kind == "linprog" else f"r{r}", lo[i], up[i]))
                entries += [(r, int(m.indices[k]), float(m.data[k])) for k in range(m.indptr[i], m.indptr[i + 1])
                            if m.data[k]]
        names = [f"x{j}" for j in range(n)]
        d = Described(status=status, solver=f"scipy-{kind}", solver_version=_version(), n_vars=n,
                      n_int_vars=len(ints), n_bin_vars=sum(1 for j in ints if bounds[j][0] >= 0 and bounds[j][1] <= 1),
                      n_constraints=len(rows), sense="minimize")
        if x is not None and status in (SolveStatus.OPTIMAL, SolveStatus.TIME_LIMIT_WITH_SOLUTION):
            d.objective = float(result.fun)
            d.solution = capped_solution(zip(names, (float(v) for v in np.asarray(x).ravel()), strict=True))
            bound = getattr(result, "mip_dual_bound", None)
            d.bound = float(bound) if bound is not None else (d.objective if not ints else None)
            gap = getattr(result, "mip_gap", None)
            d.mip_gap = float(gap) if gap is not None else None
        if _state["capture_mps"]:
            linear = all(v in (0, 1) for v in integrality)
            d.check = {"linear": linear}
            if linear:
                columns = [(names[j], bounds[j][0], bounds[j][1], integrality[j] == 1, float(c[j])) for j in range(n)]
                d.model_mps = write_mps(False, 0.0, columns, entries, rows)
        return d

    return describe


@hook("scipy", ("scipy.optimize",))
def install() -> None:
    import scipy.optimize as opt

    for kind in ("linprog", "milp"):
        original = getattr(opt, kind, None)
        if original is not None:
            _SIGNATURES[kind] = inspect.signature(original)
            patch(opt, kind, wrap_solve("scipy", original, _describe(kind), kind=SCIPY))
