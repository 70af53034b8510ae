"""pyomo: every solver object's ``solve`` (legacy ``SolverFactory`` plugins, appsi and ``pyomo.contrib.solver``).

Solver classes are many and plugin-registered, so the hook wraps ``SolverFactory.__call__`` and patches the
class of each solver it hands out, plus the appsi / contrib solver classes programs instantiate directly.

The model is exported as MPS with symbolic labels (the parent matches columns to the solution's names); when two
names share a label (pyomo refuses to write those), with numeric labels and the label -> name map in the record's
``verify`` key. When no MPS can be written, the capture says whether the model was linear (one active objective,
every active constraint and the objective of degree <= 1, only plain components): the MPS writer takes every such
model, so a linear model without its MPS did not come from an intact capture (solvers/sandbox/verify/). The writer
and the degree function are bound when the hook is installed, before user code runs.
"""

from __future__ import annotations

import weakref
from typing import Any

from solvers.sandbox.capture import (
    Described,
    _state,
    asks_cutoff,
    capped_solution,
    export_mps,
    hook,
    license_or_error,
    patch,
    patch_solves,
)
from solvers.sandbox.capture.highs import _STATUS as _HIGHS_STATUS
from solvers.sandbox.verify.common import PYOMO
from solvers.statuses import SolveStatus

_TC = {"optimal": SolveStatus.OPTIMAL, "globallyoptimal": SolveStatus.OPTIMAL, "locallyoptimal": SolveStatus.OPTIMAL,
       "convergencecriteriasatisfied": SolveStatus.OPTIMAL, "feasible": SolveStatus.TIME_LIMIT_WITH_SOLUTION,
       "infeasible": SolveStatus.INFEASIBLE, "provenInfeasible": SolveStatus.INFEASIBLE,
       "locallyinfeasible": SolveStatus.INFEASIBLE, "unbounded": SolveStatus.UNBOUNDED,
       "infeasibleorunbounded": SolveStatus.INF_OR_UNBD, "interrupted": SolveStatus.INTERRUPTED,
       "userinterrupt": SolveStatus.INTERRUPTED, "numericalerror": SolveStatus.NUMERIC}
_LIMIT_WORDS = ("limit", "maxtime", "maxiterations", "maxevaluations", "iterationlimit", "minstepLength")
_patched: set[type] = set()
# Bound at install (before user code): the block writer, pyomo's polynomial_degree, the component types of a plain
# model (anything else -- SOS, Piecewise, GDP, logical, complementarity, external functions -- is not "linear" here).
_BOUND: dict[str, Any] = {}
# A fixed variable the writer still sees (it usually folds them into constants) is written as a fixed column rather
# than refused: a linear model must always export.
_WRITE_OPTIONS = {"output_fixed_variable_bounds": True}


def _termination(result: Any) -> str:
    for path in (("termination_condition",), ("solver", "termination_condition")):
        obj = result
        try:
            for attr in path:
                obj = getattr(obj, attr)
        except AttributeError:
            continue
        return getattr(obj, "name", str(obj)).lower()
    return "unknown"


def _describe(args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> Described:
    import pyomo.environ as pe

    solver, model = args[0], (args[1] if len(args) > 1 else kwargs.get("model"))
    if model is None:  # a persistent solver (gurobi_persistent, ...): solve() on the instance given to set_instance
        model = getattr(solver, "_pyomo_model", None)
    if model is None:
        raise ValueError(f"{type(solver).__name__}.solve() was called without a model the capture can find")
    tc = _termination(result)
    variables = list(model.component_data_objects(pe.Var, active=True, descend_into=True))
    has_values = any(v.value is not None for v in variables)
    if tc in _TC:
        status = _TC[tc]
    elif any(w.lower() in tc for w in _LIMIT_WORDS):
        status = SolveStatus.TIME_LIMIT_WITH_SOLUTION if has_values else SolveStatus.TIME_LIMIT_NO_SOLUTION
    else:
        status = SolveStatus.ERROR
    objectives = list(model.component_data_objects(pe.Objective, active=True, descend_into=True))
    n_int = sum(1 for v in variables if v.is_integer() or v.is_binary())
    try:
        version = ".".join(map(str, solver.version()))
    except Exception:
        version = ""
    d = Described(status=status, solver=str(getattr(solver, "name", type(solver).__name__)).lower(),
                  solver_version=version, n_vars=len(variables), n_int_vars=n_int,
                  n_bin_vars=sum(1 for v in variables if v.is_binary()),
                  n_constraints=sum(1 for _ in model.component_data_objects(pe.Constraint, active=True,
                                                                              descend_into=True)),
                  sense=("maximize" if objectives[0].sense == pe.maximize else "minimize") if objectives else None)
    if status in (SolveStatus.OPTIMAL, SolveStatus.TIME_LIMIT_WITH_SOLUTION) and has_values:
        if objectives:
            d.objective = pe.value(objectives[0], exception=False)
        d.solution = capped_solution((v.name, v.value) for v in variables if v.value is not None)
        bound = getattr(result, "best_objective_bound", None)
        if bound is None:
            problem = getattr(result, "problem", None)
            if problem is not None:
                bound = problem.upper_bound if d.sense == "maximize" else problem.lower_bound
        d.bound = bound
        if n_int == 0 and d.bound is None:
            d.bound = d.objective
    elif status == SolveStatus.OPTIMAL and objectives:
        # load_solutions=False (the idiom that survives infeasible models): the incumbent is only in the results.
        problem = getattr(result, "problem", None)
        if problem is not None:
            incumbent = problem.lower_bound if d.sense == "maximize" else problem.upper_bound
            d.objective = float(incumbent) if incumbent is not None and abs(float(incumbent)) < 1e300 else None
    wall = getattr(getattr(result, "timing_info", None), "wall_time", None)
    if wall is None:
        wall = getattr(getattr(result, "solver", None), "wallclock_time", None) or \
            getattr(getattr(result, "solver", None), "time", None)
    try:
        d.solve_time_s = float(wall) if wall is not None else None
    except (TypeError, ValueError):
        d.solve_time_s = None
    d.model_mps, d.check = _export(model)
    options = [*(getattr(solver, "options", None) or {}), *(kwargs.get("options") or {})]
    if asks_cutoff(options):
        d.check = (d.check or {}) | {"cutoff": True}
    return d


def _export(model: Any) -> tuple[str | None, dict[str, Any] | None]:
    """The model's MPS and the check data for the parent: symbolic labels; else numeric labels with the label ->
    name map; else no model and whether the model is linear (decided only then: it walks every expression)."""
    write = _BOUND.get("write")
    if write is None or not _state["capture_mps"]:
        return None, None
    mps = export_mps(lambda path: write(model, path, format="mps", io_options={"symbolic_solver_labels": True,
                                                                                 **_WRITE_OPTIONS}))
    if mps is not None:
        return mps, None
    symbols: list[Any] = []

    def numeric(path: str) -> Any:
        _, smap_id = write(model, path, format="mps", io_options={"labeler": _BOUND["labeler"]("_flywheel_v"),
                                                                **_WRITE_OPTIONS})
        symbols.append(model.solutions.symbol_map[smap_id])

    mps = export_mps(numeric)
    if mps is not None and symbols:
        labels = {}
        for label, obj in symbols[0].bySymbol.items():
            obj = obj() if isinstance(obj, weakref.ref) else obj
            if obj is not None and getattr(obj, "ctype", None) is _BOUND["Var"]:
                labels[label] = obj.name
        return mps, {"labels": labels}
    try:
        linear = _is_linear(model)
    except Exception:  # a model the walk cannot take is not one the parent may require an MPS for
        linear = False
    return None, {"linear": linear}


def _is_linear(model: Any) -> bool:
    plain, degree = _BOUND["plain"], _BOUND["degree"]
    if any(c.ctype not in plain for c in model.component_objects(active=True, descend_into=True)):
        return False
    objectives = list(model.component_data_objects(_BOUND["Objective"], active=True, descend_into=True))
    if len(objectives) != 1 or degree(objectives[0].expr) not in (0, 1):
        return False
    for var in model.component_data_objects(_BOUND["Var"], descend_into=True):
        if var.fixed and var.value is None:  # the writer refuses these, and so would any solver
            return False
    return all(degree(c.body) in (0, 1)
               for c in model.component_data_objects(_BOUND["Constraint"], active=True, descend_into=True))


def _describe_error(args: tuple[Any, ...], exc: BaseException) -> Described | None:
    """pyomo's HiGHS / contrib wrappers raise (NoFeasibleSolutionError) instead of returning when the solve found
    no solution and load_solutions is on (the default). The solver's own model status says why, where we can reach
    it (the persistent highspy object); otherwise the honest verdict is 'infeasible or unbounded'."""
    if type(exc).__name__ != "NoFeasibleSolutionError":
        return license_or_error(args, exc)
    highs = getattr(args[0], "_solver_model", None)
    if highs is not None and hasattr(highs, "getModelStatus"):
        raw = str(highs.getModelStatus()).split(".")[-1]
        fallback = SolveStatus.TIME_LIMIT_NO_SOLUTION if "Limit" in raw else SolveStatus.INF_OR_UNBD
        status = _HIGHS_STATUS.get(raw, fallback)
        return Described(status=status, solver="highs")
    return Described(status=SolveStatus.INF_OR_UNBD)


def _patch_class(cls: type) -> None:
    """Wrap the ``solve`` that instances of ``cls`` use (once per class)."""
    if cls in _patched or not callable(getattr(cls, "solve", None)):
        return
    _patched.add(cls)
    patch_solves("pyomo", cls, ("solve",), _describe, _describe_error, kind=PYOMO)


def bind() -> None:
    """Take the references ``_export`` uses (at install, before user code can replace them)."""
    import pyomo.environ as pe
    from pyomo.core.base.block import BlockData
    from pyomo.core.base.label import NumericLabeler
    from pyomo.core.expr.visitor import polynomial_degree

    _BOUND.update(write=BlockData.write, degree=polynomial_degree, labeler=NumericLabeler, Var=pe.Var,
                  Objective=pe.Objective, Constraint=pe.Constraint,
                  plain=frozenset((pe.Var, pe.Param, pe.Set, pe.RangeSet, pe.Constraint, pe.Objective, pe.Expression,
                                   pe.Block, pe.Suffix, pe.BuildAction, pe.BuildCheck)))


@hook("pyomo", ("pyomo.environ",))
def install() -> None:
    import pyomo.environ as pe

    bind()

    factory_cls = type(pe.SolverFactory)
    original_call = factory_cls.__call__

    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        solver = original_call(self, *args, **kwargs)
        if solver is not None:
            _patch_class(type(solver))
        return solver

    patch(factory_cls, "__call__", call)
    for modname in ("pyomo.contrib.appsi.solvers", "pyomo.contrib.solver.solvers.highs",
                    "pyomo.contrib.solver.solvers.gurobi_direct", "pyomo.contrib.solver.solvers.ipopt"):
        try:
            import importlib

            mod = importlib.import_module(modname)
        except Exception:
            continue
        for obj in vars(mod).values():
            if isinstance(obj, type) and "solve" in vars(obj) and obj.__module__.startswith("pyomo"):
                _patch_class(obj)
