"""Two reformulations a modeller makes that presolve-style canonicalisation should undo (issue 18):

- **a defined variable substituted** (``y = a.x + b`` written as a variable and an equality, then ``y`` used in
  other rows or the objective): ``y`` is eliminated through its defining equality where its own bounds are implied
  by that row and the other columns' bounds (an *implied free* column, so dropping the row loses nothing);
- **a free variable split** (``x = x+ - x-`` with ``x+, x- >= 0``): two columns whose coefficients are exact
  negatives in every row and in the objective merge into one column ``x+ - x-`` with range
  ``[lb+ - ub-, ub+ - lb-]``.

Each step is an exact reformulation (the feasible sets project onto each other and the objective values agree), so
an equal canonical hash still means an equivalent model (precision is kept). Choices are made from sets, never from
the order of rows or columns, so a permuted model makes the same ones.
"""

from __future__ import annotations

import math

from contracts.equivalence.stdform import INF, StdModel

# An implied bound counts as implying the column's own bound within 1e-9 (relative): the generators' data have at
# most 6 significant digits, so a genuinely binding bound differs far more than that.
_TOL = 1e-9


def _r(x: float) -> float:
    return float(f"{x:.9g}") if math.isfinite(x) and x != 0 else x


def _columns(m: StdModel) -> dict[int, dict[int, float]]:
    cols: dict[int, dict[int, float]] = {}
    for i, row in enumerate(m.rows):
        for j, c in row.items():
            cols.setdefault(j, {})[i] = c
    return cols


def drop_implied_sides(m: StdModel) -> bool:
    """A row side the columns' bounds already imply is no constraint: ``0 <= x1 + x2`` for x >= 0 becomes free on
    that side (a slack folded into a row leaves such a side; the reference never wrote it)."""
    changed = False
    for i, row in enumerate(m.rows):
        act_lo, act_hi = _activity(m, row, -1)
        if math.isfinite(m.lo[i]) and m.lo[i] <= act_lo + _TOL * (1 + abs(act_lo)):
            m.lo[i], changed = -INF, True
        if math.isfinite(m.hi[i]) and m.hi[i] >= act_hi - _TOL * (1 + abs(act_hi)):
            m.hi[i], changed = INF, True
    return changed


def remove_fixed_columns(m: StdModel) -> bool:
    """A column with lb == ub is a constant: move it into the rows' ranges and the objective's constant (``y == 5``
    written as a row is a bound after presolve, and a defined ``y`` so fixed is no variable at all)."""
    in_quad = {j for k in m.quad for j in k}
    fixed = {j for j in range(m.n_vars) if m.lb[j] == m.ub[j] and math.isfinite(m.lb[j]) and j not in in_quad
             and (j in m.obj or any(j in row for row in m.rows))}
    for j in fixed:
        v = m.lb[j]
        for i, row in enumerate(m.rows):
            if j in row:
                a = row.pop(j)
                m.lo[i] -= a * v
                m.hi[i] -= a * v
        if j in m.obj:
            m.constant += m.obj.pop(j) * v
    return bool(fixed)


def merge_split_columns(m: StdModel) -> bool:
    """x = x+ - k x-: merge column pairs that are negatives of each other (same integrality, not in a quadratic
    term). For continuous columns k is any positive factor (a column written in other units, x- in minutes and x+
    in hours: A_q = -k A_p and c_q = -k c_p), so the merge does not depend on the columns' scales; integer columns
    pair only at k = 1 (x+ - k x- over integers is not an integer range)."""
    in_quad = {j for k in m.quad for j in k}
    cols = _columns(m)
    scale = {j: 1.0 if m.integer[j] else abs(col[min(col)]) for j, col in cols.items()}

    def key(j: int, sign: float) -> tuple:
        f = sign / scale[j]
        return (m.integer[j], tuple(sorted((i, _r(f * c)) for i, c in cols[j].items())), _r(f * m.obj.get(j, 0.0)))

    by_key: dict[tuple, list[int]] = {}
    for j in cols:
        if j not in in_quad:
            by_key.setdefault(key(j, 1.0), []).append(j)
    changed = False
    # Parallel continuous columns (A_q = f A_p, c_q = f c_p, f > 0) first: x_p + f x_q is one column over the sum of
    # their ranges, whichever keeps the name. A split whose merge kept x- (x- - x+ = -x) stands parallel to a column
    # it would otherwise pair with as a negative (an orienteering order difference: bench/equivalence.py).
    for k, group in by_key.items():
        if len(group) < 2 or any(m.integer[j] for j in group):
            continue
        p, *rest = sorted(group)
        for q in rest:
            f = scale[q] / scale[p]
            m.lb[p], m.ub[p] = m.lb[p] + f * m.lb[q], m.ub[p] + f * m.ub[q]
            _drop_column(m, cols, q)
        m.merged.add(m.names[p])
        by_key[k] = [p]
        changed = True
    for k, plus in sorted(by_key.items(), key=lambda kv: min(kv[1])):
        if len(plus) != 1:
            continue  # duplicate columns: which one pairs with which would depend on the order
        (p,) = plus
        nk = key(p, -1.0)
        minus = by_key.get(nk, [])
        if len(minus) != 1 or minus[0] == p or m.integer[p] and not _integral_bounds(m, p, minus[0]):
            continue
        (q,) = minus
        f = scale[q] / scale[p]  # A_q = -f A_p: x_p A_p + x_q A_q = A_p (x_p - f x_q)
        m.lb[p], m.ub[p] = m.lb[p] - f * m.ub[q], m.ub[p] - f * m.lb[q]
        m.merged.add(m.names[p])
        _drop_column(m, cols, q)
        by_key[k] = by_key[nk] = []  # each column in one pair
        changed = True
    return changed


def _drop_column(m: StdModel, cols: dict[int, dict[int, float]], q: int) -> None:
    """Column q merged into another: out of every row and the objective, fixed at 0."""
    for i in cols[q]:
        del m.rows[i][q]
    m.obj.pop(q, None)
    m.lb[q] = m.ub[q] = 0.0


def _integral_bounds(m: StdModel, p: int, q: int) -> bool:
    return all(not math.isfinite(b) or b == round(b) for b in (m.lb[p], m.ub[p], m.lb[q], m.ub[q]))


def _activity(m: StdModel, row: dict[int, float], skip: int) -> tuple[float, float]:
    lo = hi = 0.0
    for t, a in row.items():
        if t == skip:
            continue
        ends = (a * m.lb[t], a * m.ub[t])
        ends = tuple(0.0 if math.isnan(e) else e for e in ends)
        lo += min(ends)
        hi += max(ends)
    return lo, hi


def _implied_free(m: StdModel, i: int, j: int) -> bool:
    """Column j's bounds follow from equality row i and the other columns' bounds."""
    row, b = m.rows[i], m.lo[i]
    p = row[j]
    act_lo, act_hi = _activity(m, row, j)
    lo, hi = (b - act_hi) / p, (b - act_lo) / p
    if p < 0:
        lo, hi = hi, lo
    lo = -INF if math.isnan(lo) else lo
    hi = INF if math.isnan(hi) else hi

    def within(x: float, bound: float, above: bool) -> bool:
        if math.isinf(bound):
            return True
        return x >= bound - _TOL * (1 + abs(bound)) if above else x <= bound + _TOL * (1 + abs(bound))

    return within(lo, m.lb[j], True) and within(hi, m.ub[j], False)


def _minus(x: float, d: float) -> float:
    """x - d, with a difference that cancels to float error (relative to the two numbers) snapped to 0: a cost or
    coefficient that a substitution cancels must vanish in a model and in its rescaled copy alike. An absolute
    threshold (1e-12) did not: a min-cost-flow arc's cancelled cost read 0 in the reference and 1.8e-12 in the copy
    whose flows are counted in thousandths, which then joined the column scaling (bench/equivalence.py's large
    slice). Generator data have at most 6 significant digits, so a genuine difference is far above _TOL."""
    y = x - d
    return 0.0 if math.isfinite(y) and abs(y) <= _TOL * max(abs(x), abs(d)) else y


def _subtract(terms: dict[int, float], t: int, d: float) -> None:
    """terms[t] -= d; a term that cancels (``_minus``) is gone."""
    y = _minus(terms.get(t, 0.0), d)
    if y == 0.0:
        terms.pop(t, None)
    else:
        terms[t] = y


def substitute_defined(m: StdModel) -> bool:
    """Eliminate implied-free continuous columns through the equality row that defines them (at most one per row,
    rows and columns not shared within one pass, so no elimination relies on a bound another one drops)."""
    in_quad = {j for k in m.quad for j in k}
    cols = _columns(m)
    nominated: dict[int, list[int]] = {}  # column -> rows that could define it
    pick: dict[int, int] = {}  # row -> its column
    for i, row in enumerate(m.rows):
        if len(row) < 2 or m.lo[i] != m.hi[i] or not math.isfinite(m.lo[i]):
            continue
        cands = [j for j in row if not m.integer[j] and j not in in_quad and (len(cols[j]) >= 2 or j in m.obj)
                 and _implied_free(m, i, j)]
        if len(cands) == 1:
            pick[i] = cands[0]
            nominated.setdefault(cands[0], []).append(i)
    batch = {i: j for i, j in pick.items() if len(nominated[j]) == 1}
    chosen = set(batch.values())
    batch = {i: j for i, j in batch.items() if not (set(m.rows[i]) - {j}) & chosen}
    for i, j in sorted(batch.items()):
        row, b = m.rows[i], m.lo[i]
        p = row[j]
        rest = {t: a for t, a in row.items() if t != j}  # y = (b - rest.x) / p
        for k in list(cols[j]):
            if k == i:
                continue
            q = m.rows[k].pop(j)
            for t, a in rest.items():
                _subtract(m.rows[k], t, q * a / p)
            m.lo[k], m.hi[k] = _minus(m.lo[k], q * b / p), _minus(m.hi[k], q * b / p)
        if j in m.obj:
            c = m.obj.pop(j)
            for t, a in rest.items():
                _subtract(m.obj, t, c * a / p)
            m.constant += c * b / p
        m.rows[i] = {}  # implied free: the defining row says nothing more once y is gone
        m.lo[i], m.hi[i] = 0.0, 0.0
        m.lb[j], m.ub[j] = 0.0, 0.0
    return bool(batch)


def orient_columns(m: StdModel, bounded: bool = True) -> None:
    """x' = -x for a column whose range leans negative (``(-inf, u]`` becomes ``[-u, inf)``, ``[-8, 0]`` becomes
    ``[0, 8]``): which of x+ and x- a merge keeps depends on the columns' order, and this makes both choices the same
    model. A symmetric range keeps its sign (a possible miss, never a false match). ``bounded=False`` leaves the
    columns with two finite bounds that no merge made alone: the canonical form's origin step orients those from
    data a shift leaves alone (the lean of [1, 3] and of the same hours counted from 32, [-31, -29], differ); a
    merged one still needs the lean, its direction came from which partner the merge kept."""
    in_quad = {j for k in m.quad for j in k}
    for j in range(m.n_vars):
        lo, hi = m.lb[j], m.ub[j]
        leans = math.isfinite(hi) and (math.isinf(lo) or ((bounded or m.names[j] in m.merged) and lo + hi < 0))
        if j in in_quad or not leans:
            continue
        for row in m.rows:
            if j in row:
                row[j] = -row[j]
        if j in m.obj:
            m.obj[j] = -m.obj[j]
        m.lb[j], m.ub[j] = -hi, -lo
