"""The linear MPS check: a claimed solution must reproduce its claimed objective (c·x + constant) and satisfy its own
captured model's bounds, rows and integrality (``check_record``). A small model is read by the pure-Python reader
(``solvers/sandbox/mps.py``) and checked without numpy; anything else through HiGHS's reader and numpy, with the same
arithmetic and the same verdict (``tests/test_sandbox_mps.py``)."""

from __future__ import annotations

import math
import re
from typing import Any

from solvers.mps_names import mps_names
from solvers.sandbox.mps import MpsModel
from solvers.sandbox.mps import parse as parse_mps
from solvers.sandbox.verify.common import FAST_MPS_CHARS, FEAS_TOL, INT_TOL, OBJ_TOL
from solvers.sandbox.verify.highs import _read


def check_record(mps: str, solution: dict[str, Any], objective: float, sense: str | None) -> str | None:
    """'' when the claimed objective and solution agree with the model, a reason when they do not, None when the
    model cannot be checked (unreadable by HiGHS, quadratic, or the solution does not name every column).

    A model of up to ``FAST_MPS_CHARS`` is read by ``mps.parse`` (pure Python, HiGHS's semantics) when that reader
    takes it, and checked in pure Python with the same arithmetic as the HiGHS + numpy path below, operation for
    operation (numpy's pairwise sum, bincount's order): the same verdict, reason text included
    (``tests/test_sandbox_mps.py``). Everything else goes through HiGHS."""
    if len(mps) <= FAST_MPS_CHARS:
        model = parse_mps(mps)
        if model is not None:
            return _check_parsed(model, solution, objective, sense)
    return _check_highs(mps, solution, objective, sense)


def _check_parsed(model: MpsModel, solution: dict[str, Any], objective: float, sense: str | None) -> str | None:
    """``_check_highs`` on a model read by ``mps.parse``, without numpy: for a small model, numpy's per-call cost is
    most of the check."""
    names = model.col_names
    if not names:
        return None
    values = _values_by_column(names, solution, model.col_lower, model.col_upper)
    if values is None:
        return None
    try:
        x = [float(v) for v in values]
    except (TypeError, ValueError):
        return "solution values are not numbers"
    if not all(map(math.isfinite, x)):
        return "solution has non-finite values"
    terms = [c * v for c, v in zip(model.col_cost, x, strict=True)]
    value = model.offset + _numpy_sum(terms)
    scale = max(1.0, _numpy_sum([abs(t) for t in terms]), abs(model.offset))
    record_max = (sense or "").startswith("max")
    candidates = [value] + ([-value] if model.maximize != record_max else [])
    if not any(abs(objective - v) <= OBJ_TOL * scale + 1e-9 for v in candidates):
        return f"claimed objective {objective:.10g} but the captured solution gives {value:.10g} on its own model"
    return _infeasibility_parsed(model, x, FEAS_TOL, INT_TOL)


def _numpy_sum(values: list[float]) -> float:
    """``float(np.array(values).sum())``, bit for bit: numpy adds a contiguous float64 array pairwise (blocks of up
    to 128 summed with 8 accumulators, halves above that, a plain loop below 8 items), onto an initial 0.0."""
    return 0.0 + _pairwise(values, 0, len(values)) if values else 0.0


def _pairwise(a: list[float], lo: int, n: int) -> float:
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    if n <= 128:
        r0, r1, r2, r3, r4, r5, r6, r7 = a[lo:lo + 8]
        i = lo + 8
        end = lo + n - n % 8
        while i < end:
            r0 += a[i]
            r1 += a[i + 1]
            r2 += a[i + 2]
            r3 += a[i + 3]
            r4 += a[i + 4]
            r5 += a[i + 5]
            r6 += a[i + 6]
            r7 += a[i + 7]
            i += 8
        res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while i < lo + n:
            res += a[i]
            i += 1
        return res
    half = n // 2
    half -= half % 8
    return _pairwise(a, lo, half) + _pairwise(a, lo + half, n - half)


def _infeasibility_parsed(model: MpsModel, x: list[float], tol: float, int_tol: float) -> str:
    """``_infeasibility`` on a model read by ``mps.parse``: the same comparisons in the same order, so the same first
    violation and the same numbers in the reason (``a if a > 1.0 else 1.0`` is ``np.maximum(1.0, a)``: no NaN here;
    an integral value is 0 off its rounding, so it skips the rounding)."""
    for name, xj, lo, up in zip(model.col_names, x, model.col_lower, model.col_upper, strict=True):
        a = abs(xj)
        slack = tol * (a if a > 1.0 else 1.0)
        if xj < lo - slack or xj > up + slack:
            return f"variable {name} = {xj:.10g} outside its bounds [{lo:.10g}, {up:.10g}]"
    for name, xj, integer in zip(model.col_names, x, model.integer, strict=True):
        if integer and not xj.is_integer():
            a = abs(xj)
            if abs(xj - round(xj)) > int_tol * (a if a > 1.0 else 1.0):
                return f"integer variable {name} = {xj:.10g} is fractional"
    m = len(model.row_names)
    if m:
        activity, magnitude = [0.0] * m, [0.0] * m
        for xj, column in zip(x, model.columns, strict=True):  # column by column, in order: np.bincount's sums
            for i, a in column:
                contrib = a * xj
                activity[i] += contrib
                magnitude[i] += abs(contrib)
        for name, act, mag, lo, up in zip(model.row_names, activity, magnitude, model.row_lower, model.row_upper,
                                          strict=True):
            bound = min(abs(lo), abs(up))
            big = mag if mag > bound else bound
            slack = tol * (big if big > 1.0 else 1.0)
            if act < lo - slack or act > up + slack:
                return f"constraint {name}: activity {act:.10g} outside [{lo:.10g}, {up:.10g}]"
    return ""


def _check_highs(mps: str, solution: dict[str, Any], objective: float, sense: str | None) -> str | None:
    """``check_record`` through HiGHS's MPS reader and numpy."""
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
    return _infeasibility(lp, x, names, FEAS_TOL, INT_TOL)


def _infeasibility(lp: Any, x: Any, names: list[str], tol: float, int_tol: float) -> str:
    """Why the point ``x`` violates the model's bounds, integrality or rows beyond ``tol`` (relative to the
    magnitudes involved), or '' when it does not."""
    import numpy as np

    n = int(lp.num_col_)
    lower, upper = np.asarray(lp.col_lower_, dtype=float), np.asarray(lp.col_upper_, dtype=float)
    slack = tol * np.maximum(1.0, np.abs(x))
    bad = np.nonzero((x < lower - slack) | (x > upper + slack))[0]
    if bad.size:
        j = int(bad[0])
        return f"variable {names[j]} = {x[j]:.10g} outside its bounds [{lower[j]:.10g}, {upper[j]:.10g}]"
    integer = _integer_columns(lp)
    off = np.abs(x - np.round(x))
    bad = np.nonzero(integer & (off > int_tol * np.maximum(1.0, np.abs(x))))[0]
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
        slack = tol * np.maximum(1.0, np.maximum(magnitude, np.minimum(np.abs(rlo), np.abs(rhi))))
        bad = np.nonzero((activity < rlo - slack) | (activity > rhi + slack))[0]
        if bad.size:
            r = int(bad[0])
            row_names = list(lp.row_names_)
            name = row_names[r] if r < len(row_names) else f"row {r}"
            return f"constraint {name}: activity {activity[r]:.10g} outside [{rlo[r]:.10g}, {rhi[r]:.10g}]"
    return ""


def _integer_columns(lp: Any) -> Any:
    import numpy as np

    n = int(lp.num_col_)
    integrality = np.asarray(lp.integrality_, dtype=int) if len(lp.integrality_) else np.zeros(n, dtype=int)
    return integrality == 1  # HighsVarType.kInteger (semi-continuous / semi-integer are not checked)


# pyomo writes MPS with "symbolic labels": its _cpxlp_translation_table keeps letters, digits and "()_", turns
# "[]{}" into "()()" and anything else into "_" (x[1,2] -> x(1_2)); the captured solution keeps the program's names.
_PYOMO_BRACKETS = str.maketrans("[]{}", "()()")
_PYOMO_OTHER = re.compile(r"[^A-Za-z0-9()_]")


def _values_by_column(names: list[str], solution: dict[str, Any], lower: Any, upper: Any) -> list[Any] | None:
    """The solution's value of each MPS column: by name, else by pyomo's label of the name or by the name with its
    whitespace written as ``_`` (HiGHS, OR-Tools, COPT and the docplex capture write "open Old Mill" so,
    ``solvers.mps_names``); a column the solution does not name may only be one the model fixes (pyomo's
    ONE_VAR_CONSTANT). None when the two cannot be matched."""
    labels: dict[str, Any] | None = None
    values = []
    for j, name in enumerate(names):
        if name in solution:
            values.append(solution[name])
            continue
        if labels is None:
            labels = {}
            keys = [str(k) for k in solution]
            for key, value, written in zip(keys, solution.values(), mps_names(keys), strict=True):
                for label in {_PYOMO_OTHER.sub("_", key.translate(_PYOMO_BRACKETS)), written}:
                    if label != key:
                        labels[label] = value if label not in labels else None  # two names, one label: ambiguous
        if labels.get(name) is not None:
            values.append(labels[name])
        elif lower[j] == upper[j] and abs(lower[j]) < 1e30:
            values.append(lower[j])
        else:
            return None
    return values
