"""Layers 1 and 2: a canonical form of a model, its exact hash, and a Weisfeiler-Lehman hash.

Canonicalisation removes what a modeller may legitimately vary: objective sense (max f == min -f), the units of
continuous variables (x = k x', see ``_scale_columns``), a column's origin and direction (x = s + x', y = 1 - y',
see ``_normalise_origin``), the direction
and scale of rows (rows become ranges divided by their largest |coefficient|), equalities written as two
inequalities (parallel rows merge by intersecting their ranges), one-variable rows (they become bounds), slack and
surplus columns (a continuous, cost-free column in a single row widens that row's range instead) and integer
bounds (rounded inwards). For comparing two models (``reformulate=True``, what ``compare_models`` uses for the exact
and WL layers) also a substituted defined variable, a split free variable, fixed columns and row sides the bounds
imply (``reformulate.py``). What is left is compared up to a permutation of rows and columns.

Exact hash: the stable colouring (colour refinement) of the bipartite variable-constraint graph (labels: bounds,
integrality, costs, coefficients), computed as a coarsest equitable partition in O(m log n) (``partition.py``), ties
broken by individualising one vertex at a time, then the matrix written in that order. Equal hashes mean the
canonical models are identical up to permutation (sound); for highly symmetric models the tie-breaking may miss a
match, which is what the WL layer (hash of the partition's certificate) and the semantic layer are for.
"""

from __future__ import annotations

import hashlib
import heapq
import math
from collections import Counter, deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from contracts.equivalence.partition import Equitable
from contracts.equivalence.reformulate import (
    drop_implied_sides,
    merge_split_columns,
    orient_columns,
    remove_fixed_columns,
    substitute_defined,
)
from contracts.equivalence.stdform import INF, StdModel

# Labels are rounded to 9 significant digits: rescaled rows must hash equal after a division that is exact only
# up to floating-point error (about 1e-16 relative), while generator coefficients differ in the 2nd-4th digit.
_DIGITS = 9
# Presolve and the reformulations run to a fixpoint. Every pass that changes the model removes a row, a column or a
# row's coefficient, or makes a finite row side infinite, and none is ever undone, so the loop ends; the cap only
# guards against a bug. It was 20, which a tiled max-flow model of ~2,700 columns needs all of (its defined flows
# are substituted a few per pass): a copy with one split variable more stopped two passes short, with a one-variable
# row not yet a bound, and hashed apart from the reference (bench/equivalence.py's large slice, max_flow seed 1).
_MAX_PASSES = 1000


def r(x: float, digits: int = _DIGITS) -> float:
    if not math.isfinite(x) or x == 0:
        return 0.0 if x == 0 else x
    return float(f"{x:.{digits}g}")


def _h(obj: object) -> str:
    return hashlib.sha1(repr(obj).encode()).hexdigest()[:16]


@dataclass
class Canonical:
    model: StdModel  # presolved, minimisation, rows scaled and oriented
    infeasible: bool = False  # presolve proved infeasibility (an empty row whose range excludes 0, crossed bounds)


def canonicalize(src: StdModel, scale_columns: bool = True, reformulate: bool = False) -> Canonical:
    """``scale_columns=False`` keeps the columns in the program's own units (the semantic layer maps solutions
    between the two models by variable, so both must be in their original units). ``reformulate`` also undoes a
    substituted defined variable and a split free variable (``reformulate.py``); it removes columns whose values
    then follow from others, so it is for comparing models, not for mapping solutions."""
    m = src.copy()
    if m.maximize:
        m.obj = {j: -c for j, c in m.obj.items()}
        m.quad = {k: -c for k, c in m.quad.items()}
        m.constant = -m.constant
        m.maximize = False
    m.obj = {j: c for j, c in m.obj.items() if c != 0}
    infeasible = False
    for j in range(m.n_vars):
        if m.integer[j]:
            m.lb[j], m.ub[j] = _int_bounds(m.lb[j], m.ub[j])
    if scale_columns:  # shifts before presolve too: its reformulations read the bounds (no mirroring yet: a split
        _normalise_origin(m, mirror=False)  # pair x+, x- must stay exact negatives for merge_split_columns)
    for _ in range(_MAX_PASSES):
        changed, bad = _presolve_pass(m)
        infeasible |= bad
        # one reformulation at a time, and only at a fixpoint of the plain presolve: x+ - x- >= 0 must be a bound
        # again before an implied-free test reads the merged column's bounds
        if reformulate and not changed:
            changed = (drop_implied_sides(m) or remove_fixed_columns(m) or merge_split_columns(m)
                       or substitute_defined(m))
        if not changed:
            break
    _drop_unused_columns(m)
    if reformulate:
        orient_columns(m, bounded=not scale_columns)
    if scale_columns:
        _normalise_origin(m)
        _scale_columns(m)
    _orient_rows(m)
    infeasible |= any(lo > hi + 1e-9 * (1 + abs(hi)) for lo, hi in zip(m.lb, m.ub, strict=True))
    return Canonical(m, infeasible)


def _normalise_origin(m: StdModel, mirror: bool = True) -> None:
    """Undo a change of origin or direction of a column (x = s + x': hours above a 40-hour minimum vs hours;
    y = 1 - y': a site closed instead of open): each column is rewritten x = s + sigma x'' with x'' in [0, w] or
    [0, inf). A column bounded on one side is counted from that bound, away from it; one bounded on both sides runs
    from the end that makes its cost positive, and one without a cost from the end its rows point to: the sum over
    its rows of sign(a_ij) * sign(row side), the sides taken with every such column at its midpoint (where that is
    0, the sum of sign(a_ij) over its one-sided rows read as "<="), is unchanged by negating a row and changes sign
    when the column is mirrored, so it picks the same end for both copies (a sum of 0 counts from the lower end: a
    mirrored copy is then a possible miss, never a false match). Rows' sides and the objective's constant absorb s
    (exactly rounded sums: the same in any column order), coefficients and the cost take sigma. A bijection (integer
    columns move only by integers), so an equal hash still means an equivalent model; free columns and columns in a
    quadratic term stay as they are. ``mirror=False``: only columns bounded below alone, shifted to 0."""
    in_quad = {j for k in m.quad for j in k}
    moved: dict[int, tuple[float, float]] = {}  # column -> (s, sigma)
    constant = [m.constant]  # + c * s of each moved column, summed once (exactly rounded, snapped: _snapped_sum)
    balanced: list[int] = []  # two finite bounds, no cost: decided by their rows, after the others have moved
    for j in range(m.n_vars):
        lo, hi = m.lb[j], m.ub[j]
        if j in in_quad or (math.isinf(lo) and math.isinf(hi)):
            continue
        c = m.obj.get(j, 0.0)
        if not mirror:
            if math.isfinite(lo) and math.isinf(hi):  # [-u, 0] shifted would be [0, u] mirrored: left for later
                _move(m, j, (lo, 1.0), moved, constant)
            continue
        if math.isfinite(lo) and math.isfinite(hi) and c == 0:
            if lo < hi:
                balanced.append(j)
            continue
        up = math.isinf(lo) or (math.isfinite(hi) and c < 0)  # measure down from the upper bound
        _move(m, j, (hi, -1.0) if up else (lo, 1.0), moved, constant)
    _apply_moves(m, moved)
    m.constant = _snapped_sum(constant)
    if not balanced:
        return
    mid = {j: (m.lb[j] + m.ub[j]) / 2 for j in balanced}
    by_side = dict.fromkeys(balanced, 0)  # sign(a_ij) * sign(the row's side, such columns at their midpoints)
    by_sense = dict.fromkeys(balanced, 0)  # sign(a_ij) in the row read as "<=" (one-sided rows): the tie-break
    for i, row in enumerate(m.rows):
        lo, hi = m.lo[i], m.hi[i]
        if math.isinf(lo) and math.isinf(hi):
            continue
        one_sided = math.isinf(lo) or math.isinf(hi)
        terms = [row[j] * mid[j] for j in row if j in mid]
        raw = (lo + hi) / 2 if not one_sided else lo if math.isfinite(lo) else hi
        side = math.fsum([raw, *(-t for t in terms)])
        side_sign = 0 if abs(side) <= 1e-9 * (max([abs(raw), *map(abs, terms)]) or 1.0) else 1 if side > 0 else -1
        sense = (1 if math.isinf(lo) else -1) if one_sided else 0
        for j in row:
            if j in by_side:
                a = 1 if row[j] > 0 else -1
                by_side[j] += a * side_sign
                by_sense[j] += a * sense
    score = {j: by_side[j] or by_sense[j] for j in balanced}
    _propagate_direction(m, score, in_quad)
    moved = {}
    for j in balanced:  # a score of 0 names no end: counted from the lower one (a mirrored copy is a miss)
        _move(m, j, (m.ub[j], -1.0) if score[j] < 0 else (m.lb[j], 1.0), moved, constant)
    _apply_moves(m, moved)
    m.constant = _snapped_sum(constant)


def _propagate_direction(m: StdModel, score: dict[int, int], in_quad: set[int]) -> None:
    """Direction for the cost-free two-sided columns whose rows name no end (``score`` 0: a storage level in
    balance rows with a zero side), from the columns beside them: sum over its rows of sign(a_ij) * sign(a_ik) *
    sigma_k over the row's columns k whose direction is already canonical (one-sided, costed, or decided), which
    negating a row leaves and mirroring column j flips. Where that sum is 0 (a charge/discharge switch: -1 beside
    the charge, +1 beside the discharge) the same sums are kept per colour of k (``_unsigned_colours``: what no
    shift, mirror or rescaling changes) and the first nonzero one, in colour order, decides. In rounds, every column decided in a round at once, so the result does not
    depend on the column order; what stays 0 keeps 0 (counted from its lower end)."""
    open_ = {j for j, v in score.items() if v == 0}
    if not open_:
        return
    sigma = {j: 1 for j in range(m.n_vars) if j not in score and j not in in_quad and m.lb[j] < m.ub[j]
             and (math.isfinite(m.lb[j]) or math.isfinite(m.ub[j]))}  # moved already: x'' >= 0 from its end
    sigma.update({j: 1 if v > 0 else -1 for j, v in score.items() if v != 0})
    rows_of: dict[int, list[int]] = {j: [] for j in open_}
    for i, row in enumerate(m.rows):
        for j in row:
            if j in rows_of:
                rows_of[j].append(i)
    colour: list[str] | None = None
    while open_:
        found: dict[int, int] = {}
        for j in open_:
            by_neighbour: Counter = Counter()  # column k -> sum of sign(a_ij) sign(a_ik) sigma_k over shared rows
            for i in rows_of[j]:
                row = m.rows[i]
                a = 1 if row[j] > 0 else -1
                for k in row:
                    if k != j and k in sigma:
                        by_neighbour[k] += a * (1 if row[k] > 0 else -1) * sigma[k]
            total = sum(by_neighbour.values())
            if not total and any(by_neighbour.values()):
                colour = colour or _unsigned_colours(m, in_quad)
                per: Counter = Counter()
                for k, v in by_neighbour.items():
                    per[colour[k]] += v
                total = next((per[c] for c in sorted(per) if per[c]), 0)
            if total:
                found[j] = total
        if not found:
            return
        for j, total in found.items():
            score[j] = total
            sigma[j] = 1 if total > 0 else -1
        open_ -= found.keys()


def _unsigned_colours(m: StdModel, in_quad: set[int]) -> list[str]:
    """Column colours that no shift, mirror or rescaling of a column, and no row's sign or scale, changes: colour
    refinement on the nonzero pattern with integrality, the kind of range (two-sided, one-sided, free) and the cost's
    sign for the columns whose direction is canonical by then (one-sided and costed ones; 0 for the others). An
    integer column's cost also keeps its magnitude (no allowed transformation rescales an integer column or the
    objective): an orienteering tour's order difference sits between two visit binaries of one pattern, told apart
    only by their prizes (bench/equivalence.py: its shifted copy was mirrored)."""
    u = m.copy()
    u.rows = [dict.fromkeys(row, 1.0) for row in u.rows]
    u.lo = [-INF] * u.n_rows
    u.hi = [INF] * u.n_rows
    u.quad = {}
    for j in range(u.n_vars):
        lo, hi = m.lb[j], m.ub[j]
        two, free = math.isfinite(lo) and math.isfinite(hi), math.isinf(lo) and math.isinf(hi)
        u.lb[j], u.ub[j] = (-INF, INF) if free else (0.0, 1.0 if two else INF)
        c = m.obj.get(j, 0.0)
        u.obj[j] = (0.0 if c == 0 or free or j in in_quad else r(c) if m.integer[j] else math.copysign(1.0, c))
    return equitable(u, *initial_colours(u)).colours()[0]


def _move(m: StdModel, j: int, move: tuple[float, float], moved: dict[int, tuple[float, float]],
          constant: list[float]) -> None:
    """Bounds and cost of column j for x = s + sigma x'' (``move`` = (s, sigma)); the rows follow in _apply_moves,
    the objective's constant takes c * s (appended to ``constant``)."""
    s, sigma = move
    lo, hi = m.lb[j], m.ub[j]
    if (s == 0 and sigma == 1) or (m.integer[j] and s != round(s)):  # x - 2.5 would not be an integer
        return
    moved[j] = move
    m.lb[j], m.ub[j] = 0.0, (hi - lo if math.isfinite(lo) and math.isfinite(hi) else INF)
    if j in m.obj:
        constant.append(m.obj[j] * s)
        m.obj[j] *= sigma


def _snapped_sum(parts: list[float]) -> float:
    """The exactly rounded sum, 0 where it is float noise against its parts (a program that added c * s to its
    objective's constant and the shift that takes it back leave ~1e-13; no label rounding makes that 0)."""
    total = math.fsum(parts)
    return 0.0 if abs(total) <= 1e-12 * max(map(abs, parts), default=0.0) else total


def _apply_moves(m: StdModel, moved: dict[int, tuple[float, float]]) -> None:
    if not moved:
        return
    for i, row in enumerate(m.rows):
        shift = [row[j] * moved[j][0] for j in row if j in moved]
        if not shift:
            continue
        for j in row:
            if j in moved:
                row[j] *= moved[j][1]
        total = math.fsum(shift)
        m.lo[i] -= total
        m.hi[i] -= total


def _scale_columns(m: StdModel) -> None:
    """Undo a diagonal rescaling of continuous columns and of rows (x = k x', hours vs minutes).

    Least squares on the logs of the nonzeros: find row factors r_i and column factors c_j minimising
    sum (log|a_ij| + r_i - c_j)^2 + sum_j (log|cost_j| - c_j)^2, where integer columns and columns in a quadratic
    term keep c_j = 0 (x = k x' is not an equivalence for an integer x unless k = +-1) and the objective keeps its
    scale (its value is compared). The residuals are what is left of D1 A D2 for any positive diagonal D1, D2, so
    two models that differ only by such a scaling get the same scaled matrix (up to float error, absorbed by the
    9-digit labels). Column j is then replaced by x'_j = x_j e^{c_j} (coefficients / e^{c_j}, bounds * e^{c_j}).
    Every step is an exact reformulation, so an equal hash still means an equivalent model (precision is kept).
    """
    import numpy as np

    in_quad = {j for k in m.quad for j in k}
    free = [j for j in range(m.n_vars) if not m.integer[j] and j not in in_quad]
    if not free:  # a model that presolve reduced to bounds and costs still scales its costed columns (cost -> 1)
        return
    col_of = {j: k for k, j in enumerate(free)}
    n_r, n_c = m.n_rows, len(free)
    eqs: list[tuple[int, int, float]] = []  # (row or -1, column or -1, log|a|)
    for i, row in enumerate(m.rows):
        for j, a in row.items():
            eqs.append((i, col_of.get(j, -1), math.log(abs(a))))
    for j, c in m.obj.items():
        if j in col_of:
            eqs.append((-1, col_of[j], math.log(abs(c))))
    # components touching neither the objective nor an integer column have a free common factor; a tiny ridge
    # term picks one deterministically (a function of the scaled model only up to that factor: sound, maybe a miss)
    sol = _log_scale_solve(eqs, n_r + n_c, n_r)
    _pin_free_components(m, eqs, free, sol, n_r)
    colf = np.exp(sol[n_r:])
    rows_of: dict[int, list[int]] = {}
    for i, row in enumerate(m.rows):
        for j in row:
            rows_of.setdefault(j, []).append(i)
    for k, j in enumerate(free):
        f = float(colf[k])
        if abs(f - 1.0) < 1e-12:
            continue
        for i in rows_of.get(j, ()):
            m.rows[i][j] /= f
        if j in m.obj:
            m.obj[j] /= f
        m.lb[j] *= f
        m.ub[j] *= f


# Above this many unknowns (rows + continuous columns) the ridge least squares is solved as a sparse system: the
# dense SVD costs O(n^3) (131 s for a 3,000-column transportation model; bench/equivalence.py's large-model slice),
# the sparse factorisation well under a second. Below it, one dense SVD serves the solve and its refinements.
DENSE_SCALE_MAX = 1500
_RIDGE = 1e-6
# Proximal refinement steps after the ridge solve, on both paths (see _log_scale_solve). 0 is the solve of hasher
# "contracts-3" (the same solve, up to rounding), kept for bench/structural_hash.py's baseline.
_REFINE_STEPS = 2


_BLAS: Any = None


def _log_scale_solve(eqs: list[tuple[int, int, float]], n: int, n_r: int) -> Any:
    """argmin_x ||A x - b||^2 + RIDGE^2 ||x||^2, one equation per (row or -1, column or -1, log|a|): +1 on the row's
    factor, -1 on the column's (index n_r + column), right-hand side -log|a|.

    On one BLAS thread (threadpoolctl): the contracts stage runs a worker per core, and OpenBLAS's threads, spinning
    for cores that other work holds, made a 338 x 104 SVD take 2.3 s instead of 6 ms on a loaded 2-core machine
    (a 60-column model's compare_models took 2.9 s beside a training run). One thread also gives the same last bits
    on any machine, whatever its core count, so a hash does not depend on where it was computed."""
    global _BLAS
    if n > DENSE_SCALE_MAX:  # SuperLU: scipy's own OpenBLAS, loaded now; a fresh scan (~0.6 ms) finds it
        from scipy.sparse.linalg import splu  # noqa: F401
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1, user_api="blas"):
            return _log_scale_solve_1(eqs, n, n_r)
    if _BLAS is None:  # numpy's OpenBLAS: one scan, then ~0.1 ms per limit
        from threadpoolctl import ThreadpoolController

        _BLAS = ThreadpoolController()
    with _BLAS.limit(limits=1, user_api="blas"):
        return _log_scale_solve_1(eqs, n, n_r)


def _log_scale_solve_1(eqs: list[tuple[int, int, float]], n: int, n_r: int) -> Any:
    import numpy as np

    rr = [e for e, (i, _, _) in enumerate(eqs) if i >= 0]
    cc = [e for e, (_, k, _) in enumerate(eqs) if k >= 0]
    b = np.array([-la for _, _, la in eqs])
    m_eq = len(eqs)
    if n <= DENSE_SCALE_MAX:
        a_mat = np.zeros((m_eq, n))
        a_mat[rr, [eqs[e][0] for e in rr]] = 1.0
        a_mat[cc, [n_r + eqs[e][1] for e in cc]] = -1.0
        # [A; RIDGE I] has singular values >= RIDGE, so the pseudo-inverse from one SVD is exact and reusable.
        u, s, vt = np.linalg.svd(np.vstack([a_mat, _RIDGE * np.eye(n)]), full_matrices=False)

        def ridge_solve(rhs: Any) -> Any:
            return vt.T @ ((u[:m_eq].T @ rhs) / s)
    else:
        from scipy.sparse import bmat, coo_matrix, identity
        from scipy.sparse.linalg import splu

        a_mat = coo_matrix((np.concatenate([np.ones(len(rr)), -np.ones(len(cc))]),
                            (np.array(rr + cc), np.array([eqs[e][0] for e in rr] + [n_r + eqs[e][1] for e in cc]))),
                           shape=(m_eq, n)).tocsr()
        # The augmented system [[I, A], [A', -RIDGE^2 I]] [residual; x] = [b; 0] has the least-squares solution
        # without squaring A's condition number (the normal equations A'A would); SuperLU factors it in well under
        # a second.
        lu = splu(bmat([[identity(m_eq), a_mat], [a_mat.T, -_RIDGE**2 * identity(n)]], format="csc"))

        def ridge_solve(rhs: Any) -> Any:
            return lu.solve(np.concatenate([rhs, np.zeros(n)]))[m_eq:]

    x = ridge_solve(b)
    # The ridge pulls each direction of A by RIDGE^2 / (its eigenvalue of A'A + RIDGE^2): nothing for most, but a
    # weakly anchored one (a long chain of rows pinned by one cost, eigenvalue ~1e-7 in a 3,000-column model) moved
    # a model and its rescaled copy apart in the 6th digit (1 miss in the large-model slice; in small generator
    # models 34 of 5,200 shuffled copies hashed apart, 1e-11 to 1e-5 relative, before the dense path refined too:
    # bench/structural_hash.py). Proximal steps x += argmin ||A d - (b - A x)||^2 + RIDGE^2 ||d||^2 on the same
    # factorisation shrink that pull by the same factor each; the null space (no anchor at all) stays at 0, for
    # _pin_free_components.
    for _ in range(_REFINE_STEPS):
        x = x + ridge_solve(b - a_mat @ x)
    return x


def _pin_free_components(m: StdModel, eqs: list[tuple[int, int, float]], free: list[int], sol: Any,
                         n_r: int) -> None:
    """Fix the common factor of each component that neither a cost nor an integer column pins (a network of
    cost-free flows): the ridge term picks one that depends on the columns' input scales, so a model and its
    rescaled copy came out a constant factor apart in every bound and right-hand side of the component (9 held-out
    misses in bench/equivalence.py, all flows). Every log |bound| + c_j and log |row side| + r_i moves by the same
    shift t, so setting their mean to 0 picks the same representative for both. A component with no finite nonzero
    bound or side is a cone: any factor gives the same canonical model."""
    parent = list(range(n_r + len(free)))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    pinned: set[int] = set()
    for i, k, _ in eqs:
        if i >= 0 and k >= 0:
            parent[find(i)] = find(n_r + k)
        elif i < 0 <= k:
            pinned.add(n_r + k)  # a cost
        elif i >= 0 > k:
            pinned.add(i)  # a row with an integer or quadratic column (its factor is fixed at 1)
    pinned_roots = {find(x) for x in pinned}
    logs: dict[int, list[float]] = {}
    for k, j in enumerate(free):
        for v in (m.lb[j], m.ub[j]):
            if v != 0 and math.isfinite(v):
                logs.setdefault(find(n_r + k), []).append(math.log(abs(v)) + sol[n_r + k])
    for i in range(n_r):
        for v in (m.lo[i], m.hi[i]):
            if v != 0 and math.isfinite(v):
                logs.setdefault(find(i), []).append(math.log(abs(v)) + sol[i])
    shifts = {root: sum(sorted(values)) / len(values)  # sorted: the same sum whatever the input order
              for root, values in logs.items() if root not in pinned_roots}
    for x in range(n_r + len(free)):
        sol[x] -= shifts.get(find(x), 0.0)


def _int_bounds(lo: float, hi: float) -> tuple[float, float]:
    # 1e-9 absorbs a bound written as 2.9999999999 for 3; anything further out is a genuinely fractional bound.
    lo2 = math.ceil(lo - 1e-9) if math.isfinite(lo) else lo
    hi2 = math.floor(hi + 1e-9) if math.isfinite(hi) else hi
    return float(lo2), float(hi2)


def _presolve_pass(m: StdModel) -> tuple[bool, bool]:
    changed = False
    infeasible = False
    keep: list[int] = []
    for i, row in enumerate(m.rows):
        row = {j: c for j, c in row.items() if c != 0}
        m.rows[i] = row
        if not row:
            infeasible |= m.lo[i] > 1e-9 or m.hi[i] < -1e-9
            changed = True
            continue
        if math.isinf(m.lo[i]) and math.isinf(m.hi[i]):
            changed = True
            continue
        if len(row) == 1:  # a one-variable row is a bound
            _row_to_bound(m, i)
            changed = True
            continue
        keep.append(i)
    if len(keep) != m.n_rows:
        _keep_rows(m, keep)
    changed |= _eliminate_slacks(m)
    changed |= _merge_parallel_rows(m)
    return changed, infeasible


def _keep_rows(m: StdModel, keep: list[int]) -> None:
    m.rows = [m.rows[i] for i in keep]
    m.lo = [m.lo[i] for i in keep]
    m.hi = [m.hi[i] for i in keep]
    if m.row_names:
        m.row_names = [m.row_names[i] for i in keep]


def _row_to_bound(m: StdModel, i: int) -> None:
    """Row i holds one column: its range becomes that column's bound (the row is left for the caller to drop)."""
    (j, a), = m.rows[i].items()
    lo, hi = (m.lo[i] / a, m.hi[i] / a) if a > 0 else (m.hi[i] / a, m.lo[i] / a)
    lo, hi = (-INF if lo != lo else lo), (INF if hi != hi else hi)
    if m.integer[j]:
        lo, hi = _int_bounds(lo, hi)
    m.lb[j], m.ub[j] = max(m.lb[j], lo), min(m.ub[j], hi)


def _eliminate_slacks(m: StdModel) -> bool:
    """A continuous column with no cost that appears in one row only: fold its range into that row's range.

    A row left with one column becomes that column's bound at once, and the column is looked at again: a chain of
    cost-free flows (x1 -> x2 -> ... -> xn) folds away in one pass, not in two passes per link (a 1,000-link chain
    took 11 s, and presolve's pass cap cut longer ones short)."""
    uses: dict[int, set[int]] = {}
    for i, row in enumerate(m.rows):
        for j in row:
            uses.setdefault(j, set()).add(i)
    in_quad = {j for k in m.quad for j in k}
    changed = False
    done_rows: set[int] = set()
    emptied: set[int] = set()
    work = deque(uses)
    while work:
        j = work.popleft()
        rows = uses[j]
        if len(rows) != 1 or m.integer[j] or j in m.obj or j in in_quad:
            continue
        (i,) = rows
        if i in done_rows or len(m.rows[i]) < 2:
            continue
        c = m.rows[i].pop(j)
        rows.clear()
        # a.x + c s in [lo, hi] with s in [l, u]  <=>  a.x in [lo - max(c l, c u), hi - min(c l, c u)]
        ends = [c * m.lb[j], c * m.ub[j]]
        ends = [(-INF if math.isnan(e) else e) for e in ends]
        m.lo[i] = m.lo[i] - max(ends)
        m.hi[i] = m.hi[i] - min(ends)
        m.lo[i] = -INF if math.isnan(m.lo[i]) else m.lo[i]
        m.hi[i] = INF if math.isnan(m.hi[i]) else m.hi[i]
        done_rows.add(i)
        changed = True
        if len(m.rows[i]) == 1:  # the row is now a bound on its last column, which may be a slack in turn
            (t,) = m.rows[i]
            _row_to_bound(m, i)
            emptied.add(i)
            uses[t].discard(i)
            work.append(t)
    if emptied:
        _keep_rows(m, [i for i in range(m.n_rows) if i not in emptied])
    return changed


def _merge_parallel_rows(m: StdModel) -> bool:
    """Rows that are multiples of each other merge into one range (x <= 5 and x >= 5 become x == 5)."""
    merged: dict[tuple, int] = {}
    keep: list[int] = []
    changed = False
    for i, row in enumerate(m.rows):
        first = min(row)
        a = row[first]
        key = tuple(sorted((j, r(c / a)) for j, c in row.items()))
        lo, hi = (m.lo[i] / abs(a), m.hi[i] / abs(a))
        lo, hi = (lo, hi) if a > 0 else (-hi, -lo)
        if key in merged:
            k = merged[key]
            ka = m.rows[k][min(m.rows[k])]
            klo, khi = m.lo[k] / abs(ka), m.hi[k] / abs(ka)
            klo, khi = (klo, khi) if ka > 0 else (-khi, -klo)
            nlo, nhi = max(lo, klo), min(hi, khi)
            m.rows[k] = {j: c / ka for j, c in m.rows[k].items()}
            m.lo[k], m.hi[k] = nlo, nhi
            changed = True
            continue
        merged[key] = i
        keep.append(i)
    if changed:
        _keep_rows(m, keep)
    return changed


def _drop_unused_columns(m: StdModel) -> None:
    """Columns in no row, with no cost, never integer-constrained to something odd, cannot matter: drop them."""
    used = {j for row in m.rows for j in row} | set(m.obj) | {j for k in m.quad for j in k}
    if len(used) == m.n_vars:
        return
    keep = [j for j in range(m.n_vars) if j in used or m.lb[j] > m.ub[j]]
    new = {old: k for k, old in enumerate(keep)}
    m.names = [m.names[j] for j in keep]
    m.integer = [m.integer[j] for j in keep]
    m.lb = [m.lb[j] for j in keep]
    m.ub = [m.ub[j] for j in keep]
    m.rows = [{new[j]: c for j, c in row.items()} for row in m.rows]
    m.obj = {new[j]: c for j, c in m.obj.items()}
    m.quad = {(new[a], new[b]): c for (a, b), c in m.quad.items()}


def _orient_rows(m: StdModel) -> None:
    """Scale each row by 1/max|a| and pick its sign from permutation-invariant data only.

    The sign follows the sorted coefficients and the range; a row that reads the same both ways by those (x - y = 0)
    is oriented by the colours of its columns, computed with such rows' signs ignored.
    """
    ties: list[int] = []
    for i, row in enumerate(m.rows):
        s = max(abs(c) for c in row.values())
        pos = ({j: c / s for j, c in row.items()}, m.lo[i] / s, m.hi[i] / s)
        neg = ({j: -c / s for j, c in row.items()}, -m.hi[i] / s, -m.lo[i] / s)
        kp, kn = _orientation_key(*pos), _orientation_key(*neg)
        if kn > kp:
            pos = neg
        elif kn == kp:
            ties.append(i)
        m.rows[i], m.lo[i], m.hi[i] = pos
    if not ties:
        return
    unsigned = m.copy()
    for i in ties:
        unsigned.rows[i] = {j: abs(c) for j, c in m.rows[i].items()}
    var, _ = equitable(unsigned, *initial_colours(unsigned)).colours()
    for i in ties:
        # the row's (column colour, coefficient) multiset against its negation's; equal: symmetric, either sign
        # is as good. (Only the smallest colour used to decide, and a row whose two smallest columns shared a colour
        # was left as written: a flow balance x_in - x_out = 0 kept the program's sign, 1 held-out miss.)
        kp = sorted((var[j], r(c)) for j, c in m.rows[i].items())
        kn = sorted((var[j], r(-c)) for j, c in m.rows[i].items())
        if kn < kp:
            m.rows[i] = {j: -c for j, c in m.rows[i].items()}
            m.lo[i], m.hi[i] = -m.hi[i], -m.lo[i]


def _orientation_key(row: dict[int, float], lo: float, hi: float) -> tuple:
    return (sorted(r(c) for c in row.values()), _fin(lo), _fin(hi))


# A bound or row side this close to zero is float noise (a defined variable substituted out leaves -3e-12 where the
# other model has 0): rows are unit-scaled by then, and solvers' feasibility tolerance is ~1e-6.
_ZERO = 1e-10


def _fin(x: float, d: int = _DIGITS) -> float:
    if abs(x) < _ZERO:
        return 0.0
    return 1e300 if x == INF else (-1e300 if x == -INF else r(x, d))


# ---- colour refinement ------------------------------------------------------------------------------------------


def initial_colours(m: StdModel, d: int = _DIGITS) -> tuple[list[str], list[str]]:
    quad_deg = Counter(j for k in m.quad for j in k)
    var = [_h(("v", m.integer[j], _fin(m.lb[j], d), _fin(m.ub[j], d), r(m.obj.get(j, 0.0), d), quad_deg[j]))
           for j in range(m.n_vars)]
    row = [_h(("r", _fin(m.lo[i], d), _fin(m.hi[i], d))) for i in range(m.n_rows)]
    return var, row


def refine(m: StdModel, var: list[str], row: list[str], rounds: int | None = None,
           d: int = _DIGITS) -> tuple[list[str], list[str]]:
    """Colour refinement in synchronous rounds (``rounds`` of them, or until the partition stops splitting): colours
    that compare across models, which ``semantic.map_variables`` pairs columns by after 1-3 rounds. The stable
    partition takes as many rounds as the graph is long; ``equitable`` reaches it in O(m log n)."""
    cols: list[list[tuple[int, float]]] = [[] for _ in range(m.n_vars)]
    for i, rw in enumerate(m.rows):
        for j, c in rw.items():
            cols[j].append((i, r(c, d)))
    qn: list[list[tuple[int, float]]] = [[] for _ in range(m.n_vars)]
    for (a, b), c in m.quad.items():
        qn[a].append((b, r(c, d)))
        if a != b:
            qn[b].append((a, r(c, d)))
    n_classes = len(set(var)) + len(set(row))
    limit = rounds if rounds is not None else m.n_vars + m.n_rows + 1
    for _ in range(limit):
        new_row = [_h((row[i], sorted((r(c, d), var[j]) for j, c in rw.items()))) for i, rw in enumerate(m.rows)]
        new_var = [_h((var[j], sorted((c, new_row[i]) for i, c in cols[j]), sorted((c, var[k]) for k, c in qn[j])))
                   for j in range(m.n_vars)]
        var, row = new_var, new_row
        count = len(set(var)) + len(set(row))
        if rounds is None and count == n_classes:
            break
        n_classes = count
    return var, row


def equitable(m: StdModel, var: list[str], row: list[str], d: int = _DIGITS) -> Equitable:
    """The stable colouring of ``refine`` (the coarsest equitable partition of the variable-constraint graph from
    these initial colours), by splitting cells (``partition.py``), with a canonical cell order and certificate."""
    nv = m.n_vars
    edges: list[tuple[int, int, object]] = [(j, nv + i, (0, r(c, d))) for i, rw in enumerate(m.rows)
                                            for j, c in rw.items()]
    edges += [(a, b, (1, r(c, d))) for (a, b), c in m.quad.items()]
    return Equitable(nv, edges, var + row)


def _descend(e: Equitable) -> Iterator[tuple[int, int]]:
    """Individualise one column (the first by index) of the smallest tied column cell at a time, refining after
    each, until every column has a cell of its own; yields each (size, start) individualised in, after the refinement.
    Cells only shrink, so a heap entry whose size is no longer its cell's is stale (its new size was pushed when it
    split)."""
    nv = e.n_vars
    heap = [(n, s) for s, n in e.size.items() if n > 1 and e.perm[s] < nv]
    heapq.heapify(heap)
    while heap:
        n, s = heapq.heappop(heap)
        if e.size[s] != n:
            continue
        e.changed.clear()
        e.individualise(min(e.perm[s:s + n]))
        for s2, n2 in e.changed:
            if n2 > 1 and e.perm[s2] < nv:
                heapq.heappush(heap, (n2, s2))
        yield n, s


def discrete(m: StdModel, d: int = _DIGITS) -> Equitable:
    """The equitable partition with every column in a cell of its own (``_descend``): exact_hash's order."""
    e = equitable(m, *initial_colours(m, d), d=d)
    for _ in _descend(e):
        pass
    return e


def wl_hash(c: Canonical, digits: int = _DIGITS) -> str:
    """Hash of the stable colouring's certificate (the label table, initial colours and every split with the labels
    behind it) plus the objective constant: equal for isomorphic canonical models. Every number is rounded to
    ``digits`` significant digits, as in ``exact_hash``."""
    m = c.model
    e = equitable(m, *initial_colours(m, digits), d=digits)
    return _h((e.certificate, r(m.constant, digits), c.infeasible))


def exact_hash(c: Canonical, max_vars: int = 3000, digits: int = _DIGITS) -> str | None:
    """Hash of the canonical matrix in refinement order, every number rounded to ``digits`` significant digits;
    None for models too large to order here."""
    m = c.model
    if m.n_vars > max_vars:
        return None
    return _h(_matrix(c, discrete(m, digits).colours()[0], digits))


def _matrix(c: Canonical, var: list, digits: int) -> tuple:
    """The canonical model written with its columns in the order of ``var`` (all distinct) and its rows sorted."""
    m = c.model
    rank = {j: k for k, j in enumerate(sorted(range(m.n_vars), key=lambda j: var[j]))}
    cols = [(m.integer[j], _fin(m.lb[j], digits), _fin(m.ub[j], digits), r(m.obj.get(j, 0.0), digits))
            for j in sorted(rank, key=rank.get)]
    rows = sorted((tuple(sorted((rank[j], r(a, digits)) for j, a in rw.items())), _fin(m.lo[i], digits),
                   _fin(m.hi[i], digits))
                  for i, rw in enumerate(m.rows))
    quad = sorted((tuple(sorted((rank[a], rank[b]))), r(q, digits)) for (a, b), q in m.quad.items())
    return (cols, rows, quad, r(m.constant, digits), c.infeasible)


def isomorphic(a: Canonical, b: Canonical, digits: int = _DIGITS, budget: int | None = None) -> bool | None:
    """Whether ``b`` is ``a`` with its columns and rows renamed and reordered (every number at ``digits`` digits).

    Equal WL hashes do not prove it: colour refinement cannot tell two triangles from a hexagon (every vertex has
    two neighbours of one colour), whose optima differ. This is the individualisation-refinement search: ``a`` goes
    down exact_hash's path (the first column of the smallest tied cell, refine, again, until every column has a cell
    of its own); ``b`` tries each column of the matching cell, keeps the ones whose refinement gives ``a``'s
    certificate, and backtracks. True is proof (both matrices, written in the orders found, are equal); False: no
    order exists; None: the search spent ``budget`` (adjacency entries read plus entries copied; default 64 times
    the model's size) first."""
    ma, mb = a.model, b.model
    if (ma.n_vars, ma.n_rows, len(ma.quad)) != (mb.n_vars, mb.n_rows, len(mb.quad)):
        return False
    e = equitable(ma, *initial_colours(ma, digits), d=digits)
    eb = equitable(mb, *initial_colours(mb, digits), d=digits)
    if e.certificate != eb.certificate:
        return False
    step = ma.n_vars + ma.n_rows  # a copy of a partition, or a step down a's path
    nnz = sum(len(rw) for rw in ma.rows)
    limit = budget if budget is not None else 64 * (step + nnz + len(ma.quad))
    spent = e.work
    certs, ties = [e.certificate], []  # a's path: the certificate after each individualisation, and its cell
    for tie in _descend(e):
        spent = e.work + step * len(certs)
        if spent > limit:
            return None
        ties.append(tie)
        certs.append(e.certificate)
    target = _matrix(a, e.colours()[0], digits)
    if not ties:
        return _matrix(b, eb.colours()[0], digits) == target
    stack = [(eb, iter(sorted(eb.perm[ties[0][1]:ties[0][1] + ties[0][0]])))]
    while stack:
        e, untried = stack[-1]
        w = next(untried, None)
        if w is None:
            stack.pop()
            continue
        child = e.copy()
        child.individualise(w)
        spent += step + child.work - e.work
        if spent > limit:
            return None
        depth = len(stack)
        if child.certificate != certs[depth]:
            continue
        if depth == len(ties):
            spent += step + nnz  # writing the matrix (b has a's certificate, so a's size)
            if _matrix(b, child.colours()[0], digits) == target:
                return True
            continue
        n, s = ties[depth]
        stack.append((child, iter(sorted(child.perm[s:s + n]))))
    return False
