"""Check each captured solve against its own exported model, outside the program's process.

Why: the capture runs inside the program's interpreter, and anything in that address space (the channel's signing
key included) can in principle be reached by the program. So the trusted side (the pool's parent, where results are
classified) does not take a record's numbers on faith: for every solve that claims a solution and carries its MPS
model, it re-reads the model with HiGHS's own MPS reader and recomputes, from the captured solution, the objective (c·x + constant) and the solution's feasibility
(variable bounds, row bounds, integrality). A claimed result whose numbers disagree with its own model is not
believed: the execution becomes ``tampered``. Typical forgeries it catches: a solver object whose ``ObjVal`` is
overridden, a poisoned describer, a fake point reported for a real model.

What it cannot catch: a forger who also fabricates a model consistent with the fake numbers (the contracts compare
the captured model with the problem), and records without a model (export disabled, or a model MPS cannot hold:
nonlinear pyomo models). Those are reported as unverified, never as tampered, so that honest programs are never
punished for what their exporter could not write.

Cost: one MPS parse by HiGHS plus O(nonzeros) numpy per checked record; models over ``MAX_MPS_CHARS`` are skipped
(counted as skipped) so that a huge model cannot make the parent the bottleneck.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
import threading
from dataclasses import dataclass, field
from typing import Any

from solvers.records import SolveStatus

# Records that claim a primal solution: their numbers must agree with their model.
CLAIMS_SOLUTION = {str(SolveStatus.OPTIMAL), str(SolveStatus.TIME_LIMIT_WITH_SOLUTION)}
MAX_MPS_CHARS = 500_000  # ~1000 columns x 1000 rows: a HiGHS read costs ~30-60 ms there (2-core machine, loaded)
# Tolerances. Solvers accept a point whose rows are violated by up to their feasibility tolerance (1e-6, absolute,
# on the *scaled* model; unscaling can multiply that by the row's magnitude) and integers off by their integrality
# tolerance (1e-5 in Gurobi/COPT/HiGHS): the checks allow 100x / 10x that, relative to the magnitudes involved, so an
# honest solver's point always passes while a forged number (off by far more than rounding) does not.
FEAS_TOL = 1e-4
INT_TOL = 1e-4
OBJ_TOL = 1e-6


@dataclass
class Verdict:
    checked: int = 0
    skipped: int = 0  # claimed a solution but carried no checkable model (no MPS, too large, unreadable, names)
    problems: list[str] = field(default_factory=list)


_RECORD_TYPES: dict[str, tuple[type, ...]] = {
    "status": (str,), "objective": (float, int, type(None)), "bound": (float, int, type(None)),
    "solution": (dict,), "model_mps": (str, type(None)), "solver": (str,), "api": (str,),
}


# APIs whose capture always exports the model (their writers take anything the library can hold). With MPS capture on,
# a solution claimed through one of them without its model did not come from the capture (ortools is not listed:
# CP-SAT and MathOpt records carry no MPS; nor pyomo: nonlinear models have none).
MODEL_APIS = {"gurobipy", "highspy", "coptpy", "docplex", "pulp"}


def verify_solves(records: list[Any], models_expected: bool = False) -> Verdict:
    """Check every captured solve; ``problems`` lists the records that contradict themselves or are malformed.
    ``models_expected``: MPS capture was on, so a ``MODEL_APIS`` record claiming a solution must carry its model."""
    verdict = Verdict()
    statuses = {str(s) for s in SolveStatus}
    for i, rec in enumerate(records):
        if not isinstance(rec, dict) or any(not isinstance(rec.get(k), t) for k, t in _RECORD_TYPES.items()) \
                or rec["status"] not in statuses:
            verdict.problems.append(f"solve {i + 1}: malformed record (not built by the capture)")
            continue
        if rec["status"] not in CLAIMS_SOLUTION or rec["objective"] is None:
            continue
        mps = rec["model_mps"]
        if not mps and models_expected and rec["api"] in MODEL_APIS:
            verdict.problems.append(f"solve {i + 1}: claims a solution without the model its capture always exports")
            continue
        if not mps or len(mps) > MAX_MPS_CHARS:
            verdict.skipped += 1
            continue
        problem = check_record(mps, rec["solution"], float(rec["objective"]), rec.get("sense"))
        if problem is None:
            verdict.skipped += 1
        elif problem:
            verdict.problems.append(f"solve {i + 1}: {problem}")
            verdict.checked += 1
        else:
            verdict.checked += 1
    return verdict


def check_record(mps: str, solution: dict[str, Any], objective: float, sense: str | None) -> str | None:
    """'' when the claimed objective and solution agree with the model, a reason when they do not, None when the
    model cannot be checked (unreadable by HiGHS, quadratic, or the solution does not name every column)."""
    import numpy as np

    lp = _read(mps)
    if lp is None:
        return None
    names = list(lp.col_names_)
    n = int(lp.num_col_)
    if n == 0 or len(names) != n:
        return None
    lower, upper = np.asarray(lp.col_lower_, dtype=float), np.asarray(lp.col_upper_, dtype=float)
    values = _values_by_column(names, solution, lower, upper)
    if values is None:
        return None
    try:
        x = np.array([float(v) for v in values])
    except (TypeError, ValueError):
        return "solution values are not numbers"
    if not np.all(np.isfinite(x)):
        return "solution has non-finite values"
    cost = np.asarray(lp.col_cost_, dtype=float)
    terms = cost * x
    value = float(lp.offset_) + float(terms.sum())
    scale = max(1.0, float(np.abs(terms).sum()), abs(float(lp.offset_)))
    mps_max = int(lp.sense_) == -1
    record_max = (sense or "").startswith("max")
    # An exporter that writes a maximisation as "minimise the negated costs" (no OBJSENSE section) gives -value.
    candidates = [value] + ([-value] if mps_max != record_max else [])
    if not any(abs(objective - v) <= OBJ_TOL * scale + 1e-9 for v in candidates):
        return f"claimed objective {objective:.10g} but the captured solution gives {value:.10g} on its own model"
    slack = FEAS_TOL * np.maximum(1.0, np.abs(x))
    bad = np.nonzero((x < lower - slack) | (x > upper + slack))[0]
    if bad.size:
        j = int(bad[0])
        return f"variable {names[j]} = {x[j]:.10g} outside its bounds [{lower[j]:.10g}, {upper[j]:.10g}]"
    integrality = np.asarray(lp.integrality_, dtype=int) if len(lp.integrality_) else np.zeros(n, dtype=int)
    integer = integrality == 1  # HighsVarType.kInteger (semi-continuous / semi-integer are not checked)
    off = np.abs(x - np.round(x))
    bad = np.nonzero(integer & (off > INT_TOL * np.maximum(1.0, np.abs(x))))[0]
    if bad.size:
        j = int(bad[0])
        return f"integer variable {names[j]} = {x[j]:.10g} is fractional"
    m = int(lp.num_row_)
    if m:
        a = lp.a_matrix_
        start, index, values = (np.asarray(a.start_, dtype=np.int64), np.asarray(a.index_, dtype=np.int64),
                                np.asarray(a.value_, dtype=float))
        if int(a.format_) == 2:  # row-wise: start_ indexes rows, index_ holds columns
            rows, cols = np.repeat(np.arange(m), np.diff(start)), index
        else:  # column-wise (what the MPS reader gives)
            rows, cols = index, np.repeat(np.arange(n), np.diff(start))
        contrib = values * x[cols]
        activity = np.bincount(rows, weights=contrib, minlength=m)
        magnitude = np.bincount(rows, weights=np.abs(contrib), minlength=m)
        rlo, rhi = np.asarray(lp.row_lower_, dtype=float), np.asarray(lp.row_upper_, dtype=float)
        slack = FEAS_TOL * np.maximum(1.0, np.maximum(magnitude, np.minimum(np.abs(rlo), np.abs(rhi))))
        bad = np.nonzero((activity < rlo - slack) | (activity > rhi + slack))[0]
        if bad.size:
            r = int(bad[0])
            row_names = list(lp.row_names_)
            name = row_names[r] if r < len(row_names) else f"row {r}"
            return f"constraint {name}: activity {activity[r]:.10g} outside [{rlo[r]:.10g}, {rhi[r]:.10g}]"
    return ""


# pyomo writes MPS with "symbolic labels": its _cpxlp_translation_table keeps letters, digits and "()_", turns
# "[]{}" into "()()" and anything else into "_" (x[1,2] -> x(1_2)); the captured solution keeps the program's names.
_PYOMO_BRACKETS = str.maketrans("[]{}", "()()")
_PYOMO_OTHER = re.compile(r"[^A-Za-z0-9()_]")


def _values_by_column(names: list[str], solution: dict[str, Any], lower: Any, upper: Any) -> list[Any] | None:
    """The solution's value of each MPS column: by name, else by pyomo's label of the name; a column the solution
    does not name may only be one the model fixes (pyomo's ONE_VAR_CONSTANT). None when the two cannot be matched."""
    labels: dict[str, Any] | None = None
    values = []
    for j, name in enumerate(names):
        if name in solution:
            values.append(solution[name])
            continue
        if labels is None:
            labels = {}
            for key, value in solution.items():
                label = _PYOMO_OTHER.sub("_", str(key).translate(_PYOMO_BRACKETS))
                labels[label] = value if label not in labels else None  # two names, one label: ambiguous
        if labels.get(name) is not None:
            values.append(labels[name])
        elif lower[j] == upper[j] and abs(lower[j]) < 1e30:
            values.append(lower[j])
        else:
            return None
    return values


_local = threading.local()
_scratch: list[str] = []


def _read(mps: str) -> Any:
    """The model as a HiGHS ``HighsLp`` (one quiet Highs instance per thread), or None if HiGHS cannot read it or
    it has a quadratic objective (the linear check would be wrong)."""
    try:
        import highspy
    except ImportError:
        return None
    h = getattr(_local, "highs", None)
    if h is None:  # one per thread: the parent classifies on each worker's feeder thread
        from solvers.stdout import fd1_redirected

        with fd1_redirected():  # the first Highs() of a process prints a banner; this runs in the caller's process
            h = _local.highs = highspy.Highs()
        h.setOptionValue("output_flag", False)
    if not _scratch:
        _scratch.append(tempfile.mkdtemp(prefix="flywheel-verify-"))  # private (0700), made once per process
    path = os.path.join(_scratch[0], f"{threading.get_ident()}.mps")
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(mps)
        h.clearModel()
        if h.readModel(path) == highspy.HighsStatus.kError:
            return None
        model = h.getModel()
        if int(model.hessian_.dim_) > 0:
            return None
        return model.lp_
    except Exception:  # a model HiGHS cannot take: unverified, not tampered
        return None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
