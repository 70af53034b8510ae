"""PySCIPOpt (SCIP): ``Model.optimize`` / ``optimizeNogil`` / ``solveConcurrent``.

``pyscipopt.Model`` is an immutable extension type (its methods cannot be replaced), so the hook puts a subclass in
its place (``pyscipopt.Model`` and ``pyscipopt.scip.Model``) whose solve methods are wrapped: a program that
imports the class after the hook, as every program does, builds the subclass.

The model is written by ``write_mps`` from SCIP's original problem (every digit; SCIP's own writer prints 15
significant digits and writes names with spaces, which a free-format reader splits). A model with a constraint
that is not linear (quadratic, nonlinear, SOS, indicator...) has no MPS here: ``check["linear"]`` is false and the
record goes unchecked, never accused.
"""

from __future__ import annotations

from typing import Any

from solvers.sandbox.capture import Described, capped_solution, finite, hook, patch, wrap_solve, write_mps
from solvers.sandbox.verify.common import SCIP
from solvers.statuses import SolveStatus

# Model.getStatus(): SCIP's SCIP_STATUS names, as PySCIPOpt spells them.
_STATUS = {"optimal": SolveStatus.OPTIMAL, "infeasible": SolveStatus.INFEASIBLE, "unbounded": SolveStatus.UNBOUNDED,
           "inforunbd": SolveStatus.INF_OR_UNBD, "userinterrupt": SolveStatus.INTERRUPTED}
_LIMITS = {"timelimit", "nodelimit", "totalnodelimit", "stallnodelimit", "gaplimit", "sollimit", "bestsollimit",
           "memlimit", "restartlimit", "primallimit", "duallimit"}
_SOLVES = ("optimize", "optimizeNogil", "solveConcurrent")


def _number(x: float, inf: float) -> float:
    return float("inf") if x >= inf else float("-inf") if x <= -inf else float(x)


def _model(m: Any) -> tuple[str | None, bool]:
    """(MPS of the original problem, whether every constraint is linear)."""
    inf = m.infinity()
    variables = m.getVars(transformed=False)
    names = [v.name for v in variables]
    index = {n: j for j, n in enumerate(names)}
    columns = [(v.name, _number(v.getLbOriginal(), inf), _number(v.getUbOriginal(), inf),
                v.vtype() in ("BINARY", "INTEGER"), float(v.getObj())) for v in variables]
    rows, entries = [], []
    for c in m.getConss(transformed=False):
        if c.getConshdlrName() != "linear":
            return None, False
        i = len(rows)
        rows.append((c.name, _number(m.getLhs(c), inf), _number(m.getRhs(c), inf)))
        entries += [(i, index[n], float(a)) for n, a in m.getValsLinear(c).items() if a]
    if len(index) != len(names):  # two columns of one name: the coefficients by name cannot be told apart
        return None, True
    offset = float(m.getObjoffset(original=True))
    return write_mps(m.getObjectiveSense() == "maximize", offset, columns, entries, rows), True


def _describe(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> Described:
    import pyscipopt

    m = args[0]
    code = str(m.getStatus())
    has_sol = m.getNSols() > 0
    if code in _LIMITS:
        status = SolveStatus.TIME_LIMIT_WITH_SOLUTION if has_sol else SolveStatus.TIME_LIMIT_NO_SOLUTION
    else:
        status = _STATUS.get(code, SolveStatus.ERROR)
    variables = m.getVars(transformed=False)
    n_bin = sum(v.vtype() == "BINARY" for v in variables)
    d = Described(status=status, solver="scip", solver_version=f"{m.version()} (pyscipopt {pyscipopt.__version__})",
                  n_vars=len(variables), n_int_vars=n_bin + sum(v.vtype() == "INTEGER" for v in variables),
                  n_bin_vars=n_bin, n_constraints=m.getNConss(False), solve_time_s=float(m.getSolvingTime()),
                  sense=str(m.getObjectiveSense()))
    if has_sol:
        d.objective = float(m.getObjVal())
        sol = m.getBestSol()
        d.solution = capped_solution((v.name, float(m.getSolVal(sol, v))) for v in variables)
        d.bound = finite(m.getDualbound())
        d.mip_gap = finite(m.getGap()) if d.n_int_vars else None
    mps, linear = _model(m)
    d.model_mps = mps
    d.check = {"linear": linear and mps is not None}
    if _objective_limit(m):  # "no solution better than X" reads infeasible: not a question about the model
        d.check["cutoff"] = True
    return d


def _objective_limit(m: Any) -> bool:
    """Did the program set an objective limit (``setObjlimit``; the ``limits/objective`` parameter before SCIP 10,
    ``limits/primal`` / ``limits/dual`` since; defaults 1e20 / 1e99)?"""
    try:
        if abs(float(m.getObjlimit())) < m.infinity():
            return True
    except (AttributeError, ValueError):
        pass
    for name in ("limits/objective", "limits/primal", "limits/dual"):
        try:
            value = float(m.getParam(name))
        except (KeyError, LookupError, ValueError):
            continue
        if abs(value) < 1e19:
            return True
    return False


@hook("pyscipopt", ("pyscipopt", "pyscipopt.scip"))
def install() -> None:
    import pyscipopt
    import pyscipopt.scip as scip

    base = scip.Model
    methods = {name: wrap_solve("pyscipopt", getattr(base, name), _describe, kind=SCIP)
               for name in _SOLVES if hasattr(base, name)}
    captured = type("Model", (base,), {**methods, "__module__": base.__module__, "__doc__": base.__doc__})
    patch(pyscipopt, "Model", captured)
    patch(scip, "Model", captured)
