"""Layer 3: semantic equivalence by fix-and-resolve cross-evaluation and random objective probes.

Variables are mapped by (normalised) name first, then by coefficient signature (one round of colour refinement
on each canonical model). Then, with HiGHS:

1. both models are solved; their status and optimal objective must agree;
2. fix-and-resolve: the candidate's optimum, restricted to mapped variables, is fixed in the reference and the rest
   re-solved (auxiliary variables stay free) - it must be feasible with the same objective; and vice versa;
3. containment both ways: every row and bound of one model (over mapped columns) must be implied by the other,
   checked by optimising that row's form over the other model (LP relaxation first, the MIP to confirm a
   violation). This is what catches a dropped or loosened constraint that happens not to bind at the optimum, and
   what lets an added valid inequality through. Integrality of mapped columns must agree.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from contracts.equivalence.canonical import Canonical, initial_colours, refine
from contracts.equivalence.stdform import INF, StdModel, normalize_name
from solvers.ground_truth import compressed, new_highs

# Solvers stop at 1e-6..1e-7 primal feasibility and (MIP) a 1e-9 gap set below; 1e-6 relative on objective values
# is as tight as both sides can be held, and the perturbations we must detect move optima by far more.
RTOL = 1e-6
TIME_LIMIT_S = 10.0


@dataclass
class SolveResult:
    status: str  # optimal | infeasible | unbounded | other
    value: float | None = None
    x: list[float] = field(default_factory=list)


@dataclass
class SemanticResult:
    equivalent: bool
    reason: str
    evidence: dict[str, Any]


def _highs(m: StdModel, lb: list[float], ub: list[float], cost: dict[int, float], offset: float,
           integer: bool) -> Any:
    import highspy

    h = new_highs()  # the first Highs() in a process prints a banner to stdout; new_highs() keeps it quiet
    h.setOptionValue("output_flag", False)
    h.setOptionValue("time_limit", TIME_LIMIT_S)
    h.setOptionValue("mip_rel_gap", 1e-9)
    h.setOptionValue("threads", 1)
    lp = highspy.HighsLp()
    lp.num_col_ = m.n_vars
    lp.num_row_ = m.n_rows
    lp.col_cost_ = np.array([cost.get(j, 0.0) for j in range(m.n_vars)], dtype=float)
    lp.col_lower_ = np.array(lb, dtype=float)
    lp.col_upper_ = np.array(ub, dtype=float)
    lp.row_lower_ = np.array(m.lo, dtype=float)
    lp.row_upper_ = np.array(m.hi, dtype=float)
    by_col: list[list[tuple[int, float]]] = [[] for _ in range(m.n_vars)]
    for i, row in enumerate(m.rows):
        for j, c in row.items():
            by_col[j].append((i, c))
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = compressed(by_col)
    lp.offset_ = offset
    if integer and any(m.integer):
        lp.integrality_ = [highspy.HighsVarType.kInteger if t else highspy.HighsVarType.kContinuous
                           for t in m.integer]
    h.passModel(lp)
    return h


def _result(h: Any) -> tuple[str, float | None, list[float]]:
    import highspy

    status = h.getModelStatus()
    ms = highspy.HighsModelStatus
    if status == ms.kOptimal:
        return "optimal", h.getInfo().objective_function_value, list(h.getSolution().col_value)
    if status == ms.kInfeasible:
        return "infeasible", None, []
    if status in (ms.kUnbounded, ms.kUnboundedOrInfeasible):
        return "unbounded", None, []
    return "other", None, []


def solve(m: StdModel, objective: dict[int, float] | None = None, fixed: dict[int, float] | None = None,
          use_quad: bool = True) -> SolveResult:
    """Minimise ``objective`` (default: the model's own) over ``m`` with some columns fixed, using HiGHS."""
    lb, ub = list(m.lb), list(m.ub)
    for j, v in (fixed or {}).items():
        # A value from another solver is feasible to ~1e-7 on its own scaling; give it room instead of a point.
        slack = 1e-6 * (1 + abs(v))
        lb[j], ub[j] = (round(v), round(v)) if m.integer[j] else (v - slack, v + slack)
    cost = objective if objective is not None else m.obj
    h = _highs(m, lb, ub, cost, m.constant if objective is None else 0.0, integer=True)
    qp = use_quad and objective is None and bool(m.quad)
    if qp:
        _pass_hessian(h, m)
        # HiGHS's QP solver ran to its time limit on an 8-column convex QP (economic_dispatch) with its default
        # regularisation 1e-7 and solved it at once with 1e-9; the default is retried when 1e-9 fails.
        h.setOptionValue("qp_regularization_value", 1e-9)
    h.run()
    status, _, sol = _result(h)
    if qp and status == "other":
        h.setOptionValue("qp_regularization_value", 1e-7)
        h.clearSolver()
        h.run()
        status, _, sol = _result(h)
    if status != "optimal":
        return SolveResult(status)
    value = m.objective_value(sol) if objective is None else sum(c * sol[j] for j, c in cost.items())
    return SolveResult(status, value, sol)


class Oracle:
    """One loaded model answering "max / min of a linear form over the feasible set" repeatedly (warm starts).

    The LP relaxation answers first; only a violated LP answer on a model with integers is confirmed by the MIP,
    whose dual bound is conclusive either way.
    """

    def __init__(self, m: StdModel) -> None:
        self.m = m
        self.lp = _highs(m, m.lb, m.ub, {}, 0.0, integer=False)
        self._mip: Any = None

    def _extreme(self, h: Any, form: dict[int, float], maximize: bool) -> tuple[str, float | None, float | None]:
        import highspy

        n = self.m.n_vars
        h.changeColsCost(n, np.arange(n, dtype=np.int32), np.array([form.get(j, 0.0) for j in range(n)]))
        h.changeObjectiveSense(highspy.ObjSense.kMaximize if maximize else highspy.ObjSense.kMinimize)
        h.run()
        status, value, _ = _result(h)
        bound = None
        if any(self.m.integer) and h is self._mip:
            bound = h.getInfo().mip_dual_bound
        return status, value, bound

    def implies(self, form: dict[int, float], lo: float, hi: float) -> bool:
        """Does every feasible point satisfy lo <= form.x <= hi (1e-6 relative slack, rows are unit-scaled)?"""
        for maximize, limit in ((True, hi), (False, lo)):
            if not math.isfinite(limit):
                continue
            tol = 1e-6 * (1 + abs(limit))
            status, value, _ = self._extreme(self.lp, form, maximize)
            if status == "infeasible":
                return True
            ok = status == "optimal" and (value <= limit + tol if maximize else value >= limit - tol)
            if not ok and any(self.m.integer):
                if self._mip is None:
                    self._mip = _highs(self.m, self.m.lb, self.m.ub, {}, 0.0, integer=True)
                status, value, bound = self._extreme(self._mip, form, maximize)
                ref = bound if bound is not None and math.isfinite(bound) else value
                ok = status in ("optimal", "infeasible") and (
                    status == "infeasible" or (ref <= limit + tol if maximize else ref >= limit - tol))
            if not ok:
                return False
        return True


def eliminate_defined(m: StdModel, keep: set[int]) -> StdModel:
    """``m`` with every continuous column outside ``keep`` that an equality row defines (``y = expr``, as a
    modeller writes a total, a defined quantity or a unit conversion) substituted out of the other rows, its bounds
    becoming a row on ``expr``: the same feasible set projected on the remaining columns, so the rows that used
    ``y`` can be checked instead of skipped. Integer columns stay (dropping ``expr`` integral would enlarge the
    projection). New rows are scaled to a largest coefficient of 1, as the canonical rows are."""
    m = m.copy()
    done = True
    while done:
        done = False
        for j in range(m.n_vars):
            if j in keep or m.integer[j]:
                continue
            defining = [i for i, row in enumerate(m.rows) if j in row and m.lo[i] == m.hi[i]
                        and math.isfinite(m.lo[i]) and abs(row[j]) > 1e-9]
            if not defining:
                continue
            d = min(defining, key=lambda i: len(m.rows[i]))
            a, rhs = m.rows[d][j], m.lo[d]
            expr = {k: -c / a for k, c in m.rows[d].items() if k != j}  # y = rhs / a + expr
            const = rhs / a
            new_rows, new_lo, new_hi, new_names = [], [], [], []
            for i, row in enumerate(m.rows):
                if i == d:
                    continue
                lo, hi = m.lo[i], m.hi[i]
                if j in row:
                    c = row.pop(j)
                    for k, e in expr.items():
                        row[k] = row.get(k, 0.0) + c * e
                    row = {k: v for k, v in row.items() if abs(v) > 1e-12}
                    lo, hi = lo - c * const, hi - c * const
                    row, lo, hi = _unit(row, lo, hi)
                new_rows.append(row)
                new_lo.append(lo)
                new_hi.append(hi)
                new_names.append(m.row_names[i] if i < len(m.row_names) else str(i))
            if (math.isfinite(m.lb[j]) or math.isfinite(m.ub[j])) and expr:
                row, lo, hi = _unit(dict(expr), m.lb[j] - const, m.ub[j] - const)
                new_rows.append(row)
                new_lo.append(lo)
                new_hi.append(hi)
                new_names.append(f"bounds of {m.names[j]}")
            m.rows, m.lo, m.hi, m.row_names = new_rows, new_lo, new_hi, new_names
            m.lb[j], m.ub[j] = -INF, INF
            done = True
    return m


def _unit(row: dict[int, float], lo: float, hi: float) -> tuple[dict[int, float], float, float]:
    scale = max((abs(v) for v in row.values()), default=0.0)
    if scale <= 0:
        return row, lo, hi
    return {k: v / scale for k, v in row.items()}, lo / scale, hi / scale


def contained(inner: StdModel, outer: StdModel, mapping: dict[int, int]) -> tuple[bool, str]:
    """Is inner's feasible set (projected on mapped columns) inside outer's? ``mapping``: outer col -> inner col.

    Every row and finite bound of ``outer`` over mapped columns must be implied by ``inner``. Auxiliary (unmapped)
    continuous columns of ``outer`` that an equality defines are substituted out first (``eliminate_defined``);
    rows that still use an unmapped column are skipped.
    """
    outer = eliminate_defined(outer, set(mapping))
    oracle = Oracle(inner)
    for i, row in enumerate(outer.rows):
        if not all(j in mapping for j in row):
            continue
        if not oracle.implies({mapping[j]: c for j, c in row.items()}, outer.lo[i], outer.hi[i]):
            return False, f"row {outer.row_names[i] if i < len(outer.row_names) else i} is not implied"
    for j, k in mapping.items():
        if (math.isfinite(outer.lb[j]) or math.isfinite(outer.ub[j])) and not oracle.implies(
                {k: 1.0}, outer.lb[j], outer.ub[j]):
            return False, f"bound of {outer.names[j]} is not implied"
    return True, ""


def _pass_hessian(h: Any, m: StdModel) -> None:
    import highspy

    # HiGHS minimises c'x + 0.5 x'Qx with Q given by its lower triangle, column-wise: a term c x_i x_j (i != j)
    # is Q_ij = c, and c x_i^2 is Q_ii = 2c.
    cols: dict[int, dict[int, float]] = defaultdict(dict)
    for (a, b), c in m.quad.items():
        lo, hi = min(a, b), max(a, b)
        cols[lo][hi] = cols[lo].get(hi, 0.0) + (2 * c if a == b else c)
    hess = highspy.HighsHessian()
    hess.dim_ = m.n_vars
    hess.format_ = highspy.HessianFormat.kTriangular
    hess.start_, hess.index_, hess.value_ = compressed(sorted({j: 0.0, **cols.get(j, {})}.items())
                                                       for j in range(m.n_vars))
    h.passHessian(hess)


def map_variables(a: StdModel, b: StdModel) -> dict[int, int]:
    """Reference column -> candidate column: by normalised name, then by unique coefficient signature."""
    by_name = defaultdict(list)
    for j, n in enumerate(b.names):
        by_name[normalize_name(n)].append(j)
    mapping: dict[int, int] = {}
    for j, n in enumerate(a.names):
        hits = by_name.get(normalize_name(n), [])
        if len(hits) == 1:
            mapping[j] = hits[0]
    if len(mapping) == a.n_vars:
        return mapping
    # Signatures: a few refinement rounds (own bounds, cost, integrality, then the coefficients of its rows and
    # their neighbours); classes of equal size pair up in order (interchangeable columns).
    for rounds in (1, 2, 3):
        sig_a, _ = refine(a, *initial_colours(a), rounds=rounds)
        sig_b, _ = refine(b, *initial_colours(b), rounds=rounds)
        taken = set(mapping.values())
        pool_b: dict[str, list[int]] = defaultdict(list)
        for j, s in enumerate(sig_b):
            if j not in taken:
                pool_b[s].append(j)
        pool_a: dict[str, list[int]] = defaultdict(list)
        for j, s in enumerate(sig_a):
            if j not in mapping:
                pool_a[s].append(j)
        for s, js in pool_a.items():
            cands = pool_b.get(s, [])
            if len(cands) == len(js):
                mapping.update(zip(js, cands, strict=True))
        if len(mapping) == a.n_vars:
            break
    return mapping


def _evaluate(m: StdModel, x_map: dict[int, float]) -> SolveResult:
    """Evaluate a point on ``m`` directly: feasible within 1e-6 of each unit-scaled row and bound (the solvers'
    own tolerance is 1e-7 on their scaling; rows rescaled by our canonical form can stretch that tenfold)."""
    x = [x_map.get(j, 0.0) for j in range(m.n_vars)]
    for j, v in enumerate(x):
        tol = 1e-6 * (1 + abs(v))
        if v < m.lb[j] - tol or v > m.ub[j] + tol or (m.integer[j] and abs(v - round(v)) > 1e-5):
            return SolveResult("infeasible")
    for i, row in enumerate(m.rows):
        lhs = sum(c * x[j] for j, c in row.items())
        if lhs < m.lo[i] - 1e-6 * (1 + abs(m.lo[i])) or lhs > m.hi[i] + 1e-6 * (1 + abs(m.hi[i])):
            return SolveResult("infeasible")
    return SolveResult("optimal", m.objective_value(x), x)


def _close(x: float | None, y: float | None, rtol: float = RTOL) -> bool:
    if x is None or y is None:
        return x is y
    return abs(x - y) <= rtol * (1 + max(abs(x), abs(y)))


def semantic_equivalent(ref: Canonical, cand: Canonical) -> SemanticResult:
    a, b = ref.model, cand.model
    mapping = map_variables(a, b)
    ev: dict[str, Any] = {"mapped": len(mapping), "ref_vars": a.n_vars, "cand_vars": b.n_vars}
    needed = {j for j in range(a.n_vars) if j in a.obj} | {j for row in a.rows for j in row}
    unmapped = sorted(needed - set(mapping))
    if unmapped:  # a reference column the candidate lacks: nothing below could vouch for it
        ev["unmapped"] = [a.names[j] for j in unmapped[:5]]
        return SemanticResult(False, f"{len(unmapped)} reference variables could not be mapped", ev)
    ra, rb = solve(a), solve(b)
    ev.update(ref_status=ra.status, cand_status=rb.status, ref_objective=ra.value, cand_objective=rb.value)
    if ra.status != rb.status:
        return SemanticResult(False, f"status differs: {ra.status} vs {rb.status}", ev)
    if ra.status != "optimal":
        return SemanticResult(ra.status == "infeasible", f"both {ra.status}", ev)
    if not _close(ra.value, rb.value):
        return SemanticResult(False, "optimal objectives differ", ev)
    fix_b_in_a = _evaluate(a, {ja: rb.x[jb] for ja, jb in mapping.items()})
    point = {jb: ra.x[ja] for ja, jb in mapping.items()}
    # Every candidate column mapped: the reference optimum is a whole point of the candidate, checked directly (as
    # the other direction is). A re-solve with every column boxed is what failed on QPs: HiGHS's QP solver gives up
    # on a nearly fixed Hessian, a refusal that is no evidence either way.
    fix_a_in_b = _evaluate(b, point) if len(point) == b.n_vars else solve(b, fixed=point)
    ev.update(cand_opt_in_ref=fix_b_in_a.value, ref_opt_in_cand=fix_a_in_b.value)
    if fix_b_in_a.status != "optimal" or not _close(fix_b_in_a.value, ra.value):
        return SemanticResult(False, "candidate optimum is not optimal in the reference", ev)
    # The fixed values sit in a box of +-1e-6 (1 + |v|) (see solve), so the re-solve may improve the objective by
    # up to the box times the objective's coefficients.
    box = sum(abs(b.obj.get(jb, 0.0)) * 1e-6 * (1 + abs(ra.x[ja])) for ja, jb in mapping.items())
    if fix_a_in_b.status != "optimal" or (fix_a_in_b.value is not None and rb.value is not None and abs(
            fix_a_in_b.value - rb.value) > box + RTOL * (1 + abs(rb.value))):
        return SemanticResult(False, "reference optimum is not optimal in the candidate", ev)
    differs = [outer_j for outer_j, inner_j in mapping.items() if a.integer[outer_j] != b.integer[inner_j]]
    if differs:
        ev["integrality_differs"] = [a.names[j] for j in differs[:5]]
        return SemanticResult(False, "integrality of mapped variables differs", ev)
    inverse = {jb: ja for ja, jb in mapping.items()}
    for name, inner, outer, mp in (("candidate in reference", b, a, mapping), ("reference in candidate", a, b, inverse)):
        ok, why = contained(inner, outer, mp)
        if not ok:
            ev["containment"] = f"{name}: {why}"
            return SemanticResult(False, f"feasible sets differ ({name}: {why})", ev)
    return SemanticResult(True, "same optimum, cross-feasible optima, each feasible set implies the other", ev)


__all__ = ["INF", "Oracle", "SemanticResult", "contained", "eliminate_defined", "map_variables", "semantic_equivalent",
           "solve"]
