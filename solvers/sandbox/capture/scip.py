"""PySCIPOpt (SCIP): ``Model.optimize`` / ``optimizeNogil`` / ``solveConcurrent``.

``pyscipopt.Model`` is an immutable extension type (its methods cannot be replaced), so the hook puts a subclass in
its place (``pyscipopt.Model`` and ``pyscipopt.scip.Model``) whose solve methods are wrapped: a program that
imports the class after the hook, as every program does, builds the subclass. Its solve methods are patched one
by one (replacing one is ``tampered``), and the describer reads the result through SCIP's own class, so a getter a
program redefines on the subclass changes what it prints, not the record.

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
_BASE: list[Any] = []  # SCIP's own Model class (immutable): the describer reads through it, not the subclass a
# program could change


def _call(m: Any, name: str, *args: Any) -> Any:
    return getattr(_BASE[0] if _BASE else type(m), name)(m, *args)


def _number(x: float, inf: float) -> float:
    return float("inf") if x >= inf else float("-inf") if x <= -inf else float(x)


def _model(m: Any) -> tuple[str | None, bool]:
    """(MPS of the original problem, whether every constraint is linear)."""
    inf = _call(m, "infinity")
    variables = _call(m, "getVars", False)
    names = [v.name for v in variables]
    index = {n: j for j, n in enumerate(names)}
    columns = [(v.name, _number(v.getLbOriginal(), inf), _number(v.getUbOriginal(), inf),
                v.vtype() in ("BINARY", "INTEGER"), float(v.getObj())) for v in variables]
    rows, entries = [], []
    for c in _call(m, "getConss", False):
        if c.getConshdlrName() != "linear":
            return None, False
        i = len(rows)
        rows.append((c.name, _number(_call(m, "getLhs", c), inf), _number(_call(m, "getRhs", c), inf)))
        entries += [(i, index[n], float(a)) for n, a in _call(m, "getValsLinear", c).items() if a]
    if len(index) != len(names):  # two columns of one name: the coefficients by name cannot be told apart
        return None, True
    offset = float(_call(m, "getObjoffset", True))
    return write_mps(_call(m, "getObjectiveSense") == "maximize", offset, columns, entries, rows), True


def _describe(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> Described:
    import pyscipopt

    m = args[0]
    code = str(_call(m, "getStatus"))
    has_sol = _call(m, "getNSols") > 0
    if code in _LIMITS:
        status = SolveStatus.TIME_LIMIT_WITH_SOLUTION if has_sol else SolveStatus.TIME_LIMIT_NO_SOLUTION
    else:
        status = _STATUS.get(code, SolveStatus.ERROR)
    variables = _call(m, "getVars", False)
    n_bin = sum(v.vtype() == "BINARY" for v in variables)
    version = f"{_call(m, 'version')} (pyscipopt {pyscipopt.__version__})"
    d = Described(status=status, solver="scip", solver_version=version, n_vars=len(variables),
                  n_int_vars=n_bin + sum(v.vtype() == "INTEGER" for v in variables), n_bin_vars=n_bin,
                  n_constraints=_call(m, "getNConss", False), solve_time_s=float(_call(m, "getSolvingTime")),
                  sense=str(_call(m, "getObjectiveSense")))
    if has_sol:
        d.objective = float(_call(m, "getObjVal"))
        sol = _call(m, "getBestSol")
        d.solution = capped_solution((v.name, float(_call(m, "getSolVal", sol, v))) for v in variables)
        d.bound = finite(_call(m, "getDualbound"))
        d.mip_gap = finite(_call(m, "getGap")) if d.n_int_vars else None
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
        if abs(float(_call(m, "getObjlimit"))) < _call(m, "infinity"):
            return True
    except (AttributeError, ValueError):
        pass
    for name in ("limits/objective", "limits/primal", "limits/dual"):
        try:
            value = float(_call(m, "getParam", name))
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
    _BASE.append(base)
    captured = type("Model", (base,), {"__module__": base.__module__, "__doc__": base.__doc__})
    for name in _SOLVES:  # patched one by one, so that verify() sees a program replace one (tampered)
        if hasattr(base, name):
            patch(captured, name, wrap_solve("pyscipopt", getattr(base, name), _describe, kind=SCIP))
    patch(pyscipopt, "Model", captured)
    patch(scip, "Model", captured)
